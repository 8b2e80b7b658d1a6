// filter-chain's biquads (`bq_lowpass` ... `bq_allpass`) as their exact impulse responses. The
// coefficients are computed as the running filter-chain computes them (biquad.c, after Chromium's
// and WebKit's): 0.3.x and 1.x differ in the low- and high-pass (resonance in dB, then Q) and in
// the shelves (slope 1, then Q); both hand float coefficients and a float frequency to the filter.
import Glibc

public struct Biquad: Sendable, Equatable {
    public enum Shape: String, Sendable, CaseIterable {
        case lowpass, highpass, bandpass, lowshelf, highshelf, peaking, notch, allpass
        /// `bq_raw`'s and `dcblock`'s: coefficients given, not designed.
        case raw
    }

    /// Whose formulas: 0.3.x's biquad.c, or 1.x's (the same in 1.4 and 1.6).
    public enum Formulas: Sendable {
        case pipeWire03, pipeWire1
    }

    /// `bq_raw`'s coefficients for one sample rate.
    public struct RateSet: Sendable, Equatable {
        public var rate: Int
        public var given: [Double]

        /// bq_instantiate's choice: the first set nearer to `sampleRate` than any before it, starting
        /// from rate 0 (a set no nearer than that is never chosen, and then every coefficient is 0).
        static func closest(_ sets: [RateSet], to sampleRate: Int) -> Biquad {
            var best = 0, chosen = [0.0, 0, 0, 1, 0, 0]
            for set in sets where abs(set.rate - sampleRate) < abs(best - sampleRate) {
                best = set.rate
                chosen = set.given
            }
            return .raw(chosen)
        }
    }

    /// b0, b1, b2, a1, a2 with a0 = 1, as filter-chain runs them.
    struct Coefficients: Equatable {
        var b0, b1, b2, a1, a2: Double
    }

    public var shape: Shape
    /// The control ports `Freq` (Hz), `Q` and `Gain` (dB), with filter-chain's defaults.
    public var frequency = 0.0
    public var q = 0.0
    public var gain = 0.0
    /// For `.raw`: b0, b1, b2, a0, a1, a2 as given.
    public var given: [Double] = []

    /// A biquad with given coefficients (b0, b1, b2, a0, a1, a2).
    static func raw(_ given: [Double]) -> Biquad { Biquad(shape: .raw, given: given) }

    /// The coefficients at `sampleRate`. Inputs go through float, as filter-chain's control ports
    /// and its `freq * 2 / rate` do.
    func coefficients(sampleRate: Int, formulas: Formulas) -> Coefficients {
        if shape == .raw {
            // bq_raw_update: in float, times 1/a0 (a0 = 0 leaves every coefficient 0).
            let value = given.map(Float.init)
            let inverse: Float = value[3] != 0 ? 1 / value[3] : 0
            let b0 = value[0] * inverse, b1 = value[1] * inverse, b2 = value[2] * inverse
            let a1 = value[4] * inverse, a2 = value[5] * inverse
            return Coefficients(b0: Double(b0), b1: Double(b1), b2: Double(b2), a1: Double(a1), a2: Double(a2))
        }
        let frequency = Double(Float(self.frequency) * 2 / Float(sampleRate))
        let q = Double(Float(self.q)), gain = Double(Float(self.gain))
        let (b0, b1, b2, a0, a1, a2) = Self.unnormalized(shape, frequency, q, gain, formulas)
        let inverse = 1 / a0  // as set_coefficient: times the inverse, then to float
        func rounded(_ value: Double) -> Double { Double(Float(value * inverse)) }
        return Coefficients(b0: rounded(b0), b1: rounded(b1), b2: rounded(b2), a1: rounded(a1), a2: rounded(a2))
    }

