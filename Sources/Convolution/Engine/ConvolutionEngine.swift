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
/// helpers within the call (see `HeadLevel`); the output is the same to the bit.
///
/// Real-time contract: everything is allocated and planned in `init`; `process`, `runLevelJob`
/// and `runSplitPart` allocate nothing, lock nothing, log nothing.
public final class ConvolutionEngine: LevelJobRunner {
    public let plan: PartitionPlan
    public let inputCount: Int
    public let outputCount: Int

    private let routing: Routing
    private let history: InputHistory
    private let head: HeadLevel
    private let tails: [TailLevel]
    private let scheduler: any LevelJobScheduler
    /// How many of the shortest tail levels the engine runs itself on the data thread, each job
    /// spread over the calls of its block period (`TailLevel.runSpreadShare`); the scheduler runs
    /// the other levels' jobs.
    private var spreadLevelCount = 0
    /// Samples processed since the start (or the last reset).
    private var position = 0

    public init(matrix: ConvolutionMatrix, configuration: EngineConfiguration = .init(),
                scheduler: any LevelJobScheduler = InlineScheduler()) throws {
        try matrix.validate()
        let problem = PartitionPlanner.Problem(matrix, configuration)
        let plan = configuration.fixedPlan ?? PartitionPlanner.plan(problem)
        try plan.validate()
        self.plan = plan
        inputCount = matrix.inputCount
        outputCount = matrix.outputCount
        let sortedEntries = Routing.sortedEntries(matrix)
        let routing = Routing(matrix, sortedEntries: sortedEntries)
        self.routing = routing
        let largestBlock = plan.levels.map(\.blockSize).max()!
        // Room for the longest job window (2 blocks) plus a late helper and the largest call.
        history = InputHistory(channelCount: inputCount, minimumCapacity: 8 * largestBlock + 16384)
        // The levels keep the IR as spectra: the samples are not kept (a long IR's megabytes).
        let impulses = sortedEntries.map(\.impulse)
        head = HeadLevel(plan.head, impulses: impulses, routing: routing)
        tails = plan.tails.map { TailLevel($0, impulses: impulses, routing: routing) }
        self.scheduler = scheduler
        let schedules = scheduler.usesLevelSchedules ? PartitionPlanner.tailSchedules(plan.levels, problem, .measured) : []
        let partCount = try scheduler.prepare(runner: self, levels: schedules,
                                              split: SplitShare(unitCount: outputCount, expectedCallFrames: configuration.expectedBlockSize))
        head.configureSplit(partCount: partCount, routing: routing)
        spreadLevelCount = min(scheduler.dataThreadLevelCount, tails.count)
        for level in tails.prefix(spreadLevelCount) { level.spreadOverCalls(routing: routing) }
        if let seconds = configuration.testDroppedTailBlockSeconds, let longest = tails.last {
            longest.testDroppedBlock = max(0, Int(seconds * configuration.sampleRate) - longest.offset) / longest.blockSize
        }
    }

    /// Into how many parts the head's per-output work is split on each call (1: not split; part 0
    /// runs on the data thread, the others on the scheduler's helpers).
    public var splitPartCount: Int { head.partCount }

    deinit { scheduler.stop() }

    /// Stops the scheduler's jobs for this engine. Call before dropping it from a threaded scheduler.
    public func stop() { scheduler.stop() }

    /// Convolves `frameCount` samples of every input into every output.
    /// `inputs[i] == nil` is silence; `outputs[o] == nil` is computed and discarded.
    /// Real-time safe. Any `frameCount`, changing from call to call.
    public func process(inputs: UnsafePointer<UnsafePointer<Float>?>,
                        outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, frameCount: Int) {
        DenormalFlush.enableOnCurrentThread()
        let callStart = position
        var done = 0
        while done < frameCount {
            // A piece never crosses a head block boundary, and every level's block boundaries and
            // offsets are head block boundaries: so within a piece no level changes block.
            let length = min(frameCount - done, head.blockSize - head.fill)
            for channel in 0..<inputCount {
                history.write(channel: channel, from: inputs[channel].map { $0 + done }, count: length, at: position)
            }
            head.process(inputs: inputs, inputOffset: done, outputs: outputs, outputOffset: done,
                         count: length, routing: routing, scheduler: scheduler)
            // Index loops, not `enumerated()`: unspecialized (debug) iteration allocates a coroutine frame.
            for index in 0..<spreadLevelCount {
                tails[index].runSpreadShare(position: position, count: length, history: history, routing: routing)
            }
            for index in tails.indices {
                let level = tails[index]
                level.mixResult(into: outputs, outputOffset: done, count: length, at: position,
                                scheduler: scheduler, schedulerLevel: index,
                                awaitsJobs: index >= spreadLevelCount, outputCount: outputCount)
            }
            position += length
            done += length
            for index in spreadLevelCount..<tails.count where position % tails[index].blockSize == 0 {
                let level = tails[index]
                let block = position / level.blockSize - 1
                scheduler.post(level: index, block: block, dueInSamples: block * level.blockSize + level.offset - callStart)
            }
        }
    }

