// Placeholder until the run command lands (being written now).
enum RunCommand: Command {
    static let name = "run"
    static let summary = "run the convolver node in PipeWire until SIGINT/SIGTERM"
    static let usage = "Usage: pw-convolver run"
    static func run(_ arguments: [String]) throws { throw UsageError("'run' is not available yet") }
}
