// Placeholder until the top command lands (being written now).
enum TopCommand: Command {
    static let name = "top"
    static let summary = "per-node timing from PipeWire's profiler (like pw-top -b)"
    static let usage = "Usage: pw-convolver top"
    static func run(_ arguments: [String]) throws { throw UsageError("'top' is not available yet") }
}