    /// Runs one job of tail level `level + 1` (scheduler numbering). Real-time safe.
    public func runLevelJob(level: Int, block: Int) {
        DenormalFlush.enableOnCurrentThread()
        tails[level].run(block: block, history: history, routing: routing)
    }

    /// Runs part `part` of the head's per-output work for call piece `sequence` (fork-join split).
    /// Real-time safe.
    public func runSplitPart(part: Int, sequence: Int) {
        DenormalFlush.enableOnCurrentThread()
        head.runPart(part, sequence: sequence, routing: routing)
    }

    /// The head's cost on a call that starts a head block (the costliest call of the data thread's
    /// own share), from the planner's measured machine costs. Setup only.
    public func estimatedSplitShareNanoseconds() -> Double {
        head.estimatedBlockStartNanoseconds(costs: .measured, routing: routing)
    }

    /// Clears all history: the engine continues as if just created. Real-time safe, but only
    /// while no level job is running (inline scheduler, or after `stop()`).
    public func reset() {
        position = 0
        history.reset()
        head.reset()
        for level in tails { level.reset() }
    }

    /// Offline convenience (allocates): convolves whole signals, one array per input, equal lengths.
    /// Feeds the engine in calls of `blockSize` frames; returns as many output frames as input frames.
    public func process(_ inputs: [[Float]], blockSize: Int = 256) -> [[Float]] {
        let frameCount = inputs.first?.count ?? 0
        precondition(inputs.count == inputCount && inputs.allSatisfy { $0.count == frameCount })
        var outputs = [[Float]](repeating: [Float](repeating: 0, count: frameCount), count: outputCount)
        let inputPointers = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: inputCount)
        let outputPointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: outputCount)
        defer { inputPointers.deallocate(); outputPointers.deallocate() }
        let inputStorage = inputs.map { AlignedFloats(count: $0.count) }
        let outputStorage = (0..<outputCount).map { _ in AlignedFloats(count: frameCount) }
        for (channel, samples) in inputs.enumerated() {
            samples.withUnsafeBufferPointer { inputStorage[channel].pointer.update(from: $0.baseAddress!, count: frameCount) }
        }
        var done = 0
        while done < frameCount {
            let count = min(max(1, blockSize), frameCount - done)
            for channel in 0..<inputCount { inputPointers[channel] = UnsafePointer(inputStorage[channel].pointer + done) }
            for channel in 0..<outputCount { outputPointers[channel] = outputStorage[channel].pointer + done }
            process(inputs: inputPointers, outputs: outputPointers, frameCount: count)
            done += count
        }
        for channel in 0..<outputCount {
            outputs[channel] = Array(UnsafeBufferPointer(start: outputStorage[channel].pointer, count: frameCount))
        }
        return outputs
    }
}

/// The matrix entries, sorted by output, as flat tables the real-time loops can read.
final class Routing {
    let entryCount: Int
    let inputCount: Int
    let outputCount: Int
    /// Input channel of entry e.
    let entryInput: UnsafeMutablePointer<Int>
    /// Entries of output o are `firstEntry[o] ..< firstEntry[o + 1]`.
    let firstEntry: UnsafeMutablePointer<Int>

    /// The order of the tables: by output, then input.
    static func sortedEntries(_ matrix: ConvolutionMatrix) -> [ConvolutionMatrix.Entry] {
        matrix.entries.sorted { ($0.output, $0.input) < ($1.output, $1.input) }
    }

    init(_ matrix: ConvolutionMatrix, sortedEntries: [ConvolutionMatrix.Entry]) {
        entryCount = sortedEntries.count
        inputCount = matrix.inputCount
        outputCount = matrix.outputCount
        entryInput = .allocate(capacity: max(1, entryCount))
        firstEntry = .allocate(capacity: outputCount + 1)
        var next = 0
        for output in 0...outputCount {
            firstEntry[output] = next
            while next < entryCount, sortedEntries[next].output == output { next += 1 }
        }
        for (index, entry) in sortedEntries.enumerated() { entryInput[index] = entry.input }
    }

    deinit {
        entryInput.deallocate()
        firstEntry.deallocate()
    }
}

/// Every input's recent samples, one power-of-two ring per channel; level jobs read their
/// windows from here.
final class InputHistory {
    let capacity: Int
    private let mask: Int
    private let storage: AlignedFloats

    init(channelCount: Int, minimumCapacity: Int) {
        var capacity = 1
        while capacity < minimumCapacity { capacity <<= 1 }
        self.capacity = capacity
        mask = capacity - 1
        storage = AlignedFloats(count: capacity * channelCount)
    }

