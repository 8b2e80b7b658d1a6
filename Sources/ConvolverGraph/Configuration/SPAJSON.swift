/// A parser for SPA-JSON, the relaxed JSON of PipeWire config files and module arguments:
/// `{ key = value key2: value }`, bare words as strings, optional commas, `#` comments.
///
/// Written in Swift rather than over the static inline `spa_json_*` functions so it can be tested
/// and fuzzed on its own and reports positions in its errors. Not real-time code.
public enum SPAJSONValue: Sendable, Equatable {
    /// A quoted string.
    case string(String)
    /// A bare word: `auto`, `1.5`, `true`, `FL`. Numbers and booleans are read from it on demand.
    case word(String)
    case array([SPAJSONValue])
    /// Key-value pairs in file order (keys may repeat; the last one wins in `NodeConfiguration`).
    case object([SPAJSONMember])

    /// The text of a string or bare word.
    public var text: String? {
        switch self {
        case let .string(text), let .word(text): return text
        default: return nil
        }
    }

    /// A bare word or quoted string that reads as a finite number.
    public var number: Double? {
        guard let text, let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// `true`/`false` (also `1`/`0`).
    public var bool: Bool? {
        switch text {
        case "true", "1": return true
        case "false", "0": return false
        default: return nil
        }
    }

    /// The value as strict JSON (what a PipeWire property holding JSON, such as WirePlumber's
    /// `filter.smart.target`, is read as): bare words that are numbers, booleans or null stay
    /// bare, every other word is quoted.
    public var json: String {
        switch self {
        case let .string(text): return Self.quoted(text)
        case let .word(text):
            return ["true", "false", "null"].contains(text) || Double(text)?.isFinite == true ? text : Self.quoted(text)
        case let .array(elements): return "[ " + elements.map(\.json).joined(separator: ", ") + " ]"
        case let .object(members): return "{ " + members.map { Self.quoted($0.key) + ": " + $0.value.json }.joined(separator: ", ") + " }"
        }
    }

    private static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case _ where scalar.value < 0x20: result += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// Parses one value; top-level `key = value ...` without braces is read as an object, as
    /// PipeWire does for module arguments. Empty input is an empty object.
    public static func parse(_ source: String) throws(SPAJSONError) -> SPAJSONValue {
        var parser = SPAJSONParser(Array(source.utf8))
        parser.skipSpaceAndComments()
        if parser.atEnd { return .object([]) }
        let value: SPAJSONValue
        if parser.peek == UInt8(ascii: "{") || parser.peek == UInt8(ascii: "[") || parser.peek == UInt8(ascii: "\"") {
            value = try parser.parseValue(depth: 0)
        } else {
            value = .object(try parser.parseMembers(until: nil, depth: 0))
        }
        parser.skipSpaceAndComments()
        guard parser.atEnd else { throw parser.error("unexpected text after the value") }
        return value
    }
}

public struct SPAJSONMember: Sendable, Equatable {
    public var key: String
    public var value: SPAJSONValue
    public init(key: String, value: SPAJSONValue) {
        self.key = key
        self.value = value
    }
}

/// A syntax error: where it was found (byte offset, and line and column counted from 1) and the
/// text there.
public struct SPAJSONError: Error, Equatable, CustomStringConvertible {
    public var offset: Int
    public var line: Int
    public var column: Int
    /// The source from the error to the end of its line (at most 40 characters).
    public var nearText: String
    public var message: String
    public var description: String {
        "SPA-JSON syntax error at line \(line), column \(column)\(nearText.isEmpty ? " (the end)" : " ('\(nearText)')"): \(message)"
    }
}

struct SPAJSONParser {
    /// Nesting deeper than this is refused (bounded recursion on hostile input).
    static let maximumDepth = 64

    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index >= bytes.count }
    var peek: UInt8? { atEnd ? nil : bytes[index] }

    func error(_ message: String) -> SPAJSONError {
        let before = bytes[..<min(index, bytes.count)]
        let lineStart = before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
        let lineEnd = bytes[min(index, bytes.count)...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
        let near = String(decoding: bytes[min(index, bytes.count)..<lineEnd].prefix(40), as: UTF8.self)
        return SPAJSONError(
            offset: index, line: before.filter { $0 == UInt8(ascii: "\n") }.count + 1,
            column: String(decoding: bytes[lineStart..<min(index, bytes.count)], as: UTF8.self).count + 1,
            nearText: near.trimmingTrailingSpace, message: message)
    }

    mutating func skipSpaceAndComments() {
        while let byte = peek {
            if byte == UInt8(ascii: "#") {
                while let next = peek, next != UInt8(ascii: "\n") { index += 1 }
            } else if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n")
                || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: ",")
            {
                index += 1  // SPA-JSON treats commas as white space
            } else {
                return
            }
        }
    }

