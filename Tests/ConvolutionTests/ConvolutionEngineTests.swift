import AllocationCounter
import CSpectrumKernels
import Convolution
import EngineTestSupport
import XCTest

final class ConvolutionEngineTests: XCTestCase {
    /// Feeds `inputs` in the given call sizes (cycled), the engine's jobs run by `scheduler` (the
    /// one it was built with; nil: none), and returns the outputs.
    private func run(
        _ engine: ConvolutionEngine, _ inputs: [[Float]], callSizes: [Int], scheduler: (any LevelJobScheduler)? = nil
    ) -> [[Float]] {
        let frames = inputs[0].count
        var outputs = [[Float]](repeating: [Float](repeating: .nan, count: frames), count: engine.outputCount)
        var done = 0, call = 0
        while done < frames {
            let count = min(callSizes[call % callSizes.count], frames - done)
            call += 1
            let inputPointers = inputs.map { $0.withUnsafeBufferPointer { $0.baseAddress! + done } }
            var outputBuffers = (0..<engine.outputCount).map { _ in [Float](repeating: .nan, count: count) }
            outputBuffers.withUnsafeMutableBufferPointer { buffers in
                let outputPointers = (0..<buffers.count).map { channel -> UnsafeMutablePointer<Float>? in
                    buffers[channel].withUnsafeMutableBufferPointer { $0.baseAddress! }
                }
                inputPointers.map { Optional(UnsafePointer($0)) }.withUnsafeBufferPointer { inPointers in
                    outputPointers.withUnsafeBufferPointer { outPointers in
                        engine.process(
                            inputs: inPointers.baseAddress!, outputs: outPointers.baseAddress!, frameCount: count,
                            scheduler: scheduler)
                    }
                }
            }
            for channel in 0..<engine.outputCount { outputs[channel].replaceSubrange(done..<done + count, with: outputBuffers[channel]) }
            done += count
        }
        return outputs
    }

    /// Checks every output against direct convolution of the matrix.
    private func assertMatchesDirectConvolution(
        _ matrix: ConvolutionMatrix, _ engine: ConvolutionEngine, scheduler: (any LevelJobScheduler)? = nil,
        inputs: [[Float]], callSizes: [Int],
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let outputs = run(engine, inputs, callSizes: callSizes, scheduler: scheduler)
        for output in 0..<matrix.outputCount {
            var expected = [Double](repeating: 0, count: inputs[0].count)
            for entry in matrix.entries where entry.output == output {
                let part = Reference.convolve(inputs[entry.input], entry.impulse)
                for n in expected.indices { expected[n] += part[n] }
            }
            let errorDB = Reference.relativeErrorDB(outputs[output], expected)
            XCTAssertLessThanOrEqual(
                errorDB, -100, "output \(output), plan \(engine.plan), calls \(callSizes.prefix(8))",
                file: file, line: line)
        }
    }

    func testImpulseInGivesImpulseResponseOutWithZeroLatency() throws {
        var generator = SeededGenerator(seed: 1)
        let impulse = [Float].noise(5000, using: &generator)
        let engine = try ConvolutionEngine(
            matrix: .init(
                inputCount: 1, outputCount: 1,
                entries: [.init(input: 0, output: 0, impulse: impulse)]),
            configuration: manyLevelConfiguration(impulseLength: impulse.count))
        var input = [Float](repeating: 0, count: 6000)
        input[0] = 1
        let output = run(engine, [input], callSizes: [1, 7, 64, 300])[0]
        // The very first output sample is x[0] * h[0]: nothing is delayed.
        XCTAssertEqual(output[0], impulse[0], accuracy: 1e-6)
        for n in 0..<impulse.count { XCTAssertEqual(output[n], impulse[n], accuracy: 1e-5, "sample \(n)") }
        for n in impulse.count..<input.count { XCTAssertEqual(output[n], 0, accuracy: 1e-6, "sample \(n)") }
    }

    func testSilenceInGivesSilenceOut() throws {
        var generator = SeededGenerator(seed: 2)
        let impulse = [Float].noise(20000, using: &generator)
        let engine = try ConvolutionEngine(
            matrix: .init(
                inputCount: 1, outputCount: 1,
                entries: [.init(input: 0, output: 0, impulse: impulse)]))
        let output = run(engine, [[Float](repeating: 0, count: 30000)], callSizes: [256])[0]
        XCTAssertEqual(output.map(abs).max(), 0)
    }

