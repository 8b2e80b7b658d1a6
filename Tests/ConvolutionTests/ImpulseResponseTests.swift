import Convolution
import Foundation
import XCTest

/// Plain direct convolution, the independent reference: y[n] = Σ h[k]·x[n-k], full length.
func irDirectConvolution(_ signal: [Float], _ impulse: [Float]) -> [Double] {
    var output = [Double](repeating: 0, count: signal.count + impulse.count - 1)
    for (k, tap) in impulse.enumerated() where tap != 0 {
        for (n, sample) in signal.enumerated() {
            output[n + k] += Double(tap) * Double(sample)
        }
    }
    return output
}

final class ImpulseResponseOptionTests: XCTestCase {
    private var directory: IRTestDirectory!
    /// A 48 kHz float stereo file: channel 0 = ramp 1...1000 / 1000, channel 1 = noise.
    private var stereoPath: String!
    private let ramp = (1...1000).map { Float($0) / 1000 }
    private let noise = irTestNoise(count: 1000, seed: 7)

    override func setUpWithError() throws {
        directory = try IRTestDirectory()
        stereoPath = directory.path("stereo.wav")
        try AudioFile.write(path: stereoPath, sampleRate: 48_000, channels: [ramp, noise])
    }

    override func tearDown() { directory = nil }

    private func load(_ options: ImpulseResponseOptions) throws -> ImpulseResponse {
        try ImpulseResponse.load(stereoPath, sampleRate: 48_000, options: options)
    }

    func testDefaultsLoadEveryChannelUnchanged() throws {
        let ir = try load(.init())
        XCTAssertEqual(ir.sampleRate, 48_000)
        XCTAssertEqual(ir.channelCount, 2)
        XCTAssertEqual(ir.frameCount, 1000)
        XCTAssertEqual(ir.channels, [ramp, noise])
    }

    func testChannelPicksOneChannel() throws {
        XCTAssertEqual(try load(.init(channel: 0)).channels, [ramp])
        XCTAssertEqual(try load(.init(channel: 1)).channels, [noise])
    }

    func testOffsetAndLengthInSamplesAndSeconds() throws {
        XCTAssertEqual(try load(.init(channel: 0, offset: .samples(100))).channels, [Array(ramp[100...])])
        XCTAssertEqual(
            try load(.init(channel: 0, offset: .samples(100), length: .samples(50))).channels,
            [Array(ramp[100..<150])])
        // 2.5 ms at 48 kHz = 120 frames; 1 ms = 48 frames.
        XCTAssertEqual(
            try load(.init(channel: 0, offset: .seconds(0.0025), length: .seconds(0.001))).channels,
            [Array(ramp[120..<168])])
        // A length past the end stops at the end.
        XCTAssertEqual(
            try load(.init(channel: 0, offset: .samples(990), length: .samples(500))).channels,
            [Array(ramp[990...])])
    }

    func testDelayPrependsSilenceAtTheTargetRate() throws {
        let delayed = try load(.init(channel: 0, delay: .samples(480)))
        XCTAssertEqual(delayed.channels, [[Float](repeating: 0, count: 480) + ramp])
        let delayedBySeconds = try load(.init(delay: try TimeAmount(parsing: "10ms", key: "delay")))
        XCTAssertEqual(delayedBySeconds.frameCount, 1480)
        XCTAssertEqual(delayedBySeconds.channels[1], [Float](repeating: 0, count: 480) + noise)
    }

    func testGainLinearAndDecibels() throws {
        XCTAssertEqual(try load(.init(channel: 0, gain: 0.5)).channels, [ramp.map { $0 * 0.5 }])
        let minusSix = try ImpulseResponseOptions.parseGain("-6dB")
        XCTAssertEqual(minusSix, 0.501187, accuracy: 1e-6)
        XCTAssertEqual(try load(.init(channel: 0, gain: minusSix)).channels, [ramp.map { $0 * minusSix }])
        XCTAssertEqual(try load(.init(channel: 0, gain: -1)).channels, [ramp.map { -$0 }])
    }

