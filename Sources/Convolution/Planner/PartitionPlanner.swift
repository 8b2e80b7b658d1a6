/// How the impulse response is cut into levels of growing block size.
///
/// Level 0, the head, runs on the data thread on every call (zero latency): FFT blocks, or for an IR
/// of a few dozen taps, sums in the time domain (a direct head: the plan's only level, its block
/// size the number of taps). Each later level `k`
/// covers IR samples `offset ..< offset + segmentCount * blockSize` with a uniform partition; it may
/// start only at `offset >= 2 * blockSize`, so its result is due a full period after its input block
/// completes: time to run it asynchronously.
public struct PartitionPlan: Sendable, Equatable, CustomStringConvertible {
    public struct Level: Sendable, Equatable {
        public var blockSize: Int
        public var segmentCount: Int
        /// First IR sample this level covers.
        public var offset: Int
        /// Summed in the time domain (`DirectHead`): `blockSize` taps, one segment.
        public var isDirect: Bool
        public var end: Int { offset + blockSize * segmentCount }

        public init(blockSize: Int, segmentCount: Int, offset: Int, isDirect: Bool = false) {
            self.blockSize = blockSize
            self.segmentCount = segmentCount
            self.offset = offset
            self.isDirect = isDirect
        }

        /// A direct head of `taps` taps.
        public static func direct(taps: Int) -> Level { Level(blockSize: taps, segmentCount: 1, offset: 0, isDirect: true) }
    }

    public var levels: [Level]
    /// The planner's estimate of the whole engine's cost, in fractions of one core at the problem's
    /// rate (helper hand-overs included, when the problem has a placement).
    public var estimatedCoreFraction: Double
    /// Of which on the data thread (the head, and the tail levels the placement puts there).
    public var estimatedDataThreadCoreFraction: Double

    public init(levels: [Level], estimatedCoreFraction: Double = .nan, estimatedDataThreadCoreFraction: Double = .nan) {
        self.levels = levels
        self.estimatedCoreFraction = estimatedCoreFraction
        self.estimatedDataThreadCoreFraction = estimatedDataThreadCoreFraction
    }

    public var head: Level { levels[0] }
    public var tails: ArraySlice<Level> { levels.dropFirst() }

    /// "256x4 | 512x2@1024 | ..." : block size x segments @ IR offset; "direct 48": 48 taps summed.
    public var description: String {
        levels.map { level in
            if level.isDirect { return "direct \(level.blockSize)" }
            return level.offset == 0
                ? "\(level.blockSize)x\(level.segmentCount)"
                : "\(level.blockSize)x\(level.segmentCount)@\(level.offset)"
        }.joined(separator: " | ")
    }
}

public enum PartitionPlanner {
    /// What a plan must serve.
    public struct Problem: Sendable {
        public var impulseLength: Int
        public var inputCount: Int
        public var outputCount: Int
        /// Number of (input, output) IRs in the matrix.
        public var entryCount: Int
        /// The expected call size (PipeWire quantum). Any call size still works.
        public var expectedBlockSize: Int
        public var maxPartitionSize: Int
        public var sampleRate: Double = 48000
        /// Where the tail levels will run, so the plan is priced as it will run; nil: every tail
        /// level on a helper, at no cost beyond its job (the engine on its own).
        public var placement: LevelPlacement?

        public init(
            impulseLength: Int, inputCount: Int, outputCount: Int, entryCount: Int,
            expectedBlockSize: Int, maxPartitionSize: Int
        ) {
            self.impulseLength = impulseLength
            self.inputCount = inputCount
            self.outputCount = outputCount
            self.entryCount = entryCount
            self.expectedBlockSize = expectedBlockSize
            self.maxPartitionSize = maxPartitionSize
        }
    }

    /// Data-thread time counts this much more than helper time: it is the graph's critical path.
    static let dataThreadWeight = 2.0
    static let headBlockSizes = (5...11).map { 1 << $0 }  // 32 ... 2048
    /// Relative cost difference below which the planner keeps the simpler plan.
    static let planningTolerance = 0.05

