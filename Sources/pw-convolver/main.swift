// pw-convolver: run the swift-convolver node standalone, render offline, benchmark, watch the graph.
// Wiring only: each command lives in its own file.

import Glibc

/// One `pw-convolver <name>` command.
protocol Command {
    static var name: String { get }
    static var summary: String { get }
    static var usage: String { get }
    static func run(_ arguments: [String]) throws
}

/// A command-line mistake: printed with the command's usage, exit status 2.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A command that ran and failed: its message, exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// `run` is the default command: `pw-convolver --ir hall.wav` runs the node.
let commands: [any Command.Type] = [
    RunCommand.self, RenderCommand.self, BenchCommand.self, TopCommand.self, InspectCommand.self, SetCommand.self, StatusCommand.self,
]

func printHelp() {
    print(
        """
        pw-convolver: zero-latency convolution for PipeWire (swift-convolver)

        Usage: pw-convolver [run] [--ir FILE|builtin:NAME] [options]   run the node (default command)
               pw-convolver <command> [options]

        Commands:
        """)
    for command in commands { print("  \(command.name + String(repeating: " ", count: max(0, 8 - command.name.count))) \(command.summary)") }
    print("\n`pw-convolver <command> --help` documents each command's options.")
}

/// One line on stderr (diagnostics; stdout carries the commands' results).
func printToStandardError(_ line: String) {
    fputs(line + "\n", stderr)
}

var arguments = Array(CommandLine.arguments.dropFirst())
// No arguments: short help, not a node on nothing (`pw-convolver run` with no IR is an error anyway).
if arguments.isEmpty || arguments.first == "--help" || arguments.first == "-h" || arguments.first == "help" {
    printHelp()
    exit(0)
}
var command: any Command.Type = RunCommand.self
if let first = arguments.first, let named = commands.first(where: { $0.name == first }) {
    command = named
    arguments.removeFirst()
}
if arguments.contains("--help") || arguments.contains("-h") {
    print(command.usage)
    exit(0)
}
do {
    try command.run(arguments)
} catch let error as UsageError {
    printToStandardError("pw-convolver \(command.name): \(error)\n\n\(command.usage)")
    exit(2)
} catch {
    printToStandardError("pw-convolver \(command.name): \(error)")
    exit(1)
}