    func testNormalizeGivesTheLoudestChannelUnitEnergyAndKeepsBalance() throws {
        let ir = try load(.init(normalize: true))
        let energies = ir.channels.map { $0.reduce(0.0) { $0 + Double($1) * Double($1) } }
        let rampEnergy = ramp.reduce(0.0) { $0 + Double($1) * Double($1) }
        let noiseEnergy = noise.reduce(0.0) { $0 + Double($1) * Double($1) }
        XCTAssertGreaterThan(rampEnergy, noiseEnergy)  // the ramp is the loudest channel
        XCTAssertEqual(energies[0], 1, accuracy: 1e-5)
        XCTAssertEqual(energies[1], noiseEnergy / rampEnergy, accuracy: 1e-5)
        // Gain applies after normalization.
        let halved = try load(.init(channel: 0, gain: 0.5, normalize: true))
        XCTAssertEqual(halved.channels[0].reduce(0.0) { $0 + Double($1) * Double($1) }, 0.25, accuracy: 1e-5)
        // A single impulse normalizes to 1.0 whatever its height.
        let dirac = try ImpulseResponse.load("builtin:dirac", sampleRate: 48_000, options: .init(gain: 1, normalize: true))
        XCTAssertEqual(dirac.channels, [[1]])
    }

    func testTrimCutsTrailingSamplesBelowTheThreshold() throws {
        // Peak 0.5; then a sample at -100 dB and one at -130 dB relative to that peak, then zeros.
        var samples = [Float](repeating: 0, count: 2000)
        samples[0] = 0.5
        samples[10] = 0.5 * powf(10, -100 / 20)
        samples[20] = 0.5 * powf(10, -130 / 20)
        let path = directory.path("tail.wav")
        try AudioFile.write(path: path, sampleRate: 48_000, channels: [samples])
        func frames(_ threshold: Float?) throws -> Int {
            try ImpulseResponse.load(path, sampleRate: 48_000, options: .init(trimThresholdDB: threshold)).frameCount
        }
        XCTAssertEqual(try frames(-120), 11)  // the default: the -130 dB sample and the zeros go
        XCTAssertEqual(try frames(-140), 21)
        XCTAssertEqual(try frames(-90), 1)
        XCTAssertEqual(try frames(nil), 2000)
        XCTAssertEqual(try frames(0), 1)  // the peak itself stays
    }

    func testTrimTakesAllChannelsIntoAccount() throws {
        let path = directory.path("two.wav")
        try AudioFile.write(path: path, sampleRate: 48_000, channels: [[1, 0, 0, 0, 0], [0, 0, 0.5, 0.01, 0]])
        let ir = try ImpulseResponse.load(path, sampleRate: 48_000, options: .init(trimThresholdDB: -20))
        XCTAssertEqual(ir.channels, [[1, 0, 0], [0, 0, 0.5]])
    }

    /// Order of operations: offset in source samples, then resampling, then delay at the target
    /// rate. An impulse at source frame 735 (44.1 kHz), offset 441 (10 ms), is 294 frames in:
    /// 294·48/44.1 = 320 frames at 48 kHz, plus a 480-frame delay.
    func testOffsetIsInSourceSamplesAndDelayAtTargetRate() throws {
        var samples = [Float](repeating: 0, count: 2000)
        samples[735] = 1
        let path = directory.path("impulse44k.wav")
        try AudioFile.write(path: path, sampleRate: 44_100, channels: [samples])
        let ir = try ImpulseResponse.load(path, sampleRate: 48_000, options: .init(offset: .samples(441), delay: .samples(480)))
        let peakFrame = ir.channels[0].indices.max { ir.channels[0][$0] < ir.channels[0][$1] }
        XCTAssertEqual(peakFrame, 480 + 320)
        XCTAssertEqual(ir.addedDelayFrames, 0)
        XCTAssertTrue(ir.channels[0][..<480].allSatisfy { $0 == 0 })
    }

