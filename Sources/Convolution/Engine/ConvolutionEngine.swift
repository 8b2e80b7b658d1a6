import FixedMemory
import Glibc

/// Zero-latency, non-uniformly partitioned convolution of N inputs into M outputs.
///
/// The head (level 0) runs inside `process` on every call: uniformly partitioned overlap-add whose
/// current, partly filled block is transformed on each call, so output sample n depends only on
/// input samples up to n (no added latency) whatever the call size. Larger levels (overlap-save,
/// each with its frequency-domain delay line) run as jobs given to the scheduler: posted when their
/// input block is complete, awaited when their output is due, at least one block period later.
///
/// With a scheduler that splits (`LevelJobScheduler.prepare(runner:levels:split:)`), the head's
/// per-output work of each call is cut into parts by output and run fork-join on the scheduler's
/// helpers within the call (see `HeadLevel`); the output is the same to the bit. The engine keeps
/// no scheduler: it prepares the one it is built with, which keeps the engine until its `stop()`,
/// and is handed it again on each `process` (`LevelJobScheduler`).
///
/// Real-time contract: everything is allocated and planned in `init`; `process`, `runLevelJob`
/// and `runSplitPart` allocate nothing, lock nothing, log nothing.
public final class ConvolutionEngine: LevelJobRunner {
    public let plan: PartitionPlan
    public let inputCount: Int
    public let outputCount: Int

    private let routing: Routing
    private let history: InputHistory
    /// Level 0.
    private let head: any Head
    /// Levels 1...: `tails[k - 1]` is level `k`.
    private let tails: [TailLevel]
    /// What the plan was priced with (the split's estimate uses them too).
    private let costs: MachineCosts
    /// Samples processed since the start (or the last reset).
    private var position = 0

    public init(
        matrix: ConvolutionMatrix, configuration: EngineConfiguration = .init(),
        scheduler: (any LevelJobScheduler)? = nil
    ) throws {
        try matrix.validate()
        let problem = PartitionPlanner.Problem(matrix, configuration)
        let plan = configuration.fixedPlan ?? PartitionPlanner.plan(problem, costs: configuration.costs)
        try plan.validate()
        self.plan = plan
        inputCount = matrix.inputCount
        outputCount = matrix.outputCount
        let sortedEntries = Routing.sortedEntries(matrix)
        let routing = try Routing(matrix, sortedEntries: sortedEntries)
        self.routing = routing
        let largestBlock = plan.levels.map(\.blockSize).max()!
        // Room for the longest job window (2 blocks) plus a late helper and the largest call.
        history = try InputHistory(channelCount: inputCount, minimumCapacity: 8 * largestBlock + 16384)
        // The levels keep the IR as spectra: the samples are not kept (a long IR's megabytes).
        let impulses = sortedEntries.map(\.impulse)
        head =
            try plan.head.isDirect
            ? DirectHead(tapCount: plan.head.blockSize, impulses: impulses, routing: routing)
            : HeadLevel(plan.head, impulses: impulses, routing: routing)
        tails = try plan.tails.enumerated().map { index, level in
            try TailLevel(level: index + 1, level, impulses: impulses, routing: routing)
        }
        costs = configuration.costs
        let schedules = PartitionPlanner.tailSchedules(plan.levels, problem, configuration.costs)
        let partCount =
            try scheduler?.prepare(
                runner: self, levels: schedules,
                split: SplitShare(unitCount: head.splitUnitCount, expectedCallFrames: configuration.expectedBlockSize)) ?? 1
        try head.configureSplit(partCount: partCount, routing: routing)
    }

    /// Into how many parts the head's per-output work is split on each call (1: not split; part 0
    /// runs on the data thread, the others on the scheduler's helpers).
    public var splitPartCount: Int { head.partCount }

