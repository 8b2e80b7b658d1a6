import Glibc

/// A duration given either in samples or in seconds.
public enum TimeAmount: Sendable, Equatable {
    case samples(Int)
    case seconds(Double)

    public static let zero = TimeAmount.samples(0)

    /// Parses "480" (samples), "0.01s" (seconds) or "10ms" (milliseconds). A number with a
    /// fraction needs a unit: "0.5" is rejected as ambiguous. `key` names the option in errors.
    public init(parsing text: String, key: String) throws(ImpulseResponseError) {
        let trimmed = text.lowercased().strippingSpaces
        func invalid(_ reason: String) -> ImpulseResponseError {
            .invalidOption(name: key, value: text, reason: reason)
        }
        if let samples = Int(trimmed) {
            self = .samples(samples)
        } else if trimmed.hasSuffix("ms"), let milliseconds = Double(trimmed.dropLast(2).strippingSpaces) {
            self = .seconds(milliseconds / 1000)
        } else if trimmed.hasSuffix("s"), let seconds = Double(trimmed.dropLast(1).strippingSpaces) {
            self = .seconds(seconds)
        } else if Double(trimmed) != nil {
            throw invalid("a number with a fraction needs a unit: '\(trimmed)s' or '\(trimmed)ms'; whole numbers are samples")
        } else {
            throw invalid("expected samples (\"480\"), seconds (\"0.01s\") or milliseconds (\"10ms\")")
        }
        if case .seconds(let seconds) = self, !seconds.isFinite {
            throw invalid("not a finite number")
        }
    }

    /// The amount in frames at `sampleRate`, seconds rounded to the nearest frame. Clamped to
    /// ±`Int.max / 4` frames (absurd values then fail the length limit instead of overflowing).
    public func frames(atSampleRate sampleRate: Double) -> Int {
        let limit = Int.max / 4
        switch self {
        case .samples(let samples):
            return max(-limit, min(limit, samples))
        case .seconds(let seconds):
            let frames = (seconds * sampleRate).rounded()
            guard !frames.isNaN else { return 0 }
            return frames >= Double(limit) ? limit : (frames <= -Double(limit) ? -limit : Int(frames))
        }
    }

    /// Exactly zero (a `length` of zero means "to the end"; a tiny nonzero one does not).
    var isZero: Bool {
        switch self {
        case .samples(let samples): return samples == 0
        case .seconds(let seconds): return seconds == 0
        }
    }

    var isNegative: Bool {
        switch self {
        case .samples(let samples): return samples < 0
        case .seconds(let seconds): return seconds < 0 || seconds.isNaN
        }
    }
}

extension TimeAmount: CustomStringConvertible {
    public var description: String {
        switch self {
        case .samples(let samples): return "\(samples)"
        case .seconds(let seconds): return "\(seconds)s"
        }
    }
}

/// The resampling filter's ringing before time 0: see `ImpulseResponseOptions.preRinging`.
public enum PreRinging: String, Sendable, CaseIterable {
    case cut, keep
}

/// How to turn an IR file (or built-in IR) into the impulse response the engine uses.
/// Keys mirror PipeWire filter-chain's convolver where they mean the same.
public struct ImpulseResponseOptions: Sendable, Equatable {
    /// The file channel to use, counted from 0; nil uses every channel. (filter-chain: `channel`)
    public var channel: Int?
    /// Skipped from the start of the file, in source samples or seconds. (filter-chain: `offset`)
    public var offset: TimeAmount
    /// How much to use after `offset`, in source samples or seconds; exactly 0 = to the end. (`length`)
    public var length: TimeAmount
    /// Silence put before the IR, at the target rate. (filter-chain: `delay`)
    public var delay: TimeAmount
    /// Linear gain, applied last (after `normalize`). (filter-chain: `gain`)
    public var gain: Float
    /// Scale the IR so that its loudest channel has total energy (sum of squared samples) 1:
    /// white noise then keeps its power through that channel, and a single impulse becomes 1.0.
    /// The channels keep their balance. Off by default (filter-chain has no such option).
    public var normalize: Bool
    /// filter-chain's `resample.quality`, 0...14 as in PipeWire's resampler (default 4), mapped to
    /// libsoxr recipes: 0 = QQ, 1–2 = LQ, 3 = MQ, 4–9 = HQ (20-bit), 10–14 = VHQ (28-bit).
    /// QQ is cubic interpolation without anti-aliasing: an impulse downsampled 2:1 comes out
    /// 6 dB too loud. Use it for quick tests only; LQ and up keep the level of any IR.
    public var resampleQuality: Int
    /// What to do with the resampling filter's ringing before time 0 of an IR that starts at its
    /// first frame: cut it (the default: zero added latency, the timing kept) or keep it (the
    /// whole band-limited response, delayed by the ringing kept: see `ImpulseResponse.addedDelayFrames`).
    public var preRinging: PreRinging
    /// Trailing samples quieter than this many dB below the IR's peak (over all channels) are cut.
    /// nil keeps them. Trimming never removes the last audible sample nor leaves less than 1 frame.
    public var trimThresholdDB: Float?
    /// The longest IR accepted, in seconds at the target rate, after trimming and delay.
    public var maxSeconds: Double
    /// For a SOFA file: where the source is; its two ears' filters are the IR's two channels.
    public var sourceDirection: SourceDirection = .init()