    func testTimeAmountParser() throws {
        XCTAssertEqual(try TimeAmount(parsing: "480", key: "delay"), .samples(480))
        XCTAssertEqual(try TimeAmount(parsing: "0.01s", key: "delay"), .seconds(0.01))
        XCTAssertEqual(try TimeAmount(parsing: " 10ms ", key: "delay"), .seconds(0.01))
        XCTAssertEqual(try TimeAmount(parsing: "2 s", key: "delay"), .seconds(2))
        XCTAssertEqual(TimeAmount.seconds(0.01).frames(atSampleRate: 48_000), 480)
        XCTAssertEqual(TimeAmount.samples(7).frames(atSampleRate: 48_000), 7)
        for bad in ["0.5", "ten", "", "5 samples", "1e999s"] {
            XCTAssertThrowsError(try TimeAmount(parsing: bad, key: "offset"), bad) { error in
                guard case .invalidOption("offset", bad, _)? = error as? ImpulseResponseError else {
                    return XCTFail("\(bad): \(error)")
                }
                XCTAssertTrue("\(error)".contains("offset"), "\(error)")
            }
        }
    }

    func testGainParser() throws {
        XCTAssertEqual(try ImpulseResponseOptions.parseGain("0.5"), 0.5)
        XCTAssertEqual(try ImpulseResponseOptions.parseGain("-1"), -1)
        XCTAssertEqual(try ImpulseResponseOptions.parseGain("0dB"), 1)
        XCTAssertEqual(try ImpulseResponseOptions.parseGain("+20 dB"), 10, accuracy: 1e-5)
        XCTAssertEqual(try ImpulseResponseOptions.parseGain("-6DB"), 0.501187, accuracy: 1e-6)
        for bad in ["loud", "inf", "nan", "1000dB", "dB", ""] {
            XCTAssertThrowsError(try ImpulseResponseOptions.parseGain(bad), bad) { error in
                guard case .invalidOption("gain", bad, _)? = error as? ImpulseResponseError else {
                    return XCTFail("\(bad): \(error)")
                }
            }
        }
    }
}

/// Resampling: an impulse recorded at 44.1 kHz, loaded at 48 kHz, then a 48 kHz sine convolved
/// with it directly. The output must be the same sine (frequency, level within 0.1 dB) delayed by
/// the impulse's time: frame D at 44.1 kHz is D·48000/44100 frames at 48 kHz.
final class ImpulseResponseResamplingTests: XCTestCase {
    private let sourceRate = 44_100.0
    private let targetRate = 48_000.0
    /// Far enough from frame 0 that the resampling filter's ringing before the impulse fits in
    /// front of it: timing exactly kept.
    private let impulseFrame = 200

    private struct Measurement {
        var levelDB: Double
        var delayFrames: Double
        var frequency: Double
        var residualDB: Double
        var expectedDelay: Double
        var addedDelayFrames: Int
    }

