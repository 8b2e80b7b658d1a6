/// Level 0: runs inside every `process` call, on the data thread, so that output sample n depends
/// only on input samples up to n (no added latency) whatever the call size. `HeadLevel` does it with
/// FFT blocks; `DirectHead`, for an IR of a few dozen taps, in the time domain.
protocol Head: AnyObject {
    /// Frames the head takes before its next block boundary: the engine cuts each call into pieces
    /// of at most this many, and every level's block boundaries fall between pieces.
    var frameRoom: Int { get }
    /// Independent units of per-call work the scheduler may run fork-join (`SplitShare`).
    var splitUnitCount: Int { get }
    /// Into how many parts the per-call work is cut (1: not split).
    var partCount: Int { get }
    /// Setup only, before the first `process`.
    func configureSplit(partCount: Int, routing: Routing) throws
    /// Runs part `part` of the split for call piece `sequence`. Real-time safe.
    func runPart(_ part: Int, sequence: Int, routing: Routing)
    /// Writes (not adds) the head's output for `count` ≤ `frameRoom` samples. Real-time safe.
    func process(
        inputs: UnsafePointer<UnsafePointer<Float>?>, inputOffset: Int,
        outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, outputOffset: Int,
        count: Int, routing: Routing, scheduler: (any LevelJobScheduler)?)
    /// The cost of the costliest call piece (one that starts a block), in ns. Setup only.
    func estimatedBlockStartNanoseconds(costs: MachineCosts, routing: Routing) -> Double
    func reset()
}
