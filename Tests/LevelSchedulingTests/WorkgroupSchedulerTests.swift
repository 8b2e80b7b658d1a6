import AllocationCounter
import Convolution
import EngineTestSupport
import Foundation
import Glibc
import LevelScheduling
import Synchronization
import Workgroup
import XCTest

final class WorkgroupSchedulerTests: XCTestCase {
    func testJobsMapToLevelsAndBlocksAndLateResultsAreCounted() throws {
        let runner = TableRunner(levelCount: 2, blockCount: 32)
        runner.injectedDelays[2 << 32 | 5] = 400_000
        var configuration = WorkgroupSchedulerConfiguration()
        configuration.threadCount = .fixed(2)
        configuration.realtimePriority = nil
        let scheduler = WorkgroupLevelScheduler(configuration: configuration)
        try scheduler.prepare(
            runner: runner,
            levels: [
                .init(level: 1, blockSize: 128, dueAfterSamples: 128),
                .init(level: 2, blockSize: 256, dueAfterSamples: 256),
            ])
        defer { scheduler.stop() }
        var late: [Int] = []
        for block in 0..<32 {
            let start = monotonicNanos()
            // A 50 ms wait limit for this "cycle"; deadlines from the level's dueInSamples at 48 kHz.
            scheduler.beginCycle(startNanos: start, waitLimitNanos: start + 50_000_000, sampleRate: 48000)
            scheduler.post(level: 1, block: block, dueInSamples: 128)
            scheduler.post(level: 2, block: block, dueInSamples: 9600)  // 200 ms
            XCTAssertTrue(scheduler.awaitResult(level: 1, block: block))
            if !scheduler.awaitResult(level: 2, block: block) {
                late.append(block)
                XCTAssertLessThan(monotonicNanos() - start, 300_000_000, "the wait overran its limit")
                scheduler.beginCycle(startNanos: start, waitLimitNanos: .max, sampleRate: 48000)
                XCTAssertTrue(scheduler.awaitResult(level: 2, block: block))
            }
            XCTAssertEqual(runner.table[block], 1_000_000 + block)
            XCTAssertEqual(runner.table[32 + block], 2_000_000 + block)
        }
        XCTAssertEqual(late, [5])
        let statistics = scheduler.statistics()
        XCTAssertEqual(statistics.lateLevels, 1)
        XCTAssertEqual(statistics.levels.map(\.level), [1, 2])
        XCTAssertEqual(statistics.levels.map(\.lateResults), [0, 1])
        XCTAssertEqual(statistics.levels[1].jobs.intervals, 32)
        XCTAssertEqual(statistics.levels[1].jobs.lateIntervals, 1, "only the 400 ms job missed its 200 ms deadline")
        XCTAssertEqual(statistics.helpers.intervals, 64)
    }
}

// MARK: - With the real engine

/// Feeds `inputs` through `engine` in `callSizes` (cycled), its jobs run by `scheduler` (the one it
/// was built with; nil: none); `beforeCall` runs before each process.
func render(
    _ engine: ConvolutionEngine, _ inputs: [[Float]], callSizes: [Int], scheduler: (any LevelJobScheduler)? = nil,
    beforeCall: (Int) -> Void = { _ in }, afterCall: (Int) -> Void = { _ in }
) -> [[Float]] {
    let frames = inputs[0].count
    var outputs = [[Float]](repeating: [Float](repeating: .nan, count: frames), count: engine.outputCount)
    let inputPointers = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: engine.inputCount)
    let outputPointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: engine.outputCount)
    let inputStorage = inputs.map { samples in
        let storage = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        storage.initialize(from: samples, count: frames)
        return storage
    }
    let outputStorage = (0..<engine.outputCount).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: frames) }
    defer {
        inputPointers.deallocate(); outputPointers.deallocate()
        inputStorage.forEach { $0.deallocate() }; outputStorage.forEach { $0.deallocate() }
    }
    var done = 0, call = 0
    while done < frames {
        let count = min(callSizes[call % callSizes.count], frames - done)
        for channel in 0..<engine.inputCount { inputPointers[channel] = UnsafePointer(inputStorage[channel] + done) }
        for channel in 0..<engine.outputCount { outputPointers[channel] = outputStorage[channel] + done }
        beforeCall(call)
        engine.process(inputs: inputPointers, outputs: outputPointers, frameCount: count, scheduler: scheduler)
        afterCall(call)
        done += count
        call += 1
    }
    for channel in 0..<engine.outputCount {
        outputs[channel] = Array(UnsafeBufferPointer(start: outputStorage[channel], count: frames))
    }
    return outputs
}

