import Convolution
import Foundation
import XCTest

/// RT60 by Schroeder backward integration: the energy decay curve EDC(t) = Σ_{τ≥t} h²(τ) in dB,
/// a least-squares line fitted between -5 and -35 dB (T30), extrapolated to 60 dB.
func irSchroederRT60(_ impulse: [Float], sampleRate: Double) -> Double {
    var decay = [Double](repeating: 0, count: impulse.count)
    var sum = 0.0
    for index in impulse.indices.reversed() {
        sum += Double(impulse[index]) * Double(impulse[index])
        decay[index] = sum
    }
    let decayDB = decay.map { 10 * log10($0 / sum) }
    guard let start = decayDB.firstIndex(where: { $0 <= -5 }),
        let end = decayDB.firstIndex(where: { $0 <= -35 }), end > start + 1
    else { return .nan }
    let times = (start..<end).map { Double($0) / sampleRate }
    let levels = Array(decayDB[start..<end])
    let meanTime = times.reduce(0, +) / Double(times.count)
    let meanLevel = levels.reduce(0, +) / Double(levels.count)
    var covariance = 0.0, variance = 0.0
    for (time, level) in zip(times, levels) {
        covariance += (time - meanTime) * (level - meanLevel)
        variance += (time - meanTime) * (time - meanTime)
    }
    return -60 / (covariance / variance)  // slope in dB per second
}

/// Normalized cross-correlation of two equally long signals at `lag` (b shifted by lag).
func irCorrelation(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>, lag: Int = 0) -> Double {
    var product = 0.0, energyA = 0.0, energyB = 0.0
    let indicesA = Array(a.indices), indicesB = Array(b.indices)
    for offset in max(0, -lag)..<min(indicesA.count, indicesB.count - lag) {
        let x = Double(a[indicesA[offset]]), y = Double(b[indicesB[offset + lag]])
        product += x * y
        energyA += x * x
        energyB += y * y
    }
    return product / (energyA * energyB).squareRoot()
}

private func energy(_ samples: some Collection<Float>) -> Double {
    samples.reduce(0.0) { $0 + Double($1) * Double($1) }
}

final class ImpulseResponseBuiltinTests: XCTestCase {
    /// filter-chain's "/dirac" and "/hilbert" are our built-ins.
    func testFilterChainBuiltinSpellings() throws {
        XCTAssertEqual(try ImpulseResponse.load("/dirac", sampleRate: 48_000), try ImpulseResponse.load("builtin:dirac", sampleRate: 48_000))
        XCTAssertEqual(try ImpulseResponse.load("/hilbert", sampleRate: 48_000).frameCount, 1024)
        XCTAssertEqual(try ImpulseResponse.load("/hilbert", sampleRate: 48_000, options: .init(length: .samples(256))).frameCount, 256)
        XCTAssertThrowsError(try ImpulseResponse.load("/hall", sampleRate: 48_000), "only filter-chain's own names")
    }

    /// The Hilbert transformer shifts every frequency in its band by 90° at unit gain: a sine comes
    /// out as the cosine of the same frequency, `length/2` frames late (filter-chain's sign:
    /// sin(ωn) → cos(ω(n − length/2))), within 0.3 dB from 300 Hz up to 20 kHz at 48 kHz.
    func testHilbertShiftsByNinetyDegrees() throws {
        let hilbert = try ImpulseResponse.load("builtin:hilbert", sampleRate: 48_000).channels[0]
        let delay = Double(hilbert.count / 2)
        for frequency in [300.0, 1000, 5000, 12_000, 20_000] {
            let omega = 2 * Double.pi * frequency / 48_000
            let signal = (0..<8192).map { Float(sin(omega * Double($0))) }
            let output = irDirectConvolution(signal, hilbert)
            var inPhase = 0.0, quadrature = 0.0
            for n in 2048..<8192 {
                inPhase += output[n] * cos(omega * (Double(n) - delay))
                quadrature += output[n] * sin(omega * (Double(n) - delay))
            }
            let count = Double(8192 - 2048)
            let label = "\(frequency) Hz"
            XCTAssertEqual(20 * log10((inPhase * inPhase + quadrature * quadrature).squareRoot() * 2 / count), 0, accuracy: 0.3, label)
            XCTAssertEqual(atan2(quadrature, inPhase), 0, accuracy: 0.01, label)
        }
    }

