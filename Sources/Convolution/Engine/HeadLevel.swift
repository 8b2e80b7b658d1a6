import FixedMemory

/// Level 0: uniformly partitioned overlap-add with the partial-block trick. Every call piece
/// transforms the current, partly filled block, so output sample n depends only on input samples
/// up to n (no added latency) whatever the call size.
///
/// Per output and piece: the older blocks' sum (fixed within a block, kept per output and labelled
/// with its block) plus the newest block's product, inverse-transformed (`transformOutput`), then
/// mixed with the last block's overlap (`mix`). With a fork-join split (`HeadSplit`) the per-output
/// work is cut into parts that run concurrently; the sums and their order stay the same, so the
/// output is the same to the bit.
final class HeadLevel: Head {
    let blockSize: Int
    var segmentCount: Int { delayLine.segmentCount }
    let outputCount: Int
    /// Samples of the current block received so far.
    private(set) var fill = 0
    /// Delay-line slot of the current block (always `delayLine.slot(ofBlock: blockSerial)`).
    private(set) var current = 0
    /// Blocks completed since the start: names the block an older-blocks sum was computed for.
    private(set) var blockSerial = 0
    let fft: RealFFT
    let delayLine: FrequencyDelayLine
    /// Per output: the sum over segments 1..<segmentCount for block `olderSumBlock[output]`.
    private let olderBlocksSum: SplitSpectra
    /// Per output: the `blockSerial` whose older-blocks sum `olderBlocksSum` holds (-1: none).
    /// Written only by whoever computes the output (the data thread, or its split part's helper).
    private let olderSumBlock: FixedBuffer<Int>
    /// The data thread's accumulator and FFT scratch.
    let accumulator: SplitSpectra
    let fftScratch: InterleavedSpectra
    /// Per input: the current block, zero-padded to the FFT size.
    private let blockBuffers: AlignedFloats
    let timeBuffer: AlignedFloats
    /// Per output: the second half of the last full block's inverse FFT, added to the next block.
    let overlap: AlignedFloats
    /// The fork-join split of the per-output work (`configureSplit`); nil: all on the data thread.
    private(set) var split: HeadSplit?

    init(_ level: PartitionPlan.Level, impulses: [[Float]], routing: Routing) throws {
        blockSize = level.blockSize
        outputCount = routing.outputCount
        fft = try RealFFT.ofSize(2 * blockSize)
        delayLine = try FrequencyDelayLine(level, impulses: impulses, inputCount: routing.inputCount, fft: fft)
        olderBlocksSum = try SplitSpectra(count: routing.outputCount, binCount: fft.binCount)
        olderSumBlock = try FixedBuffer(repeating: -1, count: routing.outputCount)
        accumulator = try SplitSpectra(count: 1, binCount: fft.binCount)
        fftScratch = try InterleavedSpectra(count: 1, binCount: fft.binCount)
        blockBuffers = try AlignedFloats(count: routing.inputCount * 2 * blockSize)
        timeBuffer = try AlignedFloats(count: 2 * blockSize)
        overlap = try AlignedFloats(count: routing.outputCount * blockSize)
    }

    var frameRoom: Int { blockSize - fill }
    /// The per-output work splits by output.
    var splitUnitCount: Int { outputCount }
    var partCount: Int { split?.partCount ?? 1 }

    /// Cuts the per-output work into `partCount` parts (at most one per output). Setup only,
    /// before the first `process`.
    func configureSplit(partCount requested: Int, routing: Routing) throws {
        let parts = min(max(requested, 1), max(outputCount, 1))
        split = parts > 1 ? try HeadSplit(partCount: parts, blockSize: blockSize, binCount: fft.binCount, routing: routing) : nil
    }

    /// Runs part `part` of the split for call piece `sequence` (`HeadSplit.runPart`). Real-time safe.
    func runPart(_ part: Int, sequence: Int, routing: Routing) {
        split?.runPart(part, sequence: sequence, head: self, routing: routing)
    }

