import Glibc

/// A straight line fitted by least squares to an energy decay curve (dB against seconds) between two
/// levels, as ISO 3382-1 defines EDT, T20 and T30.
public struct DecayFit: Sendable, Equatable {
    /// The fitted range: from where the curve first falls to `upperDB` to where it first falls to `lowerDB`.
    public var upperDB: Double
    public var lowerDB: Double
    /// Seconds from the start of the IR where the curve crossed `upperDB` and `lowerDB`.
    public var startSeconds: Double
    public var endSeconds: Double
    /// The line: level(t) = interceptDB + slopeDBPerSecond · t, t in seconds from the start of the IR.
    public var slopeDBPerSecond: Double
    public var interceptDB: Double

    /// The time this slope takes to fall by 60 dB: the decay time the fit stands for.
    public var decayTimeSeconds: Double { -60 / slopeDBPerSecond }

    public func levelDB(atSeconds seconds: Double) -> Double { interceptDB + slopeDBPerSecond * seconds }
}

/// What one IR channel's time structure says: level, onset, and how fast its energy decays.
///
/// The energy decay curve is Schroeder's backward integral EDC(t) = Σ_{τ≥t} h²(τ), in dB of the
/// channel's total energy. The decay times follow ISO 3382-1, measured from the onset:
/// - EDT: the fit from 0 to −10 dB, times 6;
/// - T20: the fit from −5 to −25 dB, times 3;
/// - T30: the fit from −5 to −35 dB, times 2;
/// - RT60: T30 where the curve reaches −35 dB, else T20.
/// There is no noise-floor compensation (Lundeby): an IR recorded with noise after its decay has an
/// EDC that bends flat and reads too long; trim such files first.
public struct ChannelDecayAnalysis: Sendable {
    /// Largest absolute sample, its frame and its level in dB relative to full scale (1.0).
    public var peak: Float
    public var peakFrame: Int
    public var peakDBFS: Double { 20 * log10(Double(peak)) }
    /// The onset: the first frame at or above `DecayAnalysis.onsetThresholdDB` relative to the
    /// peak (ISO 3382-1's start of the impulse response). Its time is the pre-delay.
    public var onsetFrame: Int
    /// EDC in dB of the total energy, one value per frame (−∞ after the last non-zero sample).
    public var energyDecayDB: [Float]
    public var earlyDecay: DecayFit?
    public var t20: DecayFit?
    public var t30: DecayFit?

    /// The RT60 estimate and which fit it comes from: T30 if the EDC reached −35 dB, else T20.
    public var reverberation: (fit: DecayFit, name: String)? {
        if let t30 { return (t30, "T30") }
        if let t20 { return (t20, "T20") }
        return nil
    }
}

/// Pure analysis of an impulse response's decay, per channel. Not real-time code (allocates).
public struct DecayAnalysis: Sendable {
    /// The onset is the first sample this far below the peak (ISO 3382-1 uses −20 dB: well above
    /// the noise before the direct sound, well below the direct sound itself).
    public static let onsetThresholdDB = -20.0

    public var sampleRate: Double
    public var channels: [ChannelDecayAnalysis]

    /// The loudest channel's peak.
    public var peakDBFS: Double { channels.map(\.peakDBFS).max() ?? -.infinity }

    public init(_ impulseResponse: ImpulseResponse) {
        sampleRate = impulseResponse.sampleRate
        channels = impulseResponse.channels.map { Self.analyse($0, sampleRate: impulseResponse.sampleRate) }
    }

    public func seconds(_ frame: Int) -> Double { Double(frame) / sampleRate }

    static func analyse(_ samples: [Float], sampleRate: Double) -> ChannelDecayAnalysis {
        var peak: Float = 0, peakFrame = 0
        for (frame, sample) in samples.enumerated() where abs(sample) > peak {
            peak = abs(sample)
            peakFrame = frame
        }
        let threshold = peak * Float(pow(10, onsetThresholdDB / 20))
        let onsetFrame = peak > 0 ? samples.firstIndex { abs($0) >= threshold } ?? 0 : 0

        // Backward sum in Double: the tail's tiny energies add up before the loud head's, so
        // the curve stays exact far below 0 dB (a forward "total minus running sum" would not).
        var remaining = [Double](repeating: 0, count: samples.count)
        var sum = 0.0
        for frame in samples.indices.reversed() {
            sum += Double(samples[frame]) * Double(samples[frame])
            remaining[frame] = sum
        }
        let total = sum
        let energyDecayDB = remaining.map { total > 0 ? Float(10 * log10($0 / total)) : -.infinity }

        func fit(from upperDB: Double, to lowerDB: Double) -> DecayFit? {
            // Both crossings are searched from the onset: the silence before it is not decay.
            guard let start = energyDecayDB[onsetFrame...].firstIndex(where: { Double($0) <= upperDB }),
                let end = energyDecayDB[start...].firstIndex(where: { Double($0) <= lowerDB }),
                end - start >= 2
            else { return nil }
            let (slope, intercept) = leastSquaresLine(energyDecayDB[start..<end], firstFrame: start, sampleRate: sampleRate)
            guard slope < 0, slope.isFinite else { return nil }
            return DecayFit(
                upperDB: upperDB, lowerDB: lowerDB, startSeconds: Double(start) / sampleRate,
                endSeconds: Double(end) / sampleRate, slopeDBPerSecond: slope, interceptDB: intercept)
        }
        // EDT starts at the onset itself: its EDC is 0 dB less the little energy before it.
        let edtUpper = min(0, Double(energyDecayDB.isEmpty ? 0 : energyDecayDB[onsetFrame]))
        return ChannelDecayAnalysis(
            peak: peak, peakFrame: peakFrame, onsetFrame: onsetFrame,
            energyDecayDB: energyDecayDB,
            earlyDecay: fit(from: edtUpper, to: edtUpper - 10),
            t20: fit(from: -5, to: -25), t30: fit(from: -5, to: -35))
    }

    /// Least-squares (slope, intercept) of levels against time in seconds.
    private static func leastSquaresLine(
        _ levels: ArraySlice<Float>, firstFrame: Int,
        sampleRate: Double
    ) -> (Double, Double) {
        let count = Double(levels.count)
        var sumTime = 0.0, sumLevel = 0.0
        for (frame, level) in zip(firstFrame..., levels) {
            sumTime += Double(frame) / sampleRate
            sumLevel += Double(level)
        }
        let meanTime = sumTime / count, meanLevel = sumLevel / count
        var covariance = 0.0, variance = 0.0
        for (frame, level) in zip(firstFrame..., levels) {
            let time = Double(frame) / sampleRate - meanTime
            covariance += time * (Double(level) - meanLevel)
            variance += time * time
        }
        let slope = covariance / variance
        return (slope, meanLevel - slope * meanTime)
    }
}