    /// Real-time safe. `source == nil` writes silence.
    @inline(__always)
    func write(channel: Int, from source: UnsafePointer<Float>?, count: Int, at position: Int) {
        let ring = storage.pointer + channel * capacity
        var done = 0
        while done < count {
            let start = (position + done) & mask
            let run = min(count - done, capacity - start)
            if let source { (ring + start).update(from: source + done, count: run) }
            else { (ring + start).update(repeating: 0, count: run) }
            done += run
        }
    }

    /// Real-time safe. Negative positions (before the start) read as silence: the ring starts zeroed.
    @inline(__always)
    func read(channel: Int, from position: Int, count: Int, into destination: UnsafeMutablePointer<Float>) {
        let ring = storage.pointer + channel * capacity
        var done = 0
        while done < count {
            let start = (position + done) & mask
            let run = min(count - done, capacity - start)
            (destination + done).update(from: ring + start, count: run)
            done += run
        }
    }

    func reset() { storage.zero() }
}

/// One level's frequency-domain delay line: the spectra of every input's last `segmentCount`
/// blocks (a ring of slots) beside the spectra of every IR's segments, and the multiply-add loop
/// over them. The head and each tail level own one.
struct FrequencyDelayLine {
    let segmentCount: Int
    /// Bins per spectrum, padded for the kernels.
    let binCount: Int
    /// Input i's block in slot s is spectrum `i * segmentCount + s` (`blockSpectrum`).
    let blocks: SplitSpectra
    /// Entry e's segment s is spectrum `e * segmentCount + s`, scaled by 1/fftSize (FFTW is unnormalised).
    private let filters: SplitSpectra

    init(_ level: PartitionPlan.Level, impulses: [[Float]], inputCount: Int, fft: RealFFT) {
        segmentCount = level.segmentCount
        blocks = SplitSpectra(count: inputCount * level.segmentCount, binCount: fft.binCount)
        binCount = blocks.paddedBinCount
        filters = SplitSpectra(count: impulses.count * level.segmentCount, binCount: fft.binCount)
        let window = AlignedFloats(count: fft.size)
        let scratch = InterleavedSpectra(count: 1, binCount: fft.binCount)
        let scale = 1 / Float(fft.size)
        for (entry, impulse) in impulses.enumerated() {
            for segment in 0..<level.segmentCount {
                window.zero()
                let start = level.offset + segment * level.blockSize
                let end = min(impulse.count, start + level.blockSize)
                if start < end {
                    for n in start..<end { window.pointer[n - start] = impulse[n] * scale }
                }
                let index = entry * level.segmentCount + segment
                fft.forward(window.pointer, real: filters.real(index), imaginary: filters.imaginary(index),
                            scratch: scratch.spectrum(0))
            }
        }
    }

    /// The slot of input block `block`. The ring runs downward, so that the blocks before a newest
    /// one (segments 1, 2 ...) lie upward in memory, as their filters' segments do: the multiply-adds
    /// then read both forward, one stream each, which the hardware prefetches. It matters for the
    /// head's short spectra when a call finds the caches cold: the head then waits for memory most
    /// of its time (`bench --evict-mb 64`: 3 s IR, quantum 256, 5-10% less CPU than upward).
    @inline(__always)
    func slot(ofBlock block: Int) -> Int { (segmentCount - block % segmentCount) % segmentCount }

    /// The index in `blocks` of input `input`'s block in `slot`: where its forward FFT goes.
    @inline(__always)
    func blockSpectrum(input: Int, slot: Int) -> Int { input * segmentCount + slot }

    /// Adds Σ over `segments`, Σ over the entries e of `output`: X[input(e), slot] · H[e, segment],
    /// where `slot` holds the block `segment` blocks before the one in `newestSlot`.
    /// The multiply-add loop of every level (head and tails), in one fixed order, so that whichever
    /// thread runs it, the sum is the same to the bit. Real-time safe.
    @inline(__always)
    func accumulate(real accumulatorReal: UnsafeMutablePointer<Float>,
                    imaginary accumulatorImaginary: UnsafeMutablePointer<Float>,
                    output: Int, segments: Range<Int>, newestSlot: Int, routing: Routing) {
        for segment in segments {
            // Slots of blocks before the start were never written: they hold zeros.
            let slot = (newestSlot + segment) % segmentCount
            for entry in routing.firstEntry[output]..<routing.firstEntry[output + 1] {
                let x = blockSpectrum(input: routing.entryInput[entry], slot: slot)
                let h = entry * segmentCount + segment
                SpectrumKernels.multiplyAdd(
                    accumulatorReal: accumulatorReal, accumulatorImaginary: accumulatorImaginary,
                    xReal: blocks.real(x), xImaginary: blocks.imaginary(x),
                    hReal: filters.real(h), hImaginary: filters.imaginary(h), binCount: binCount)
            }
        }
    }

    /// Real-time safe.
    func reset() { blocks.zero() }
}