    /// Of one IR's files at several rates, the one closest to the graph's rate is used.
    func testClosestRateOfAFilenameList() throws {
        let directory = try IRTestDirectory()
        for rate in [44_100.0, 48_000, 96_000] {
            try AudioFile.write(path: directory.path("ir-\(Int(rate)).wav"), sampleRate: rate, channels: [[1]])
        }
        let files = ["ir-44100.wav", "ir-48000.wav", "ir-96000.wav"].map(directory.path)
        XCTAssertEqual(ImpulseResponse.closestInRate(files[0], files, to: 48_000), files[1])
        XCTAssertEqual(ImpulseResponse.closestInRate(files[0], files, to: 44_100), files[0])
        XCTAssertEqual(ImpulseResponse.closestInRate(files[0], files, to: 192_000), files[2])
        XCTAssertEqual(
            ImpulseResponse.closestInRate(files[0], [directory.path("missing.wav"), files[2]], to: 48_000), files[2],
            "files that cannot be read are passed over")
        XCTAssertEqual(ImpulseResponse.closestInRate(files[0], [], to: 48_000), files[0])
    }

    func testDiracIsOneSampleOfOneAtAnyRate() throws {
        for rate in [44_100.0, 48_000, 96_000] {
            let ir = try ImpulseResponse.load("builtin:dirac", sampleRate: rate)
            XCTAssertEqual(ir.sampleRate, rate)
            XCTAssertEqual(ir.channels, [[1]])
        }
        let delayed = try ImpulseResponse.load("builtin:dirac", sampleRate: 48_000, options: .init(delay: .samples(3), gain: 0.5))
        XCTAssertEqual(delayed.channels, [[0, 0, 0, 0.5]])
        XCTAssertEqual(ImpulseResponse.builtinNames, ["dirac", "hall", "hilbert"])
    }

    func testHallIsDeterministicStereoAndAboutThreeSeconds() throws {
        for rate in [44_100.0, 48_000] {
            let first = try ImpulseResponse.load("builtin:hall", sampleRate: rate)
            let second = try ImpulseResponse.load("builtin:hall", sampleRate: rate)
            XCTAssertEqual(first, second, "same samples every time at \(rate) Hz")
            XCTAssertEqual(first.sampleRate, rate)
            XCTAssertEqual(first.channelCount, 2)
            XCTAssertEqual(Double(first.frameCount) / rate, 3, accuracy: 0.01)
            XCTAssertNotEqual(first.channels[0], first.channels[1])
        }
        // One rate is not the other one stretched: the 44.1 kHz hall has its own frame count.
        XCTAssertNotEqual(
            try ImpulseResponse.load("builtin:hall", sampleRate: 44_100).frameCount,
            try ImpulseResponse.load("builtin:hall", sampleRate: 48_000).frameCount)
    }

    func testHallLevelPeakBelowOneAndUnitEnergy() throws {
        let hall = try ImpulseResponse.load("builtin:hall", sampleRate: 48_000)
        let energies = hall.channels.map { energy($0) }
        XCTAssertEqual(energies.max()!, 1, accuracy: 1e-4)
        XCTAssertEqual(energies.min()!, 1, accuracy: 0.1)
        let peak = hall.channels.flatMap { $0 }.map(abs).max()!
        XCTAssertLessThanOrEqual(peak, 1)
        XCTAssertGreaterThan(peak, 0.01)
        XCTAssertTrue(hall.channels.flatMap { $0 }.allSatisfy(\.isFinite))
    }

