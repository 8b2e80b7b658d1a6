import Convolution
import EngineTestSupport
import Foundation
import XCTest

/// `RealFFT` (one half-size complex FFTW plan and our own real/complex pass) against a direct DFT.
final class RealFFTTests: XCTestCase {
    func testForwardIsTheDFTAndInverseUndoesItTimesTheSize() throws {
        var generator = SeededGenerator(seed: 11)
        for size in [4, 8, 64, 512, 4096] {
            let fft = try RealFFT.ofSize(size)
            let signal = [Float].noise(size, using: &generator)
            let input = try AlignedFloats(count: size), output = try AlignedFloats(count: size)
            let spectra = try SplitSpectra(count: 1, binCount: fft.binCount), spectrum = spectra.spectrum(0)
            let scratch = try InterleavedSpectra(count: 1, binCount: fft.binCount)
            func real(_ bin: Int) -> Float { spectrum[SplitSpectra.realOffset(ofBin: bin)] }
            func imaginary(_ bin: Int) -> Float { spectrum[SplitSpectra.imaginaryOffset(ofBin: bin)] }
            withExtendedLifetime((input, output, spectra, scratch)) {
                for n in 0..<size { input.pointer[n] = signal[n] }
                fft.forward(input.pointer, spectrum: spectrum, scratch: scratch.spectrum(0))
                var worst = 0.0
                for k in 0..<fft.binCount {
                    var expectedReal = 0.0, expectedImaginary = 0.0
                    for n in 0..<size {
                        let angle = -2 * Double.pi * Double(k * n % size) / Double(size)
                        expectedReal += Double(signal[n]) * cos(angle)
                        expectedImaginary += Double(signal[n]) * sin(angle)
                    }
                    worst = max(worst, abs(Double(real(k)) - expectedReal), abs(Double(imaginary(k)) - expectedImaginary))
                }
                XCTAssertLessThan(worst, 1e-5 * Double(size), "forward, size \(size)")
                XCTAssertEqual(input.pointer[size - 1], signal[size - 1], "forward keeps its input")

                let spectrumBefore = (0..<fft.binCount).map { (real($0), imaginary($0)) }
                fft.inverse(spectrum: spectrum, output: output.pointer, scratch: scratch.spectrum(0))
                let roundTrip = (0..<size).map { abs(Double(output.pointer[$0]) / Double(size) - Double(signal[$0])) }.max()!
                XCTAssertLessThan(roundTrip, 1e-5, "inverse(forward(x)) / size, size \(size)")
                XCTAssertTrue(
                    (0..<fft.binCount).allSatisfy { real($0) == spectrumBefore[$0].0 && imaginary($0) == spectrumBefore[$0].1 },
                    "inverse keeps the spectrum")
            }
        }
    }

    /// As FFTW's c2r: the imaginary parts of DC and Nyquist do not count.
    func testInverseReadsTheSpectrumAsARealSignals() throws {
        let size = 16
        let fft = try RealFFT.ofSize(size)
        let spectra = try SplitSpectra(count: 1, binCount: fft.binCount), spectrum = spectra.spectrum(0)
        let output = try AlignedFloats(count: size), scratch = try InterleavedSpectra(count: 1, binCount: fft.binCount)
        withExtendedLifetime((spectra, output, scratch)) {
            spectrum[SplitSpectra.realOffset(ofBin: 0)] = 1
            spectrum[SplitSpectra.imaginaryOffset(ofBin: 0)] = 5
            spectrum[SplitSpectra.imaginaryOffset(ofBin: size / 2)] = 7
            fft.inverse(spectrum: spectrum, output: output.pointer, scratch: scratch.spectrum(0))
            XCTAssertEqual((0..<size).map { output.pointer[$0] }, [Float](repeating: 1, count: size))
        }
    }
}