    func testRandomImpulsesAndCallSizesMatchDirectConvolution() throws {
        var generator = SeededGenerator(seed: 3)
        for length in [1, 2, 31, 32, 33, 100, 127, 128, 129, 1000, 4097, 20000] {
            let impulse = [Float].noise(length, using: &generator)
            let matrix = ConvolutionMatrix(inputCount: 1, outputCount: 1, entries: [.init(input: 0, output: 0, impulse: impulse)])
            let input = [Float].noise(length + 3000, using: &generator)
            let callSizes = (0..<50).map { _ in Int.random(in: 1...700, using: &generator) }
            for configuration in [
                manyLevelConfiguration(impulseLength: length),
                EngineConfiguration(expectedBlockSize: 64),
                EngineConfiguration(expectedBlockSize: 1000),
            ] {
                let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration)
                assertMatchesDirectConvolution(matrix, engine, inputs: [input], callSizes: callSizes)
            }
        }
    }

    func testLongImpulseWithLargeChangingCallsMatchesDirectConvolution() throws {
        var generator = SeededGenerator(seed: 4)
        let impulse = [Float].noise(200_000, using: &generator)
        let matrix = ConvolutionMatrix(inputCount: 1, outputCount: 1, entries: [.init(input: 0, output: 0, impulse: impulse)])
        // Sparse input keeps the direct reference cheap while still exciting every level at every phase.
        var input = [Float](repeating: 0, count: 230_000)
        for _ in 0..<600 { input[Int.random(in: 0..<input.count, using: &generator)] = Float.random(in: -1...1, using: &generator) }
        let callSizes = [1, 8192, 64, 4000, 17, 2048, 8191, 256, 3]
        for expectedBlockSize in [64, 1024] {
            let engine = try ConvolutionEngine(matrix: matrix, configuration: .init(expectedBlockSize: expectedBlockSize))
            XCTAssertGreaterThan(engine.plan.levels.count, 1, "a tail level must be exercised: \(engine.plan)")
            assertMatchesDirectConvolution(matrix, engine, inputs: [input], callSizes: callSizes)
        }
    }

    func testEveryMatrixShapeMatchesDirectConvolution() throws {
        var generator = SeededGenerator(seed: 5)
        // (inputs, outputs, entries): mono, stereo, true stereo, up/down mix, sparse multichannel.
        let shapes: [(Int, Int, [(Int, Int)])] = [
            (1, 1, [(0, 0)]), (2, 2, [(0, 0), (1, 1)]), (2, 2, [(0, 0), (0, 1), (1, 0), (1, 1)]),
            (1, 2, [(0, 0), (0, 1)]), (2, 1, [(0, 0), (1, 0)]), (3, 5, [(0, 4), (2, 0), (1, 1), (2, 3)]),
        ]
        for (inputCount, outputCount, pairs) in shapes {
            let matrix = ConvolutionMatrix(
                inputCount: inputCount, outputCount: outputCount,
                entries: pairs.map {
                    .init(input: $0.0, output: $0.1, impulse: .noise(Int.random(in: 1...9000, using: &generator), using: &generator))
                })
            let inputs = (0..<inputCount).map { _ in [Float].noise(12000, using: &generator) }
            let callSizes = (0..<20).map { _ in Int.random(in: 1...1500, using: &generator) }
            let engine = try ConvolutionEngine(matrix: matrix, configuration: manyLevelConfiguration(impulseLength: matrix.impulseLength))
            assertMatchesDirectConvolution(matrix, engine, inputs: inputs, callSizes: callSizes)
            // An output with no entry is silent.
            let outputs = run(engine, inputs, callSizes: callSizes)
            for output in 0..<outputCount where !pairs.contains(where: { $0.1 == output }) {
                XCTAssertEqual(outputs[output].map(abs).max(), 0)
            }
        }
    }

    func testChannelsShareCoefficientsButNotState() throws {
        var generator = SeededGenerator(seed: 6)
        let impulse = [Float].noise(3000, using: &generator)
        let matrix = ConvolutionMatrix(
            inputCount: 2, outputCount: 2,
            entries: [
                .init(input: 0, output: 0, impulse: impulse), .init(input: 1, output: 1, impulse: impulse),
            ])
        let left = [Float].noise(8000, using: &generator)
        var right = [Float](repeating: 0, count: 8000)
        right[5000] = 1
        let engine = try ConvolutionEngine(matrix: matrix, configuration: manyLevelConfiguration(impulseLength: 3000))
        let outputs = run(engine, [left, right], callSizes: [128, 99])
        XCTAssertLessThanOrEqual(Reference.relativeErrorDB(outputs[0], Reference.convolve(left, impulse)), -100)
        // Not exactly 0: in the head block that receives the impulse, FFT round-off (~1e-7) reaches
        // the samples before it. Hearing left's history would be of the order of 1.
        XCTAssertLessThan(outputs[1][0..<5000].map(abs).max()!, 1e-6, "right must not hear left's history")
        XCTAssertEqual(outputs[1][5000], impulse[0], accuracy: 1e-6)
    }

    func testNilInputIsSilenceAndNilOutputIsSkipped() throws {
        let impulse: [Float] = [1, 0.5, 0.25]
        let engine = try ConvolutionEngine(
            matrix: .init(
                inputCount: 1, outputCount: 2,
                entries: [
                    .init(input: 0, output: 0, impulse: impulse), .init(input: 0, output: 1, impulse: impulse),
                ]))
        var output = [Float](repeating: .nan, count: 64)
        let inputs: [UnsafePointer<Float>?] = [nil]
        output.withUnsafeMutableBufferPointer { buffer in
            let outputs: [UnsafeMutablePointer<Float>?] = [buffer.baseAddress!, nil]
            engine.process(inputs: inputs, outputs: outputs, frameCount: 64)
        }
        XCTAssertEqual(output, [Float](repeating: 0, count: 64))
    }

    func testFastKernelsMatchScalarReference() throws {
        let bins = 16 * 37
        let expected = try multiplyAddResult(bins: bins) { SpectrumKernels.multiplyAddReference(accumulator: $0, x: $1, h: $2, binCount: bins) }
        let kernels = [("multiplyAdd", SpectrumKernels.multiplyAdd), ("multiplyAddPortable", SpectrumKernels.multiplyAddPortable)]
        for (name, kernel) in kernels {
            let result = try multiplyAddResult(bins: bins) { kernel($0, $1, $2, bins) }
            for bin in 0..<bins {
                for (part, offset) in [("real", SplitSpectra.realOffset(ofBin: bin)), ("imaginary", SplitSpectra.imaginaryOffset(ofBin: bin))] {
                    XCTAssertEqual(result[offset], expected[offset], accuracy: 1e-6, "\(name), \(part) \(bin)")
                }
            }
        }
    }

    /// The engine's sums do not depend on the CPU: the AVX kernel gives the portable kernel's bits.
    func testAVXKernelGivesThePortableKernelsBits() throws {
        try XCTSkipUnless(SpectrumKernels.usesAVX, "this CPU has no AVX: the engine runs the portable kernel only")
        let bins = 16 * 37
        let portable = try multiplyAddResult(bins: bins) { SpectrumKernels.multiplyAddPortable(accumulator: $0, x: $1, h: $2, binCount: bins) }
        let avx = try multiplyAddResult(bins: bins) { cspectrum_multiply_add_avx($0, $1, $2, bins) }
        XCTAssertEqual(avx.map(\.bitPattern), portable.map(\.bitPattern))
    }

    /// Runs `kernel` on three aligned spectra of seeded noise (accumulator, x, h) and returns the
    /// accumulator as laid out (`SplitSpectra`'s 16-bin groups).
    private func multiplyAddResult(
        bins: Int, _ kernel: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) -> Void
    ) throws -> [Float] {
        var generator = SeededGenerator(seed: 7)
        let arrays = try (0..<3).map { _ -> AlignedFloats in
            let buffer = try AlignedFloats(count: 2 * bins)
            let values = [Float].noise(2 * bins, using: &generator)
            for n in 0..<2 * bins { buffer.pointer[n] = values[n] }
            return buffer
        }
        return withExtendedLifetime(arrays) {  // Swift may free them after their last use (the pointers)
            kernel(arrays[0].pointer, arrays[1].pointer, arrays[2].pointer)
            return Array(UnsafeBufferPointer(start: arrays[0].pointer, count: 2 * bins))
        }
    }

    func testProcessAllocatesNothingAfterWarmUp() throws {
        try assertProcessAllocatesNothingAfterWarmUp(impulseLength: 50000, configuration: .init(expectedBlockSize: 64))
        try assertProcessAllocatesNothingAfterWarmUp(
            impulseLength: 48, configuration: .init(fixedPlan: PartitionPlan(levels: [.direct(taps: 48)])))
    }

    private func assertProcessAllocatesNothingAfterWarmUp(impulseLength: Int, configuration: EngineConfiguration) throws {
        var generator = SeededGenerator(seed: 8)
        let matrix = ConvolutionMatrix(
            inputCount: 2, outputCount: 2,
            entries: [
                .init(input: 0, output: 0, impulse: .noise(impulseLength, using: &generator)),
                .init(input: 1, output: 1, impulse: .noise(impulseLength, using: &generator)),
            ])
        let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration)
        let frames = 8192
        let input = try AlignedFloats(count: frames), left = try AlignedFloats(count: frames), right = try AlignedFloats(count: frames)
        for n in 0..<frames { input.pointer[n] = Float.random(in: -1...1, using: &generator) }
        let inputs = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: 2)
        let outputs = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: 2)
        defer { inputs.deallocate(); outputs.deallocate() }
        inputs[0] = UnsafePointer(input.pointer); inputs[1] = nil
        outputs[0] = left.pointer; outputs[1] = right.pointer
        let callSizes = [64, 1, 333, 8192, 256, 1024, 17]
        for size in callSizes { engine.process(inputs: inputs, outputs: outputs, frameCount: size) }  // warm-up
        allocation_counter_reset()
        allocation_counter_watch_current_thread(1)
        allocation_counter_arm(1)
        for round in 0..<200 { engine.process(inputs: inputs, outputs: outputs, frameCount: callSizes[round % callSizes.count]) }
        allocation_counter_arm(0)
        allocation_counter_watch_current_thread(0)
        XCTAssertEqual(allocation_counter_allocations(), 0, "heap allocations in process()")
        XCTAssertEqual(allocation_counter_mutex_locks(), 0, "mutex locks in process()")
    }

    /// A direct head (the IR summed in the time domain) matches direct convolution whatever the
    /// call sizes: shorter than its history, longer than its largest piece, changing from call to call;
    /// and after a reset it gives the same output again.
    func testDirectHeadMatchesDirectConvolution() throws {
        var generator = SeededGenerator(seed: 12)
        let callSizeChoices = [1, 2, 5, 31, 64, 256, 700, 1024, 1500, 3000]
        for trial in 0..<6 {
            let inputCount = Int.random(in: 1...2, using: &generator)
            let outputCount = Int.random(in: 1...3, using: &generator)
            let maxTaps = [1, 48, PartitionPlanner.maxDirectTaps][trial % 3]
            let matrix = randomMatrix(
                inputCount: inputCount, outputCount: outputCount, crossed: trial % 2 == 0,
                impulseLengths: 1...maxTaps, using: &generator)
            let configuration = EngineConfiguration(fixedPlan: PartitionPlan(levels: [.direct(taps: matrix.impulseLength)]))
            let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration)
            let inputs = (0..<inputCount).map { _ in [Float].noise(9000, using: &generator) }
            let callSizes = (0..<12).map { _ in callSizeChoices.randomElement(using: &generator)! }
            assertMatchesDirectConvolution(matrix, engine, inputs: inputs, callSizes: callSizes)
            engine.reset()
            let again = try ConvolutionEngine(matrix: matrix, configuration: configuration)
            XCTAssertTrue(
                run(engine, inputs, callSizes: callSizes) == run(again, inputs, callSizes: callSizes),
                "after a reset, the output of a new engine: \(engine.plan)")
        }
    }

    /// Plans of many short tail levels, single-segment levels among them, must match direct
    /// convolution whatever the call sizes.
    func testManyLevelAndSingleSegmentPlansMatchDirectConvolution() throws {
        var generator = SeededGenerator(seed: 10)
        let callSizeChoices = [1, 5, 32, 64, 96, 128, 256, 700, 1024, 4096]
        let singleSegmentPlan = PartitionPlan(levels: [
            .init(blockSize: 64, segmentCount: 4, offset: 0), .init(blockSize: 128, segmentCount: 1, offset: 256),
            .init(blockSize: 128, segmentCount: 1, offset: 384), .init(blockSize: 256, segmentCount: 1, offset: 512),
            .init(blockSize: 256, segmentCount: 3, offset: 768), .init(blockSize: 512, segmentCount: 6, offset: 1536),
        ])
        for trial in 0..<4 {
            let inputCount = Int.random(in: 1...2, using: &generator)
            let outputCount = Int.random(in: 1...3, using: &generator)
            let matrix = randomMatrix(
                inputCount: inputCount, outputCount: outputCount, crossed: trial % 2 == 0,
                impulseLengths: 300...4608, using: &generator)
            let length = matrix.entries.map(\.impulse.count).max()!
            let configuration =
                trial < 2 ? manyLevelConfiguration(impulseLength: length) : EngineConfiguration(fixedPlan: singleSegmentPlan)
            let inputs = (0..<inputCount).map { _ in [Float].noise(length + 5000, using: &generator) }
            let callSizes = (0..<12).map { _ in callSizeChoices.randomElement(using: &generator)! }
            assertMatchesDirectConvolution(
                matrix, try ConvolutionEngine(matrix: matrix, configuration: configuration), inputs: inputs, callSizes: callSizes)
        }
    }

    /// The engine's split code path without threads: parts run on the calling thread in the order a
    /// fork-join would finish them, and chosen pieces find their part "busy" (the data thread then
    /// computes it itself). Every way must give the unsplit engine's output bit for bit, and match
    /// direct convolution: the same sums in the same order, only cut by output.
    func testSplitHeadEqualsUnsplitBitExactAndDirectConvolution() throws {
        var generator = SeededGenerator(seed: 9)
        let callSizeChoices = [1, 3, 32, 64, 77, 128, 256, 500, 1024]
        for trial in 0..<5 {
            let inputCount = Int.random(in: 1...3, using: &generator)
            let outputCount = Int.random(in: 2...5, using: &generator)
            let matrix = randomMatrix(
                inputCount: inputCount, outputCount: outputCount, crossed: trial % 2 == 0,
                impulseLengths: 100...9000, using: &generator)
            let length = matrix.entries.map(\.impulse.count).max()!
            let configuration =
                trial % 2 == 0
                ? manyLevelConfiguration(impulseLength: length)
                : EngineConfiguration(expectedBlockSize: 128, maxPartitionSize: 2048)
            let inputs = (0..<inputCount).map { _ in [Float].noise(length + 3000, using: &generator) }
            let callSizes = (0..<12).map { _ in callSizeChoices.randomElement(using: &generator)! }
            let expected = run(try ConvolutionEngine(matrix: matrix, configuration: configuration), inputs, callSizes: callSizes)
            for parts in 2...outputCount {
                let scheduler = SerialSplitScheduler(partCount: parts)
                scheduler.busyPieces = Set((0..<40).map { _ in Int.random(in: 1...400, using: &generator) })
                let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration, scheduler: scheduler)
                XCTAssertEqual(engine.splitPartCount, parts)
                let actual = run(engine, inputs, callSizes: callSizes, scheduler: scheduler)
                XCTAssertGreaterThan(scheduler.partsRun, 0)
                XCTAssertGreaterThan(scheduler.partsRefused, 0)
                for output in 0..<outputCount {
                    XCTAssertNil(
                        firstBitDifference(actual[output], expected[output]),
                        "trial \(trial), \(parts) parts, output \(output), plan \(engine.plan), calls \(callSizes)")
                }
            }
            let scheduler = SerialSplitScheduler(partCount: outputCount)
            assertMatchesDirectConvolution(
                matrix, try ConvolutionEngine(matrix: matrix, configuration: configuration, scheduler: scheduler),
                scheduler: scheduler, inputs: inputs, callSizes: callSizes)
            XCTAssertGreaterThan(scheduler.partsRun, 0)
        }
    }
}

