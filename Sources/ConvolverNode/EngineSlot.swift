// An engine built for one sample rate, ready for the data thread (EngineFactory builds it).
// Built off the real-time thread; handed to the data thread through RealtimeProcessor's atomics.
import Convolution
import Glibc
import LevelScheduling
import Workgroup

/// One ready-to-run engine with what the data thread needs beside it.
final class EngineSlot {
    private let engine: ConvolutionEngine
    /// Runs the engine's tail levels on real-time helpers; its cycle begins with each call.
    private let workgroupScheduler: WorkgroupLevelScheduler
    /// The scheduler the engine was prepared with and posts to: the workgroup's, or with a
    /// `test.fault` its decorator.
    private let jobScheduler: any LevelJobScheduler
    let sampleRate: Int
    /// Per-sample coefficient of the one-pole smoother for gain/mix/bypass at this rate (~5 ms).
    let smoothingCoefficient: Float
    /// For the node's `convolver.plan` property.
    let planDescription: String
    /// The call size the partitions were planned for (any call size works; this one is cheapest).
    let plannedBlockSize: Int
    /// The longest IR: after this many frames of silent input the engine's state is all zeros.
    let impulseFrames: Int
    /// The node's process latency, reported to the graph: the resampler's ringing kept with
    /// `resample.pre-ringing = keep`, plus the IR's own delay given as `latency`.
    let latencyFrames: Int
    /// With `autogain`, the gain applied to each output's IRs, in dB.
    let autogainDB: [Double]?

    init(
        engine: ConvolutionEngine, workgroupScheduler: WorkgroupLevelScheduler, jobScheduler: any LevelJobScheduler,
        sampleRate: Int, planDescription: String,
        plannedBlockSize: Int, impulseFrames: Int, latencyFrames: Int, autogainDB: [Double]?
    ) {
        self.engine = engine
        self.workgroupScheduler = workgroupScheduler
        self.jobScheduler = jobScheduler
        self.sampleRate = sampleRate
        self.smoothingCoefficient = Float(1 - exp(-1 / (0.005 * Double(sampleRate))))
        self.planDescription = planDescription
        self.plannedBlockSize = plannedBlockSize
        self.impulseFrames = impulseFrames
        self.latencyFrames = latencyFrames
        self.autogainDB = autogainDB
    }

    /// One data-thread call: begins the scheduler's cycle (the call started at `startNanos`; helper
    /// results may be awaited until `waitLimitNanos`), then convolves. Real-time safe.
    func process(
        inputs: UnsafePointer<UnsafePointer<Float>?>, outputs: UnsafePointer<UnsafeMutablePointer<Float>?>,
        frameCount: Int, startNanos: UInt64, waitLimitNanos: UInt64, graphRate: Double
    ) {
        workgroupScheduler.beginCycle(startNanos: startNanos, waitLimitNanos: waitLimitNanos, sampleRate: graphRate)
        engine.process(inputs: inputs, outputs: outputs, frameCount: frameCount, scheduler: jobScheduler)
    }

    /// The last call's data-thread times spent on the scheduler's behalf. Real-time safe.
    var cycleTimes: (wait: UInt64, jobs: UInt64, stalledInJobs: UInt64) {
        (workgroupScheduler.cycleWaitNanos, workgroupScheduler.cycleJobNanos, workgroupScheduler.cycleStalledNanos)
    }

    /// The helpers' statistics so far. Not real-time safe.
    func schedulerStatistics() -> WorkgroupSchedulerStatistics { workgroupScheduler.statistics() }

    /// Stops the engine's scheduler (which then lets the engine go); call off the real-time thread
    /// before the last release.
    func stop() { jobScheduler.stop() }
}
