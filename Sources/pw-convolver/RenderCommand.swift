// Placeholder until the render command lands (being written now).
enum RenderCommand: Command {
    static let name = "render"
    static let summary = "render a file offline through the engine"
    static let usage = "Usage: pw-convolver render"
    static func run(_ arguments: [String]) throws { throw UsageError("'render' is not available yet") }
}
