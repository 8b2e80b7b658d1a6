/// The seam between the engine and whoever runs its level jobs.
///
/// Level 0 (the head) always runs inside `ConvolutionEngine.process`. Every other level `k` turns
/// one complete input block into one output block: job `(level: k, block: j)`. The engine *posts*
/// the job when input block `j` is complete and *awaits* its result when the output needs it,
/// `LevelSchedule.dueAfterSamples` samples later. The inline scheduler runs the job at once; the
/// workgroup scheduler (ConvolverNode) runs it on real-time helper threads.

/// Runs one level job. Implemented by the engine. Real-time safe.
public protocol LevelJobRunner: AnyObject {
    /// Computes output block `block` of level `level`. Jobs of one level must run in order of
    /// `block`, one at a time; jobs of different levels may run concurrently.
    func runLevelJob(level: Int, block: Int)
}

/// Timing of one level, in samples, given to the scheduler at setup.
public struct LevelSchedule: Sendable, Equatable {
    /// Samples per job (the level's block size): a job is posted every `blockSize` samples.
    public var blockSize: Int
    /// Samples from the post (input block complete) to when the output needs the result.
    /// At least `blockSize`: one full period to compute asynchronously.
    public var dueAfterSamples: Int

    public init(blockSize: Int, dueAfterSamples: Int) {
        self.blockSize = blockSize
        self.dueAfterSamples = dueAfterSamples
    }
}

public protocol LevelJobScheduler: AnyObject {
    /// Setup, off the real-time thread: the levels to run (index 0 here is engine level 1).
    /// Called again (after `stop()`) when the engine is rebuilt.
    func prepare(runner: any LevelJobRunner, levels: [LevelSchedule]) throws
    /// Input block `block` of `level` is complete. `dueInSamples`: samples from the start of the
    /// current `process` call until the result is needed. Real-time safe, never blocks.
    func post(level: Int, block: Int, dueInSamples: Int)
    /// The output needs job `(level, block)` now. Returns true when its result is ready; false when
    /// it is late (the engine then outputs without it). Real-time safe; may wait, but bounded.
    func awaitResult(level: Int, block: Int) -> Bool
    /// Stops running jobs for the current runner (before the engine is freed or rebuilt).
    func stop()
}

/// Runs every job at once, inside `post`, on the calling thread. Offline rendering and the
/// reference for the threaded schedulers: their output must equal this one's.
public final class InlineScheduler: LevelJobScheduler {
    private unowned(unsafe) var runner: (any LevelJobRunner)?

    public init() {}

    public func prepare(runner: any LevelJobRunner, levels: [LevelSchedule]) throws {
        self.runner = runner
    }

    /// Real-time safe: runs the job on the caller's thread.
    public func post(level: Int, block: Int, dueInSamples: Int) {
        runner?.runLevelJob(level: level, block: block)
    }

    /// Real-time safe: the job already ran in `post`.
    public func awaitResult(level: Int, block: Int) -> Bool { true }

    public func stop() { runner = nil }
}