    /// Convolves `frameCount` samples of every input into every output, the levels' jobs run by
    /// `scheduler`: the one the engine was built with (nil: each job runs here, when its input
    /// block is complete). `inputs[i] == nil` is silence; `outputs[o] == nil` is computed and
    /// discarded. Real-time safe. Any `frameCount`, changing from call to call.
    public func process(
        inputs: UnsafePointer<UnsafePointer<Float>?>,
        outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, frameCount: Int,
        scheduler: (any LevelJobScheduler)? = nil
    ) {
        DenormalFlush.enableOnCurrentThread()
        let callStart = position
        var done = 0
        while done < frameCount {
            // A piece never crosses a head block boundary, and every level's block boundaries and
            // offsets are head block boundaries: so within a piece no level changes block.
            let length = min(frameCount - done, head.frameRoom)
            for channel in 0..<inputCount {
                history.write(channel: channel, from: inputs[channel].map { $0 + done }, count: length, at: position)
            }
            for index in tails.indices {
                tails[index].prefetchResult(at: position, count: length, outputCount: outputCount)
            }
            head.process(
                inputs: inputs, inputOffset: done, outputs: outputs, outputOffset: done,
                count: length, routing: routing, scheduler: scheduler)
            // Index loops, not `enumerated()`: unspecialized (debug) iteration allocates a coroutine frame.
            for index in tails.indices {
                let level = tails[index]
                level.mixResult(
                    into: outputs, outputOffset: done, count: length, at: position,
                    scheduler: scheduler, outputCount: outputCount)
            }
            position += length
            done += length
            for index in tails.indices where position % tails[index].blockSize == 0 {
                let level = tails[index]
                let block = position / level.blockSize - 1
                if let scheduler {
                    scheduler.post(level: level.level, block: block, dueInSamples: block * level.blockSize + level.offset - callStart)
                } else {
                    runLevelJob(level: level.level, block: block)
                }
            }
        }
    }

    /// Runs one job of level `level` (≥ 1). Real-time safe.
    public func runLevelJob(level: Int, block: Int) {
        DenormalFlush.enableOnCurrentThread()
        let tail = tails[level - 1]
        tail.run(block: block, steps: 0..<tail.stepCount, history: history, routing: routing)
    }

    /// A transform or one segment's products per step (see `TailLevel.run`).
    public func levelJobStepCount(level: Int) -> Int { tails[level - 1].stepCount }

    /// Runs steps `steps` of one job of level `level` (≥ 1). Real-time safe.
    public func runLevelJob(level: Int, block: Int, steps: Range<Int>) {
        DenormalFlush.enableOnCurrentThread()
        tails[level - 1].run(block: block, steps: steps, history: history, routing: routing)
    }

    /// Runs part `part` of the head's per-output work for call piece `sequence` (fork-join split).
    /// Real-time safe.
    public func runSplitPart(part: Int, sequence: Int) {
        DenormalFlush.enableOnCurrentThread()
        head.runPart(part, sequence: sequence, routing: routing)
    }

    /// The head's cost on a call that starts a head block (the costliest call of the data thread's
    /// own share), from the machine costs the plan was priced with. Setup only.
    public func estimatedSplitShareNanoseconds() -> Double {
        head.estimatedBlockStartNanoseconds(costs: costs, routing: routing)
    }

    /// Clears all history: the engine continues as if just created. Real-time safe, but only
    /// while no level job is running (no scheduler, or after the scheduler's `stop()`).
    public func reset() {
        position = 0
        history.reset()
        head.reset()
        for level in tails { level.reset() }
    }

    /// Offline convenience (allocates): convolves whole signals, one array per input, equal lengths.
    /// Feeds the engine in calls of `blockSize` frames; returns as many output frames as input frames.
    public func process(_ inputs: [[Float]], blockSize: Int = 256) throws -> [[Float]] {
        let frameCount = inputs.first?.count ?? 0
        precondition(inputs.count == inputCount && inputs.allSatisfy { $0.count == frameCount })
        var outputs = [[Float]](repeating: [Float](repeating: 0, count: frameCount), count: outputCount)
        let inputPointers = try FixedBuffer<UnsafePointer<Float>?>(repeating: nil, count: inputCount)
        let outputPointers = try FixedBuffer<UnsafeMutablePointer<Float>?>(repeating: nil, count: outputCount)
        let inputStorage = try inputs.map { try AlignedFloats(count: $0.count) }
        let outputStorage = try (0..<outputCount).map { _ in try AlignedFloats(count: frameCount) }
        for (channel, samples) in inputs.enumerated() {
            samples.withUnsafeBufferPointer { inputStorage[channel].pointer.update(from: $0.baseAddress!, count: frameCount) }
        }
        var done = 0
        while done < frameCount {
            let count = min(max(1, blockSize), frameCount - done)
            for channel in 0..<inputCount { inputPointers[channel] = UnsafePointer(inputStorage[channel].pointer + done) }
            for channel in 0..<outputCount { outputPointers[channel] = outputStorage[channel].pointer + done }
            process(inputs: inputPointers.pointer, outputs: outputPointers.pointer, frameCount: count)
            done += count
        }
        for channel in 0..<outputCount {
            outputs[channel] = Array(UnsafeBufferPointer(start: outputStorage[channel].pointer, count: frameCount))
        }
        return outputs
    }
}
