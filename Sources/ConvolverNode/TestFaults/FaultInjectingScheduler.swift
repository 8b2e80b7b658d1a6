// Test only: the engine's faults of `test.fault`, as a decorator of the scheduler the engine is
// given. The engine and the workgroup scheduler know nothing of them.
import Convolution
import ConvolverGraph
import LevelScheduling
import Workgroup

/// Forwards everything to the node's scheduler, except that
/// - `drop-tail-block`: the longest level's output block holding stream time 3 s is reported late,
///   so the engine outputs without it;
/// - `overrun-data-thread-jobs`: each share of level 1's job, when the data thread runs it, lasts
///   at least `overrunNanos` (it spins): a level too heavy for the data thread, one per call
///   whatever the plan (a spin in every data-thread level made a call last as many periods as
///   the plan had such levels, and the test's play outlasted its limit on PipeWire 1.6).
final class FaultInjectingScheduler: LevelJobScheduler {
    private let scheduler: any LevelJobScheduler
    private let fault: TestFault
    private let sampleRate: Double
    /// The runner the wrapped scheduler is given: the engine's, with the overrun.
    private let overrunningRunner: OverrunningRunner
    /// `drop-tail-block`: the level and block left out (set in `prepare`).
    private var droppedLevel = -1
    private var droppedBlock = -1

    /// The scheduler the engine is given for `fault`: `scheduler` itself when the fault is not the
    /// scheduler's.
    static func wrapping(
        _ scheduler: any LevelJobScheduler, fault: TestFault?, sampleRate: Int, expectedBlockSize: Int
    ) -> any LevelJobScheduler {
        guard let fault, fault == .dropTailBlock || fault == .overrunDataThreadJobs else { return scheduler }
        return FaultInjectingScheduler(
            scheduler, fault: fault, sampleRate: Double(sampleRate),
            overrunNanos: fault == .overrunDataThreadJobs ? UInt64(1.5e9 * Double(expectedBlockSize) / Double(sampleRate)) : 0)
    }

    private init(_ scheduler: any LevelJobScheduler, fault: TestFault, sampleRate: Double, overrunNanos: UInt64) {
        self.scheduler = scheduler
        self.fault = fault
        self.sampleRate = sampleRate
        overrunningRunner = OverrunningRunner(overrunNanos: overrunNanos)
    }

    func prepare(runner: any LevelJobRunner, levels: [LevelSchedule]) throws {
        chooseDroppedBlock(levels)
        overrunningRunner.runner = runner
        try scheduler.prepare(runner: overrunningRunner, levels: levels)
    }

    func prepare(runner: any LevelJobRunner, levels: [LevelSchedule], split: SplitShare) throws -> Int {
        chooseDroppedBlock(levels)
        overrunningRunner.runner = runner
        return try scheduler.prepare(runner: overrunningRunner, levels: levels, split: split)
    }

    private func chooseDroppedBlock(_ levels: [LevelSchedule]) {
        guard fault == .dropTailBlock, let longest = levels.last else { return }
        let offset = longest.dueAfterSamples + longest.blockSize
        droppedLevel = longest.level
        droppedBlock = max(0, Int(3 * sampleRate) - offset) / longest.blockSize
    }

    func post(level: Int, block: Int, dueInSamples: Int) {
        scheduler.post(level: level, block: block, dueInSamples: dueInSamples)
    }

    func awaitResult(level: Int, block: Int) -> Bool {
        scheduler.awaitResult(level: level, block: block) && (level, block) != (droppedLevel, droppedBlock)
    }

    func postSplitPart(part: Int, sequence: Int) -> Bool { scheduler.postSplitPart(part: part, sequence: sequence) }
    func awaitSplitPart(part: Int, sequence: Int) -> Bool { scheduler.awaitSplitPart(part: part, sequence: sequence) }

    func stop() {
        scheduler.stop()
        overrunningRunner.runner = nil
    }
}

/// The engine's runner, whose level-1 data-thread job shares (the stepped runs: level 1 is the
/// first the data thread runs, when it runs any) spin until `overrunNanos` have passed. Helper jobs
/// run unchanged.
private final class OverrunningRunner: LevelJobRunner {
    /// The engine, kept until the scheduler's `stop()` (test only: the reference counting on each
    /// call does not matter here).
    var runner: (any LevelJobRunner)?
    private let overrunNanos: UInt64

    init(overrunNanos: UInt64) { self.overrunNanos = overrunNanos }

    func runLevelJob(level: Int, block: Int) { runner?.runLevelJob(level: level, block: block) }
    func levelJobStepCount(level: Int) -> Int { runner?.levelJobStepCount(level: level) ?? 1 }
    func runSplitPart(part: Int, sequence: Int) { runner?.runSplitPart(part: part, sequence: sequence) }
    func estimatedSplitShareNanoseconds() -> Double { runner?.estimatedSplitShareNanoseconds() ?? .nan }

    func runLevelJob(level: Int, block: Int, steps: Range<Int>) {
        let start = monotonicNanos()
        runner?.runLevelJob(level: level, block: block, steps: steps)
        guard level == 1 else { return }
        while monotonicNanos() &- start < overrunNanos {}
    }
}
