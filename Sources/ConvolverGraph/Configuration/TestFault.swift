// Test only: the module key `test.fault` breaks a node on purpose, so that the live tests can show
// each of their judges fails on a broken node. Nothing here runs unless the key is given.

/// The deliberate faults of `test.fault`: each breaks the node in one way its tests must catch.
public enum TestFault: String, Sendable, Equatable, CaseIterable {
    /// `process` allocates on every call (the real-time safety test's counter must see it).
    case allocateInProcess = "allocate-in-process"
    /// The longest tail level leaves out one output block (the one holding stream time 3 s).
    case dropTailBlock = "drop-tail-block"
    /// The first two output ports carry each other's channel.
    case swapOutputs = "swap-outputs"
    /// The output comes one sample late.
    case delayOneSample = "delay-one-sample"
    /// Every 64th call changes its first output sample after its record is taken, as a helper
    /// writing into the graph's buffer after the call would.
    case alterAfterRecord = "alter-after-record"
    /// The shortest level's job, run on the data thread, lasts one and a half quantum periods in
    /// every call: a level too heavy for the data thread (its late cycles must count as the node's
    /// own, not as stalls of the machine).
    case overrunDataThreadJobs = "overrun-data-thread-jobs"
}
