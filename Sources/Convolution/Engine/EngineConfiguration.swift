/// How to build an engine. Any call size works with any configuration; these only steer the plan.
public struct EngineConfiguration: Sendable, Equatable {
    /// The expected call size (the PipeWire quantum): the planner sizes the head for it.
    public var expectedBlockSize: Int
    /// The largest level block size (filter-chain's convolver stops at 4096; long IRs gain from more).
    public var maxPartitionSize: Int
    /// A fixed plan instead of the planner's (tests and benchmarks of given layouts).
    public var fixedPlan: PartitionPlan?
    /// Where the scheduler will run the tail levels, for the planner to price (nil: the engine on
    /// its own), and the rate that sets the call period.
    public var placement: LevelPlacement?
    public var sampleRate: Double
    /// What transforms and multiply-adds cost, for the planner and the placement: this machine's
    /// (`MeasuredMachineCosts`, the node and the CLI) or fixed ones (`typical`, tests and offline).
    public var costs: MachineCosts

    public init(
        expectedBlockSize: Int = 256, maxPartitionSize: Int = 16384, fixedPlan: PartitionPlan? = nil,
        placement: LevelPlacement? = nil, sampleRate: Double = 48000, costs: MachineCosts = .typical
    ) {
        self.expectedBlockSize = expectedBlockSize
        self.maxPartitionSize = maxPartitionSize
        self.fixedPlan = fixedPlan
        self.placement = placement
        self.sampleRate = sampleRate
        self.costs = costs
    }

    /// The plan a uniformly partitioned engine (one level, block = `blockSize`) would use:
    /// what the benchmark compares against.
    public static func uniform(blockSize: Int, impulseLength: Int) -> EngineConfiguration {
        let segments = max(1, (impulseLength + blockSize - 1) / blockSize)
        let level = PartitionPlan.Level(blockSize: blockSize, segmentCount: segments, offset: 0)
        return EngineConfiguration(
            expectedBlockSize: blockSize, maxPartitionSize: blockSize,
            fixedPlan: PartitionPlan(
                levels: [level], estimatedCoreFraction: .nan,
                estimatedDataThreadCoreFraction: .nan))
    }
}

public enum EngineConfigurationError: Error, CustomStringConvertible, Equatable {
    case invalidPlan(String)

    public var description: String {
        switch self {
        case .invalidPlan(let why): return "invalid partition plan: \(why)"
        }
    }
}

extension PartitionPlanner.Problem {
    /// What the engine plans for `matrix` under `configuration`.
    public init(_ matrix: ConvolutionMatrix, _ configuration: EngineConfiguration) {
        self.init(
            impulseLength: matrix.impulseLength, inputCount: matrix.inputCount, outputCount: matrix.outputCount,
            entryCount: matrix.entries.count, expectedBlockSize: configuration.expectedBlockSize,
            maxPartitionSize: configuration.maxPartitionSize)
        placement = configuration.placement
        sampleRate = configuration.sampleRate
    }
}

extension PartitionPlan {
    /// Checks the invariants the engine relies on.
    public func validate() throws {
        guard let head = levels.first, head.offset == 0 else { throw EngineConfigurationError.invalidPlan("no head level at offset 0") }
        if head.isDirect {
            guard levels.count == 1, head.segmentCount == 1, (1...PartitionPlanner.maxDirectTaps).contains(head.blockSize) else {
                throw EngineConfigurationError.invalidPlan(
                    "a direct head is the only level, of 1 to \(PartitionPlanner.maxDirectTaps) taps: \(self)")
            }
            return
        }
        for (index, level) in levels.enumerated() {
            let isPowerOfTwo = level.blockSize >= 16 && level.blockSize & (level.blockSize - 1) == 0
            guard isPowerOfTwo, level.segmentCount >= 1, !level.isDirect else {
                throw EngineConfigurationError.invalidPlan("level \(index): block \(level.blockSize) x \(level.segmentCount)")
            }
            guard index > 0 else { continue }
            let previous = levels[index - 1]
            guard level.offset == previous.end, level.blockSize % head.blockSize == 0,
                level.offset >= 2 * level.blockSize
            else {
                throw EngineConfigurationError.invalidPlan(
                    "level \(index) (\(level.blockSize) @ \(level.offset)) does not follow level \(index - 1) or starts before 2 x its block")
            }
        }
    }
}
