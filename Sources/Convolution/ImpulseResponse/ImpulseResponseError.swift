/// Why an impulse response could not be loaded. Every message names the file (or `builtin:NAME`)
/// or the option, and what is wrong with it.
public enum ImpulseResponseError: Error, Equatable, CustomStringConvertible {
    case fileNotFound(path: String)
    /// Exists but cannot be read: permissions, a directory, an I/O error.
    case unreadable(path: String, reason: String)
    /// libsndfile cannot make sense of the contents; `reason` is its message.
    case notAudio(path: String, reason: String)
    /// The header promises more audio than the file holds.
    case truncated(path: String, detail: String)
    /// Nothing to convolve with: a 0-byte file, no frames, or `offset` past the end.
    case empty(source: String, detail: String)
    /// `value` is "NaN", "+Inf" or "-Inf". Channel and frame count from 0, in the file.
    case nonFiniteSample(source: String, channel: Int, frame: Int, value: String)
    case channelOutOfRange(source: String, channel: Int, channelCount: Int)
    /// Longer than `ImpulseResponseOptions.maxSeconds`; `bytes` is what its samples would take.
    case tooLong(source: String, seconds: Double, limitSeconds: Double, bytes: Int)
    case unknownBuiltin(name: String, known: [String])
    case invalidOption(name: String, value: String, reason: String)
    /// All samples are zero, so `normalize` has nothing to scale.
    case silent(source: String)
    case resamplingFailed(source: String, reason: String)
    /// libmysofa cannot read it as an HRTF set.
    case notSOFA(path: String, reason: String)

    public var description: String {
        switch self {
        case .fileNotFound(let path):
            return "impulse response file '\(path)' does not exist"
        case .unreadable(let path, let reason):
            return "cannot read impulse response file '\(path)': \(reason)"
        case .notAudio(let path, let reason):
            return "impulse response file '\(path)' is not audio libsndfile can read: \(reason)"
        case .truncated(let path, let detail):
            return "impulse response file '\(path)' is truncated: \(detail)"
        case .empty(let source, let detail):
            return "impulse response '\(source)' is empty: \(detail)"
        case .nonFiniteSample(let source, let channel, let frame, let value):
            return "impulse response '\(source)' has a \(value) sample in channel \(channel) at frame \(frame)"
        case .channelOutOfRange(let source, let channel, let channelCount):
            let valid = channelCount == 1 ? "only channel 0" : "channels 0...\(channelCount - 1)"
            return "impulse response '\(source)' has no channel \(channel): it has \(channelCount) channel\(channelCount == 1 ? "" : "s") (\(valid))"
        case .tooLong(let source, let seconds, let limitSeconds, let bytes):
            return "impulse response '\(source)' is too long: \(Self.format(seconds)) s, the limit is \(Self.format(limitSeconds)) s"
                + " (its samples would take \(Self.format(Double(bytes) / 1_048_576)) MiB)"
        case .unknownBuiltin(let name, let known):
            return "unknown built-in impulse response 'builtin:\(name)'; known: " + known.map { "builtin:\($0)" }.joined(separator: ", ")
        case .invalidOption(let name, let value, let reason):
            return "invalid impulse response option \(name) = '\(value)': \(reason)"
        case .silent(let source):
            return "impulse response '\(source)' is all zeros: nothing to normalize"
        case .resamplingFailed(let source, let reason):
            return "cannot resample impulse response '\(source)': libsoxr: \(reason)"
        case .notSOFA(let path, let reason):
            return "'\(path)' is not an HRTF set libmysofa can read: \(reason)"
        }
    }

    init(_ error: AudioFileError) {
        switch error {
        case .notFound(let path): self = .fileNotFound(path: path)
        case .unreadable(let path, let reason): self = .unreadable(path: path, reason: reason)
        case .empty(let path): self = .empty(source: path, detail: "the file has 0 bytes")
        case .notAudio(let path, let reason): self = .notAudio(path: path, reason: reason)
        case .truncated(let path, let detail): self = .truncated(path: path, detail: detail)
        case .cannotWrite(let path, let reason): self = .unreadable(path: path, reason: reason)
        }
    }

    /// Two decimals at most, without a trailing ".0" for whole numbers.
    private static func format(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}