/// Runs level jobs inline and split parts on the calling thread, in reverse part order (as helpers
/// finishing out of order would); pieces in `busyPieces` are refused (their helper "still runs a
/// late part"), so the engine computes them on the data thread. No threads: deterministic.
final class SerialSplitScheduler: LevelJobScheduler {
    let partCount: Int
    var busyPieces: Set<Int> = []
    private(set) var partsRun = 0, partsRefused = 0
    /// The engine, kept until `stop()` as every scheduler keeps its runner.
    private var runner: (any LevelJobRunner)?
    private var pending: [(part: Int, sequence: Int)] = []

    init(partCount: Int) { self.partCount = partCount }

    func prepare(runner: any LevelJobRunner, levels: [LevelSchedule]) throws { self.runner = runner }
    func prepare(runner: any LevelJobRunner, levels: [LevelSchedule], split: SplitShare) throws -> Int {
        self.runner = runner
        XCTAssertGreaterThanOrEqual(split.unitCount, partCount)
        return partCount
    }
    func post(level: Int, block: Int, dueInSamples: Int) { runner?.runLevelJob(level: level, block: block) }
    func awaitResult(level: Int, block: Int) -> Bool { true }
    func postSplitPart(part: Int, sequence: Int) -> Bool {
        if busyPieces.contains(sequence & 0xFFFF_FFFF) { partsRefused += 1; return false }
        pending.append((part, sequence))
        return true
    }
    func awaitSplitPart(part: Int, sequence: Int) -> Bool {
        // The first await runs every posted part, last part first.
        for job in pending.reversed() { runner?.runSplitPart(part: job.part, sequence: job.sequence); partsRun += 1 }
        pending.removeAll()
        return true
    }
    func stop() { runner = nil }
}
