/// Tells a stall of the machine from work in one stage of a real-time call (a data-thread level's
/// job, or the rest of the call): the stage's usual wall time is a running median, and a run that
/// takes many times that was held up, not working.
///
/// Why: on the virtual machines this project runs on, the host now and then holds a virtual CPU
/// for up to several milliseconds and the guest charges that to the running thread as its own CPU
/// time (docs/facts.md, "These virtual machines stall"), so CPU time alone counts such a call as the
/// node's own overrun. A stage's work is the same size from run to run; a stall is one run many
/// times longer. A stage that is slow every time it runs stays work: its median follows it.
///
/// Real-time safe: integer arithmetic on one stored value.
public struct StallGauge: Sendable {
    /// A run longer than `stallFactor` times the usual time plus `stallMarginNanos` is a stall.
    /// Cold caches make a small stage's run up to ten times its usual (docs/facts.md, "Cold code"),
    /// but that is microseconds: the margin keeps them work.
    private static let stallFactor: UInt64 = 8
    private static let stallMarginNanos: UInt64 = 200_000

    /// The running median of the runs' wall times, ns (0: no run yet).
    public private(set) var usualNanos: UInt64 = 0

    public init() {}

    /// Records one run of `nanos` wall time; returns the part of it that was a stall (the run
    /// beyond the usual time), or 0.
    public mutating func stalledNanos(ofRun nanos: UInt64) -> UInt64 {
        guard usualNanos > 0 else {
            usualNanos = max(nanos, 1)
            return 0
        }
        let usual = usualNanos
        // A median estimate moving a 32nd of itself per run (frugal streaming): a lone stall moves
        // it by 3 %, a change of the stage's work is followed within a hundred runs.
        if nanos > usual {
            usualNanos = usual &+ max(usual / 32, 1)
        } else if nanos < usual {
            usualNanos = max(usual &- usual / 32, 1)
        }
        return nanos > usual &* Self.stallFactor &+ Self.stallMarginNanos ? nanos &- usual : 0
    }
}