    private func measure(frequency: Double, quality: Int, impulseFrame: Int? = nil) throws -> Measurement {
        let impulseFrame = impulseFrame ?? self.impulseFrame
        let directory = try IRTestDirectory()
        var samples = [Float](repeating: 0, count: 1000)
        samples[impulseFrame] = 1
        let path = directory.path("dirac44k.wav")
        try AudioFile.write(path: path, sampleRate: sourceRate, channels: [samples])
        // The ringing before an impulse at frame 0 is kept (late) so that the level can be measured.
        let ir = try ImpulseResponse.load(path, sampleRate: targetRate, options: .init(resampleQuality: quality, preRinging: .keep))
        XCTAssertEqual(ir.sampleRate, targetRate)
        XCTAssertEqual(ir.channelCount, 1)
        // ceil(1000 · 48/44.1), then trimmed; plus the ringing kept in front of an early impulse.
        XCTAssertLessThanOrEqual(ir.frameCount, 1089 + ir.addedDelayFrames)
        if impulseFrame >= 200 { XCTAssertEqual(ir.addedDelayFrames, 0) }

        let amplitude = 0.5
        let signal = (0..<9600).map { Float(amplitude * sin(2 * Double.pi * frequency * Double($0) / targetRate)) }
        let output = irDirectConvolution(signal, ir.channels[0])
        // A steady-state window of a whole number of periods (1 kHz: 48 frames, 10 kHz: 4.8 frames).
        let window = 2000..<9200
        let omega = 2 * Double.pi * frequency / targetRate
        var sineSum = 0.0, cosineSum = 0.0
        for n in window {
            sineSum += output[n] * sin(omega * Double(n))
            cosineSum += output[n] * cos(omega * Double(n))
        }
        let count = Double(window.count)
        let level = (sineSum * sineSum + cosineSum * cosineSum).squareRoot() * 2 / count
        let phase = atan2(cosineSum, sineSum)  // output ≈ level · sin(omega·n + phase)
        let delay = -phase / omega

        // Frequency from zero crossings, independent of the fit above.
        var crossings: [Double] = []
        for n in window.dropFirst() where (output[n - 1] < 0) != (output[n] < 0) {
            crossings.append(Double(n - 1) + output[n - 1] / (output[n - 1] - output[n]))
        }
        let measuredFrequency = Double(crossings.count - 1) / 2 / ((crossings.last! - crossings.first!) / targetRate)

        // What is left after removing the expected, delayed sine.
        let expectedDelay = Double(impulseFrame) * targetRate / sourceRate + Double(ir.addedDelayFrames)
        var residualEnergy = 0.0, signalEnergy = 0.0
        for n in window {
            let expected = amplitude * sin(omega * (Double(n) - expectedDelay))
            residualEnergy += (output[n] - expected) * (output[n] - expected)
            signalEnergy += expected * expected
        }
        return Measurement(
            levelDB: 20 * log10(level / amplitude), delayFrames: delay, frequency: measuredFrequency,
            residualDB: 10 * log10(residualEnergy / signalEnergy), expectedDelay: expectedDelay,
            addedDelayFrames: ir.addedDelayFrames)
    }

    func testSineThroughResampledDiracKeepsFrequencyLevelAndTiming() throws {
        // Frame 200: 217.69 frames at 48 kHz. Frame 0: the filter's ringing before the impulse is
        // kept (`.keep`), so the IR comes `addedDelayFrames` late but whole (cut, a full-band
        // impulse at frame 0 loses 1.15 dB).
        for impulseFrame in [200, 0] {
            for frequency in [1000.0, 10_000.0] {
                for quality in [4, 14] {  // HQ (the default), VHQ
                    let result = try measure(frequency: frequency, quality: quality, impulseFrame: impulseFrame)
                    let label = "impulse at \(impulseFrame), \(frequency) Hz, quality \(quality): \(result)"
                    XCTAssertEqual(result.levelDB, 0, accuracy: 0.1, label)
                    XCTAssertEqual(result.frequency, frequency, accuracy: frequency * 1e-4, label)
                    // Delay modulo one period (the phase cannot tell periods apart).
                    let period = targetRate / frequency
                    let delayError = (result.delayFrames - result.expectedDelay).truncatingRemainder(dividingBy: period)
                    let wrapped = delayError > period / 2 ? delayError - period : (delayError < -period / 2 ? delayError + period : delayError)
                    XCTAssertEqual(wrapped, 0, accuracy: 0.01, label)
                    XCTAssertLessThan(result.residualDB, -90, label)
                    if impulseFrame == 0 {
                        XCTAssertGreaterThan(result.addedDelayFrames, 0, label)
                        XCTAssertLessThan(result.addedDelayFrames, 200, label)  // about 2–2.5 ms
                    }
                }
            }
        }
    }

    /// Every quality step gives a working filter at 1 kHz; QQ (cubic) is the roughest.
    func testEveryQualityRecipeKeepsTheLevel() throws {
        for quality in [0, 1, 3, 4, 10] {
            let result = try measure(frequency: 1000, quality: quality)
            XCTAssertEqual(result.levelDB, 0, accuracy: 0.1, "quality \(quality): \(result)")
            XCTAssertLessThan(result.residualDB, -60, "quality \(quality): \(result)")
        }
    }