/// Level 0: uniformly partitioned overlap-add with the partial-block trick.
///
/// Fork-join split (`configureSplit` with more than one part): after the data thread's forward
/// FFTs of the inputs, the per-output work (multiply-adds and inverse FFT) is cut into parts by
/// output. Part 0 runs on the data thread, parts 1... on helpers (`LevelJobScheduler.postSplitPart`);
/// each part writes only its own outputs' scratch (`outputTimes`, `olderBlocksSum`, `olderSumBlock`)
/// and its own accumulator. The data thread mixes an output into the call's output and updates its
/// overlap only after the part completed in time; a late part's outputs get the overlap only, and
/// its later completion touches nothing the data thread reads, because the part is not posted
/// again (the data thread computes those outputs itself, in its own scratch) until it completed.
/// A late part may read delay-line slots the data thread is already overwriting for the next call:
/// what it computes from them is never mixed, and its older-blocks sum is labelled with the block
/// it was computed for, which is then over (slots of older blocks change only when a block starts),
/// so no later call uses it.
final class HeadLevel {
    let blockSize: Int
    var segmentCount: Int { delayLine.segmentCount }
    let outputCount: Int
    /// Samples of the current block received so far.
    private(set) var fill = 0
    /// Delay-line slot of the current block (always `delayLine.slot(ofBlock: blockSerial)`).
    private var current = 0
    /// Blocks completed since the start: names a block for the split parts' older-blocks sums.
    private var blockSerial = 0
    private let fft: RealFFT
    private let delayLine: FrequencyDelayLine
    /// Per output: the current block's sum over segments 1..<segmentCount (fixed within a block).
    private let olderBlocksSum: SplitSpectra
    private let accumulator: SplitSpectra
    /// The data thread's FFT scratch.
    private let fftScratch: InterleavedSpectra
    /// Per input: the current block, zero-padded to the FFT size.
    private let blockBuffers: AlignedFloats
    private let timeBuffer: AlignedFloats
    /// Per output: the second half of the last full block's inverse FFT, added to the next block.
    private let overlap: AlignedFloats

    // Split state (allocated in `configureSplit`, off the real-time thread).
    private(set) var partCount = 1
    /// Part p computes outputs `partStart[p] ..< partStart[p + 1]`.
    private var partStart: UnsafeMutablePointer<Int>
    /// Per part: its multiply-add accumulator and FFT scratch (parts run concurrently).
    private var partAccumulators: SplitSpectra
    private var partFFTScratch: InterleavedSpectra
    /// Per output: the inverse FFT of this call's spectrum (2 × blockSize), written by its part.
    private var outputTimes: AlignedFloats
    /// Per output: the `blockSerial` whose older-blocks sum `olderBlocksSum` holds (-1: none).
    /// Written only by whoever runs the output's part.
    private var olderSumBlock: UnsafeMutablePointer<Int>
    /// Per part, this piece's outcome.
    private var partOutcome: UnsafeMutablePointer<PartOutcome>
    /// Call pieces since the start, for the split parts' sequence numbers.
    private var pieceSerial = 0

    init(_ level: PartitionPlan.Level, impulses: [[Float]], routing: Routing) {
        blockSize = level.blockSize
        outputCount = routing.outputCount
        fft = RealFFT.ofSize(2 * blockSize)
        delayLine = FrequencyDelayLine(level, impulses: impulses, inputCount: routing.inputCount, fft: fft)
        olderBlocksSum = SplitSpectra(count: routing.outputCount, binCount: fft.binCount)
        accumulator = SplitSpectra(count: 1, binCount: fft.binCount)
        fftScratch = InterleavedSpectra(count: 1, binCount: fft.binCount)
        blockBuffers = AlignedFloats(count: routing.inputCount * 2 * blockSize)
        timeBuffer = AlignedFloats(count: 2 * blockSize)
        overlap = AlignedFloats(count: routing.outputCount * blockSize)
        partStart = .allocate(capacity: 2)
        partStart[0] = 0
        partStart[1] = routing.outputCount
        partAccumulators = SplitSpectra(count: 1, binCount: 1)
        partFFTScratch = InterleavedSpectra(count: 1, binCount: 1)
        outputTimes = AlignedFloats(count: 1)
        olderSumBlock = .allocate(capacity: max(routing.outputCount, 1))
        olderSumBlock.initialize(repeating: -1, count: max(routing.outputCount, 1))
        partOutcome = .allocate(capacity: 1)
        partOutcome.initialize(to: .ready)
    }

    deinit {
        partStart.deallocate()
        olderSumBlock.deallocate()
        partOutcome.deallocate()
    }