/// The test hook for injected delays: sits between the engine and a `WorkgroupLevelScheduler` and
/// sleeps before chosen jobs, which then run on the helper exactly as usual.
/// Split parts are delayed by piece: `splitDelays[piece]` (the engine's call-piece serial, 1 for
/// the first piece, the low 32 bits of the part's sequence number) -> µs.
final class DelayInjectingScheduler: LevelJobScheduler, LevelJobRunner, @unchecked Sendable {
    let inner: WorkgroupLevelScheduler
    let delays: [Int: UInt32]  // (level << 32 | block) -> µs
    let splitDelays: [Int: UInt32]
    /// The engine, kept until `stop()` as every scheduler keeps its runner.
    private var engine: (any LevelJobRunner)?

    init(_ inner: WorkgroupLevelScheduler, delays: [Int: UInt32], splitDelays: [Int: UInt32] = [:]) {
        self.inner = inner
        self.delays = delays
        self.splitDelays = splitDelays
    }

    func prepare(runner: any LevelJobRunner, levels: [LevelSchedule]) throws {
        engine = runner
        try inner.prepare(runner: self, levels: levels)
    }
    func prepare(runner: any LevelJobRunner, levels: [LevelSchedule], split: SplitShare) throws -> Int {
        engine = runner
        return try inner.prepare(runner: self, levels: levels, split: split)
    }
    func post(level: Int, block: Int, dueInSamples: Int) { inner.post(level: level, block: block, dueInSamples: dueInSamples) }
    func awaitResult(level: Int, block: Int) -> Bool { inner.awaitResult(level: level, block: block) }
    func postSplitPart(part: Int, sequence: Int) -> Bool { inner.postSplitPart(part: part, sequence: sequence) }
    func awaitSplitPart(part: Int, sequence: Int) -> Bool { inner.awaitSplitPart(part: part, sequence: sequence) }
    func stop() {
        inner.stop()
        engine = nil
    }

    func runLevelJob(level: Int, block: Int) {
        if let delay = delays[level << 32 | block] { usleep(delay) }
        engine?.runLevelJob(level: level, block: block)
    }
    func runSplitPart(part: Int, sequence: Int) {
        if let delay = splitDelays[sequence & 0xFFFF_FFFF] { usleep(delay) }
        engine?.runSplitPart(part: part, sequence: sequence)
    }
    func estimatedSplitShareNanoseconds() -> Double { engine?.estimatedSplitShareNanoseconds() ?? .nan }
}

func unpacedConfiguration(threads: Int) -> WorkgroupSchedulerConfiguration {
    var configuration = WorkgroupSchedulerConfiguration()
    configuration.threadCount = .fixed(threads)
    configuration.realtimePriority = nil  // tests share the machine with builds
    return configuration
}