    /// The cheapest plan for `problem` under `costs`: every head block size and every subset of
    /// larger power-of-two tail block sizes is costed; the minimum wins.
    public static func plan(_ problem: Problem, costs: MachineCosts) -> PartitionPlan {
        let length = max(1, problem.impulseLength)
        let maxBlock = max(32, problem.maxPartitionSize)
        var best: (cost: Double, plan: PartitionPlan)?
        // The head of the call's size first, then the nearest sizes: a smaller head cuts each call
        // into pieces, each a pass over every level, which the costs below leave out. Near-equal
        // plans for a 0.001 s IR at quantum 256 then took `64x1` (four pieces a call) over `256x1`.
        let callLog2 = Int.bitWidth - 1 - max(1, problem.expectedBlockSize).leadingZeroBitCount
        func distance(_ block: Int) -> Int { abs(block.trailingZeroBitCount - callLog2) }
        let headBlocks = headBlockSizes.filter { $0 <= maxBlock }.sorted { (distance($0), $0) < (distance($1), $1) }
        for headBlock in headBlocks {
            var tailSizes: [Int] = []
            var size = headBlock * 2
            while size <= maxBlock { tailSizes.append(size); size *= 2 }
            for subset in (0..<(1 << tailSizes.count)).sorted(by: { $0.nonzeroBitCount < $1.nonzeroBitCount }) {
                let sizes = tailSizes.indices.filter { subset & (1 << $0) != 0 }.map { tailSizes[$0] }
                guard let levels = layout(length: length, headBlock: headBlock, tailSizes: sizes) else { continue }
                let (total, dataThread) = cost(levels, problem, costs)
                let weighted = total + (dataThreadWeight - 1) * dataThread
                // Candidates come simplest first (head of the call's size, few levels): a later one
                // must be clearly cheaper, so measurement noise does not flip plans from run to run.
                if best == nil || weighted < best!.cost * (1 - planningTolerance) {
                    best = (
                        weighted,
                        PartitionPlan(
                            levels: levels, estimatedCoreFraction: total,
                            estimatedDataThreadCoreFraction: dataThread)
                    )
                }
            }
        }
        if let direct = directPlan(problem, costs), direct.cost < best!.cost + coldTransformsCost(best!.plan.head, problem, costs) {
            return direct.plan
        }
        return best!.plan
    }

    /// The longest IR a direct head sums (a quantum of 1024 then takes 256 × 1024 sums per entry).
    public static let maxDirectTaps = 256

    /// A direct head for the whole IR, and its weighted cost; nil when the IR is too long for one.
    static func directPlan(_ problem: Problem, _ costs: MachineCosts) -> (cost: Double, plan: PartitionPlan)? {
        guard problem.impulseLength <= maxDirectTaps else { return nil }
        let taps = max(1, problem.impulseLength)
        let fraction = costs.directTaps(problem.sampleRate * Double(problem.entryCount * taps)) / 1e9
        let plan = PartitionPlan(
            levels: [.direct(taps: taps)], estimatedCoreFraction: fraction, estimatedDataThreadCoreFraction: fraction)
        return (dataThreadWeight * fraction, plan)
    }

    /// What the warm costs above leave out of an FFT head, weighted as data-thread time: live, each
    /// call's first transform finds FFTW's code and tables cold and costs about ten warm ones
    /// (docs/facts.md, "Cold code"). A direct head's few kilobytes of sums have no such cost.
    static func coldTransformsCost(_ head: PartitionPlan.Level, _ problem: Problem, _ costs: MachineCosts) -> Double {
        let callsPerSecond = problem.sampleRate / Double(max(1, problem.expectedBlockSize))
        return dataThreadWeight * callsPerSecond * 9 * costs.fftPair(2 * head.blockSize) / 2 / 1e9
    }

    /// Levels for the given block sizes, each switching to the next as early as allowed
    /// (offset >= 2 x block); nil when a level would be useless (the IR ends before it).
    public static func layout(length: Int, headBlock: Int, tailSizes: [Int]) -> [PartitionPlan.Level]? {
        var levels: [PartitionPlan.Level] = []
        var offset = 0
        let blockSizes = [headBlock] + tailSizes
        for (index, blockSize) in blockSizes.enumerated() {
            if offset >= length { return nil }
            let segments: Int
            if index + 1 < blockSizes.count {
                let nextStart = 2 * blockSizes[index + 1]
                segments = max(1, (nextStart - offset + blockSize - 1) / blockSize)
            } else {
                segments = (length - offset + blockSize - 1) / blockSize
            }
            levels.append(.init(blockSize: blockSize, segmentCount: segments, offset: offset))
            offset += segments * blockSize
        }
        return levels
    }

    /// (total, on the data thread) cost in fractions of a core.
    public static func cost(
        _ levels: [PartitionPlan.Level], _ problem: Problem,
        _ costs: MachineCosts
    ) -> (Double, Double) {
        let rate = problem.sampleRate
        let transformsPerBlock = Self.transformsPerBlock(problem)
        func delayLineNanoseconds(_ level: PartitionPlan.Level, segments: Int) -> Double {
            Self.delayLineNanoseconds(level, segments: segments, problem, costs)
        }
        let head = levels[0]
        let quantum = max(1, problem.expectedBlockSize)
        // A call that is not a whole number of head blocks costs a partial-block transform more.
        let piecesPerCall =
            quantum % head.blockSize == 0
            ? Double(quantum / head.blockSize)
            : Double(quantum) / Double(head.blockSize) + 1
        let perPiece = transformsPerBlock * costs.fftPair(2 * head.blockSize) + delayLineNanoseconds(head, segments: 1)
        let headNanosecondsPerSecond =
            rate / Double(quantum) * piecesPerCall * perPiece
            + rate / Double(head.blockSize) * delayLineNanoseconds(head, segments: head.segmentCount - 1)
        // Tail levels placed on the data thread count as its time; each job on a helper costs the overhead.
        let helperOverhead = problem.placement?.helperJobOverheadNanoseconds ?? 0
        var dataThreadNanosecondsPerSecond = headNanosecondsPerSecond, helperNanosecondsPerSecond = 0.0
        for tail in tailSchedules(levels, problem, costs) {
            let jobsPerSecond = rate / Double(tail.blockSize)
            if tail.runsOnDataThread {
                dataThreadNanosecondsPerSecond += jobsPerSecond * tail.estimatedJobNanoseconds
            } else {
                helperNanosecondsPerSecond += jobsPerSecond * (tail.estimatedJobNanoseconds + helperOverhead)
            }
        }
        let dataThreadFraction = dataThreadNanosecondsPerSecond / 1e9
        return (dataThreadFraction + helperNanosecondsPerSecond / 1e9, dataThreadFraction)
    }