    func testHallRT60IsAboutTwoAndAHalfSeconds() throws {
        for rate in [44_100.0, 48_000, 96_000] {
            let hall = try ImpulseResponse.load("builtin:hall", sampleRate: rate)
            for (channel, samples) in hall.channels.enumerated() {
                let rt60 = irSchroederRT60(samples, sampleRate: rate)
                XCTAssertEqual(rt60, 2.5, accuracy: 0.25, "RT60 of channel \(channel) at \(rate) Hz")
            }
        }
    }

    /// High frequencies die away sooner: the first difference (a high-pass) decays faster than
    /// the broadband signal.
    func testHallHighFrequenciesDecayFaster() throws {
        let hall = try ImpulseResponse.load("builtin:hall", sampleRate: 48_000)
        for samples in hall.channels {
            let difference = zip(samples.dropFirst(), samples).map { $0 - $1 }
            let broadband = irSchroederRT60(samples, sampleRate: 48_000)
            let treble = irSchroederRT60(difference, sampleRate: 48_000)
            XCTAssertLessThan(treble, 0.9 * broadband, "treble \(treble) s, broadband \(broadband) s")
        }
    }

    func testHallChannelsAreDecorrelated() throws {
        let hall = try ImpulseResponse.load("builtin:hall", sampleRate: 48_000)
        let tailStart = Int(0.080 * 48_000)
        let left = hall.channels[0][tailStart...], right = hall.channels[1][tailStart...]
        var worst = 0.0
        for lag in -20...20 {
            worst = max(worst, abs(irCorrelation(left, right, lag: lag)))
        }
        XCTAssertLessThan(worst, 0.05, "largest |correlation| of the tails within ±20 frames")
        // And the same measure finds a correlated pair (the measure can fail).
        XCTAssertGreaterThan(irCorrelation(left, left, lag: 0), 0.99)
    }

    /// Silence for the pre-delay (10–20 ms), then early reflections standing out of the build-up
    /// up to 80 ms, unlike the same duration of plain tail later on.
    func testHallPreDelayAndEarlyReflections() throws {
        let rate = 48_000.0
        let hall = try ImpulseResponse.load("builtin:hall", sampleRate: rate)
        for (channel, samples) in hall.channels.enumerated() {
            let firstSound = try XCTUnwrap(samples.firstIndex { $0 != 0 })
            XCTAssertGreaterThanOrEqual(Double(firstSound) / rate, 0.010, "channel \(channel)")
            XCTAssertLessThanOrEqual(Double(firstSound) / rate, 0.020, "channel \(channel)")

            func outliers(_ region: ArraySlice<Float>) -> Int {
                let rms = (energy(region) / Double(region.count)).squareRoot()
                return region.filter { Double(abs($0)) > 4 * rms }.count
            }
            let early = samples[firstSound..<Int(0.080 * rate)]
            let late = samples[Int(1.0 * rate)..<Int(1.0 * rate) + early.count]
            XCTAssertGreaterThanOrEqual(outliers(early), 3, "channel \(channel)")
            XCTAssertLessThanOrEqual(outliers(late), 2, "channel \(channel)")
        }
    }

    func testOptionsApplyToBuiltins() throws {
        // Without trimming: trimmed alone, one channel may end at another frame than both together.
        let hall = try ImpulseResponse.load("builtin:hall", sampleRate: 48_000, options: .init(trimThresholdDB: nil))
        let right = try ImpulseResponse.load("builtin:hall", sampleRate: 48_000, options: .init(channel: 1, trimThresholdDB: nil))
        XCTAssertEqual(right.channels, [hall.channels[1]])
        XCTAssertEqual(hall.frameCount, 144_000)
        let cut = try ImpulseResponse.load(
            "builtin:hall", sampleRate: 48_000,
            options: .init(offset: .seconds(0.5), length: .seconds(1)))
        XCTAssertEqual(cut.channels, hall.channels.map { Array($0[24_000..<72_000]) })
    }
}
