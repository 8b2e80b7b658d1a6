import Glibc

/// Gains that make pink noise come out of a matrix at the level it went in: for each output, the
/// power gain of its IRs for pink noise (1/f over 20 Hz–20 kHz), every input playing its own
/// uncorrelated noise at the same level, inverted. Unlike a broadband (white) normalisation, or
/// `min(1, 1/sqrt(power))`, it weighs frequencies as music and speech do: a hall's bass and a
/// HRTF's treble count as much as they are heard.
public enum Autogain {
    /// The band of the pink weighting: the audible one (what is below or above it is not heard,
    /// so it must not set the level).
    public static let band: ClosedRange<Double> = 20...20_000

    /// Linear gain per output (1 for an output without IRs or with a silent one).
    public static func gains(_ matrix: ConvolutionMatrix, sampleRate: Double) throws -> [Float] {
        let length = max(4, matrix.impulseLength)
        var size = 4
        while size < 2 * length { size *= 2 }
        let fft = try RealFFT.ofSize(size)
        let samples = try AlignedFloats(count: size)
        let spectrum = try SplitSpectra(count: 1, binCount: fft.binCount)
        let scratch = try InterleavedSpectra(count: 1, binCount: fft.binCount)
        // Pink: power 1/f per bin, over the band (below Nyquist).
        let binHz = sampleRate / Double(size)
        let bins = (1..<fft.binCount).filter { band.contains(Double($0) * binHz) }
        let weights = bins.map { 1 / (Double($0) * binHz) }
        let weightSum = weights.reduce(0, +)
        var power = [Double](repeating: 0, count: matrix.outputCount)
        for entry in matrix.entries where !entry.impulse.isEmpty {
            samples.pointer.update(repeating: 0, count: size)
            entry.impulse.withUnsafeBufferPointer { samples.pointer.update(from: $0.baseAddress!, count: $0.count) }
            fft.forward(samples.pointer, spectrum: spectrum.spectrum(0), scratch: scratch.spectrum(0))
            var weighted = 0.0
            for (bin, weight) in zip(bins, weights) {
                weighted += weight * SplitSpectra.power(ofBin: bin, in: spectrum.spectrum(0))
            }
            power[entry.output] += weightSum > 0 ? weighted / weightSum : 0
        }
        return power.map { $0 > 0 ? Float(1 / $0.squareRoot()) : 1 }
    }

    /// `matrix` with each output's IRs scaled by its gain.
    public static func apply(_ gains: [Float], to matrix: ConvolutionMatrix) -> ConvolutionMatrix {
        ConvolutionMatrix(
            inputCount: matrix.inputCount, outputCount: matrix.outputCount,
            entries: matrix.entries.map { entry in
                ConvolutionMatrix.Entry(input: entry.input, output: entry.output, impulse: entry.impulse.map { $0 * gains[entry.output] })
            })
    }
}