    /// Cuts the per-output work into `partCount` parts (at most one per output) of about equal
    /// numbers of matrix entries. Setup only, before the first `process`.
    func configureSplit(partCount requested: Int, routing: Routing) {
        let parts = min(max(requested, 1), max(outputCount, 1))
        partCount = parts
        partStart.deallocate()
        partStart = .allocate(capacity: parts + 1)
        partStart[0] = 0
        for part in 1..<max(parts, 1) {
            // The first output whose entries start at or after this part's share of all entries,
            // leaving at least one output for every part on either side.
            let target = part * routing.entryCount / parts
            var output = partStart[part - 1] + 1
            while output < outputCount - (parts - part) && routing.firstEntry[output] < target { output += 1 }
            partStart[part] = output
        }
        partStart[parts] = outputCount
        partAccumulators = SplitSpectra(count: parts, binCount: fft.binCount)
        partFFTScratch = InterleavedSpectra(count: parts, binCount: fft.binCount)
        outputTimes = AlignedFloats(count: parts > 1 ? outputCount * 2 * blockSize : 1)
        partOutcome.deallocate()
        partOutcome = .allocate(capacity: parts)
        partOutcome.initialize(repeating: .ready, count: parts)
    }

    /// Writes (not adds) the head's output for `count` samples that do not cross a block boundary.
    /// Real-time safe; with a split, waits for the parts at most until the scheduler's limit.
    func process(inputs: UnsafePointer<UnsafePointer<Float>?>, inputOffset: Int,
                 outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, outputOffset: Int,
                 count: Int, routing: Routing, scheduler: any LevelJobScheduler) {
        let start = fill
        for input in 0..<routing.inputCount {
            let block = blockBuffers.pointer + input * 2 * blockSize
            if let source = inputs[input] { (block + start).update(from: source + inputOffset, count: count) }
            else { (block + start).update(repeating: 0, count: count) }
            let x = delayLine.blockSpectrum(input: input, slot: current)
            fft.forward(block, real: delayLine.blocks.real(x), imaginary: delayLine.blocks.imaginary(x),
                        scratch: fftScratch.spectrum(0))
        }
        let completesBlock = start + count == blockSize
        if partCount > 1 {
            processSplit(outputs: outputs, outputOffset: outputOffset, start: start, count: count,
                         completesBlock: completesBlock, routing: routing, scheduler: scheduler)
        } else {
            processUnsplit(outputs: outputs, outputOffset: outputOffset, start: start, count: count,
                           completesBlock: completesBlock, routing: routing)
        }
        fill += count
        if completesBlock {
            fill = 0
            blockSerial += 1
            current = delayLine.slot(ofBlock: blockSerial)
            for input in 0..<routing.inputCount {
                (blockBuffers.pointer + input * 2 * blockSize).update(repeating: 0, count: blockSize)
            }
        }
    }

    /// Every output on the calling (data) thread.
    private func processUnsplit(outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, outputOffset: Int,
                                start: Int, count: Int, completesBlock: Bool, routing: Routing) {
        let bins = delayLine.binCount
        if start == 0 {  // a new block: sum the older blocks' contributions once
            for output in 0..<routing.outputCount {
                let sumReal = olderBlocksSum.real(output), sumImaginary = olderBlocksSum.imaginary(output)
                sumReal.update(repeating: 0, count: bins)
                sumImaginary.update(repeating: 0, count: bins)
                delayLine.accumulate(real: sumReal, imaginary: sumImaginary, output: output,
                                     segments: 1..<max(1, segmentCount), newestSlot: current, routing: routing)
            }
        }
        for output in 0..<routing.outputCount {
            let accReal = accumulator.real(0), accImaginary = accumulator.imaginary(0)
            accReal.update(from: olderBlocksSum.real(output), count: bins)
            accImaginary.update(from: olderBlocksSum.imaginary(output), count: bins)
            delayLine.accumulate(real: accReal, imaginary: accImaginary, output: output,
                                 segments: 0..<1, newestSlot: current, routing: routing)
            fft.inverse(real: accReal, imaginary: accImaginary, output: timeBuffer.pointer, scratch: fftScratch.spectrum(0))
            mix(output: output, time: timeBuffer.pointer, into: outputs, outputOffset: outputOffset,
                start: start, count: count, completesBlock: completesBlock)
        }
    }