    public init(
        channel: Int? = nil, offset: TimeAmount = .zero, length: TimeAmount = .zero,
        delay: TimeAmount = .zero, gain: Float = 1, normalize: Bool = false,
        resampleQuality: Int = 4, preRinging: PreRinging = .cut, trimThresholdDB: Float? = -120, maxSeconds: Double = 60
    ) {
        self.channel = channel
        self.offset = offset
        self.length = length
        self.delay = delay
        self.gain = gain
        self.normalize = normalize
        self.resampleQuality = resampleQuality
        self.preRinging = preRinging
        self.trimThresholdDB = trimThresholdDB
        self.maxSeconds = maxSeconds
    }

    /// Parses a gain: linear ("0.5", "-1" inverts polarity) or decibels ("-6dB", "3 db").
    /// `key` names the option in errors.
    public static func parseGain(_ text: String, key: String = "gain") throws(ImpulseResponseError) -> Float {
        let trimmed = text.lowercased().strippingSpaces
        let gain: Float?
        if trimmed.hasSuffix("db") {
            gain = Float(trimmed.dropLast(2).strippingSpaces).map { powf(10, $0 / 20) }
        } else {
            gain = Float(trimmed)
        }
        guard let gain else {
            throw .invalidOption(name: key, value: text, reason: "expected a linear gain (\"0.5\") or decibels (\"-6dB\")")
        }
        guard gain.isFinite else {
            throw .invalidOption(name: key, value: text, reason: "not a finite gain")
        }
        return gain
    }

    /// The libsoxr recipe for `resampleQuality` (see there).
    var soxrRecipe: (recipe: UInt, name: String) {
        switch resampleQuality {
        case ...0: return (0, "QQ")  // SOXR_QQ
        case 1...2: return (1, "LQ")  // SOXR_LQ
        case 3: return (2, "MQ")  // SOXR_MQ
        case 4...9: return (4, "HQ")  // SOXR_HQ = SOXR_20_BITQ
        default: return (6, "VHQ")  // SOXR_VHQ = SOXR_28_BITQ
        }
    }

    /// Throws for the first option value that cannot mean anything.
    func validate() throws(ImpulseResponseError) {
        if let channel, channel < 0 {
            throw .invalidOption(name: "channel", value: "\(channel)", reason: "channels are counted from 0")
        }
        for (name, amount) in [("offset", offset), ("length", length), ("delay", delay)] where amount.isNegative {
            throw .invalidOption(name: name, value: amount.description, reason: "must not be negative")
        }
        guard gain.isFinite else {
            throw .invalidOption(name: "gain", value: "\(gain)", reason: "not a finite gain")
        }
        guard (0...14).contains(resampleQuality) else {
            throw .invalidOption(name: "resample.quality", value: "\(resampleQuality)", reason: "must be 0...14")
        }
        if let trimThresholdDB, !(trimThresholdDB.isFinite && trimThresholdDB <= 0) {
            throw .invalidOption(
                name: "trimThresholdDB", value: "\(trimThresholdDB)",
                reason: "must be a finite level at or below the peak (<= 0 dB)")
        }
        guard maxSeconds.isFinite, maxSeconds > 0 else {
            throw .invalidOption(name: "maxSeconds", value: "\(maxSeconds)", reason: "must be a positive number of seconds")
        }
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var strippingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
