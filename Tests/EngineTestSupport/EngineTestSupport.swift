// What the tests of several test targets share: reproducible random signals, matrices and decays,
// a plan with many levels, and bit-for-bit comparison.
import Convolution
import Foundation

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

/// A random matrix: each output fed by every input (`crossed`) or by input `output % inputCount`
/// only, each impulse noise of a length drawn from `impulseLengths`.
public func randomMatrix(
    inputCount: Int, outputCount: Int, crossed: Bool, impulseLengths: ClosedRange<Int>,
    using generator: inout SeededGenerator
) -> ConvolutionMatrix {
    var entries: [ConvolutionMatrix.Entry] = []
    for output in 0..<outputCount {
        for input in 0..<inputCount where crossed || input == output % inputCount {
            entries.append(
                .init(
                    input: input, output: output,
                    impulse: [Float].noise(Int.random(in: impulseLengths, using: &generator), using: &generator)))
        }
    }
    return ConvolutionMatrix(inputCount: inputCount, outputCount: outputCount, entries: entries)
}

/// The first index where `actual` and `expected` differ in any bit, outside the `excluded` ranges;
/// nil when identical there.
public func firstBitDifference(_ actual: [Float], _ expected: [Float], outside excluded: [Range<Int>] = []) -> Int? {
    actual.indices.first { n in
        actual[n].bitPattern != expected[n].bitPattern && !excluded.contains { $0.contains(n) }
    }
}

/// Noise under an exponential envelope that falls 60 dB in `rt60` seconds, after `preDelay`
/// seconds of silence: a decay whose RT60, EDT, T20 and T30 are all `rt60` by construction.
public func exponentialDecay(
    rt60: Double, seconds: Double, preDelay: Double = 0, sampleRate: Double = 48000,
    seed: UInt64
) -> [Float] {
    var generator = SeededGenerator(seed: seed)
    let silence = Int(preDelay * sampleRate)
    let decayPerSecond = 3 * log(10.0) / rt60  // amplitude: 60 dB of energy = a factor 1000
    let tail = (0..<Int(seconds * sampleRate)).map { frame in
        Float.random(in: -1...1, using: &generator) * Float(exp(-decayPerSecond * Double(frame) / sampleRate))
    }
    return [Float](repeating: 0, count: silence) + tail
}
