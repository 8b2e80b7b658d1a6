/// A small `--key value` / `--flag` parser shared by the commands; every mistake is a `UsageError`
/// naming the option.
struct OptionParser {
    private var values: [String: String] = [:]
    /// Options that may be given several times (`--set`), in order.
    private var repeated: [String: [String]] = [:]
    private var flags: Set<String> = []
    private(set) var positional: [String] = []

    init(
        _ arguments: [String], flags knownFlags: Set<String>, valued knownValued: Set<String>,
        repeatable: Set<String> = []
    ) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument.hasPrefix("--") {
                let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
                let key = parts[0]
                if knownFlags.contains(key), parts.count == 1 {
                    flags.insert(key)
                } else if knownValued.contains(key) || repeatable.contains(key) {
                    let value: String
                    if parts.count == 2 {
                        value = parts[1]
                    } else {
                        guard index < arguments.count else { throw UsageError("\(key) needs a value") }
                        value = arguments[index]
                        index += 1
                    }
                    if repeatable.contains(key) { repeated[key, default: []].append(value) } else { values[key] = value }
                } else {
                    throw UsageError("unknown option \(argument)")
                }
            } else {
                positional.append(argument)
            }
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }
    func string(_ name: String) -> String? { values[name] }
    func strings(_ name: String) -> [String] { repeated[name] ?? [] }

    func integer(_ name: String, in range: ClosedRange<Int> = 1...Int.max) throws -> Int? {
        guard let text = values[name] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError("\(name) must be a whole number in \(range.lowerBound)...\(range.upperBound), not '\(text)'")
        }
        return value
    }

    func double(_ name: String) throws -> Double? {
        guard let text = values[name] else { return nil }
        guard let value = Double(text), value.isFinite, value > 0 else { throw UsageError("\(name) must be a positive number, not '\(text)'") }
        return value
    }

    func integers(_ name: String) throws -> [Int]? {
        guard let text = values[name] else { return nil }
        return try text.split(separator: ",").map {
            guard let value = Int($0), value > 0 else { throw UsageError("\(name): '\($0)' is not a positive whole number") }
            return value
        }
    }

    func doubles(_ name: String) throws -> [Double]? {
        guard let text = values[name] else { return nil }
        return try text.split(separator: ",").map {
            guard let value = Double($0), value > 0, value.isFinite else { throw UsageError("\(name): '\($0)' is not a positive number") }
            return value
        }
    }

    /// Nothing may be left over: stray words are mistakes.
    mutating func finish(positionalCount: Int = 0) throws {
        guard positional.count == positionalCount else {
            throw UsageError(
                positional.count > positionalCount
                    ? "unexpected argument '\(positional[positionalCount])'"
                    : "missing argument(s)")
        }
    }
}
