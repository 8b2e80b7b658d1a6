// `pw-convolver top`: per-node timing from PipeWire's profiler, like `pw-top -b` of newer PipeWire
// (Debian 12's 0.3.65 pw-top has no batch mode, and its ERR column stays 0 under a dummy driver).
import Convolution
import ConvolverNode
import Glibc
import Workgroup

enum TopCommand: Command {
    static let name = "top"
    static let summary = "per-node timing from PipeWire's profiler (like pw-top -b)"
    static let usage = """
        Usage: pw-convolver top [--batch] [--seconds S] [--node NAME]

        Reads PipeWire's profiler (libpipewire-module-profiler must be loaded in the daemon) and prints,
        every second, one line per node in the graph:
          S         D driver, F follower, I idle (no cycle in this interval)
          ID        the node's global id
          QUANT     frames per cycle (the driver's quantum)    RATE  sample rate
          CYCLES    cycles seen in the interval
          WAIT-*    µs from the node being signalled to its thread waking up: average, p99, max
          BUSY-*    µs from waking up to finishing its work: average, p99, max
          B/Q       average busy time / cycle period
          LATE      cycles the node did not finish, or finished after the cycle's period was over
          NAME      node.name

        Options:
          --batch        plain lines every second instead of refreshing the terminal; after the last
                         interval a block headed `TOTAL <seconds> s` gives the figures over the whole run
          --seconds S    stop after S seconds (default: until Ctrl-C)
          --node NAME    only the node with this node.name (or id); exit status 1 if it never appears
        Connects to the daemon of $XDG_RUNTIME_DIR (or $PIPEWIRE_REMOTE); if the daemon goes away,
        exits with status 1 and says so.
        """

    struct Options {
        var batch = false
        var seconds: Double?
        var node: String?
    }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "--batch", "-b":
                options.batch = true
            case "--seconds":
                guard let text = remaining.popFirst(), let seconds = Double(text), seconds > 0 else {
                    throw UsageError("--seconds needs a positive number of seconds")
                }
                options.seconds = seconds
            case "--node":
                guard let name = remaining.popFirst() else { throw UsageError("--node needs a node name") }
                options.node = name
            default:
                throw UsageError("unknown option '\(argument)'")
            }
        }
        return options
    }

    static func run(_ arguments: [String]) throws {
        let options = try parse(arguments)
        let mainLoop = try PipeWireMainLoop()
        try withExtendedLifetime(mainLoop) { try run(options, on: mainLoop) }
    }

    /// The client lives only in here: it is gone before the main loop.
    private static func run(_ options: Options, on mainLoop: PipeWireMainLoop) throws {
        let client = try ProfilerClient(loop: mainLoop.loop)
        try client.waitForProfiler(on: mainLoop, timeout: 5)

        let start = monotonicNanos()
        var nodeSeen = false
        var failure: (any Error)?
        client.onChange = { [unowned mainLoop] in
            if let lost = client.connectionLost {
                failure = ProfilerClientError.connectionLost(lost)
            } else if let decodingError = client.decodingError {
                failure = decodingError
            }
            if failure != nil { mainLoop.quit() }
        }
        let refresh = mainLoop.timer(after: 1, every: 1) {
            let nodes = selected(client.interval.orderedNodes, options.node)
            client.interval = client.interval.emptied()
            nodeSeen = nodeSeen || nodes.contains { $0.cycles > 0 }
            if options.batch {
                printTable(nodes)
            } else {
                let lateTotal = selected(client.total.orderedNodes, options.node).reduce(0) { $0 + $1.lateCycles }
                print("\u{1b}[H\u{1b}[2J", terminator: "")
                print(
                    "pw-convolver top  \(String(cFormat: "%.0f", Double(monotonicNanos() - start) / 1e9)) s  late cycles since start: \(lateTotal)  (Ctrl-C quits)"
                )
                printTable(nodes)
            }
        }
        let end = options.seconds.map { seconds in mainLoop.timer(after: seconds) { [unowned mainLoop] in mainLoop.quit() } }
        mainLoop.run()
        refresh.cancel()
        end?.cancel()
        client.onChange = {}
        if let failure { throw failure }

        let totalNodes = selected(client.total.orderedNodes, options.node)
        nodeSeen = nodeSeen || totalNodes.contains { $0.cycles > 0 }
        if options.batch {
            print("TOTAL \(String(cFormat: "%.1f", Double(monotonicNanos() - start) / 1e9)) s")
            printTable(totalNodes)
        }
        if let name = options.node, !nodeSeen {
            printToStandardError("pw-convolver top: no cycle of a node named '\(name)' was seen")
            exit(1)
        }
    }

    private static func selected(_ nodes: [NodeStatistics], _ name: String?) -> [NodeStatistics] {
        guard let name else { return nodes }
        return nodes.filter { $0.name == name || "\($0.id)" == name }
    }

    private static func printTable(_ nodes: [NodeStatistics]) {
        print(TopTable.header)
        for node in nodes { print(TopTable.line(node)) }
        fflush(stdout)  // lines must reach a pipe every second, not when the buffer fills
    }
}