final class WorkgroupEngineTests: XCTestCase {
    /// With every job on time, the workgroup's output equals the inline scheduler's bit for bit:
    /// the same job code runs on the same data, only on another thread.
    func testOutputEqualsInlineJobsBitExactOnRandomImpulsesAndCallSizes() throws {
        var generator = SeededGenerator(seed: 3)
        let callSizeChoices = [1, 7, 32, 64, 100, 128, 256, 333, 512, 1024, 2000]
        for trial in 0..<6 {
            let inputCount = Int.random(in: 1...2, using: &generator)
            let outputCount = Int.random(in: 1...2, using: &generator)
            var entries: [ConvolutionMatrix.Entry] = []
            for input in 0..<inputCount {
                for output in 0..<outputCount where input == output || trial % 2 == 1 {
                    entries.append(
                        .init(
                            input: input, output: output,
                            impulse: [Float].noise(Int.random(in: 500...40000, using: &generator), using: &generator)))
                }
            }
            if entries.isEmpty { entries.append(.init(input: 0, output: 0, impulse: [Float].noise(3000, using: &generator))) }
            let matrix = ConvolutionMatrix(inputCount: inputCount, outputCount: outputCount, entries: entries)
            let impulseLength = entries.map(\.impulse.count).max()!
            // Even trials: the many-level test plan; odd trials: the engine's own planner.
            let configuration =
                trial % 2 == 0
                ? manyLevelConfiguration(impulseLength: impulseLength)
                : EngineConfiguration(expectedBlockSize: [64, 256][trial / 2 % 2], maxPartitionSize: 4096)
            let callSizes = (0..<16).map { _ in callSizeChoices.randomElement(using: &generator)! }
            let inputs = (0..<inputCount).map { _ in [Float].noise(impulseLength + 20000, using: &generator) }

            let inlineEngine = try ConvolutionEngine(matrix: matrix, configuration: configuration)
            let expected = render(inlineEngine, inputs, callSizes: callSizes)
            // Every third trial runs the shortest level on the data thread (minimumDataThreadLevelCount).
            var schedulerConfiguration = unpacedConfiguration(threads: 2)
            // (Only where a level is left for the helpers: plans are the planner's.)
            schedulerConfiguration.minimumDataThreadLevelCount = trial % 3 == 2 && inlineEngine.plan.tails.count > 1 ? 1 : 0
            let scheduler = WorkgroupLevelScheduler(configuration: schedulerConfiguration)
            let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration, scheduler: scheduler)
            XCTAssertGreaterThan(engine.plan.tails.count, 0, "trial \(trial): no tail level to schedule")
            let actual = render(engine, inputs, callSizes: callSizes, scheduler: scheduler)
            scheduler.stop()
            let statistics = scheduler.statistics()
            XCTAssertEqual(statistics.lateLevels, 0)
            XCTAssertEqual(statistics.dataThreadLevelCount + statistics.levels.count, engine.plan.tails.count)
            XCTAssertGreaterThan(statistics.helpers.intervals, 0, "no job ran on the helpers")
            for output in 0..<outputCount {
                let mismatch = firstBitDifference(actual[output], expected[output])
                XCTAssertNil(
                    mismatch,
                    "trial \(trial), output \(output), plan \(engine.plan), calls \(callSizes): "
                        + "first difference at \(mismatch ?? -1)")
            }
        }
    }

    /// Jobs delayed past the wait limit are counted late exactly once each; the output misses
    /// exactly those blocks of that level, stays finite, and equals the inline output elsewhere.
    func testInjectedDelaysGiveExactLateLevelsAndOutputWithoutOnlyThoseBlocks() throws {
        var generator = SeededGenerator(seed: 4)
        let impulse = [Float].noise(6000, using: &generator)
        let matrix = ConvolutionMatrix(inputCount: 1, outputCount: 1, entries: [.init(input: 0, output: 0, impulse: impulse)])
        let configuration = manyLevelConfiguration(impulseLength: impulse.count)
        let delayedLevel = 3, delayedBlocks = [3, 9]
        let inner = WorkgroupLevelScheduler(configuration: unpacedConfiguration(threads: 2))
        let scheduler = DelayInjectingScheduler(
            inner,
            delays: Dictionary(
                uniqueKeysWithValues: delayedBlocks.map { (delayedLevel << 32 | $0, UInt32(200_000)) }))
        let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration, scheduler: scheduler)
        let input = [Float].noise(20000, using: &generator)
        let waitNanos: UInt64 = 30_000_000
        var lateLevels = 0, longestCallNanos: UInt64 = 0, callStart: UInt64 = 0
        let actual = render(
            engine, [input], callSizes: [64], scheduler: scheduler,
            beforeCall: { _ in
                callStart = monotonicNanos()
                inner.beginCycle(startNanos: callStart, waitLimitNanos: callStart + waitNanos, sampleRate: 48000)
            },
            afterCall: { _ in
                longestCallNanos = max(longestCallNanos, monotonicNanos() - callStart)
                let late = inner.statistics().lateLevels
                if late > lateLevels {
                    lateLevels = late
                    inner.waitUntilIdle()  // the test lets the delayed job finish: one late level per delay
                }
            })[0]
        scheduler.stop()
        let statistics = inner.statistics()
        XCTAssertEqual(statistics.lateLevels, delayedBlocks.count, "\(statistics)")
        let delayed = try XCTUnwrap(statistics.levels.first { $0.level == delayedLevel })
        XCTAssertEqual(delayed.lateResults, delayedBlocks.count)
        XCTAssertGreaterThanOrEqual(delayed.jobs.lateIntervals, delayedBlocks.count)
        // The data thread waited at most about its limit, never for the 200 ms job (generous slack).
        XCTAssertLessThan(longestCallNanos, waitNanos + 120_000_000)

        let expected = render(try ConvolutionEngine(matrix: matrix, configuration: configuration), [input], callSizes: [64])[0]
        let level = engine.plan.levels[delayedLevel]
        let missing = delayedBlocks.map { (level.offset + $0 * level.blockSize)..<(level.offset + ($0 + 1) * level.blockSize) }
        XCTAssertTrue(actual.allSatisfy(\.isFinite))
        for n in actual.indices {
            if missing.contains(where: { $0.contains(n) }) { continue }
            if actual[n].bitPattern != expected[n].bitPattern {
                XCTFail("sample \(n) differs outside the late blocks \(missing): \(actual[n]) vs \(expected[n])")
                break
            }
        }
        for range in missing {
            XCTAssertTrue(range.contains { actual[$0] != expected[$0] }, "the late block \(range) was not left out")
        }
    }

    /// The real-time contract on the data thread and the helpers, with the real engine.
    func testNoAllocationsOrLocksOnDataAndHelperThreadsAfterWarmUp() throws {
        var generator = SeededGenerator(seed: 5)
        let matrix = ConvolutionMatrix(
            inputCount: 2, outputCount: 2,
            entries: [
                .init(input: 0, output: 0, impulse: [Float].noise(20000, using: &generator)),
                .init(input: 1, output: 1, impulse: [Float].noise(20000, using: &generator)),
            ])
        // The two shortest levels on the data thread, their jobs spread over the 64-frame calls.
        var schedulerConfiguration = unpacedConfiguration(threads: 2)
        schedulerConfiguration.minimumDataThreadLevelCount = 2
        let scheduler = WorkgroupLevelScheduler(configuration: schedulerConfiguration)
        var configuration = manyLevelConfiguration(impulseLength: 20000)
        configuration.expectedBlockSize = 64
        let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration, scheduler: scheduler)
        defer { scheduler.stop() }
        let frames = 64
        let buffers = (0..<4).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: frames) }
        defer { buffers.forEach { $0.deallocate() } }
        for buffer in buffers { for n in 0..<frames { buffer[n] = Float.random(in: -1...1, using: &generator) } }
        let inputs = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: 2)
        let outputs = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: 2)
        defer { inputs.deallocate(); outputs.deallocate() }
        inputs[0] = UnsafePointer(buffers[0]); inputs[1] = UnsafePointer(buffers[1])
        outputs[0] = buffers[2]; outputs[1] = buffers[3]
        func cycle() {
            let start = monotonicNanos()
            scheduler.beginCycle(startNanos: start, waitLimitNanos: start + 1_000_000_000, sampleRate: 48000)
            engine.process(inputs: inputs, outputs: outputs, frameCount: frames, scheduler: scheduler)
        }
        for _ in 0..<2000 { cycle() }  // warm-up: every level has run on the helpers
        // The data thread alone first, then the data thread and the helpers (named swconv-*).
        allocation_counter_watch_current_thread(1)
        defer { allocation_counter_watch_current_thread(0) }
        allocation_counter_reset()
        allocation_counter_arm(1)
        for _ in 0..<3000 { cycle() }
        allocation_counter_arm(0)
        XCTAssertEqual(allocation_counter_allocations(), 0, "heap allocations on the data thread")
        XCTAssertEqual(allocation_counter_mutex_locks(), 0, "mutex locks on the data thread")
        allocation_counter_watch_threads_named("swconv")
        allocation_counter_reset()
        allocation_counter_arm(1)
        for _ in 0..<3000 { cycle() }
        allocation_counter_arm(0)
        XCTAssertEqual(allocation_counter_allocations(), 0, "heap allocations on data or helper threads")
        XCTAssertEqual(allocation_counter_mutex_locks(), 0, "mutex locks on data or helper threads")
        XCTAssertEqual(scheduler.statistics().lateLevels, 0)
        XCTAssertGreaterThan(scheduler.statistics().helpers.intervals, 6000 / 2)
    }
}

