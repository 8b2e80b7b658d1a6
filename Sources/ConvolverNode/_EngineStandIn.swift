// TEMPORARY: a direct-convolution stand-in with ENGINE_API.md's names, so the PipeWire plumbing can
// be built and tested before the real engine lands on main. Deleted when it does.
import Convolution

public struct ConvolutionMatrix: Sendable {
    public struct Entry: Sendable {
        public var input: Int
        public var output: Int
        public var impulse: [Float]
        public init(input: Int, output: Int, impulse: [Float]) {
            self.input = input
            self.output = output
            self.impulse = impulse
        }
    }
    public var inputCount: Int
    public var outputCount: Int
    public var entries: [Entry]
    public init(inputCount: Int, outputCount: Int, entries: [Entry]) {
        self.inputCount = inputCount
        self.outputCount = outputCount
        self.entries = entries
    }
}

public struct EngineConfiguration: Sendable {
    public var expectedBlockSize: Int = 256
    public var maxPartitionSize: Int = 16384
    public init(expectedBlockSize: Int = 256, maxPartitionSize: Int = 16384) {
        self.expectedBlockSize = expectedBlockSize
        self.maxPartitionSize = maxPartitionSize
    }
}

public final class ConvolutionEngine {
    public let plan: String
    public let inputCount: Int
    public let outputCount: Int
    private let matrix: ConvolutionMatrix
    private let historyLength: Int
    private let history: UnsafeMutablePointer<Float>
    private var writeIndex = 0

    public init(matrix: ConvolutionMatrix, configuration: EngineConfiguration = .init(),
                scheduler: any LevelJobScheduler = InlineScheduler()) throws {
        self.matrix = matrix
        inputCount = matrix.inputCount
        outputCount = matrix.outputCount
        historyLength = max(1, matrix.entries.map(\.impulse.count).max() ?? 1)
        history = .allocate(capacity: historyLength * inputCount)
        history.initialize(repeating: 0, count: historyLength * inputCount)
        plan = "direct \(historyLength)"
    }

    deinit { history.deallocate() }

    public func process(inputs: UnsafePointer<UnsafePointer<Float>?>,
                        outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, frameCount: Int) {
        for output in 0..<outputCount { outputs[output]?.update(repeating: 0, count: frameCount) }
        for frame in 0..<frameCount {
            let slot = (writeIndex + frame) % historyLength
            for input in 0..<inputCount { history[input * historyLength + slot] = inputs[input]?[frame] ?? 0 }
            for entry in matrix.entries {
                guard let out = outputs[entry.output] else { continue }
                var sum: Float = 0
                entry.impulse.withUnsafeBufferPointer { impulse in
                    for tap in 0..<impulse.count {
                        sum += impulse[tap] * history[entry.input * historyLength + (slot - tap + historyLength) % historyLength]
                    }
                }
                out[frame] += sum
            }
        }
        writeIndex = (writeIndex + frameCount) % historyLength
    }

    public func reset() {}
    public func stop() {}
}