    /// The tail levels of `levels` as the scheduler will run them: each job's estimate, and whether
    /// the problem's placement puts the level on the data thread. The one place that rule is applied.
    public static func tailSchedules(
        _ levels: [PartitionPlan.Level], _ problem: Problem,
        _ costs: MachineCosts
    ) -> [LevelSchedule] {
        var tails = levels.enumerated().dropFirst().map { LevelSchedule(level: $0, $1, problem: problem, costs: costs) }
        let callPeriodNanos = Double(max(1, problem.expectedBlockSize)) / problem.sampleRate * 1e9
        let onDataThread =
            problem.placement?.dataThreadLevelCount(
                tails, callPeriodNanos: callPeriodNanos,
                sampleRate: problem.sampleRate) ?? 0
        for index in 0..<onDataThread { tails[index].runsOnDataThread = true }
        return tails
    }

    /// One job of a tail level: every input's forward and every output's inverse FFT, and the
    /// multiply-adds of all its segments, in ns.
    public static func jobNanoseconds(_ level: PartitionPlan.Level, _ problem: Problem, _ costs: MachineCosts) -> Double {
        transformsPerBlock(problem) * costs.fftPair(2 * level.blockSize)
            + delayLineNanoseconds(level, segments: level.segmentCount, problem, costs)
    }

    /// FFT pairs per block: one forward per input, one inverse per output (a pair is 2 transforms).
    private static func transformsPerBlock(_ problem: Problem) -> Double {
        Double(problem.inputCount + problem.outputCount) / 2
    }

    /// The multiply-adds of `segments` of `level`'s delay line, for every IR, in ns.
    private static func delayLineNanoseconds(
        _ level: PartitionPlan.Level, segments: Int, _ problem: Problem,
        _ costs: MachineCosts
    ) -> Double {
        Double(problem.entryCount * segments) * costs.multiplyAdd(bins: alignedLength(level.blockSize + 1))
    }
}

/// Where a node runs the tail levels, as the planner prices them: the shortest levels, while each
/// is cheap or due soon, run on the data thread; the others on helper threads, where each job costs
/// CPU beyond the job itself.
public struct LevelPlacement: Sendable, Equatable {
    /// A tail level runs on the data thread when its job estimate, and that of every shorter tail
    /// level, is at most this and at most `dataThreadJobFraction` of the expected call period.
    public var dataThreadJobNanoseconds: Double
    public var dataThreadJobFraction: Double
    /// ... or when its result, and every shorter level's, is due sooner than this after its input
    /// block (seconds): a helper's wake-up can take milliseconds on a loaded or virtual machine.
    public var minimumHelperSlackSeconds: Double
    /// CPU one helper job costs beyond its estimate: the helper's wake-up, and the job running with
    /// cold caches on a core that was idle.
    public var helperJobOverheadNanoseconds: Double

    public init(
        dataThreadJobNanoseconds: Double, dataThreadJobFraction: Double, minimumHelperSlackSeconds: Double,
        helperJobOverheadNanoseconds: Double
    ) {
        self.dataThreadJobNanoseconds = dataThreadJobNanoseconds
        self.dataThreadJobFraction = dataThreadJobFraction
        self.minimumHelperSlackSeconds = minimumHelperSlackSeconds
        self.helperJobOverheadNanoseconds = helperJobOverheadNanoseconds
    }

    /// How many of the shortest tail `levels` (shortest first) run on the data thread, for calls
    /// of `callPeriodNanos`.
    func dataThreadLevelCount(_ levels: [LevelSchedule], callPeriodNanos: Double, sampleRate: Double) -> Int {
        let dueSoon = levels.prefix { Double($0.dueAfterSamples) / sampleRate < minimumHelperSlackSeconds }.count
        let jobLimit = min(dataThreadJobNanoseconds, dataThreadJobFraction * callPeriodNanos)
        return max(dueSoon, levels.prefix { $0.estimatedJobNanoseconds <= jobLimit }.count)
    }
}
