import Convolution
import EngineTestSupport
import Foundation
import XCTest

/// `RealFFT` (one half-size complex FFTW plan and our own real/complex pass) against a direct DFT.
final class RealFFTTests: XCTestCase {
    func testForwardIsTheDFTAndInverseUndoesItTimesTheSize() {
        var generator = SeededGenerator(seed: 11)
        for size in [4, 8, 64, 512, 4096] {
            let fft = RealFFT.ofSize(size)
            let signal = [Float].noise(size, using: &generator)
            let input = AlignedFloats(count: size), output = AlignedFloats(count: size)
            let real = AlignedFloats(count: fft.binCount), imaginary = AlignedFloats(count: fft.binCount)
            let scratch = InterleavedSpectra(count: 1, binCount: fft.binCount)
            withExtendedLifetime((input, output, real, imaginary, scratch)) {
                for n in 0..<size { input.pointer[n] = signal[n] }
                fft.forward(input.pointer, real: real.pointer, imaginary: imaginary.pointer, scratch: scratch.spectrum(0))
                var worst = 0.0
                for k in 0..<fft.binCount {
                    var expectedReal = 0.0, expectedImaginary = 0.0
                    for n in 0..<size {
                        let angle = -2 * Double.pi * Double(k * n % size) / Double(size)
                        expectedReal += Double(signal[n]) * cos(angle)
                        expectedImaginary += Double(signal[n]) * sin(angle)
                    }
                    worst = max(worst, abs(Double(real.pointer[k]) - expectedReal), abs(Double(imaginary.pointer[k]) - expectedImaginary))
                }
                XCTAssertLessThan(worst, 1e-5 * Double(size), "forward, size \(size)")
                XCTAssertEqual(input.pointer[size - 1], signal[size - 1], "forward keeps its input")

                let spectrumBefore = (0..<fft.binCount).map { (real.pointer[$0], imaginary.pointer[$0]) }
                fft.inverse(real: real.pointer, imaginary: imaginary.pointer, output: output.pointer, scratch: scratch.spectrum(0))
                let roundTrip = (0..<size).map { abs(Double(output.pointer[$0]) / Double(size) - Double(signal[$0])) }.max()!
                XCTAssertLessThan(roundTrip, 1e-5, "inverse(forward(x)) / size, size \(size)")
                XCTAssertTrue(
                    (0..<fft.binCount).allSatisfy {
                        real.pointer[$0] == spectrumBefore[$0].0 && imaginary.pointer[$0] == spectrumBefore[$0].1
                    }, "inverse keeps the spectrum")
            }
        }
    }

    /// As FFTW's c2r: the imaginary parts of DC and Nyquist do not count.
    func testInverseReadsTheSpectrumAsARealSignals() {
        let size = 16
        let fft = RealFFT.ofSize(size)
        let real = AlignedFloats(count: fft.binCount), imaginary = AlignedFloats(count: fft.binCount)
        let output = AlignedFloats(count: size), scratch = InterleavedSpectra(count: 1, binCount: fft.binCount)
        withExtendedLifetime((real, imaginary, output, scratch)) {
            for k in 0..<fft.binCount { real.pointer[k] = 0; imaginary.pointer[k] = 0 }
            real.pointer[0] = 1
            imaginary.pointer[0] = 5
            imaginary.pointer[size / 2] = 7
            fft.inverse(real: real.pointer, imaginary: imaginary.pointer, output: output.pointer, scratch: scratch.spectrum(0))
            XCTAssertEqual((0..<size).map { output.pointer[$0] }, [Float](repeating: 1, count: size))
        }
    }
}
