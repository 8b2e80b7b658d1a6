import CSpectrumKernels

/// Levels 1...: uniformly partitioned overlap-save over IR samples `offset ..< end`, one job per
/// input block. Jobs of one level run one at a time, in order (the scheduler's promise), so the
/// level's scratch buffers are its own.
final class TailLevel {
    /// The engine's level number (≥ 1), the one the scheduler is given.
    let level: Int
    let blockSize: Int
    var segmentCount: Int { delayLine.segmentCount }
    let offset: Int
    let fft: RealFFT
    let delayLine: FrequencyDelayLine
    /// Per output: its spectrum being summed (a job's steps may be spread over calls).
    private let accumulators: SplitSpectra
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

    init(level number: Int, _ level: PartitionPlan.Level, impulses: [[Float]], routing: Routing) throws {
        self.level = number
        blockSize = level.blockSize
        offset = level.offset
        fft = try RealFFT.ofSize(2 * blockSize)
        delayLine = try FrequencyDelayLine(level, impulses: impulses, inputCount: routing.inputCount, fft: fft)
        accumulators = try SplitSpectra(count: routing.outputCount, binCount: fft.binCount)
        fftScratch = try InterleavedSpectra(count: 1, binCount: fft.binCount)
        window = try AlignedFloats(count: 2 * blockSize)
        timeBuffer = try AlignedFloats(count: 2 * blockSize)
        resultSlotCount = (offset + blockSize - 1) / blockSize + 2
        results = try AlignedFloats(count: resultSlotCount * routing.outputCount * blockSize)
        inputCount = routing.inputCount
        stepCount = routing.inputCount + routing.outputCount * (delayLine.segmentCount + 1)
    }

    /// Steps of a job: one per input, one per output and segment, one per output.
    let stepCount: Int
    private let inputCount: Int

    /// Steps `steps` of the job that makes output block `block` from input samples
    /// `(block - 1) * blockSize ..< (block + 1) * blockSize`, in order: each input's forward
    /// transform; each output's products, a segment at a time; each output's inverse transform.
    /// The steps cost about the same (one transform, or one segment's products for every input),
    /// so a job spread over calls in equal counts of steps spreads evenly. Real-time safe.
    func run(block: Int, steps: Range<Int>, history: InputHistory, routing: Routing) {
        let slot = delayLine.slot(ofBlock: block)
        let productSteps = routing.outputCount * segmentCount
        for step in steps {
            if step < inputCount {
                history.read(channel: step, from: (block - 1) * blockSize, count: 2 * blockSize, into: window.pointer)
                let x = delayLine.blockSpectrum(input: step, slot: slot)
                fft.forward(window.pointer, spectrum: delayLine.blocks.spectrum(x), scratch: fftScratch.spectrum(0))
            } else if step < inputCount + productSteps {
                let (output, segment) = (step - inputCount).quotientAndRemainder(dividingBy: segmentCount)
                let sum = accumulators.spectrum(output)
                if segment == 0 { sum.update(repeating: 0, count: 2 * delayLine.binCount) }
                delayLine.accumulate(
                    into: sum, output: output, segments: segment..<(segment + 1), newestSlot: slot, routing: routing)
            } else {
                let output = step - inputCount - productSteps
                fft.inverse(spectrum: accumulators.spectrum(output), output: timeBuffer.pointer, scratch: fftScratch.spectrum(0))
                let resultBlock = results.pointer + (block % resultSlotCount) * routing.outputCount * blockSize
                (resultBlock + output * blockSize).update(from: timeBuffer.pointer + blockSize, count: blockSize)
            }
        }
    }

    /// Adds this level's output for stream samples `position ..< position + count` (within one
    /// head block), awaiting the job that computed it when a new output block starts.
    /// Real-time safe; the wait is the scheduler's, bounded.
    func mixResult(
        into outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, outputOffset: Int, count: Int,
        at position: Int, scheduler: (any LevelJobScheduler)?, outputCount: Int
    ) {
        // Before the first output this level contributes to: nothing to mix.
        guard let (block, samples) = result(at: position, outputCount: outputCount) else { return }
        if block != mixingBlock {
            mixingBlock = block
            mixingBlockReady = scheduler?.awaitResult(level: level, block: block) ?? true
        }
        guard mixingBlockReady else { return }  // late: output without it, never block the graph
        for output in 0..<outputCount {
            guard let destination = outputs[output].map({ $0 + outputOffset }) else { continue }
            let source = samples + output * blockSize
            for n in 0..<count { destination[n] += source[n] }
        }
    }

    /// Asks the caches for the result samples `mixResult(at: position, count: count)` will read.
    /// A helper wrote them on the other core: prefetched before the head's work, they arrive while
    /// it runs instead of stalling the mix. Real-time safe.
    func prefetchResult(at position: Int, count: Int, outputCount: Int) {
        guard let (_, samples) = result(at: position, outputCount: outputCount) else { return }
        for output in 0..<outputCount {
            cspectrum_prefetch(samples + output * blockSize, count * MemoryLayout<Float>.size)
        }
    }

    /// The result block holding output sample `position`, and where output 0's sample for it lies
    /// in the results ring (output o's is `o * blockSize` further); nil before this level's offset.
    @inline(__always)
    private func result(at position: Int, outputCount: Int) -> (block: Int, samples: UnsafeMutablePointer<Float>)? {
        let delayed = position - offset
        guard delayed >= 0 else { return nil }
        let block = delayed / blockSize
        let resultBlock = results.pointer + (block % resultSlotCount) * outputCount * blockSize
        return (block, resultBlock + delayed - block * blockSize)
    }

    func reset() {
        delayLine.reset()
        results.zero()
        mixingBlock = -1
        mixingBlockReady = false
    }
}
