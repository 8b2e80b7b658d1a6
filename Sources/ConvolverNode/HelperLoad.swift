// How busy the helpers a node's levels run on were since the last statistics update: in a
// shared workgroup every node's jobs count, so the nodes of one process publish one load.

/// Helpers' load between two readings of their busy-time counter: busy time over threads × time.
struct HelperLoad {
    private var last: (busyNanos: Int64, at: UInt64)?

    /// Percent of `threads` helpers' time spent on jobs since the previous reading; nil at the
    /// first reading or without helpers. A counter that went down belongs to helpers started since
    /// (a new engine's own group): all its time is new.
    mutating func percent(busyNanos: Int64, threads: Int, now: UInt64) -> Double? {
        defer { last = (busyNanos, now) }
        guard let last, threads > 0, now > last.at else { return nil }
        let busy = busyNanos >= last.busyNanos ? busyNanos - last.busyNanos : busyNanos
        return 100 * Double(busy) / (Double(threads) * Double(now - last.at))
    }
}
