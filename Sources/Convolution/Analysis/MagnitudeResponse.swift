import Glibc

/// The magnitude response of one IR channel, |H(f)| in dB, on a uniform grid of `binCount` bins
/// from 0 Hz to Nyquist (bin k at k · sampleRate / fftSize). Not real-time code (allocates).
///
/// Exact samples of the IR's frequency response whatever its length: an IR longer than the FFT is
/// first folded (time-aliased) modulo the FFT size, h'[n] = Σ_k h[n + k·N], whose N-point DFT equals
/// the IR's own spectrum at those N frequencies. So a long reverb is sampled every
/// sampleRate / maxFFTSize Hz (1.5 Hz at 48 kHz) without a huge FFT, and a short one is
/// zero-padded to `minFFTSize` for a smooth curve.
public struct MagnitudeResponse: Sendable {
    /// The default largest FFT: 32768 is a size the planner measures anyway, so its FFTW plan
    /// exists already (a new size would cost seconds of FFTW_MEASURE on first use).
    public static let defaultMaxFFTSize = 1 << 15
    public static let minFFTSize = 4096

    public var sampleRate: Double
    public var fftSize: Int
    /// 20·log10|H| per bin; −∞ at exact zeros.
    public var magnitudeDB: [Float]

    public var binCount: Int { magnitudeDB.count }
    public func frequency(ofBin bin: Int) -> Double { Double(bin) * sampleRate / Double(fftSize) }

    public init(impulse: [Float], sampleRate: Double, maxFFTSize: Int = defaultMaxFFTSize) throws {
        var size = Self.minFFTSize
        while size < impulse.count && size < maxFFTSize { size *= 2 }
        self.sampleRate = sampleRate
        fftSize = size

        let fft = try RealFFT.ofSize(size)
        let samples = try AlignedFloats(count: size)
        // Folding in Double first: a long tail adds thousands of small values into each slot.
        var folded = [Double](repeating: 0, count: size)
        for (frame, sample) in impulse.enumerated() { folded[frame % size] += Double(sample) }
        for frame in 0..<size { samples.pointer[frame] = Float(folded[frame]) }
        let spectrum = try SplitSpectra(count: 1, binCount: fft.binCount)
        let scratch = try InterleavedSpectra(count: 1, binCount: fft.binCount)
        fft.forward(samples.pointer, spectrum: spectrum.spectrum(0), scratch: scratch.spectrum(0))
        magnitudeDB = (0..<fft.binCount).map { bin in
            Float(10 * log10(SplitSpectra.power(ofBin: bin, in: spectrum.spectrum(0))))
        }
    }

    /// The level at `frequency` averaged (in power) over a band `octaveFraction` of an octave wide
    /// centred on it, or the nearest bin where the band is narrower than a bin: the usual smoothing
    /// for showing a long IR's response, whose raw bins are as rough as noise.
    public func smoothedDB(at frequency: Double, octaveFraction: Double) -> Double {
        let halfBand = pow(2, octaveFraction / 2)
        let binWidth = sampleRate / Double(fftSize)
        let low = max(0, Int((frequency / halfBand / binWidth).rounded(.up)))
        let high = min(binCount - 1, Int((frequency * halfBand / binWidth).rounded(.down)))
        guard low <= high else {
            return Double(magnitudeDB[min(binCount - 1, max(0, Int((frequency / binWidth).rounded())))])
        }
        var power = 0.0
        for bin in low...high { power += pow(10, Double(magnitudeDB[bin]) / 10) }
        return 10 * log10(power / Double(high - low + 1))
    }
}