    /// Fork-join: semaphore out to parts 1..., part 0 here, semaphore back (bounded), then mix.
    private func processSplit(outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, outputOffset: Int,
                              start: Int, count: Int, completesBlock: Bool, routing: Routing,
                              scheduler: any LevelJobScheduler) {
        pieceSerial += 1
        // The block serial rides in the sequence number, so a part needs no shared parameters
        // (which a late part might read after the data thread changed them).
        let sequence = blockSerial << 32 | (pieceSerial & 0xFFFF_FFFF)
        for part in 1..<partCount {
            partOutcome[part] = scheduler.postSplitPart(part: part, sequence: sequence) ? .late : .notPosted
        }
        runPart(0, sequence: sequence, routing: routing)
        partOutcome[0] = .ready
        for part in 1..<partCount where partOutcome[part] == .late {
            if scheduler.awaitSplitPart(part: part, sequence: sequence) { partOutcome[part] = .ready }
        }
        for part in 0..<partCount {
            for output in partStart[part]..<partStart[part + 1] {
                switch partOutcome[part] {
                case .ready:
                    mix(output: output, time: outputTimes.pointer + output * 2 * blockSize, into: outputs,
                        outputOffset: outputOffset, start: start, count: count, completesBlock: completesBlock)
                case .late:
                    // Late: output without this block's head for these outputs; the overlap of the
                    // last block still sounds, and the next block starts without a tail from this one.
                    let tail = overlap.pointer + output * blockSize
                    if let destination = outputs[output] {
                        (destination + outputOffset).update(from: tail + start, count: count)
                    }
                    if completesBlock { tail.update(repeating: 0, count: blockSize) }
                case .notPosted:
                    // The part's helper still runs a late piece and owns the part's scratch: the data
                    // thread computes these outputs in its own (same sums, same order: same bits).
                    let bins = delayLine.binCount
                    let accReal = accumulator.real(0), accImaginary = accumulator.imaginary(0)
                    accReal.update(repeating: 0, count: bins)
                    accImaginary.update(repeating: 0, count: bins)
                    delayLine.accumulate(real: accReal, imaginary: accImaginary, output: output,
                                         segments: 1..<max(1, segmentCount), newestSlot: current, routing: routing)
                    delayLine.accumulate(real: accReal, imaginary: accImaginary, output: output,
                                         segments: 0..<1, newestSlot: current, routing: routing)
                    fft.inverse(real: accReal, imaginary: accImaginary, output: timeBuffer.pointer, scratch: fftScratch.spectrum(0))
                    mix(output: output, time: timeBuffer.pointer, into: outputs, outputOffset: outputOffset,
                        start: start, count: count, completesBlock: completesBlock)
                }
            }
        }
    }

    /// One part of the split: for each of its outputs, the older-blocks sum (once per block), this
    /// call's spectrum and its inverse FFT into `outputTimes`. Touches only the part's own outputs'
    /// scratch and its own accumulator; reads the delay line and the filters.
    /// Real-time safe (data thread for part 0, a helper for the others).
    func runPart(_ part: Int, sequence: Int, routing: Routing) {
        let block = sequence >> 32
        let newestSlot = delayLine.slot(ofBlock: block)
        let bins = delayLine.binCount
        let accReal = partAccumulators.real(part), accImaginary = partAccumulators.imaginary(part)
        for output in partStart[part]..<partStart[part + 1] {
            let sumReal = olderBlocksSum.real(output), sumImaginary = olderBlocksSum.imaginary(output)
            if olderSumBlock[output] != block {
                sumReal.update(repeating: 0, count: bins)
                sumImaginary.update(repeating: 0, count: bins)
                delayLine.accumulate(real: sumReal, imaginary: sumImaginary, output: output,
                                     segments: 1..<max(1, segmentCount), newestSlot: newestSlot, routing: routing)
                olderSumBlock[output] = block
            }
            accReal.update(from: sumReal, count: bins)
            accImaginary.update(from: sumImaginary, count: bins)
            delayLine.accumulate(real: accReal, imaginary: accImaginary, output: output,
                                 segments: 0..<1, newestSlot: newestSlot, routing: routing)
            fft.inverse(real: accReal, imaginary: accImaginary, output: outputTimes.pointer + output * 2 * blockSize,
                        scratch: partFFTScratch.spectrum(part))
        }
    }

    /// Output = this block's inverse FFT + the last block's overlap; at the block's end the second
    /// half becomes the next overlap. Real-time safe.
    @inline(__always)
    private func mix(output: Int, time: UnsafeMutablePointer<Float>, into outputs: UnsafePointer<UnsafeMutablePointer<Float>?>,
                     outputOffset: Int, start: Int, count: Int, completesBlock: Bool) {
        let tail = overlap.pointer + output * blockSize
        if let destination = outputs[output] {
            for n in 0..<count {
                destination[outputOffset + n] = time[start + n] + tail[start + n]
            }
        }
        if completesBlock { tail.update(from: time + blockSize, count: blockSize) }
    }

    /// The cost of a call that starts a block: every input's forward FFT, every output's older-
    /// blocks sum, current-block product and inverse FFT. Setup only.
    func estimatedBlockStartNanoseconds(costs: MachineCosts, routing: Routing) -> Double {
        let fftSize = 2 * blockSize
        let halfPair = costs.fftPair(fftSize) / 2
        let bins = delayLine.binCount
        let workingSetBytes = (routing.inputCount + routing.entryCount) * segmentCount * bins * 2 * MemoryLayout<Float>.size
        let products = routing.entryCount * segmentCount
        return Double(routing.inputCount + routing.outputCount) * halfPair
            + costs.multiplyAdd(bins: products * bins, workingSetBytes: workingSetBytes)
    }

    func reset() {
        fill = 0
        current = 0
        blockSerial = 0
        pieceSerial = 0
        delayLine.reset()
        blockBuffers.zero()
        overlap.zero()
        olderSumBlock.update(repeating: -1, count: max(outputCount, 1))
    }
}

