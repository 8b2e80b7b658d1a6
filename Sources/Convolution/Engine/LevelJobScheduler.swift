/// The seam between the engine and whoever runs its level jobs.
///
/// One level number throughout: the plan's. Level 0 (the head) always runs inside
/// `ConvolutionEngine.process`. Every other level `k` turns
/// one complete input block into one output block: job `(level: k, block: j)`. The engine *posts*
/// the job when input block `j` is complete and *awaits* its result when the output needs it,
/// `LevelSchedule.dueAfterSamples` samples later. Without a scheduler the engine runs each job at
/// once, itself (offline rendering, and the reference the threaded schedulers must equal); the
/// workgroup scheduler (LevelScheduling) runs it on real-time helper threads.
///
/// Ownership: the scheduler keeps its runner (the engine) from `prepare` until `stop()`, so a
/// helper never runs a job of a freed engine; the engine keeps no scheduler, it is handed the one
/// it was prepared with on each `process` call by whoever owns both.

/// Runs one level job. Implemented by the engine. Real-time safe.
public protocol LevelJobRunner: AnyObject {
    /// Computes output block `block` of level `level` (≥ 1). Jobs of one level must run in order of
    /// `block`, one at a time; jobs of different levels may run concurrently.
    func runLevelJob(level: Int, block: Int)
    /// Into how many steps a job of `level` divides: a scheduler that runs the job on the data
    /// thread spreads the steps over the calls before it is due. Setup only.
    func levelJobStepCount(level: Int) -> Int
    /// Runs steps `steps` of job `(level, block)`. A job's steps run in order, all of them before
    /// the next job of its level; running `0..<levelJobStepCount(level:)` is `runLevelJob`.
    func runLevelJob(level: Int, block: Int, steps: Range<Int>)
    /// Computes part `part` (≥ 1) of the data thread's own share of the current call (fork-join
    /// split, see `SplitShare`). Parts of one call may run concurrently with each other and with
    /// part 0 (which the engine runs itself); one part runs at a time. Real-time safe.
    func runSplitPart(part: Int, sequence: Int)
    /// The engine's estimate of its data-thread share on the most expensive call of a head block
    /// (the call that starts a block), in ns, from the machine costs the plan was priced with.
    /// Setup only.
    func estimatedSplitShareNanoseconds() -> Double
}

extension LevelJobRunner {
    /// Default: one step, the whole job.
    public func levelJobStepCount(level: Int) -> Int { 1 }
    public func runLevelJob(level: Int, block: Int, steps: Range<Int>) {
        if !steps.isEmpty { runLevelJob(level: level, block: block) }
    }
    public func runSplitPart(part: Int, sequence: Int) {}
    public func estimatedSplitShareNanoseconds() -> Double { .nan }
}

/// What the engine offers the scheduler to split, fork-join style, within each call: the head's
/// per-output work (multiply-adds of the frequency-domain delay line and one inverse FFT per
/// output), after the data thread did the shared forward FFTs of the inputs.
public struct SplitShare: Sendable, Equatable {
    /// Independent units of the share (the head's outputs): at most this many parts.
    public var unitCount: Int
    /// The call size the engine was planned for (frames).
    public var expectedCallFrames: Int

    public init(unitCount: Int, expectedCallFrames: Int) {
        self.unitCount = unitCount
        self.expectedCallFrames = expectedCallFrames
    }
}

/// Timing of one level, in samples, given to the scheduler at setup.
public struct LevelSchedule: Sendable, Equatable {
    /// The level's number in the plan (≥ 1; the head, level 0, is not scheduled).
    public var level: Int
    /// Samples per job (the level's block size): a job is posted every `blockSize` samples.
    public var blockSize: Int
    /// Samples from the post (input block complete) to when the output needs the result.
    /// At least `blockSize`: one full period to compute asynchronously.
    public var dueAfterSamples: Int
    /// The engine's estimate of one job's cost, ns, from the machine costs the plan was priced with
    /// (nan: not estimated).
    public var estimatedJobNanoseconds: Double
    /// The engine's placement puts this level on the data thread (`PartitionPlanner.tailSchedules`):
    /// the scheduler runs its jobs inline.
    public var runsOnDataThread = false

    public init(level: Int, blockSize: Int, dueAfterSamples: Int, estimatedJobNanoseconds: Double = .nan) {
        self.level = level
        self.blockSize = blockSize
        self.dueAfterSamples = dueAfterSamples
        self.estimatedJobNanoseconds = estimatedJobNanoseconds
    }

    /// Level `number` (≥ 1) of a plan for `problem`, its job costed with `costs`.
    public init(level number: Int, _ level: PartitionPlan.Level, problem: PartitionPlanner.Problem, costs: MachineCosts) {
        self.init(
            level: number, blockSize: level.blockSize, dueAfterSamples: level.offset - level.blockSize,
            estimatedJobNanoseconds: PartitionPlanner.jobNanoseconds(level, problem, costs))
    }
}

public protocol LevelJobScheduler: AnyObject {
    /// Setup, off the real-time thread: the levels to run, levels 1, 2 ... in order. The scheduler
    /// keeps `runner` until `stop()`. Called again (after `stop()`) when the engine is rebuilt.
    func prepare(runner: any LevelJobRunner, levels: [LevelSchedule]) throws
    /// Input block `block` of `level` is complete. `dueInSamples`: samples from the start of the
    /// current `process` call until the result is needed. Real-time safe, never blocks.
    func post(level: Int, block: Int, dueInSamples: Int)
    /// The output needs job `(level, block)` now. Returns true when its result is ready; false when
    /// it is late (the engine then outputs without it). Real-time safe; may wait, but bounded.
    func awaitResult(level: Int, block: Int) -> Bool
    /// Stops running jobs for the current runner and lets it go (before the engine is rebuilt, or
    /// when the owner is done with both).
    func stop()

    /// Setup with a split offer: as `prepare(runner:levels:)`, then returns into how many parts
    /// (1 = no split) the data thread's share is cut on each call. Part 0 always runs on the data
    /// thread; parts 1... are posted with `postSplitPart`.
    func prepare(runner: any LevelJobRunner, levels: [LevelSchedule], split: SplitShare) throws -> Int
    /// Semaphore out: part `part` of call piece `sequence` (increasing) may run now. Returns false
    /// when the part cannot be posted (its helper still runs an earlier, late piece): the engine then
    /// computes it itself. Real-time safe, never blocks.
    func postSplitPart(part: Int, sequence: Int) -> Bool
    /// Semaphore back: true when part `part` of piece `sequence` completed; false when it is late
    /// (the engine outputs without it). Real-time safe; waits at most until the same limit as
    /// `awaitResult`.
    func awaitSplitPart(part: Int, sequence: Int) -> Bool
}

extension LevelJobScheduler {
    /// Default: no split.
    public func prepare(runner: any LevelJobRunner, levels: [LevelSchedule], split: SplitShare) throws -> Int {
        try prepare(runner: runner, levels: levels)
        return 1
    }
    public func postSplitPart(part: Int, sequence: Int) -> Bool { false }
    public func awaitSplitPart(part: Int, sequence: Int) -> Bool { false }
}
