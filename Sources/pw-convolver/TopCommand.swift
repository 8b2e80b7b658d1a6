// `pw-convolver top`: per-node timing from PipeWire's profiler, like `pw-top -b` of newer PipeWire
// (Debian 12's 0.3.65 pw-top has no batch mode, and its ERR column stays 0 under a dummy driver).
import Foundation

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
    Connects to the daemon of $XDG_RUNTIME_DIR (or $PIPEWIRE_REMOTE).
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
        let client = try ProfilerClient()
        try client.waitForProfiler(timeout: 5)
        installStopSignalHandlers()

        let start = Date()
        let end = options.seconds.map { start.addingTimeInterval($0) }
        var nextRefresh = start.addingTimeInterval(1)
        var nodeSeen = false
        while stopRequested == 0 {
            let now = Date()
            if let end, now >= end { break }
            if now < nextRefresh { usleep(20_000); continue }
            nextRefresh = nextRefresh.addingTimeInterval(1)
            client.lock()
            let snapshot = client.interval
            client.interval = snapshot.emptied()
            let total = client.total
            let decodingError = client.decodingError
            client.unlock()
            if let decodingError { throw decodingError }
            let nodes = selected(snapshot.orderedNodes, options.node)
            nodeSeen = nodeSeen || nodes.contains { $0.cycles > 0 }
            if options.batch {
                printTable(nodes)
            } else {
                let lateTotal = selected(total.orderedNodes, options.node).reduce(0) { $0 + $1.lateCycles }
                print("\u{1b}[H\u{1b}[2J", terminator: "")
                print("pw-convolver top  \(String(format: "%.0f", now.timeIntervalSince(start))) s  late cycles since start: \(lateTotal)  (Ctrl-C quits)")
                printTable(nodes)
            }
        }
        client.lock()
        let total = client.total
        client.unlock()
        let totalNodes = selected(total.orderedNodes, options.node)
        nodeSeen = nodeSeen || totalNodes.contains { $0.cycles > 0 }
        if options.batch {
            print("TOTAL \(String(format: "%.1f", Date().timeIntervalSince(start))) s")
            printTable(totalNodes)
        }
        if let name = options.node, !nodeSeen {
            FileHandle.standardError.write(Data("pw-convolver top: no cycle of a node named '\(name)' was seen\n".utf8))
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

/// Set by SIGINT/SIGTERM; the refresh loop polls it.
nonisolated(unsafe) private var stopRequested: sig_atomic_t = 0

private func installStopSignalHandlers() {
    signal(SIGINT) { _ in stopRequested = 1 }
    signal(SIGTERM) { _ in stopRequested = 1 }
}
