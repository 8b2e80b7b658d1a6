import Convolution
import EngineTestSupport
import Foundation
import XCTest

/// An IR at another rate than the graph's, against an independent resampler: scipy's
/// `resample_poly` (EngineTestSupport's ResampleReference). The IR is cabinet-like: energy from its first
/// frames, so libsoxr's linear-phase filter rings before time 0 at the new rate. By default that
/// ringing is cut: the IR keeps its timing (peak on the reference's frame: zero added latency).
final class ResamplingReferenceTests: XCTestCase {
    private let ratePairs: [(source: Double, target: Double)] = [
        (44_100, 48_000), (48_000, 44_100), (96_000, 48_000),
        (22_050, 48_000),
    ]

    func testResampledIRMatchesScipyResamplePolyAtItsOwnTime() throws {
        let directory = try IRTestDirectory()
        for (sourceRate, targetRate) in ratePairs {
            let cabinet = try ResampleReference.writeCabinet(rate: sourceRate, directory: directory.url.path)
            let ir = try ImpulseResponse.load(cabinet.wav, sampleRate: targetRate)
            let verdict = try ResampleReference.judge(
                ir.channels[0], targetRate: targetRate, of: cabinet,
                directory: directory.url.path)
            let label = "\(Int(sourceRate)) -> \(Int(targetRate)) Hz: \(verdict), ringing cut, its peak at \(ir.preRingingPeakDB ?? 0) dB"
            print(label)
            XCTAssertEqual(ir.addedDelayFrames, 0, label)
            XCTAssertEqual(verdict.oursPeakFrame, verdict.referencePeakFrame, label)
            XCTAssertLessThanOrEqual(verdict.errorAfterHeadDB, -60, label)
            XCTAssertEqual(verdict.gainDB, 0, accuracy: 0.05, label)
        }
    }

    /// With `preRinging: .keep` the same samples come, `addedDelayFrames` later, behind the
    /// ringing the default cuts; that ringing is the part the loader reports in dB.
    func testKeptPreRingingIsTheSameIRLater() throws {
        let directory = try IRTestDirectory()
        for (sourceRate, targetRate) in ratePairs {
            let cabinet = try ResampleReference.writeCabinet(rate: sourceRate, directory: directory.url.path)
            let cut = try ImpulseResponse.load(cabinet.wav, sampleRate: targetRate)
            let kept = try ImpulseResponse.load(cabinet.wav, sampleRate: targetRate, options: .init(preRinging: .keep))
            let label = "\(Int(sourceRate)) -> \(Int(targetRate)) Hz: kept \(kept.addedDelayFrames) frames"
            XCTAssertGreaterThan(kept.addedDelayFrames, 0, label)
            XCTAssertEqual(Array(kept.channels[0].dropFirst(kept.addedDelayFrames)), cut.channels[0], label)
            // The judge of the test above tells the kept (late) IR from the reference.
            let verdict = try ResampleReference.judge(
                kept.channels[0], targetRate: targetRate, of: cabinet,
                directory: directory.url.path)
            XCTAssertEqual(verdict.oursPeakFrame, verdict.referencePeakFrame + kept.addedDelayFrames, "\(label): \(verdict)")
            XCTAssertGreaterThan(verdict.errorAfterHeadDB, -10, "\(label): \(verdict)")
            let ringing = kept.channels[0].prefix(kept.addedDelayFrames).reduce(0) { max($0, abs($1)) }
            let peak = kept.channels[0].reduce(0) { max($0, abs($1)) }
            XCTAssertEqual(try XCTUnwrap(kept.preRingingPeakDB), 20 * log10f(ringing / peak), accuracy: 1e-3, label)
            // Measured: -30.6 dB (44.1 -> 48 kHz), -43.4 (48 -> 44.1), -44.4 (96 -> 48), -14.9 (22.05 -> 48).
            XCTAssertLessThan(try XCTUnwrap(kept.preRingingPeakDB), -10, label)
        }
    }

    /// Not resampled: no ringing to report.
    func testAnIRAtTheGraphRateHasNoPreRinging() throws {
        let ir = try ImpulseResponse.load("builtin:dirac", sampleRate: 48_000)
        XCTAssertNil(ir.preRingingPeakDB)
        XCTAssertEqual(ir.addedDelayFrames, 0)
    }
}