    /// Writes (not adds) the head's output for `count` samples that do not cross a block boundary.
    /// Real-time safe; with a split, waits for the parts at most until the scheduler's limit.
    func process(
        inputs: UnsafePointer<UnsafePointer<Float>?>, inputOffset: Int,
        outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, outputOffset: Int,
        count: Int, routing: Routing, scheduler: (any LevelJobScheduler)?
    ) {
        let start = fill
        for input in 0..<routing.inputCount {
            let block = blockBuffers.pointer + input * 2 * blockSize
            if let source = inputs[input] {
                (block + start).update(from: source + inputOffset, count: count)
            } else {
                (block + start).update(repeating: 0, count: count)
            }
            let x = delayLine.blockSpectrum(input: input, slot: current)
            fft.forward(block, spectrum: delayLine.blocks.spectrum(x), scratch: fftScratch.spectrum(0))
        }
        let piece = Piece(
            outputs: outputs, outputOffset: outputOffset, start: start, count: count,
            completesBlock: start + count == blockSize)
        if let split {
            split.process(piece, head: self, routing: routing, scheduler: scheduler)
        } else {
            for output in 0..<routing.outputCount {
                updateOlderBlocksSum(output, block: blockSerial, newestSlot: current, routing: routing)
                transformOutput(
                    output, newestSlot: current, olderSum: output, accumulator: accumulator.spectrum(0),
                    scratch: fftScratch.spectrum(0), into: timeBuffer.pointer, routing: routing)
                mix(output: output, time: timeBuffer.pointer, piece)
            }
        }
        fill += count
        if piece.completesBlock {
            fill = 0
            blockSerial += 1
            current = delayLine.slot(ofBlock: blockSerial)
            for input in 0..<routing.inputCount {
                (blockBuffers.pointer + input * 2 * blockSize).update(repeating: 0, count: blockSize)
            }
        }
    }

    /// Where one call piece's output goes.
    struct Piece {
        var outputs: UnsafePointer<UnsafeMutablePointer<Float>?>
        var outputOffset: Int
        /// Its first sample's place in the current block, and its length.
        var start: Int
        var count: Int
        var completesBlock: Bool
    }

    /// Makes `olderBlocksSum[output]` the sum over segments 1..<segmentCount for `block`, unless it
    /// holds that block's already (once per output and block). Real-time safe.
    @inline(__always)
    func updateOlderBlocksSum(_ output: Int, block: Int, newestSlot: Int, routing: Routing) {
        guard olderSumBlock[output] != block else { return }
        let sum = olderBlocksSum.spectrum(output)
        sum.update(repeating: 0, count: 2 * delayLine.binCount)
        delayLine.accumulate(
            into: sum, output: output, segments: 1..<max(1, segmentCount), newestSlot: newestSlot, routing: routing)
        olderSumBlock[output] = block
    }

    /// The piece's spectrum of `output` (the older blocks' sum, then the newest block's product)
    /// inverse-transformed into `time` (2 × blockSize). `olderSum`: the output whose
    /// `olderBlocksSum` to start from, or nil to sum the older blocks here (into the accumulator
    /// only: the same additions in the same order, so the same bits). Uses `accumulator` (one
    /// spectrum) and `scratch`, whoever's they are. Real-time safe.
    @inline(__always)
    func transformOutput(
        _ output: Int, newestSlot: Int, olderSum: Int?, accumulator: UnsafeMutablePointer<Float>,
        scratch: UnsafeMutablePointer<Float>, into time: UnsafeMutablePointer<Float>, routing: Routing
    ) {
        let floats = 2 * delayLine.binCount
        if let olderSum {
            accumulator.update(from: olderBlocksSum.spectrum(olderSum), count: floats)
        } else {
            accumulator.update(repeating: 0, count: floats)
            delayLine.accumulate(
                into: accumulator, output: output, segments: 1..<max(1, segmentCount), newestSlot: newestSlot,
                routing: routing)
        }
        delayLine.accumulate(into: accumulator, output: output, segments: 0..<1, newestSlot: newestSlot, routing: routing)
        fft.inverse(spectrum: accumulator, output: time, scratch: scratch)
    }

    /// Output = this block's inverse FFT + the last block's overlap; at the block's end the second
    /// half becomes the next overlap. Real-time safe.
    @inline(__always)
    func mix(output: Int, time: UnsafeMutablePointer<Float>, _ piece: Piece) {
        let tail = overlap.pointer + output * blockSize
        if let destination = piece.outputs[output] {
            // Offsets added once, outside the loop: then it has no overflow checks and is vectorised.
            let samples = destination + piece.outputOffset, block = time + piece.start, last = tail + piece.start
            for n in 0..<piece.count { samples[n] = block[n] + last[n] }
        }
        if piece.completesBlock { tail.update(from: time + blockSize, count: blockSize) }
    }

    /// The cost of a call that starts a block: every input's forward FFT, every output's older-
    /// blocks sum, current-block product and inverse FFT. Setup only.
    func estimatedBlockStartNanoseconds(costs: MachineCosts, routing: Routing) -> Double {
        let fftSize = 2 * blockSize
        let halfPair = costs.fftPair(fftSize) / 2
        let bins = delayLine.binCount
        let products = routing.entryCount * segmentCount
        return Double(routing.inputCount + routing.outputCount) * halfPair
            + costs.multiplyAdd(bins: products * bins)
    }

    func reset() {
        fill = 0
        current = 0
        blockSerial = 0
        split?.reset()
        delayLine.reset()
        blockBuffers.zero()
        overlap.zero()
        olderSumBlock.fill(with: -1)
    }
}