/// What became of one split part in one call piece.
enum PartOutcome: UInt8 {
    /// Computed (by the data thread, or by its helper in time): mix it.
    case ready
    /// Posted and not back by the wait limit (before the await: posted, not yet back).
    case late
    /// Not posted, its helper still runs an earlier late piece: the data thread computes it.
    case notPosted
}

/// Levels 1...: uniformly partitioned overlap-save over IR samples `offset ..< end`, one job per
/// input block. Jobs of one level run one at a time, in order (the scheduler's promise), so the
/// level's scratch buffers are its own.
final class TailLevel {
    let blockSize: Int
    var segmentCount: Int { delayLine.segmentCount }
    let offset: Int
    private let fft: RealFFT
    private let delayLine: FrequencyDelayLine
    private let accumulator: SplitSpectra
    private let fftScratch: InterleavedSpectra
    private let window: AlignedFloats
    private let timeBuffer: AlignedFloats
    /// Output blocks by job: block j's output o is at `((j % resultSlotCount) * outputCount + o) * blockSize`.
    private let results: AlignedFloats
    /// Enough slots that a job never overwrites a block the data thread may still be reading.
    private let resultSlotCount: Int
    // Data-thread state: the output block being mixed in, and whether its result came in time.
    private var mixingBlock = -1
    private var mixingBlockReady = false
    /// A spread level's running sums, two sets by job parity (job j's older segments are
    /// summed while job j − 1 finishes); nil when the scheduler runs the jobs.
    private var spreadSums: SplitSpectra?
    /// Of the jobs in progress in this block period: units of the finishing job done (inputs'
    /// FFTs, then outputs), and (output, segment) units of the next job summed.
    private var finishingUnits = 0
    private var summedUnits = 0
    /// Test only (`EngineConfiguration.testDroppedTailBlockSeconds`): an output block left out.
    var testDroppedBlock = -1

    init(_ level: PartitionPlan.Level, impulses: [[Float]], routing: Routing) {
        blockSize = level.blockSize
        offset = level.offset
        fft = RealFFT.ofSize(2 * blockSize)
        delayLine = FrequencyDelayLine(level, impulses: impulses, inputCount: routing.inputCount, fft: fft)
        accumulator = SplitSpectra(count: 1, binCount: fft.binCount)
        fftScratch = InterleavedSpectra(count: 1, binCount: fft.binCount)
        window = AlignedFloats(count: 2 * blockSize)
        timeBuffer = AlignedFloats(count: 2 * blockSize)
        resultSlotCount = (offset + blockSize - 1) / blockSize + 2
        results = AlignedFloats(count: resultSlotCount * routing.outputCount * blockSize)
    }

    /// The job: output block `block` from input samples `(block - 1) * blockSize ..< (block + 1) * blockSize`.
    /// Real-time safe.
    func run(block: Int, history: InputHistory, routing: Routing) {
        let bins = delayLine.binCount
        let slot = delayLine.slot(ofBlock: block)
        for input in 0..<routing.inputCount { transformInput(input, block: block, history: history) }
        for output in 0..<routing.outputCount {
            let accReal = accumulator.real(0), accImaginary = accumulator.imaginary(0)
            accReal.update(repeating: 0, count: bins)
            accImaginary.update(repeating: 0, count: bins)
            // Oldest segment first, the newest block's last: the order `runSpreadShare` can keep.
            var segment = segmentCount - 1  // a while loop: `reversed()` allocates in unoptimized builds
            while segment >= 1 {
                delayLine.accumulate(real: accReal, imaginary: accImaginary, output: output,
                                     segments: segment..<segment + 1, newestSlot: slot, routing: routing)
                segment -= 1
            }
            finishOutput(output, block: block, accumulatorReal: accReal, accumulatorImaginary: accImaginary, routing: routing)
        }
    }

    /// Input `input`'s window of job `block` (its previous and its own block) into the delay line.
    @inline(__always)
    private func transformInput(_ input: Int, block: Int, history: InputHistory) {
        history.read(channel: input, from: (block - 1) * blockSize, count: 2 * blockSize, into: window.pointer)
        let x = delayLine.blockSpectrum(input: input, slot: delayLine.slot(ofBlock: block))
        fft.forward(window.pointer, real: delayLine.blocks.real(x), imaginary: delayLine.blocks.imaginary(x),
                    scratch: fftScratch.spectrum(0))
    }