    private static func endsBareWord(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"),
            UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "="), UInt8(ascii: "{"), UInt8(ascii: "}"),
            UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "\""), UInt8(ascii: "#"):
            return true
        default:
            return false
        }
    }

    mutating func parseValue(depth: Int) throws(SPAJSONError) -> SPAJSONValue {
        guard depth < Self.maximumDepth else { throw error("nested deeper than \(Self.maximumDepth) levels") }
        skipSpaceAndComments()
        guard let byte = peek else { throw error("expected a value, found the end") }
        switch byte {
        case UInt8(ascii: "{"):
            index += 1
            return .object(try parseMembers(until: UInt8(ascii: "}"), depth: depth + 1))
        case UInt8(ascii: "["):
            index += 1
            var elements: [SPAJSONValue] = []
            while true {
                skipSpaceAndComments()
                guard let next = peek else { throw error("unterminated array") }
                if next == UInt8(ascii: "]") { index += 1; return .array(elements) }
                elements.append(try parseValue(depth: depth + 1))
            }
        case UInt8(ascii: "\""):
            return .string(try parseQuoted())
        case UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ":"), UInt8(ascii: "="):
            throw error("unexpected '\(Character(Unicode.Scalar(byte)))'")
        default:
            // In a value, ':' belongs to the word (`filename = builtin:hall`); spa_json would split
            // there, which only ever produces a confusing "unknown key" for such configs.
            return .word(parseBareWord(allowingColon: true))
        }
    }

    /// `key = value` pairs until `terminator` (or the end of input when nil).
    mutating func parseMembers(until terminator: UInt8?, depth: Int) throws(SPAJSONError) -> [SPAJSONMember] {
        var members: [SPAJSONMember] = []
        while true {
            skipSpaceAndComments()
            guard let byte = peek else {
                if terminator == nil { return members }
                throw error("unterminated object")
            }
            if byte == terminator { index += 1; return members }
            let key: String
            if byte == UInt8(ascii: "\"") {
                key = try parseQuoted()
            } else if Self.endsBareWord(byte) {
                throw error("expected a key, found '\(Character(Unicode.Scalar(byte)))'")
            } else {
                key = parseBareWord()
            }
            skipSpaceAndComments()
            if let separator = peek, separator == UInt8(ascii: "=") || separator == UInt8(ascii: ":") {
                index += 1
            }
            skipSpaceAndComments()
            guard let next = peek, next != terminator else { throw error("key '\(key)' has no value") }
            members.append(SPAJSONMember(key: key, value: try parseValue(depth: depth)))
        }
    }

    private mutating func parseBareWord(allowingColon: Bool = false) -> String {
        let start = index
        while let byte = peek, !Self.endsBareWord(byte) || (allowingColon && byte == UInt8(ascii: ":")) { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func parseQuoted() throws(SPAJSONError) -> String {
        index += 1  // the opening quote
        var text: [UInt8] = []
        while let byte = peek {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: text, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = peek else { throw error("unterminated escape") }
                index += 1
                switch escaped {
                case UInt8(ascii: "n"): text.append(UInt8(ascii: "\n"))
                case UInt8(ascii: "t"): text.append(UInt8(ascii: "\t"))
                case UInt8(ascii: "r"): text.append(UInt8(ascii: "\r"))
                case UInt8(ascii: "u"):
                    guard index + 4 <= bytes.count,
                        let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16),
                        let scalar = Unicode.Scalar(code)
                    else { throw error("bad \\u escape") }
                    index += 4
                    text.append(contentsOf: Array(String(Character(scalar)).utf8))
                default: text.append(escaped)
                }
            default:
                text.append(byte)
            }
        }
        throw error("unterminated string")
    }
}

extension String {
    fileprivate var trimmingTrailingSpace: String {
        var text = Substring(self)
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text = text.dropLast() }
        return String(text)
    }
}
