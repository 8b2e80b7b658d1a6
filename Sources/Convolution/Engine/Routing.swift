import FixedMemory

/// The matrix entries, sorted by output, as flat tables the real-time loops can read.
final class Routing {
    let entryCount: Int
    let inputCount: Int
    let outputCount: Int
    /// Input channel of entry e.
    let entryInput: FixedBuffer<Int>
    /// Entries of output o are `firstEntry[o] ..< firstEntry[o + 1]`.
    let firstEntry: FixedBuffer<Int>

    /// The order of the tables: by output, then input.
    static func sortedEntries(_ matrix: ConvolutionMatrix) -> [ConvolutionMatrix.Entry] {
        matrix.entries.sorted { ($0.output, $0.input) < ($1.output, $1.input) }
    }

    init(_ matrix: ConvolutionMatrix, sortedEntries: [ConvolutionMatrix.Entry]) throws {
        entryCount = sortedEntries.count
        inputCount = matrix.inputCount
        outputCount = matrix.outputCount
        entryInput = try FixedBuffer(repeating: 0, count: entryCount)
        firstEntry = try FixedBuffer(repeating: 0, count: outputCount + 1)
        var next = 0
        for output in 0...outputCount {
            firstEntry[output] = next
            while next < entryCount, sortedEntries[next].output == output { next += 1 }
        }
        for (index, entry) in sortedEntries.enumerated() { entryInput[index] = entry.input }
    }
}
