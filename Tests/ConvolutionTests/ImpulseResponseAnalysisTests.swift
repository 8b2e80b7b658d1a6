import Convolution
import EngineTestSupport
import Foundation
import XCTest

final class ImpulseResponseAnalysisTests: XCTestCase {
    func testDecayTimesOfExponentialDecaysAreTheirRT60() {
        for (index, rt60) in [0.5, 1.2, 2.5].enumerated() {
            // 1.3 x RT60 long: 78 dB of decay, so the cut at the end barely bends the EDC above -35 dB.
            let samples = exponentialDecay(rt60: rt60, seconds: 1.3 * rt60, seed: UInt64(index + 1))
            let channel = DecayAnalysis(ImpulseResponse(sampleRate: 48000, channels: [samples])).channels[0]
            let context = "RT60 \(rt60) s"
            XCTAssertEqual(channel.reverberation?.name, "T30", context)
            XCTAssertEqual(channel.reverberation?.fit.decayTimeSeconds ?? 0, rt60, accuracy: 0.1 * rt60, context)
            XCTAssertEqual(channel.t30?.decayTimeSeconds ?? 0, rt60, accuracy: 0.1 * rt60, context)
            XCTAssertEqual(channel.t20?.decayTimeSeconds ?? 0, rt60, accuracy: 0.1 * rt60, context)
            XCTAssertEqual(channel.earlyDecay?.decayTimeSeconds ?? 0, rt60, accuracy: 0.1 * rt60, context)
            // The fit ranges are where the definitions put them.
            if let t30 = channel.t30, let t20 = channel.t20, let edt = channel.earlyDecay {
                XCTAssertEqual(t30.startSeconds, rt60 * 5 / 60, accuracy: 0.02 * rt60, context)
                XCTAssertEqual(t30.endSeconds, rt60 * 35 / 60, accuracy: 0.02 * rt60, context)
                XCTAssertEqual(t20.endSeconds, rt60 * 25 / 60, accuracy: 0.02 * rt60, context)
                XCTAssertEqual(edt.startSeconds, 0, accuracy: 0.001, context)
                XCTAssertEqual(edt.levelDB(atSeconds: edt.startSeconds), 0, accuracy: 1, context)
            }
            XCTAssertLessThan(channel.onsetFrame, 48, "the decay starts at once: \(context)")
            XCTAssertEqual(channel.energyDecayDB.count, samples.count)
            XCTAssertEqual(Double(channel.energyDecayDB[0]), 0, accuracy: 1e-6)
        }
    }

    func testPreDelayIsTheOnsetAndDoesNotCountAsDecay() {
        let rate = 44100.0
        // 40 ms of silence, then a direct sound (a single sample), then a 1.2 s decay 10 ms later.
        var samples = [Float](repeating: 0, count: Int(0.040 * rate))
        samples.append(4)
        samples += [Float](repeating: 0, count: Int(0.010 * rate))
        samples += exponentialDecay(rt60: 1.2, seconds: 1.6, sampleRate: rate, seed: 7)
        let analysis = DecayAnalysis(ImpulseResponse(sampleRate: rate, channels: [samples]))
        let channel = analysis.channels[0]
        XCTAssertEqual(channel.onsetFrame, Int(0.040 * rate), "the direct sound is the first sample within 20 dB of the peak")
        XCTAssertEqual(channel.peakFrame, Int(0.040 * rate))
        XCTAssertEqual(channel.peakDBFS, 20 * log10(4.0), accuracy: 1e-6)
        XCTAssertEqual(analysis.seconds(channel.onsetFrame), 0.040, accuracy: 1 / rate)
        XCTAssertEqual(channel.reverberation?.fit.decayTimeSeconds ?? 0, 1.2, accuracy: 0.12)

        // Without the direct sound the onset is the start of the decay, after 50 ms.
        let tailOnly = exponentialDecay(rt60: 0.5, seconds: 0.7, preDelay: 0.050, sampleRate: rate, seed: 8)
        let tail = DecayAnalysis(ImpulseResponse(sampleRate: rate, channels: [tailOnly])).channels[0]
        XCTAssertEqual(Double(tail.onsetFrame) / rate, 0.050, accuracy: 0.001)
        XCTAssertEqual(tail.reverberation?.fit.decayTimeSeconds ?? 0, 0.5, accuracy: 0.05)
        XCTAssertEqual(tail.earlyDecay?.decayTimeSeconds ?? 0, 0.5, accuracy: 0.05, "EDT is measured from the onset, not from time 0")
    }