    /// Adds segment 0 (the newest block) to `output`'s accumulator, inverse-transforms it and keeps
    /// the second half as the result of job `block`. The accumulator is left undefined.
    @inline(__always)
    private func finishOutput(_ output: Int, block: Int, accumulatorReal: UnsafeMutablePointer<Float>,
                              accumulatorImaginary: UnsafeMutablePointer<Float>, routing: Routing) {
        delayLine.accumulate(real: accumulatorReal, imaginary: accumulatorImaginary, output: output,
                             segments: 0..<1, newestSlot: delayLine.slot(ofBlock: block), routing: routing)
        fft.inverse(real: accumulatorReal, imaginary: accumulatorImaginary, output: timeBuffer.pointer,
                    scratch: fftScratch.spectrum(0))
        let resultBlock = results.pointer + (block % resultSlotCount) * routing.outputCount * blockSize
        (resultBlock + output * blockSize).update(from: timeBuffer.pointer + blockSize, count: blockSize)
    }

    /// Makes this a data-thread level whose jobs the engine spreads over its calls (`runSpreadShare`)
    /// instead of posting them. Setup only.
    func spreadOverCalls(routing: Routing) {
        spreadSums = SplitSpectra(count: 2 * routing.outputCount, binCount: fft.binCount)
    }

    /// A spread level's share of the work due by the end of the call piece
    /// `position ..< position + count` (never across one of this level's block boundaries), so that
    /// no call carries a whole job. While input block j + 1 arrives, job j finishes: the forward FFT
    /// of each input, then per output segment 0 and the inverse FFT; meanwhile job j + 1's older
    /// segments are summed, per output the newest (segment 1, block j) last. Job j is thus done
    /// one block after its post, at the earliest the time it is due. The same additions in the
    /// same order as `run`: bit-identical. Real-time safe.
    func runSpreadShare(position: Int, count: Int, history: InputHistory, routing: Routing) {
        guard let sums = spreadSums else { return }
        let inputCount = routing.inputCount, outputCount = routing.outputCount
        let receiving = position / blockSize
        let periodStart = receiving * blockSize
        if position == periodStart { finishingUnits = 0; summedUnits = 0 }
        let progress = position + count - periodStart
        let finishing = receiving - 1
        // Units of the finishing job: inputs' forward FFTs, then outputs.
        func finishUnit() {
            if finishingUnits < inputCount {
                transformInput(finishingUnits, block: finishing, history: history)
            } else {
                let output = finishingUnits - inputCount, sum = (finishing % 2) * outputCount + output
                finishOutput(output, block: finishing, accumulatorReal: sums.real(sum), accumulatorImaginary: sums.imaginary(sum),
                             routing: routing)
                sums.real(sum).update(repeating: 0, count: sums.paddedBinCount)  // ready for job `finishing + 2`
                sums.imaginary(sum).update(repeating: 0, count: sums.paddedBinCount)
            }
            finishingUnits += 1
        }
        if finishing >= 0 {
            let target = ((inputCount + outputCount) * progress + blockSize - 1) / blockSize
            while finishingUnits < target { finishUnit() }
        }
        // Units of the next job: (output, segment), output-major so that a call's units mostly add
        // into one accumulator (it stays in cache), each output's segments from the oldest down.
        let olderSegments = segmentCount - 1, receivingSlot = delayLine.slot(ofBlock: receiving)
        let target = (outputCount * olderSegments * progress + blockSize - 1) / blockSize
        while summedUnits < target {
            let output = summedUnits / olderSegments, segment = olderSegments - summedUnits % olderSegments
            if segment == 1 { while finishing >= 0 && finishingUnits < inputCount { finishUnit() } }  // block j's spectra
            let sum = (receiving % 2) * outputCount + output
            delayLine.accumulate(real: sums.real(sum), imaginary: sums.imaginary(sum), output: output,
                                 segments: segment..<segment + 1, newestSlot: receivingSlot, routing: routing)
            summedUnits += 1
        }
    }

    /// Adds this level's output for stream samples `position ..< position + count` (within one
    /// head block), awaiting the job that computed it when a new output block starts (unless a
    /// spread level's, done by then).
    /// Real-time safe; the wait is the scheduler's, bounded.
    func mixResult(into outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, outputOffset: Int, count: Int,
                   at position: Int, scheduler: any LevelJobScheduler, schedulerLevel: Int, awaitsJobs: Bool,
                   outputCount: Int) {
        let delayed = position - offset
        guard delayed >= 0 else { return }  // before the first output this level contributes to
        let block = delayed / blockSize
        if block != mixingBlock {
            mixingBlock = block
            mixingBlockReady = (!awaitsJobs || scheduler.awaitResult(level: schedulerLevel, block: block)) && block != testDroppedBlock
        }
        guard mixingBlockReady else { return }  // late: output without it, never block the graph
        let resultBlock = results.pointer + (block % resultSlotCount) * outputCount * blockSize
        let start = delayed - block * blockSize
        for output in 0..<outputCount {
            guard let destination = outputs[output] else { continue }
            let source = resultBlock + output * blockSize + start
            for n in 0..<count { destination[outputOffset + n] += source[n] }
        }
    }

    func reset() {
        delayLine.reset()
        results.zero()
        spreadSums?.zero()
        mixingBlock = -1
        mixingBlockReady = false
        finishingUnits = 0
        summedUnits = 0
    }
}