// MARK: - Fork-join split of the data thread's share

/// `levelThreads`: the level helpers asked for. On the process's workgroup a part delayed on
/// purpose holds one of its helpers: tests that delay parts ask for a second one for the levels.
func splitConfiguration(splitThreads: Int, takeBack: Bool, levelThreads: Int = 1) -> WorkgroupSchedulerConfiguration {
    var configuration = unpacedConfiguration(threads: levelThreads)
    configuration.split = .on
    configuration.splitThreadCount = .fixed(splitThreads)
    configuration.splitTakeBack = takeBack
    return configuration
}

final class WorkgroupSplitTests: XCTestCase {
    /// Split on: every output of the head is computed by the same code in the same summation order,
    /// only by another thread (a split helper, or the data thread taking a part back), so the output
    /// equals the inline, unsplit engine's bit for bit.
    func testSplitOutputEqualsUnsplitInlineOutputBitExact() throws {
        var generator = SeededGenerator(seed: 31)
        let callSizeChoices = [1, 5, 32, 64, 100, 128, 256, 333, 512, 1024, 2000]
        for trial in 0..<6 {
            let inputCount = Int.random(in: 1...4, using: &generator)
            let outputCount = Int.random(in: 2...6, using: &generator)
            let matrix = randomMatrix(
                inputCount: inputCount, outputCount: outputCount, crossed: trial % 2 == 1,
                impulseLengths: 300...30000, using: &generator)
            let impulseLength = matrix.entries.map(\.impulse.count).max()!
            let configuration =
                trial % 2 == 0
                ? manyLevelConfiguration(impulseLength: impulseLength)
                : EngineConfiguration(expectedBlockSize: [64, 256][trial / 2 % 2], maxPartitionSize: 4096)
            let callSizes = (0..<16).map { _ in callSizeChoices.randomElement(using: &generator)! }
            let inputs = (0..<inputCount).map { _ in [Float].noise(impulseLength + 12000, using: &generator) }
            let expected = render(try ConvolutionEngine(matrix: matrix, configuration: configuration), inputs, callSizes: callSizes)

            let splitThreads = 1 + trial % 3
            for takeBack in [false, true] {
                let scheduler = WorkgroupLevelScheduler(configuration: splitConfiguration(splitThreads: splitThreads, takeBack: takeBack))
                let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration, scheduler: scheduler)
                XCTAssertEqual(engine.splitPartCount, min(outputCount, splitThreads + 1))
                let actual = render(engine, inputs, callSizes: callSizes, scheduler: scheduler)
                scheduler.stop()
                let statistics = scheduler.statistics()
                let split = try XCTUnwrap(statistics.split)
                let context =
                    "trial \(trial) (\(inputCount)x\(outputCount), \(matrix.entries.count) entries, plan \(engine.plan), "
                    + "calls \(callSizes), take-back \(takeBack))"
                XCTAssertEqual(split.partCount, engine.splitPartCount, context)
                XCTAssertEqual(split.lateSplits, 0, context)
                XCTAssertEqual(split.busyParts, 0, context)
                XCTAssertEqual(statistics.lateLevels, 0, context)
                if !takeBack {
                    XCTAssertGreaterThan(split.jobs.intervals, 0, "no part ran on a split helper: \(context)")
                    XCTAssertEqual(split.takenBackParts, 0, context)
                }
                for output in 0..<outputCount {
                    let mismatch = firstBitDifference(actual[output], expected[output])
                    XCTAssertNil(mismatch, "\(context), output \(output): first difference at \(mismatch ?? -1)")
                }
            }
        }
    }

    /// 2×2 diagonal, head block 32, calls of 64 (two pieces, each completing a head block), two
    /// parts: output 0 on the data thread, output 1 on the split helper. Piece k covers samples
    /// (k − 1)·32 ..< k·32.
    private func lateSplitCase(seed: UInt64) -> (matrix: ConvolutionMatrix, configuration: EngineConfiguration, input: [[Float]]) {
        var generator = SeededGenerator(seed: seed)
        let matrix = ConvolutionMatrix(
            inputCount: 2, outputCount: 2,
            entries: [
                .init(input: 0, output: 0, impulse: [Float].noise(6000, using: &generator)),
                .init(input: 1, output: 1, impulse: [Float].noise(6000, using: &generator)),
            ])
        return (
            matrix, manyLevelConfiguration(impulseLength: 6000), [[Float].noise(20000, using: &generator), [Float].noise(20000, using: &generator)]
        )
    }

    /// Parts delayed past the wait limit are counted late exactly; the data thread's wait is bounded
    /// by the limit (generous slack, no speed figure); the output stays finite and differs from the
    /// unsplit output only in the late parts' outputs, over the late piece and the next head block
    /// (whose overlap the late piece would have given).
    func testLateSplitPartsAreCountedAndOnlyTheirSamplesAreMissing() throws {
        let (matrix, configuration, inputs) = lateSplitCase(seed: 32)
        let delayedPieces = [8, 40]  // second pieces of calls 3 and 19: the next call starts with the part idle again
        let inner = WorkgroupLevelScheduler(configuration: splitConfiguration(splitThreads: 1, takeBack: false, levelThreads: 2))
        let scheduler = DelayInjectingScheduler(
            inner, delays: [:],
            splitDelays: Dictionary(
                uniqueKeysWithValues: delayedPieces.map { ($0, UInt32(200_000)) }))
        let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration, scheduler: scheduler)
        XCTAssertEqual(engine.splitPartCount, 2)
        let waitNanos: UInt64 = 30_000_000
        var lateSplits = 0, longestCallNanos: UInt64 = 0, callStart: UInt64 = 0
        let actual = render(
            engine, inputs, callSizes: [64], scheduler: scheduler,
            beforeCall: { _ in
                callStart = monotonicNanos()
                inner.beginCycle(startNanos: callStart, waitLimitNanos: callStart + waitNanos, sampleRate: 48000)
            },
            afterCall: { _ in
                longestCallNanos = max(longestCallNanos, monotonicNanos() - callStart)
                let late = inner.statistics().lateSplits
                if late > lateSplits {
                    lateSplits = late
                    inner.waitUntilIdle()  // the test lets the delayed part finish: one late split per delay
                }
            })
        scheduler.stop()
        let statistics = inner.statistics()
        let split = try XCTUnwrap(statistics.split)
        XCTAssertEqual(split.lateSplits, delayedPieces.count, "\(statistics)")
        XCTAssertEqual(split.busyParts, 0)
        XCTAssertEqual(statistics.lateLevels, 0)
        XCTAssertLessThan(longestCallNanos, waitNanos + 120_000_000, "the data thread waited for a 200 ms part")

        let expected = render(try ConvolutionEngine(matrix: matrix, configuration: configuration), inputs, callSizes: [64])
        XCTAssertTrue(actual.allSatisfy { $0.allSatisfy(\.isFinite) })
        XCTAssertNil(firstBitDifference(actual[0], expected[0]), "output 0 runs on the data thread: never late")
        let missing = delayedPieces.map { ($0 - 1) * 32..<($0 + 1) * 32 }
        let outside = firstBitDifference(actual[1], expected[1], outside: missing)
        XCTAssertNil(outside, "output 1 differs outside the late pieces \(missing) at \(outside ?? -1)")
        for range in missing {
            XCTAssertTrue(range.contains { actual[1][$0] != expected[1][$0] }, "the late piece \(range) was not left out")
        }
    }

    /// A part still running late when the next piece comes is not posted again: the data thread
    /// computes those outputs itself (same bits), so only the late piece is missing, nothing
    /// cascades, and the late part's completion later is harmless.
    func testPartWhoseHelperIsStillBusyRunsOnTheDataThreadWithoutCascading() throws {
        let (matrix, configuration, inputs) = lateSplitCase(seed: 33)
        let delayedPiece = 9  // first piece of call 4: piece 10 finds the helper busy
        let inner = WorkgroupLevelScheduler(configuration: splitConfiguration(splitThreads: 1, takeBack: false, levelThreads: 2))
        // The late piece is 100 ms late for a 50 ms wait limit: ten times what a stalled machine
        // here kept a helper (a wait limit of 5 ms made a second piece late in a stall).
        let scheduler = DelayInjectingScheduler(inner, delays: [:], splitDelays: [delayedPiece: 100_000])
        let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration, scheduler: scheduler)
        var pacedCalls = 0
        let actual = render(
            engine, inputs, callSizes: [64], scheduler: scheduler,
            beforeCall: { _ in
                let start = monotonicNanos()
                inner.beginCycle(startNanos: start, waitLimitNanos: start + 50_000_000, sampleRate: 48000)
            },
            afterCall: { call in
                // After the late piece, pace 1 ms per call for a while, so the helper comes back mid-render.
                if call >= 4 && pacedCalls < 150 { pacedCalls += 1; usleep(1000) }
            })
        scheduler.stop()
        let statistics = inner.statistics()
        let split = try XCTUnwrap(statistics.split)
        XCTAssertEqual(split.lateSplits, 1, "\(statistics)")
        XCTAssertGreaterThanOrEqual(split.busyParts, 1, "the piece after the late one should find the helper busy")
        let pieces = 2 * (20000 / 64)
        XCTAssertLessThan(split.busyParts, pieces / 2, "the helper never came back: \(statistics)")
        XCTAssertEqual(statistics.lateLevels, 0)

        let expected = render(try ConvolutionEngine(matrix: matrix, configuration: configuration), inputs, callSizes: [64])
        XCTAssertTrue(actual.allSatisfy { $0.allSatisfy(\.isFinite) })
        XCTAssertNil(firstBitDifference(actual[0], expected[0]))
        let missing = (delayedPiece - 1) * 32..<(delayedPiece + 1) * 32
        let outside = firstBitDifference(actual[1], expected[1], outside: [missing])
        XCTAssertNil(outside, "output 1 differs outside the late piece \(missing) at \(outside ?? -1)")
        XCTAssertTrue(missing.contains { actual[1][$0] != expected[1][$0] }, "the late piece was not left out")
    }

    /// The real-time contract on the split path: data thread (posting, its own part, taking parts
    /// back, waiting, mixing) and split helpers allocate nothing and lock nothing after warm-up.
    func testNoAllocationsOrLocksOnTheSplitPath() throws {
        var generator = SeededGenerator(seed: 34)
        let matrix = ConvolutionMatrix(
            inputCount: 4, outputCount: 4,
            entries: (0..<4).map {
                .init(input: $0, output: $0, impulse: [Float].noise(20000, using: &generator))
            })
        let frames = 64
        let buffers = (0..<8).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: frames) }
        defer { buffers.forEach { $0.deallocate() } }
        for buffer in buffers { for n in 0..<frames { buffer[n] = Float.random(in: -1...1, using: &generator) } }
        let inputs = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: 4)
        let outputs = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: 4)
        defer { inputs.deallocate(); outputs.deallocate() }
        for channel in 0..<4 {
            inputs[channel] = UnsafePointer(buffers[channel])
            outputs[channel] = buffers[4 + channel]
        }
        for takeBack in [true, false] {
            let scheduler = WorkgroupLevelScheduler(configuration: splitConfiguration(splitThreads: 2, takeBack: takeBack))
            let engine = try ConvolutionEngine(
                matrix: matrix, configuration: manyLevelConfiguration(impulseLength: 20000),
                scheduler: scheduler)
            defer { scheduler.stop() }
            XCTAssertEqual(engine.splitPartCount, 3)
            func cycle() {
                let start = monotonicNanos()
                scheduler.beginCycle(startNanos: start, waitLimitNanos: start + 1_000_000_000, sampleRate: 48000)
                engine.process(inputs: inputs, outputs: outputs, frameCount: frames, scheduler: scheduler)
            }
            for _ in 0..<2000 { cycle() }  // warm-up
            allocation_counter_watch_current_thread(1)
            allocation_counter_reset()
            allocation_counter_arm(1)
            for _ in 0..<2000 { cycle() }
            allocation_counter_arm(0)
            XCTAssertEqual(allocation_counter_allocations(), 0, "heap allocations on the data thread (take-back \(takeBack))")
            XCTAssertEqual(allocation_counter_mutex_locks(), 0, "mutex locks on the data thread (take-back \(takeBack))")
            allocation_counter_watch_threads_named("swconv")  // the helpers, which run the parts too
            allocation_counter_reset()
            allocation_counter_arm(1)
            for _ in 0..<2000 { cycle() }
            allocation_counter_arm(0)
            allocation_counter_watch_current_thread(0)
            XCTAssertEqual(allocation_counter_allocations(), 0, "heap allocations on data or helper threads (take-back \(takeBack))")
            XCTAssertEqual(allocation_counter_mutex_locks(), 0, "mutex locks on data or helper threads (take-back \(takeBack))")
            let statistics = scheduler.statistics()
            let split = try XCTUnwrap(statistics.split)
            XCTAssertEqual(statistics.lateLevels + split.lateSplits, 0)
            if !takeBack { XCTAssertGreaterThan(split.jobs.intervals, 2 * 6000 / 2, "parts did not run on the helpers") }
        }
    }

    /// On the process's workgroup (the default) a split node's levels and parts share its helpers:
    /// as many as the larger request, no split helpers of their own. Unshared, the node has both.
    func testSplitPartsAndLevelsRunOnTheProcesssWorkgroup() throws {
        var generator = SeededGenerator(seed: 35)
        let matrix = ConvolutionMatrix(
            inputCount: 3, outputCount: 3,
            entries: (0..<3).map { .init(input: $0, output: $0, impulse: [Float].noise(20000, using: &generator)) })
        let input = (0..<3).map { _ in [Float].noise(30000, using: &generator) }
        let expected = render(
            try ConvolutionEngine(matrix: matrix, configuration: manyLevelConfiguration(impulseLength: 20000)), input,
            callSizes: [64])
        for shared in [true, false] {
            var configuration = splitConfiguration(splitThreads: 2, takeBack: false)
            configuration.sharedWorkgroup = shared
            let scheduler = WorkgroupLevelScheduler(configuration: configuration)
            let engine = try ConvolutionEngine(
                matrix: matrix, configuration: manyLevelConfiguration(impulseLength: 20000), scheduler: scheduler)
            XCTAssertEqual(engine.splitPartCount, 3)
            let helpers = try threadNames().filter { $0.hasPrefix("swconv-") }
            let actual = render(engine, input, callSizes: [64], scheduler: scheduler)
            scheduler.stop()
            let statistics = scheduler.statistics()
            if shared {
                XCTAssertTrue(statistics.shared)
                XCTAssertEqual(helpers.count, 2, "one group of max(1 level helper, 2 parts) helpers: \(helpers)")
                XCTAssertFalse(helpers.contains { $0.hasPrefix("swconv-split") }, "\(helpers)")
            } else {
                XCTAssertFalse(statistics.shared)
                XCTAssertEqual(helpers.sorted(), ["swconv-helper0", "swconv-split0", "swconv-split1"])
            }
            XCTAssertGreaterThan(try XCTUnwrap(statistics.split).jobs.intervals, 0, "no part ran on a helper (shared \(shared))")
            XCTAssertGreaterThan(statistics.helpers.intervals, 0, "no level ran on a helper (shared \(shared))")
            XCTAssertEqual(ProcessWorkgroup.threadCount(), 0, "the group ends with its last member")
            for output in 0..<3 {
                XCTAssertNil(firstBitDifference(actual[output], expected[output]), "shared \(shared), output \(output)")
            }
        }
    }
}
