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

    init(_ level: PartitionPlan.Level, impulses: [[Float]], inputCount: Int, fft: RealFFT) throws {
        segmentCount = level.segmentCount
        blocks = try SplitSpectra(count: inputCount * level.segmentCount, binCount: fft.binCount)
        binCount = blocks.paddedBinCount
        filters = try SplitSpectra(count: impulses.count * level.segmentCount, binCount: fft.binCount)
        let window = try AlignedFloats(count: fft.size)
        let scratch = try InterleavedSpectra(count: 1, binCount: fft.binCount)
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
                fft.forward(window.pointer, spectrum: filters.spectrum(index), scratch: scratch.spectrum(0))
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
    func accumulate(
        into accumulator: UnsafeMutablePointer<Float>, output: Int, segments: Range<Int>, newestSlot: Int,
        routing: Routing
    ) {
        for segment in segments {
            // Slots of blocks before the start were never written: they hold zeros.
            let slot = (newestSlot + segment) % segmentCount
            for entry in routing.firstEntry[output]..<routing.firstEntry[output + 1] {
                let x = blockSpectrum(input: routing.entryInput[entry], slot: slot)
                let h = entry * segmentCount + segment
                SpectrumKernels.multiplyAdd(
                    accumulator: accumulator, x: blocks.spectrum(x), h: filters.spectrum(h), binCount: binCount)
            }
        }
    }

    /// Real-time safe.
    func reset() { blocks.zero() }
}
