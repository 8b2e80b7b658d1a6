// Per-node statistics over profiler cycles (what `pw-convolver top` prints).
import CPipeWire
import Convolution
import Glibc

/// Wait and busy times of one node over a span of cycles.
public struct NodeStatistics {
    public var id: UInt32
    public var name: String
    public var isDriver = false
    public var cycles = 0
    public var lateCycles = 0
    public var quantum: Int64 = 0
    public var rate: UInt32 = 0
    /// Microseconds from signal to awake (scheduling delay), one per measured cycle.
    public var waitMicroseconds: [Double] = []
    /// Microseconds from awake to finish (the node's work), one per measured cycle.
    public var busyMicroseconds: [Double] = []
    /// Sum of the cycle periods the busy times were measured in, for busy/quantum.
    public var periodMicrosecondsSum = 0.0

    public init(id: UInt32, name: String) {
        self.id = id
        self.name = name
    }

    public mutating func add(_ timing: NodeCycleTiming, of cycle: ProfilerCycle) {
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
    public var busyPerQuantum: Double? {
        periodMicrosecondsSum > 0 ? busyMicroseconds.reduce(0, +) / periodMicrosecondsSum : nil
    }
}

/// Mean, 99th percentile (nearest rank) and maximum of samples, nil when there are none.
public struct Summary: Equatable {
    public var average: Double
    public var p99: Double
    public var max: Double

    public init?(_ samples: [Double]) {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        average = sorted.reduce(0, +) / Double(sorted.count)
        let rank = Int((0.99 * Double(sorted.count)).rounded(.up))
        p99 = sorted[Swift.max(rank, 1) - 1]
        max = sorted[sorted.count - 1]
    }
}

/// Collects profiler cycles into per-node statistics, keyed by node id, in first-seen order.
public struct GraphStatistics {
    public private(set) var nodes: [UInt32: NodeStatistics] = [:]
    public private(set) var order: [UInt32] = []

    public mutating func add(_ cycle: ProfilerCycle) {
        record(cycle.driver, of: cycle, isDriver: true)
        for follower in cycle.followers { record(follower, of: cycle, isDriver: false) }
    }

    /// Adds a node known from the registry, so idle nodes are listed too.
    public mutating func addIdleNode(id: UInt32, name: String) {
        if nodes[id] == nil { order.append(id); nodes[id] = NodeStatistics(id: id, name: name) }
    }

    public mutating func removeNode(id: UInt32) {
        nodes[id] = nil
        order.removeAll { $0 == id }
    }

    /// The same nodes with their samples cleared: the start of the next interval.
    public func emptied() -> GraphStatistics {
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

    public var orderedNodes: [NodeStatistics] { order.compactMap { nodes[$0] } }

    private mutating func record(_ timing: NodeCycleTiming, of cycle: ProfilerCycle, isDriver: Bool) {
        if nodes[timing.id] == nil { order.append(timing.id); nodes[timing.id] = NodeStatistics(id: timing.id, name: timing.name) }
        nodes[timing.id]!.name = timing.name
        nodes[timing.id]!.isDriver = isDriver
        nodes[timing.id]!.add(timing, of: cycle)
    }
}
