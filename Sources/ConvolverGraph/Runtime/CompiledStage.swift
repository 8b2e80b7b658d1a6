// One compiled linear part of a graph on the data thread: its engine and the scheduler that runs
// the engine's longer levels on the process's workgroup.
import Convolution
import LevelScheduling

/// An engine with its schedulers. The node builds it (it knows where helper threads come from);
/// the data thread begins its cycle and runs it.
public final class CompiledStage {
    public let engine: ConvolutionEngine
    /// Runs the engine's tail levels on real-time helpers; its cycle begins with each call.
    public let workgroupScheduler: WorkgroupLevelScheduler
    /// The scheduler the engine was prepared with and posts to: the workgroup's, or a decorator of it.
    public let jobScheduler: any LevelJobScheduler
    /// The longest IR of its matrix, in frames.
    public let impulseFrames: Int

    public init(
        engine: ConvolutionEngine, workgroupScheduler: WorkgroupLevelScheduler, jobScheduler: any LevelJobScheduler,
        impulseFrames: Int
    ) {
        self.engine = engine
        self.workgroupScheduler = workgroupScheduler
        self.jobScheduler = jobScheduler
        self.impulseFrames = impulseFrames
    }

    /// A call began at `startNanos`; helper results may be awaited until `waitLimitNanos`. Real-time safe.
    @inline(__always)
    public func beginCycle(startNanos: UInt64, waitLimitNanos: UInt64, sampleRate: Double) {
        workgroupScheduler.beginCycle(startNanos: startNanos, waitLimitNanos: waitLimitNanos, sampleRate: sampleRate)
    }

    /// Convolves `frameCount` frames. Real-time safe.
    @inline(__always)
    public func process(
        inputs: UnsafePointer<UnsafePointer<Float>?>, outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, frameCount: Int
    ) {
        engine.process(inputs: inputs, outputs: outputs, frameCount: frameCount, scheduler: jobScheduler)
    }

    /// Stops the scheduler (which then lets the engine go); off the real-time thread, before the last release.
    public func stop() { jobScheduler.stop() }
}
