// Placeholder until the bench command lands (being written now).
enum BenchCommand: Command {
    static let name = "bench"
    static let summary = "benchmark the engine"
    static let usage = "Usage: pw-convolver bench"
    static func run(_ arguments: [String]) throws { throw UsageError("'bench' is not available yet") }
}
