import Glibc

/// What the planner needs to know about this machine, measured on it: the time of a real FFT
/// (forward + inverse) per size, of one complex multiply-add per bin, and of one tap of a direct
/// (time-domain) head per output sample.
public struct MachineCosts: Sendable, Equatable {
    /// Nanoseconds for one forward plus one inverse real FFT, by FFT size.
    public var fftPairNanoseconds: [Int: Double]
    /// Nanoseconds per bin of `SpectrumKernels.multiplyAdd`, its spectra read from memory. In a live
    /// graph other processes run between two cycles, so a level finds its spectra out of cache,
    /// however few they are: priced at the in-cache cost (a third of this), plans took long
    /// delay lines where levels of larger blocks cost less (docs/facts.md, "Pricing multiply-adds").
    public var multiplyAddNanosecondsPerBin: Double
    /// Nanoseconds per tap and output sample of `DirectHead`'s sums, in cache (its taps and window
    /// are a few kilobytes, read again on every call).
    public var directTapNanoseconds: Double

    public init(fftPairNanoseconds: [Int: Double], multiplyAddNanosecondsPerBin: Double, directTapNanoseconds: Double) {
        self.fftPairNanoseconds = fftPairNanoseconds
        self.multiplyAddNanosecondsPerBin = multiplyAddNanosecondsPerBin
        self.directTapNanoseconds = directTapNanoseconds
    }

    public func fftPair(_ size: Int) -> Double {
        if let measured = fftPairNanoseconds[size] { return measured }
        // Past the measured range, scale the largest measurement by N log N.
        let (largest, time) = fftPairNanoseconds.max { $0.key < $1.key }!
        let scale = Double(size) * log2(Double(size)) / (Double(largest) * log2(Double(largest)))
        return time * scale
    }

    public func multiplyAdd(bins: Int) -> Double { Double(bins) * multiplyAddNanosecondsPerBin }

    public func directTaps(_ tapSamples: Double) -> Double { tapSamples * directTapNanoseconds }

    /// Costs typical of the 2-vCPU Xeon this project is measured on (the median of its measurements):
    /// what the engine plans with unless told otherwise, the same on every machine, so that tests and
    /// offline uses plan alike everywhere. The node and the CLI plan with `MeasuredMachineCosts`.
    public static let typical = MachineCosts(
        fftPairNanoseconds: [
            64: 150, 128: 250, 256: 450, 512: 900, 1024: 1900, 2048: 3800, 4096: 9000, 8192: 20000, 16384: 48000,
            32768: 110_000,
        ],
        multiplyAddNanosecondsPerBin: 0.57, directTapNanoseconds: 0.08)

    /// Times this machine's kernels (tens of milliseconds; FFT planning first, cached as FFTW wisdom).
    public static func measure(fftSizes: [Int]) throws -> MachineCosts {
        var fftTimes: [Int: Double] = [:]
        for size in fftSizes {
            let fft = try RealFFT.ofSize(size)
            let samples = try AlignedFloats(count: size)
            let spectrum = try SplitSpectra(count: 1, binCount: fft.binCount)
            let scratch = try InterleavedSpectra(count: 1, binCount: fft.binCount)
            for n in 0..<size { samples.pointer[n] = Float(n % 7) - 3 }
            let repetitions = max(4, (1 << 20) / size)
            fftTimes[size] =
                fastestOf(3) {
                    for _ in 0..<repetitions {
                        fft.forward(samples.pointer, spectrum: spectrum.spectrum(0), scratch: scratch.spectrum(0))
                        fft.inverse(spectrum: spectrum.spectrum(0), output: samples.pointer, scratch: scratch.spectrum(0))
                        samples.pointer[0] = 0.5  // keep values bounded: inverse scales by size
                    }
                } / Double(repetitions)
        }
        return try MachineCosts(
            fftPairNanoseconds: fftTimes,
            multiplyAddNanosecondsPerBin: multiplyAddCost(), directTapNanoseconds: directTapCost())
    }

    /// A 64-tap direct head's sums over calls of 256 frames.
    private static func directTapCost() throws -> Double {
        let taps = 64, frames = 256, repetitions = 200
        let window = try AlignedFloats(count: taps + frames + DirectHead.stride)
        let tapValues = try AlignedFloats(count: taps)
        let sums = try AlignedFloats(count: frames + DirectHead.stride)
        for n in 0..<taps { tapValues.pointer[n] = Float(n % 5) * 0.01 }
        for n in 0..<(taps + frames) { window.pointer[n] = Float(n % 7) - 3 }
        let time = fastestOf(3) {
            for _ in 0..<repetitions {
                DirectHead.accumulate(
                    into: sums.pointer, window: window.pointer, taps: tapValues.pointer, tapCount: taps, count: frames)
                sums.pointer[0] = 0  // keep values bounded
            }
        }
        return time / Double(repetitions * taps * frames)
    }

    /// One accumulator against many (x, h) spectrum pairs, as a delay line does, over more spectra
    /// than the caches hold.
    private static func multiplyAddCost() throws -> Double {
        let binsPerSpectrum = 1024, pairs = 2048, sweeps = 2  // 2 × 16 MB of spectra
        let x = try SplitSpectra(count: pairs, binCount: binsPerSpectrum)
        let h = try SplitSpectra(count: pairs, binCount: binsPerSpectrum)
        let accumulator = try SplitSpectra(count: 1, binCount: binsPerSpectrum)
        let time = fastestOf(3) {
            for _ in 0..<sweeps {
                for pair in 0..<pairs {
                    SpectrumKernels.multiplyAdd(
                        accumulator: accumulator.spectrum(0), x: x.spectrum(pair), h: h.spectrum(pair),
                        binCount: binsPerSpectrum)
                }
            }
        }
        return time / Double(sweeps * pairs * binsPerSpectrum)
    }
}

/// The fastest of `runs` timings of `body`, in nanoseconds (the least disturbed by a noisy machine).
func fastestOf(_ runs: Int, _ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    var best = Duration.seconds(Int64.max)
    for _ in 0..<runs { best = min(best, clock.measure(body)) }
    return Double(best.components.seconds) * 1e9 + Double(best.components.attoseconds) / 1e9
}
