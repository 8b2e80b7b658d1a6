import FixedMemory

/// The head level's fork-join split: after the data thread's forward FFTs of the inputs, the
/// per-output work (multiply-adds and inverse FFT) of each call piece is cut into parts by output.
/// Part 0 runs on the data thread, parts 1... on the scheduler's helpers
/// (`LevelJobScheduler.postSplitPart`).
///
/// Each part writes only its own outputs' scratch (`outputTimes`, the head's older-blocks sums) and
/// its own accumulator. The data thread mixes an output into the call's output and updates its
/// overlap only after the part completed in time; a late part's outputs get the overlap only, and
/// its later completion touches nothing the data thread reads, because the part is not posted
/// again (the data thread computes those outputs itself, in its own scratch) until it completed.
/// A late part may read delay-line slots the data thread is already overwriting for the next call:
/// what it computes from them is never mixed, and its older-blocks sum is labelled with the block
/// it was computed for, which is then over (slots of older blocks change only when a block starts),
/// so no later call uses it.
final class HeadSplit {
    let partCount: Int
    private let blockSize: Int
    /// Part p computes outputs `partStart[p] ..< partStart[p + 1]`.
    private let partStart: FixedBuffer<Int>
    /// Per part: its multiply-add accumulator and FFT scratch (parts run concurrently).
    private let partAccumulators: SplitSpectra
    private let partFFTScratch: InterleavedSpectra
    /// Per output: the inverse FFT of this piece's spectrum (2 × blockSize), written by its part.
    private let outputTimes: AlignedFloats
    /// Per part, this piece's outcome.
    private let partOutcome: FixedBuffer<PartOutcome>
    /// Call pieces since the start, for the parts' sequence numbers.
    private var pieceSerial = 0

    /// Parts of about equal numbers of matrix entries, each with at least one output. Setup only.
    init(partCount parts: Int, blockSize: Int, binCount: Int, routing: Routing) throws {
        partCount = parts
        self.blockSize = blockSize
        let outputCount = routing.outputCount
        partStart = try FixedBuffer(repeating: 0, count: parts + 1)
        for part in 1..<parts {
            // The first output whose entries start at or after this part's share of all entries,
            // leaving at least one output for every part on either side.
            let target = part * routing.entryCount / parts
            var output = partStart[part - 1] + 1
            while output < outputCount - (parts - part) && routing.firstEntry[output] < target { output += 1 }
            partStart[part] = output
        }
        partStart[parts] = outputCount
        partAccumulators = try SplitSpectra(count: parts, binCount: binCount)
        partFFTScratch = try InterleavedSpectra(count: parts, binCount: binCount)
        outputTimes = try AlignedFloats(count: outputCount * 2 * blockSize)
        partOutcome = try FixedBuffer(repeating: .ready, count: parts)
    }

    /// Fork-join: semaphore out to parts 1..., part 0 here, semaphore back (bounded), then mix.
    /// Real-time safe (data thread).
    func process(_ piece: HeadLevel.Piece, head: HeadLevel, routing: Routing, scheduler: (any LevelJobScheduler)?) {
        pieceSerial += 1
        // The block serial rides in the sequence number, so a part needs no shared parameters
        // (which a late part might read after the data thread changed them).
        let sequence = head.blockSerial << 32 | (pieceSerial & 0xFFFF_FFFF)
        for part in 1..<partCount {
            partOutcome[part] = scheduler?.postSplitPart(part: part, sequence: sequence) == true ? .late : .notPosted
        }
        runPart(0, sequence: sequence, head: head, routing: routing)
        partOutcome[0] = .ready
        for part in 1..<partCount where partOutcome[part] == .late {
            if scheduler?.awaitSplitPart(part: part, sequence: sequence) == true { partOutcome[part] = .ready }
        }
        for part in 0..<partCount {
            for output in partStart[part]..<partStart[part + 1] {
                switch partOutcome[part] {
                case .ready:
                    head.mix(output: output, time: outputTimes.pointer + output * 2 * blockSize, piece)
                case .late:
                    // Late: output without this block's head for these outputs; the overlap of the
                    // last block still sounds, and the next block starts without a tail from this one.
                    let tail = head.overlap.pointer + output * blockSize
                    if let destination = piece.outputs[output] {
                        (destination + piece.outputOffset).update(from: tail + piece.start, count: piece.count)
                    }
                    if piece.completesBlock { tail.update(repeating: 0, count: blockSize) }
                case .notPosted:
                    // The part's helper still runs a late piece and owns the part's scratch: the data
                    // thread computes these outputs in its own (same sums, same order: same bits).
                    head.transformOutput(
                        output, newestSlot: head.current, olderSum: nil, accumulator: head.accumulator.spectrum(0),
                        scratch: head.fftScratch.spectrum(0), into: head.timeBuffer.pointer,
                        routing: routing)
                    head.mix(output: output, time: head.timeBuffer.pointer, piece)
                }
            }
        }
    }

    /// One part: for each of its outputs, the older-blocks sum (once per block), this piece's
    /// spectrum and its inverse FFT into `outputTimes`. Touches only the part's own outputs'
    /// scratch and its own accumulator; reads the delay line and the filters.
    /// Real-time safe (data thread for part 0, a helper for the others).
    func runPart(_ part: Int, sequence: Int, head: HeadLevel, routing: Routing) {
        let block = sequence >> 32
        let newestSlot = head.delayLine.slot(ofBlock: block)
        for output in partStart[part]..<partStart[part + 1] {
            head.updateOlderBlocksSum(output, block: block, newestSlot: newestSlot, routing: routing)
            head.transformOutput(
                output, newestSlot: newestSlot, olderSum: output, accumulator: partAccumulators.spectrum(part),
                scratch: partFFTScratch.spectrum(part),
                into: outputTimes.pointer + output * 2 * blockSize, routing: routing)
        }
    }

    func reset() { pieceSerial = 0 }
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
