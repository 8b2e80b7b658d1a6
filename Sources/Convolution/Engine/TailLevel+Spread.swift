/// A tail level the engine runs itself on the data thread: each job spread over the calls of its
/// block period, so that no call carries a whole job (the shortest levels, whose jobs are cheap or
/// due too soon for a helper's wake-up).
extension TailLevel {
    /// A spread level's running state.
    final class SpreadState {
        /// Running sums, two sets by job parity (job j's older segments are summed while job j − 1
        /// finishes).
        let sums: SplitSpectra
        /// Of the jobs in progress in this block period: units of the finishing job done (inputs'
        /// FFTs, then outputs), and (output, segment) units of the next job summed.
        var finishingUnits = 0
        var summedUnits = 0

        init(sums: SplitSpectra) { self.sums = sums }

        func reset() {
            sums.zero()
            finishingUnits = 0
            summedUnits = 0
        }
    }

    /// Makes this a data-thread level whose jobs the engine spreads over its calls (`runSpreadShare`)
    /// instead of posting them. Setup only.
    func spreadOverCalls(routing: Routing) {
        spread = SpreadState(sums: SplitSpectra(count: 2 * routing.outputCount, binCount: fft.binCount))
    }

    /// A spread level's share of the work due by the end of the call piece
    /// `position ..< position + count` (never across one of this level's block boundaries), so that
    /// no call carries a whole job. While input block j + 1 arrives, job j finishes: the forward FFT
    /// of each input, then per output segment 0 and the inverse FFT; meanwhile job j + 1's older
    /// segments are summed, per output the newest (segment 1, block j) last. Job j is thus done
    /// one block after its post, at the earliest the time it is due. The same additions in the
    /// same order as `run`: bit-identical. Real-time safe.
    func runSpreadShare(position: Int, count: Int, history: InputHistory, routing: Routing) {
        guard let spread else { return }
        let sums = spread.sums
        let inputCount = routing.inputCount, outputCount = routing.outputCount
        let receiving = position / blockSize
        let periodStart = receiving * blockSize
        if position == periodStart { spread.finishingUnits = 0; spread.summedUnits = 0 }
        let progress = position + count - periodStart
        let finishing = receiving - 1
        // Units of the finishing job: inputs' forward FFTs, then outputs.
        func finishUnit() {
            if spread.finishingUnits < inputCount {
                transformInput(spread.finishingUnits, block: finishing, history: history)
            } else {
                let output = spread.finishingUnits - inputCount, sum = (finishing % 2) * outputCount + output
                finishOutput(output, block: finishing, sum: sums.spectrum(sum), routing: routing)
                sums.spectrum(sum).update(repeating: 0, count: 2 * sums.paddedBinCount)  // ready for job `finishing + 2`
            }
            spread.finishingUnits += 1
        }
        if finishing >= 0 {
            let target = ((inputCount + outputCount) * progress + blockSize - 1) / blockSize
            while spread.finishingUnits < target { finishUnit() }
        }
        // Units of the next job: (output, segment), output-major so that a call's units mostly add
        // into one accumulator (it stays in cache), each output's segments from the oldest down.
        let olderSegments = segmentCount - 1, receivingSlot = delayLine.slot(ofBlock: receiving)
        let target = (outputCount * olderSegments * progress + blockSize - 1) / blockSize
        while spread.summedUnits < target {
            let output = spread.summedUnits / olderSegments, segment = olderSegments - spread.summedUnits % olderSegments
            if segment == 1 { while finishing >= 0 && spread.finishingUnits < inputCount { finishUnit() } }  // block j's spectra
            let sum = (receiving % 2) * outputCount + output
            delayLine.accumulate(
                into: sums.spectrum(sum), output: output, segments: segment..<segment + 1, newestSlot: receivingSlot,
                routing: routing)
            spread.summedUnits += 1
        }
    }
}
