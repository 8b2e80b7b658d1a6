// What the engine tests of several test targets share: reproducible random signals and a plan
// with many levels.
import Convolution

/// A seeded generator so failures reproduce (SplitMix64).
public struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension Array where Element == Float {
    /// Uniform noise in −1…1.
    public static func noise(_ count: Int, using generator: inout SeededGenerator) -> [Float] {
        (0..<count).map { _ in Float.random(in: -1...1, using: &generator) }
    }
}

/// Head 32, then doubling levels up to 1024: many tail levels even for short IRs.
public func manyLevelConfiguration(impulseLength: Int) -> EngineConfiguration {
    var levels = [PartitionPlan.Level(blockSize: 32, segmentCount: 4, offset: 0)]
    var size = 64
    while levels.last!.end < impulseLength {
        let last = levels.last!
        let segments = size >= 1024 ? max(1, (impulseLength - last.end + size - 1) / size) : 2
        levels.append(.init(blockSize: size, segmentCount: segments, offset: last.end))
        if size < 1024 { size *= 2 }
    }
    return EngineConfiguration(fixedPlan: PartitionPlan(levels: levels))
}