    func testRT60FallsBackToT20WhenTheCurveStopsAboveMinus35DB() {
        // A last sample holding 0.04% of the energy (-34 dB): the EDC ends there, above -35 dB.
        var samples = exponentialDecay(rt60: 1.0, seconds: 1.3, seed: 9)
        let energy = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        samples.append(Float((energy * 0.0004 / 0.9996).squareRoot()))
        let channel = DecayAnalysis(ImpulseResponse(sampleRate: 48000, channels: [samples])).channels[0]
        XCTAssertNil(channel.t30)
        XCTAssertEqual(channel.reverberation?.name, "T20")
        XCTAssertEqual(channel.reverberation?.fit.decayTimeSeconds ?? 0, 1.0, accuracy: 0.1)
    }

    func testSilentAndOneSampleChannelsHaveNoDecayTimes() {
        let analysis = DecayAnalysis(ImpulseResponse(sampleRate: 48000, channels: [[0, 0, 0], [1]]))
        for channel in analysis.channels {
            XCTAssertNil(channel.earlyDecay)
            XCTAssertNil(channel.t20)
            XCTAssertNil(channel.reverberation)
            XCTAssertEqual(channel.onsetFrame, 0)
        }
        XCTAssertEqual(analysis.channels[0].peakDBFS, -.infinity)
        XCTAssertEqual(analysis.channels[1].peakDBFS, 0)
        XCTAssertEqual(analysis.peakDBFS, 0)
    }

    func testMagnitudeOfADiracIsFlatZeroDB() throws {
        for delay in [0, 1000] {
            var impulse = [Float](repeating: 0, count: delay + 1)
            impulse[delay] = 1
            let response = try MagnitudeResponse(impulse: impulse, sampleRate: 48000)
            XCTAssertEqual(response.fftSize, MagnitudeResponse.minFFTSize)
            XCTAssertEqual(response.binCount, response.fftSize / 2 + 1)
            XCTAssertLessThan(response.magnitudeDB.map { abs($0) }.max()!, 1e-4, "delay \(delay)")
            XCTAssertEqual(response.smoothedDB(at: 1000, octaveFraction: 1.0 / 6), 0, accuracy: 1e-4)
        }
    }

    func testMagnitudeOfATwoTapAverageIsACosine() throws {
        // h = [½, ½]: H(f) = ½(1 + e^{-iω}), |H| = |cos(π f / fs)|: 0 dB at DC, a zero at Nyquist.
        let rate = 48000.0
        let response = try MagnitudeResponse(impulse: [0.5, 0.5], sampleRate: rate)
        XCTAssertEqual(Double(response.magnitudeDB[0]), 0, accuracy: 1e-5)
        for bin in stride(from: 0, to: response.binCount - 1, by: 7) {
            let frequency = response.frequency(ofBin: bin)
            let expected = 20 * log10(abs(cos(Double.pi * frequency / rate)))
            // Float spectra: exact to a few 1e-6 of full scale, so the tolerance grows toward the zero.
            let tolerance = 1e-3 + 2e-5 / pow(10, expected / 20)
            XCTAssertEqual(Double(response.magnitudeDB[bin]), expected, accuracy: tolerance, "\(frequency) Hz")
        }
        XCTAssertLessThan(response.magnitudeDB[response.binCount - 1], -80, "the zero at Nyquist")
        XCTAssertEqual(response.smoothedDB(at: rate / 4, octaveFraction: 0.01), 20 * log10(cos(Double.pi / 4)), accuracy: 0.01)
    }

    func testLongImpulseFoldedToTheFFTSizeIsSampledExactly() throws {
        // 40000 noise samples on a 4096-point grid: compare bins with the DTFT summed directly in Double.
        var generator = SeededGenerator(seed: 21)
        let impulse = [Float].noise(40000, using: &generator).enumerated().map { $0.element * Float(exp(-Double($0.offset) / 8000)) }
        let response = try MagnitudeResponse(impulse: impulse, sampleRate: 48000, maxFFTSize: 4096)
        XCTAssertEqual(response.fftSize, 4096)
        for bin in [0, 1, 17, 300, 1024, 2047, 2048] {
            let omega = 2 * Double.pi * Double(bin) / 4096
            var real = 0.0, imaginary = 0.0
            for (frame, sample) in impulse.enumerated() {
                real += Double(sample) * cos(omega * Double(frame))
                imaginary -= Double(sample) * sin(omega * Double(frame))
            }
            let expected = 10 * log10(real * real + imaginary * imaginary)
            XCTAssertEqual(Double(response.magnitudeDB[bin]), expected, accuracy: 0.01, "bin \(bin)")
        }
    }
}
