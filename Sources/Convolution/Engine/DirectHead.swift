/// Level 0 for an IR of a few dozen taps: each output sample summed from the taps and the inputs'
/// last samples, in the time domain. No transform to run: a live call finds an FFT's code and tables
/// cold (docs/facts.md, "Cold code"), and for so few taps the sums cost less than one cold transform.
///
/// Per input, a window holds the last `tapCount - 1` samples and then the current piece; per entry,
/// the IR reversed, so that output n is the dot product of the taps with the window from n on. The
/// vector lanes are consecutive outputs, each summed tap by tap in one order: the same bits on every
/// CPU.
final class DirectHead: Head {
    /// Samples summed per output sample: the longest entry's IR (shorter ones zero-padded).
    let tapCount: Int
    /// Outputs computed per vector step.
    static let stride = 32
    /// The most frames one piece takes.
    static let pieceLimit = 1024
    private let windowLength: Int
    /// Per input: `tapCount - 1` past samples, the current piece, room for the last step's lanes.
    private let windows: AlignedFloats
    /// Per entry: its IR reversed.
    private let reversedTaps: AlignedFloats
    /// One output's sums, whole steps.
    private let sums: AlignedFloats

    init(tapCount: Int, impulses: [[Float]], routing: Routing) throws {
        self.tapCount = max(1, tapCount)
        windowLength = self.tapCount - 1 + Self.pieceLimit + Self.stride
        windows = try AlignedFloats(count: routing.inputCount * windowLength)
        reversedTaps = try AlignedFloats(count: impulses.count * self.tapCount)
        for (entry, impulse) in impulses.enumerated() {
            let taps = reversedTaps.pointer + entry * self.tapCount
            for (k, sample) in impulse.prefix(self.tapCount).enumerated() { taps[self.tapCount - 1 - k] = sample }
        }
        sums = try AlignedFloats(count: Self.pieceLimit + Self.stride)
    }

    var frameRoom: Int { Self.pieceLimit }
    var splitUnitCount: Int { 1 }
    var partCount: Int { 1 }
    func configureSplit(partCount: Int, routing: Routing) {}
    func runPart(_ part: Int, sequence: Int, routing: Routing) {}

    func process(
        inputs: UnsafePointer<UnsafePointer<Float>?>, inputOffset: Int,
        outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, outputOffset: Int,
        count: Int, routing: Routing, scheduler: (any LevelJobScheduler)?
    ) {
        let history = tapCount - 1
        for input in 0..<routing.inputCount {
            let piece = windows.pointer + input * windowLength + history
            if let source = inputs[input] {
                piece.update(from: source + inputOffset, count: count)
            } else {
                piece.update(repeating: 0, count: count)
            }
        }
        for output in 0..<routing.outputCount {
            guard let destination = outputs[output] else { continue }
            sums.pointer.update(repeating: 0, count: count)
            for entry in routing.firstEntry[output]..<routing.firstEntry[output + 1] {
                Self.accumulate(
                    into: sums.pointer, window: windows.pointer + routing.entryInput[entry] * windowLength,
                    taps: reversedTaps.pointer + entry * tapCount, tapCount: tapCount, count: count)
            }
            (destination + outputOffset).update(from: sums.pointer, count: count)
        }
        for input in 0..<routing.inputCount {
            let window = windows.pointer + input * windowLength
            // Overlapping when the piece is shorter than the history: update(from:) allows it.
            window.update(from: window + count, count: history)
        }
    }

    /// `sums[n] += Σ_j taps[j] · window[n + j]` for n in 0 ..< count, rounded up to whole steps
    /// (the lanes past `count` read the window's spare room and are never copied out). Real-time safe.
    @inline(__always)
    static func accumulate(
        into sums: UnsafeMutablePointer<Float>, window: UnsafePointer<Float>, taps: UnsafePointer<Float>,
        tapCount: Int, count: Int
    ) {
        typealias Lanes = SIMD8<Float>
        let lanes = Lanes.scalarCount
        // SAFETY: `sums` holds `count` rounded up to `stride`, the window that plus `tapCount - 1`
        // samples (the caller's allocation); each load below stays inside them. Unaligned loads:
        // n + j is any index.
        let window = UnsafeRawPointer(window), sums = UnsafeMutableRawPointer(sums)
        let width = MemoryLayout<Float>.stride
        var n = 0
        while n < count {
            var s0 = sums.loadUnaligned(fromByteOffset: n * width, as: Lanes.self)
            var s1 = sums.loadUnaligned(fromByteOffset: (n + lanes) * width, as: Lanes.self)
            var s2 = sums.loadUnaligned(fromByteOffset: (n + 2 * lanes) * width, as: Lanes.self)
            var s3 = sums.loadUnaligned(fromByteOffset: (n + 3 * lanes) * width, as: Lanes.self)
            for j in 0..<tapCount {
                let h = Lanes(repeating: taps[j])
                let at = (n + j) * width
                s0 += h * window.loadUnaligned(fromByteOffset: at, as: Lanes.self)
                s1 += h * window.loadUnaligned(fromByteOffset: at + lanes * width, as: Lanes.self)
                s2 += h * window.loadUnaligned(fromByteOffset: at + 2 * lanes * width, as: Lanes.self)
                s3 += h * window.loadUnaligned(fromByteOffset: at + 3 * lanes * width, as: Lanes.self)
            }
            sums.storeBytes(of: s0, toByteOffset: n * width, as: Lanes.self)
            sums.storeBytes(of: s1, toByteOffset: (n + lanes) * width, as: Lanes.self)
            sums.storeBytes(of: s2, toByteOffset: (n + 2 * lanes) * width, as: Lanes.self)
            sums.storeBytes(of: s3, toByteOffset: (n + 3 * lanes) * width, as: Lanes.self)
            n += Self.stride
        }
    }

    func estimatedBlockStartNanoseconds(costs: MachineCosts, routing: Routing) -> Double {
        costs.directTaps(Double(routing.entryCount * tapCount * Self.pieceLimit))
    }

    func reset() { windows.zero() }
}