    /// The filter gain is what is kept, not the sample values: without the sourceRate/targetRate
    /// scale, a resampled impulse would sum to 48/44.1 (+0.74 dB).
    func testResampledImpulseSumsToOne() throws {
        let directory = try IRTestDirectory()
        var samples = [Float](repeating: 0, count: 1000)
        samples[impulseFrame] = 1
        let path = directory.path("dirac44k.wav")
        try AudioFile.write(path: path, sampleRate: sourceRate, channels: [samples])
        let ir = try ImpulseResponse.load(path, sampleRate: targetRate)
        XCTAssertEqual(ir.channels[0].reduce(0.0) { $0 + Double($1) }, 1, accuracy: 1e-3)
    }
}

/// Loaded IRs through the real engine, against direct convolution.
final class ImpulseResponseEngineTests: XCTestCase {
    /// An impulse at frame 0 of a 44.1 kHz file, loaded at 48 kHz with its ringing kept and run
    /// through the engine in 128-frame calls: a 1 kHz sine comes out at its level (within 0.1 dB),
    /// `addedDelayFrames` late.
    func testResampledDiracThroughTheEngineKeepsTheLevel() throws {
        let directory = try IRTestDirectory()
        var samples = [Float](repeating: 0, count: 1000)
        samples[0] = 1
        let path = directory.path("dirac44k.wav")
        try AudioFile.write(path: path, sampleRate: 44_100, channels: [samples])
        let ir = try ImpulseResponse.load(path, sampleRate: 48_000, options: .init(preRinging: .keep))
        let engine = try ConvolutionEngine(
            matrix: ConvolutionMatrix(
                inputCount: 1, outputCount: 1,
                entries: [.init(input: 0, output: 0, impulse: ir.channels[0])]))
        let omega = 2 * Double.pi * 1000 / 48_000
        let signal = (0..<9600).map { Float(0.5 * sin(omega * Double($0))) }
        let output = try engine.process([signal], blockSize: 128)[0]
        let expected = irDirectConvolution(signal, ir.channels[0])
        var errorEnergy = 0.0, energy = 0.0, level = 0.0
        for n in 2000..<9200 {
            errorEnergy += (Double(output[n]) - expected[n]) * (Double(output[n]) - expected[n])
            energy += expected[n] * expected[n]
            level += Double(output[n]) * sin(omega * (Double(n) - Double(ir.addedDelayFrames)))
        }
        XCTAssertLessThan(10 * log10(errorEnergy / energy), -100)
        XCTAssertEqual(20 * log10(level * 2 / 7200 / 0.5), 0, accuracy: 0.1)
    }

    /// The built-in hall (its first 0.1 s: pre-delay, early reflections, tail onset) through a
    /// stereo engine equals direct convolution.
    func testBuiltinHallThroughTheEngine() throws {
        let hall = try ImpulseResponse.load("builtin:hall", sampleRate: 48_000, options: .init(length: .seconds(0.1)))
        let matrix = ConvolutionMatrix(
            inputCount: 2, outputCount: 2,
            entries: [
                .init(input: 0, output: 0, impulse: hall.channels[0]), .init(input: 1, output: 1, impulse: hall.channels[1]),
            ])
        let engine = try ConvolutionEngine(matrix: matrix)
        let inputs = [irTestNoise(count: 2400, seed: 11), irTestNoise(count: 2400, seed: 12)]
        let outputs = try engine.process(inputs, blockSize: 256)
        for channel in 0..<2 {
            let expected = irDirectConvolution(inputs[channel], hall.channels[channel])
            var errorEnergy = 0.0, energy = 0.0
            for n in 0..<2400 {
                errorEnergy += (Double(outputs[channel][n]) - expected[n]) * (Double(outputs[channel][n]) - expected[n])
                energy += expected[n] * expected[n]
            }
            XCTAssertLessThan(10 * log10(errorEnergy / energy), -100, "channel \(channel)")
        }
    }
}