    /// biquad.c's formulas; `frequency` is a fraction of Nyquist. Returns b0, b1, b2, a0, a1, a2.
    private static func unnormalized(
        _ shape: Shape, _ frequency: Double, _ qOrResonance: Double, _ gain: Double, _ formulas: Formulas
    ) -> (Double, Double, Double, Double, Double, Double) {
        let defaultQ = 0.707106781186548  // 1/√2, and slope 1 for a shelf
        let clipped = max(0, min(frequency, 1))
        let amplitude = pow(10, gain / 40)
        let w0 = Double.pi * clipped, k = cos(w0)
        switch shape {
        case .lowpass, .highpass:
            let low = shape == .lowpass
            if clipped == 1 || clipped == 0 { return low ? (clipped, 0, 0, 1, 0, 0) : (1 - clipped, 0, 0, 1, 0, 0) }
            if formulas == .pipeWire03 {
                // Chromium's: Q is a resonance in dB.
                let g = pow(10, 0.05 * max(0, qOrResonance))
                let d = sqrt((4 - sqrt(16 - 16 / (g * g))) / 2)
                let sn = 0.5 * d * sin(w0)
                let beta = 0.5 * (1 - sn) / (1 + sn)
                let gamma = (0.5 + beta) * cos(w0)
                let alpha = 0.25 * (0.5 + beta + (low ? -gamma : gamma))
                return (2 * alpha, (low ? 4 : -4) * alpha, 2 * alpha, 1, -2 * gamma, 2 * beta)
            }
            let q = qOrResonance <= 0 ? defaultQ : qOrResonance
            let alpha = sin(w0) / (2 * q)
            return low
                ? ((1 - k) / 2, 1 - k, (1 - k) / 2, 1 + alpha, -2 * k, 1 - alpha)
                : ((1 + k) / 2, -(1 + k), (1 + k) / 2, 1 + alpha, -2 * k, 1 - alpha)
        case .lowshelf, .highshelf:
            let low = shape == .lowshelf
            if clipped == 1 { return low ? (amplitude * amplitude, 0, 0, 1, 0, 0) : (1, 0, 0, 1, 0, 0) }
            if clipped <= 0 { return low ? (1, 0, 0, 1, 0, 0) : (amplitude * amplitude, 0, 0, 1, 0, 0) }
            let alpha =
                formulas == .pipeWire03
                ? 0.5 * sin(w0) * sqrt((amplitude + 1 / amplitude) * (1 / 1.0 - 1) + 2)
                : sin(w0) / (2 * (qOrResonance <= 0 ? defaultQ : qOrResonance))
            let k2 = 2 * sqrt(amplitude) * alpha
            let plus = amplitude + 1, minus = amplitude - 1
            return low
                ? (
                    amplitude * (plus - minus * k + k2), 2 * amplitude * (minus - plus * k), amplitude * (plus - minus * k - k2),
                    plus + minus * k + k2, -2 * (minus + plus * k), plus + minus * k - k2
                )
                : (
                    amplitude * (plus + minus * k + k2), -2 * amplitude * (minus + plus * k), amplitude * (plus + minus * k - k2),
                    plus - minus * k + k2, 2 * (minus - plus * k), plus - minus * k - k2
                )
        case .raw: return (1, 0, 0, 1, 0, 0)  // not designed: `coefficients` takes `given`
        case .bandpass, .peaking, .notch, .allpass:
            // Frequency is clipped to 0...1 for all but the bandpass, which only refuses negatives.
            let outside = shape == .bandpass ? frequency <= 0 || frequency >= 1 : clipped <= 0 || clipped >= 1
            let q = max(0, qOrResonance)
            switch shape {
            case .bandpass where outside: return (0, 0, 0, 1, 0, 0)
            case .bandpass where q <= 0: return (1, 0, 0, 1, 0, 0)
            case .peaking where outside, .notch where outside, .allpass where outside: return (1, 0, 0, 1, 0, 0)
            case .peaking where q <= 0: return (amplitude * amplitude, 0, 0, 1, 0, 0)
            case .notch where q <= 0: return (0, 0, 0, 1, 0, 0)
            case .allpass where q <= 0: return (-1, 0, 0, 1, 0, 0)
            default: break
            }
            let alpha = sin(w0) / (2 * q)
            switch shape {
            case .bandpass: return (alpha, 0, -alpha, 1 + alpha, -2 * k, 1 - alpha)
            case .peaking: return (1 + alpha * amplitude, -2 * k, 1 - alpha * amplitude, 1 + alpha / amplitude, -2 * k, 1 - alpha / amplitude)
            case .notch: return (1, -2 * k, 1, 1 + alpha, -2 * k, 1 - alpha)
            default: return (1 - alpha, -2 * k, 1 + alpha, 1 + alpha, -2 * k, 1 - alpha)
            }
        }
    }
}

extension Biquad: CustomStringConvertible {
    public var description: String {
        shape == .raw
            ? "a biquad given as b0 b1 b2 a0 a1 a2 = \(given.map { "\($0)" }.joined(separator: " "))"
            : "bq_\(shape) (Freq \(frequency) Q \(q) Gain \(gain))"
    }
}

extension Biquad.Coefficients: CustomStringConvertible {
    var description: String { "b0 \(b0) b1 \(b1) b2 \(b2) a1 \(a1) a2 \(a2)" }

    /// Both poles strictly inside the unit circle (the stability triangle of z² + a1·z + a2).
    var isStable: Bool { abs(a2) < 1 && abs(a1) < 1 + a2 }
}

extension DelayedTaps {
    /// The taps run through a biquad in double precision, and on with silence until its tail has
    /// fallen below −150 dB of the result's peak: exactly what the filter makes of them.
    /// `maxFrames` bounds a tail that does not fall (a pole too close to the unit circle).
    func filtered(through biquad: Biquad.Coefficients, sampleRate: Int, maxFrames: Int) -> DelayedTaps? {
        let floor = pow(10, -150.0 / 20)
        // A window of at least a tenth of a second: the tail's envelope, not a zero crossing.
        let window = max(1024, sampleRate / 10)
        var output: [Double] = []
        output.reserveCapacity(taps.count + window)
        var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0, peak = 0.0, quietSince = 0
        var index = 0
        while true {
            let x = index < taps.count ? taps[index] : 0
            let y = biquad.b0 * x + biquad.b1 * x1 + biquad.b2 * x2 - biquad.a1 * y1 - biquad.a2 * y2
            (x2, x1, y2, y1) = (x1, x, y1, y)
            output.append(y)
            peak = max(peak, abs(y))
            if abs(y) > peak * floor { quietSince = index + 1 }
            index += 1
            if index >= taps.count && index - quietSince >= window { break }
            if index >= maxFrames { return nil }
        }
        output.removeLast(index - quietSince)
        return DelayedTaps(offset: offset, taps: output)
    }
}
