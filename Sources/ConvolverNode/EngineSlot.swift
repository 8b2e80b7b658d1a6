// An engine built for one sample rate, ready for the data thread (EngineFactory builds it).
// Built off the real-time thread; handed to the data thread through RealtimeProcessor's atomics.
import Convolution
import ConvolverGraph
import Glibc
import LevelScheduling
import Workgroup

/// One ready-to-run engine with what the data thread needs beside it: one compiled stage for a
/// linear graph, or a staged graph (compiled stages with hosted plugins between them).
final class EngineSlot {
    /// Every engine of the slot with its schedulers (one for a linear graph).
    private let stages: [CompiledStage]
    /// The stages and plugins of a graph with hosted nodes, in the order they run (nil: linear).
    private let stagedGraph: StagedGraph?
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
        stages: [CompiledStage], stagedGraph: StagedGraph?, sampleRate: Int, planDescription: String,
        plannedBlockSize: Int, impulseFrames: Int, latencyFrames: Int, autogainDB: [Double]?
    ) {
        self.stages = stages
        self.stagedGraph = stagedGraph
        self.sampleRate = sampleRate
        self.smoothingCoefficient = Float(1 - exp(-1 / (0.005 * Double(sampleRate))))
        self.planDescription = planDescription
        self.plannedBlockSize = plannedBlockSize
        self.impulseFrames = impulseFrames
        self.latencyFrames = latencyFrames
        self.autogainDB = autogainDB
    }

    /// One data-thread call: begins each scheduler's cycle (the call started at `startNanos`; helper
    /// results may be awaited until `waitLimitNanos`), then convolves. Real-time safe.
    func process(
        inputs: UnsafePointer<UnsafePointer<Float>?>, outputs: UnsafePointer<UnsafeMutablePointer<Float>?>,
        frameCount: Int, startNanos: UInt64, waitLimitNanos: UInt64, graphRate: Double
    ) {
        for stage in stages { stage.beginCycle(startNanos: startNanos, waitLimitNanos: waitLimitNanos, sampleRate: graphRate) }
        if let stagedGraph {
            stagedGraph.process(inputs: inputs, outputs: outputs, frameCount: frameCount)
        } else {
            stages[0].process(inputs: inputs, outputs: outputs, frameCount: frameCount)
        }
    }

    /// The last call's data-thread times spent on the schedulers' behalf. Real-time safe.
    var cycleTimes: (wait: UInt64, jobs: UInt64, stalledInJobs: UInt64) {
        var times: (wait: UInt64, jobs: UInt64, stalledInJobs: UInt64) = (0, 0, 0)
        for stage in stages {
            let scheduler = stage.workgroupScheduler
            times.wait &+= scheduler.cycleWaitNanos
            times.jobs &+= scheduler.cycleJobNanos
            times.stalledInJobs &+= scheduler.cycleStalledNanos
        }
        return times
    }

    /// The helpers' statistics so far: the first stage's, with every stage's helper levels. Not
    /// real-time safe.
    func schedulerStatistics() -> WorkgroupSchedulerStatistics {
        var statistics = stages[0].workgroupScheduler.statistics()
        for stage in stages.dropFirst() {
            let more = stage.workgroupScheduler.statistics()
            statistics.levels += more.levels
            statistics.dataThreadLevelCount += more.dataThreadLevelCount
        }
        return statistics
    }

    /// Stops the schedulers (which then let their engines go); call off the real-time thread
    /// before the last release.
    func stop() {
        for stage in stages { stage.stop() }
    }
}
