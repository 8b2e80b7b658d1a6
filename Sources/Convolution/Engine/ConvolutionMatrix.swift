/// Which impulse response convolves which input into which output: N inputs x M outputs.
/// Mono (1x1), stereo (two entries 0→0, 1→1), true stereo (four: LL, LR, RL, RR), any matrix.
/// Entries sharing an input share its forward FFTs; entries sharing an output share its inverse FFTs.
public struct ConvolutionMatrix: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
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

    /// The longest impulse, in samples.
    public var impulseLength: Int { entries.map(\.impulse.count).max() ?? 0 }
}

public enum ConvolutionMatrixError: Error, CustomStringConvertible, Equatable {
    case noChannels
    case entryOutOfRange(entry: Int, input: Int, output: Int, inputCount: Int, outputCount: Int)
    case duplicateEntry(input: Int, output: Int)
    case nonFiniteSample(entry: Int, index: Int)
    case channelMismatch(impulseChannels: Int, audioChannels: Int)

    public var description: String {
        switch self {
        case .noChannels:
            return "the convolution matrix needs at least one input and one output"
        case let .entryOutOfRange(entry, input, output, inputCount, outputCount):
            return "impulse \(entry) maps input \(input) to output \(output), but there are "
                + "\(inputCount) inputs and \(outputCount) outputs (counted from 0)"
        case let .duplicateEntry(input, output):
            return "two impulses map input \(input) to output \(output); give one (or sum them)"
        case let .nonFiniteSample(entry, index):
            return "impulse \(entry) has a NaN or infinite sample at index \(index)"
        case let .channelMismatch(impulseChannels, audioChannels):
            return "an IR with \(impulseChannels) channels does not fit \(audioChannels) audio channels: give 1 IR channel "
                + "(used on all), \(audioChannels) (one each)\(audioChannels == 2 ? ", or 4 (true stereo LL, LR, RL, RR)" : ""), "
                + "or pick one with `channel`"
        }
    }
}

extension ConvolutionMatrix {
    /// Throws the first problem that would make the engine misbehave.
    public func validate() throws {
        guard inputCount > 0, outputCount > 0 else { throw ConvolutionMatrixError.noChannels }
        var seen = Set<[Int]>()
        for (index, entry) in entries.enumerated() {
            guard (0..<inputCount).contains(entry.input), (0..<outputCount).contains(entry.output) else {
                throw ConvolutionMatrixError.entryOutOfRange(
                    entry: index, input: entry.input, output: entry.output,
                    inputCount: inputCount, outputCount: outputCount)
            }
            guard seen.insert([entry.input, entry.output]).inserted else {
                throw ConvolutionMatrixError.duplicateEntry(input: entry.input, output: entry.output)
            }
            if let bad = entry.impulse.firstIndex(where: { !$0.isFinite }) {
                throw ConvolutionMatrixError.nonFiniteSample(entry: index, index: bad)
            }
        }
    }
}
