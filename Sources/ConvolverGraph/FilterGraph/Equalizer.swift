// filter-chain's `param_eq` (PipeWire 1.4 and later, accepted on any version): up to 64 biquads
// per channel for eight channels, from `filters` arrays or an EqualizerAPO file, read as
// plugin_builtin.c reads them, quirks included (a per-channel set overwrites only the bands it has).
import Convolution
import Glibc

package enum Equalizer {
    static let maxBands = 64
    static let channels = 8

    /// Each channel's biquads, from the node's config; identity bands (unknown types) left out.
    static func channelBands(
        _ config: [(String, SPAJSONValue)], node: String, warnings: inout [String]
    ) throws(NodeConfigurationError) -> [[Biquad]] {
        var bands = [[Biquad?]](repeating: [Biquad?](repeating: nil, count: maxBands), count: channels)
        var used = 0
        for (key, value) in config {
            let isFile = key.hasPrefix("filename"), isFilters = key.hasPrefix("filters")
            guard isFile || isFilters else {
                warnings.append("unknown key '\(node) config \(key)' ignored")
                continue
            }
            // "filters2": channel 2 only; "filters" (or a suffix that is not a number): every channel.
            let index = Int(key.dropFirst(isFile ? 8 : 7)) ?? 0
            let channel = index == 0 ? 0 : min(max(index, 1), channels) - 1
            let set =
                isFile
                ? try fileBands(
                    NodeConfiguration.expandingHome(try NodeConfiguration.text(value, "\(node) config \(key)")), key: "\(node) config \(key)")
                : try filterBands(value, key: "\(node) config \(key)", warnings: &warnings)
            for (band, biquad) in set.enumerated() { bands[channel][band] = biquad }
            used = max(used, set.count)
            if index == 0 { for other in 1..<channels { bands[other] = bands[0] } }
        }
        return bands.map { $0.prefix(used).compactMap { $0 } }
    }

    /// `filters = [ { type = bq_peaking freq = 21 gain = 6.7 q = 1.1 } ... ]`; filter-chain's
    /// defaults (freq 0, q 1, gain 0); a type that is not a named biquad is a band that passes all.
    private static func filterBands(_ value: SPAJSONValue, key: String, warnings: inout [String]) throws(NodeConfigurationError) -> [Biquad?] {
        guard case let .array(elements) = value else {
            throw NodeConfigurationError(key: key, message: "expected an array [ { type = bq_peaking ... } ... ]")
        }
        guard elements.count <= maxBands else {
            throw NodeConfigurationError(key: key, message: "\(elements.count) bands; param_eq takes \(maxBands)")
        }
        var bands: [Biquad?] = []
        for (index, element) in elements.enumerated() {
            let bandKey = "\(key)[\(index)]"
            var shape: Biquad.Shape?, biquad = Biquad(shape: .peaking, frequency: 0, q: 1, gain: 0)
            for (name, field) in try NodeConfiguration.object(element, bandKey) {
                switch name {
                case "type":
                    let type = try NodeConfiguration.text(field, "\(bandKey).type")
                    shape = type.hasPrefix("bq_") ? Biquad.Shape(rawValue: String(type.dropFirst(3))) : nil
                    if shape == nil { warnings.append("\(bandKey).type '\(type)' is no named biquad: that band passes all, as in filter-chain") }
                case "freq": biquad.frequency = try NodeConfiguration.number(field, "\(bandKey).freq", 0...384_000)
                case "q": biquad.q = try NodeConfiguration.number(field, "\(bandKey).q", 0...1000)
                case "gain": biquad.gain = try NodeConfiguration.number(field, "\(bandKey).gain", -120...40)
                default: warnings.append("unknown key '\(bandKey).\(name)' ignored")
                }
            }
            if let shape { biquad.shape = shape }
            bands.append(shape == nil ? nil : biquad)
        }
        return bands
    }

    /// An EqualizerAPO file as filter-chain reads it: a first line `Preamp: -6.8 dB` (a gain), then
    /// lines `Filter 1: ON PK Fc 21 Hz Gain 6.7 dB Q 1.100` (ON; PK, LSC or HSC; others skipped).
    package static func fileBands(_ path: String, key: String) throws(NodeConfigurationError) -> [Biquad?] {
        guard let text = SystemFiles.readText(path) else {
            throw NodeConfigurationError(key: key, message: "cannot read the EqualizerAPO file '\(path)': \(String(cString: strerror(errno)))")
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if text.hasSuffix("\n") { lines.removeLast() }
        guard !lines.isEmpty else { return [] }
        var bands: [Biquad?] = []
        var preamp = LineScanner(lines.removeFirst())
        if preamp.word() != nil, let gain = preamp.word(width: 6).flatMap(floatValue) {
            bands.append(Biquad(shape: .highshelf, frequency: 0, q: 1, gain: gain))  // a plain gain
        }
        for line in lines {
            guard bands.count < maxBands else {
                throw NodeConfigurationError(key: key, message: "'\(path)' has more than \(maxBands) lines of bands; param_eq takes \(maxBands)")
            }
            var scanner = LineScanner(line)
            guard scanner.word() != nil, scanner.integer(), scanner.literal(":"), let state = scanner.word(width: 3),
                let type = scanner.word(width: 3), scanner.word() != nil, let frequency = scanner.word(width: 8),
                scanner.word() != nil, scanner.word() != nil, let gain = scanner.word(width: 6), scanner.word() != nil,
                scanner.character(), let q = scanner.word(width: 6), state == "ON",
                let shape = ["PK": Biquad.Shape.peaking, "LSC": .lowshelf, "HSC": .highshelf][type],
                let frequency = floatValue(frequency), let gain = floatValue(gain), let q = floatValue(q)
            else { continue }
            bands.append(Biquad(shape: shape, frequency: frequency, q: q, gain: gain))
        }
        return bands
    }

    /// spa_json_parse_float: the whole text a float.
    private static func floatValue(_ text: String) -> Double? { Float(text).map(Double.init) }
}

/// scanf's conversions on one line, for the EqualizerAPO format: `%Ns` (a word of at most N
/// characters: the rest of a longer one is the next word), `%d`, a literal, ` %c`.
private struct LineScanner {
    private let characters: [Character]
    private var index = 0

    init(_ line: String) { characters = Array(line) }

    private mutating func skipSpaces() {
        while index < characters.count, characters[index].isWhitespace { index += 1 }
    }

    mutating func word(width: Int = .max) -> String? {
        skipSpaces()
        let start = index
        while index < characters.count, !characters[index].isWhitespace, index - start < width { index += 1 }
        return index > start ? String(characters[start..<index]) : nil
    }

    mutating func integer() -> Bool {
        skipSpaces()
        if index < characters.count, "+-".contains(characters[index]) { index += 1 }
        let start = index
        while index < characters.count, characters[index].isASCII, characters[index].isNumber { index += 1 }
        return index > start
    }

    /// A literal right here (scanf does not skip spaces before one).
    mutating func literal(_ text: Character) -> Bool {
        guard index < characters.count, characters[index] == text else { return false }
        index += 1
        return true
    }

    mutating func character() -> Bool {
        skipSpaces()
        guard index < characters.count else { return false }
        index += 1
        return true
    }
}
