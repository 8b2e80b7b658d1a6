// Per-node statistics over profiler cycles, and the table `pw-convolver top` prints.
import CPipeWire
import Convolution
import Glibc

/// Wait and busy times of one node over a span of cycles.
struct NodeStatistics {
    var id: UInt32
    var name: String
    var isDriver = false
    var cycles = 0
    var lateCycles = 0
    var quantum: Int64 = 0
    var rate: UInt32 = 0
    /// Microseconds from signal to awake (scheduling delay), one per measured cycle.
    var waitMicroseconds: [Double] = []
    /// Microseconds from awake to finish (the node's work), one per measured cycle.
    var busyMicroseconds: [Double] = []
    /// Sum of the cycle periods the busy times were measured in, for busy/quantum.
    var periodMicrosecondsSum = 0.0

    init(id: UInt32, name: String) {
        self.id = id
        self.name = name
    }

    mutating func add(_ timing: NodeCycleTiming, of cycle: ProfilerCycle) {
        cycles += 1
        quantum = cycle.quantum
        rate = cycle.rate
        if cycle.isLate(timing) { lateCycles += 1 }
        // A node that did not run in this cycle has no valid times to measure.
        guard cycle.ran(timing) else { return }
        waitMicroseconds.append(Double(timing.awake - timing.signal) / 1000)
        busyMicroseconds.append(Double(timing.finish - timing.awake) / 1000)
        periodMicrosecondsSum += Double(cycle.periodNanoseconds) / 1000
    }

    /// Mean busy time over mean period: the share of the cycle the node spent working.
    var busyPerQuantum: Double? {
        periodMicrosecondsSum > 0 ? busyMicroseconds.reduce(0, +) / periodMicrosecondsSum : nil
    }
}

/// Mean, 99th percentile (nearest rank) and maximum of samples, nil when there are none.
struct Summary: Equatable {
    var average: Double
    var p99: Double
    var max: Double

    init?(_ samples: [Double]) {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        average = sorted.reduce(0, +) / Double(sorted.count)
        let rank = Int((0.99 * Double(sorted.count)).rounded(.up))
        p99 = sorted[Swift.max(rank, 1) - 1]
        max = sorted[sorted.count - 1]
    }
}

/// Collects profiler cycles into per-node statistics, keyed by node id, in first-seen order.
struct GraphStatistics {
    private(set) var nodes: [UInt32: NodeStatistics] = [:]
    private(set) var order: [UInt32] = []

    mutating func add(_ cycle: ProfilerCycle) {
        record(cycle.driver, of: cycle, isDriver: true)
        for follower in cycle.followers { record(follower, of: cycle, isDriver: false) }
    }

    /// Adds a node known from the registry, so idle nodes are listed too.
    mutating func addIdleNode(id: UInt32, name: String) {
        if nodes[id] == nil { order.append(id); nodes[id] = NodeStatistics(id: id, name: name) }
    }

    mutating func removeNode(id: UInt32) {
        nodes[id] = nil
        order.removeAll { $0 == id }
    }

    /// The same nodes with their samples cleared: the start of the next interval.
    func emptied() -> GraphStatistics {
        var next = GraphStatistics()
        for id in order {
            guard let node = nodes[id] else { continue }
            next.order.append(id)
            var cleared = NodeStatistics(id: id, name: node.name)
            cleared.isDriver = node.isDriver
            cleared.quantum = node.quantum
            cleared.rate = node.rate
            next.nodes[id] = cleared
        }
        return next
    }

    var orderedNodes: [NodeStatistics] { order.compactMap { nodes[$0] } }

    private mutating func record(_ timing: NodeCycleTiming, of cycle: ProfilerCycle, isDriver: Bool) {
        if nodes[timing.id] == nil { order.append(timing.id); nodes[timing.id] = NodeStatistics(id: timing.id, name: timing.name) }
        nodes[timing.id]!.name = timing.name
        nodes[timing.id]!.isDriver = isDriver
        nodes[timing.id]!.add(timing, of: cycle)
    }
}

/// The table: one line per node, name last (it may contain spaces), times in µs.
enum TopTable {
    static let header = "S    ID  QUANT   RATE CYCLES  WAIT-AVG  WAIT-P99  WAIT-MAX  BUSY-AVG  BUSY-P99  BUSY-MAX   B/Q  LATE  NAME"

    static func line(_ node: NodeStatistics) -> String {
        func time(_ value: Double?) -> String { pad(value.map { String(cFormat: "%.1f", $0) } ?? "-", 9) }
        let wait = Summary(node.waitMicroseconds)
        let busy = Summary(node.busyMicroseconds)
        let role = node.cycles == 0 ? "I" : (node.isDriver ? "D" : "F")
        let ratio = node.busyPerQuantum.map { String(cFormat: "%.3f", $0) } ?? "-"
        return [
            role, pad("\(node.id)", 5), pad(node.quantum > 0 ? "\(node.quantum)" : "-", 6),
            pad(node.rate > 0 ? "\(node.rate)" : "-", 6), pad("\(node.cycles)", 6),
            time(wait?.average), time(wait?.p99), time(wait?.max),
            time(busy?.average), time(busy?.p99), time(busy?.max),
            pad(ratio, 5), pad("\(node.lateCycles)", 5), " " + node.name,
        ].joined(separator: " ")
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
