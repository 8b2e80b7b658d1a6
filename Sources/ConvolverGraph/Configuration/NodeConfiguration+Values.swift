// The readers of one SPA-JSON value each (text, numbers, durations, positions, file lists,
// impulse matrices): each error names the key it was read for.
import Convolution
import Glibc
import LevelScheduling
import Workgroup

extension NodeConfiguration {
    static func text(_ value: SPAJSONValue, _ key: String) throws(NodeConfigurationError) -> String {
        guard let text = value.text, !text.isEmpty else {
            throw NodeConfigurationError(key: key, message: "expected a non-empty string")
        }
        return text
    }

    static func number(_ value: SPAJSONValue, _ key: String, _ range: ClosedRange<Double>) throws(NodeConfigurationError) -> Double {
        guard let number = value.number else {
            throw NodeConfigurationError(key: key, message: "'\(value.text ?? "(not a value)")' is not a number")
        }
        guard range.contains(number) else {
            throw NodeConfigurationError(key: key, message: "\(number) is outside \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }

    /// A gain: linear (`0.5`) or decibels (`"-6dB"`, as the IR options take it); `range` is linear.
    static func gain(_ value: SPAJSONValue, _ key: String, _ range: ClosedRange<Double>) throws(NodeConfigurationError) -> Double {
        guard let text = value.text, let gain = linearGain(text) else {
            throw NodeConfigurationError(
                key: key, message: "'\(value.text ?? "(not a value)")' is not a gain: a linear number (0.5) or decibels (\"-6dB\")")
        }
        guard range.contains(gain) else {
            throw NodeConfigurationError(key: key, message: "\(gain) is outside \(range.lowerBound)...\(range.upperBound)")
        }
        return gain
    }

    /// "0.5" → 0.5, "-6dB" → 0.501; nil for anything else or a gain that is not finite.
    public static func linearGain(_ text: String) -> Double? {
        let trimmed = text.lowercased().filter { $0 != " " }
        let gain = trimmed.hasSuffix("db") ? Double(trimmed.dropLast(2)).map { pow(10, $0 / 20) } : Double(trimmed)
        return gain.flatMap { $0.isFinite ? $0 : nil }
    }

    /// A path as a shell would expand its start: `~/…`, `$HOME/…` and `${HOME}/…` in the user's home.
    public static func expandingHome(_ path: String) -> String {
        guard let home = getenv("HOME").map({ String(cString: $0) }), !home.isEmpty else { return path }
        for prefix in ["~/", "$HOME/", "${HOME}/"] where path.hasPrefix(prefix) {
            return home + "/" + path.dropFirst(prefix.count)
        }
        return path == "~" ? home : path
    }

    /// Seconds as a number (`0.05`) or text with a unit (`"50ms"`, `"0.05s"`).
    static func duration(_ value: SPAJSONValue, _ key: String, _ range: ClosedRange<Double>) throws(NodeConfigurationError) -> Double {
        let text = value.text ?? ""
        let seconds: Double?
        if text.hasSuffix("ms") {
            seconds = Double(text.dropLast(2)).map { $0 / 1000 }
        } else if text.hasSuffix("s") {
            seconds = Double(text.dropLast(1))
        } else {
            seconds = Double(text)
        }
        guard let seconds, seconds.isFinite, range.contains(seconds) else {
            throw NodeConfigurationError(
                key: key, message: "'\(text)' is not a duration in \(range.lowerBound)...\(range.upperBound) s (e.g. 0.05 or \"50ms\")")
        }
        return seconds
    }

    static func integer(_ value: SPAJSONValue, _ key: String, _ range: ClosedRange<Int>) throws(NodeConfigurationError) -> Int {
        guard let number = value.number, number == number.rounded(), abs(number) < 1e15 else {
            throw NodeConfigurationError(key: key, message: "'\(value.text ?? "(not a value)")' is not an integer")
        }
        guard range.contains(Int(number)) else {
            throw NodeConfigurationError(key: key, message: "\(Int(number)) is outside \(range.lowerBound)...\(range.upperBound)")
        }
        return Int(number)
    }

    static func boolean(_ value: SPAJSONValue, _ key: String) throws(NodeConfigurationError) -> Bool {
        guard let bool = value.bool else {
            throw NodeConfigurationError(key: key, message: "'\(value.text ?? "(not a value)")' is not true or false")
        }
        return bool
    }

    static func object(_ value: SPAJSONValue, _ key: String) throws(NodeConfigurationError) -> [(String, SPAJSONValue)] {
        guard case let .object(members) = value else {
            throw NodeConfigurationError(key: key, message: "expected an object { ... }")
        }
        return members.map { ($0.key, $0.value) }
    }

    /// `[ FL FR ]`, or a string `"FL,FR"` / `"[ FL, FR ]"` as PipeWire's own parser accepts.
    static func channelPositions(_ value: SPAJSONValue, _ key: String) throws(NodeConfigurationError) -> [String] {
        let names: [String]
        switch value {
        case let .array(elements):
            var collected: [String] = []
            for element in elements { collected.append(try text(element, key)) }
            names = collected
        case let .string(text), let .word(text):
            names = text.split(whereSeparator: { " ,[]\t".contains($0) }).map(String.init)
        case .object:
            throw NodeConfigurationError(key: key, message: "expected a list of positions like [ FL FR ]")
        }
        guard !names.isEmpty, names.count <= channelLimit else {
            throw NodeConfigurationError(key: key, message: "needs 1...\(channelLimit) positions, got \(names.count)")
        }
        for name in names where !name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
            throw NodeConfigurationError(key: key, message: "'\(name)' is not a channel position name")
        }
        guard Set(names).count == names.count else {
            throw NodeConfigurationError(key: key, message: "positions repeat: \(names.joined(separator: " "))")
        }
        return names
    }

    /// A file name, or filter-chain's array of one IR's files at several rates (the first, and all).
    static func filenames(_ value: SPAJSONValue, _ key: String) throws(NodeConfigurationError) -> (String, [String]) {
        guard case let .array(elements) = value else { return (expandingHome(try text(value, key)), []) }
        var names: [String] = []
        for (index, element) in elements.enumerated() { names.append(expandingHome(try text(element, "\(key)[\(index)]"))) }
        guard let first = names.first else { throw NodeConfigurationError(key: key, message: "an empty list of files") }
        return (first, names.count > 1 ? names : [])
    }

    static func impulses(_ value: SPAJSONValue, _ key: String, _ warnings: inout [String]) throws(NodeConfigurationError) -> [Impulse] {
        guard case let .array(elements) = value else {
            throw NodeConfigurationError(key: key, message: "expected a list [ { input = 0 output = 0 filename = ... } ... ]")
        }
        var impulses: [Impulse] = []
        for (index, element) in elements.enumerated() {
            let prefix = "\(key)[\(index)]"
            var input: Int?, output: Int?, filename: String?, rateAlternatives: [String] = []
            var channel = 0, gain = 1.0, delay = 0, offset = 0, length = 0
            for (subkey, subvalue) in try object(element, prefix) {
                let name = "\(prefix).\(subkey)"
                switch subkey {
                case "input": input = try integer(subvalue, name, 0...(channelLimit - 1))
                case "output": output = try integer(subvalue, name, 0...(channelLimit - 1))
                case "filename": (filename, rateAlternatives) = try filenames(subvalue, name)
                case "channel": channel = try integer(subvalue, name, 0...(channelLimit - 1))
                case "gain": gain = try Self.gain(subvalue, name, -gainLimit...gainLimit)
                case "delay": delay = try integer(subvalue, name, 0...sampleCountLimit)
                case "offset": offset = try integer(subvalue, name, 0...sampleCountLimit)
                case "length": length = try integer(subvalue, name, 0...sampleCountLimit)
                default: warnings.append("unknown key '\(name)' ignored")
                }
            }
            guard let input else { throw NodeConfigurationError(key: "\(prefix).input", message: "missing") }
            guard let output else { throw NodeConfigurationError(key: "\(prefix).output", message: "missing") }
            guard let filename else { throw NodeConfigurationError(key: "\(prefix).filename", message: "missing") }
            var impulse = Impulse(input: input, output: output, filename: filename)
            impulse.rateAlternatives = rateAlternatives
            impulse.channel = channel
            impulse.gain = gain
            impulse.delay = delay
            impulse.offset = offset
            impulse.length = length
            impulses.append(impulse)
        }
        return impulses
    }
}
