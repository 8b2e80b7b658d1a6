import Convolution
import EngineTestSupport
import Glibc
import LevelScheduling
import Workgroup
import XCTest

/// A data-thread level's job spread over the calls before it is due (`SpreadJob`).
final class SpreadJobTests: XCTestCase {
    /// Every tail level on the data thread, in cycles as the node runs them: the output equals the
    /// inline scheduler's bit for bit at the planned call size and at others, and at the planned
    /// size each call runs one equal share of each level's job, never the whole job.
    func testSpreadJobsAreBitExactAndEvenlyShared() throws {
        var generator = SeededGenerator(seed: 11)
        let matrix = randomMatrix(inputCount: 3, outputCount: 2, crossed: true, impulseLengths: 3000...6000, using: &generator)
        var configuration = manyLevelConfiguration(impulseLength: matrix.impulseLength)
        configuration.expectedBlockSize = 32
        let inputs = (0..<3).map { _ in [Float].noise(matrix.impulseLength + 8000, using: &generator) }
        let plan = try ConvolutionEngine(matrix: matrix, configuration: configuration).plan

        for callSizes in [[32], [32, 7, 100, 1, 64], [256]] {
            // (The head's rounding follows the call sizes: the reference runs the same calls.)
            let expected = render(try ConvolutionEngine(matrix: matrix, configuration: configuration), inputs, callSizes: callSizes)
            var schedulerConfiguration = unpacedConfiguration(threads: 1)
            schedulerConfiguration.minimumDataThreadLevelCount = plan.tails.count
            let counter = StepCountingScheduler(WorkgroupLevelScheduler(configuration: schedulerConfiguration))
            let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration, scheduler: counter)
            XCTAssertEqual(counter.inner.dataThreadLevelCount, plan.tails.count)
            let actual = render(
                engine, inputs, callSizes: callSizes, scheduler: counter,
                beforeCall: { _ in
                    counter.startCall()
                    let start = monotonicNanos()
                    counter.inner.beginCycle(startNanos: start, waitLimitNanos: start + 1_000_000_000, sampleRate: 48000)
                })
            counter.startCall()
            counter.stop()
            for output in 0..<2 {
                let mismatch = firstBitDifference(actual[output], expected[output])
                XCTAssertNil(mismatch, "calls \(callSizes), output \(output): first difference at \(mismatch ?? -1)")
            }
            guard callSizes == [32] else { continue }
            for (number, level) in plan.levels.enumerated().dropFirst() {
                // Posted at the end of a call, due `offset - blockSize` samples later, the next post
                // `blockSize` later: that many whole calls share it, the posting one included.
                let shares = max(1, min((level.offset - level.blockSize) / 32 + 1, level.blockSize / 32))
                let steps = engine.levelJobStepCount(level: number)
                XCTAssertEqual(
                    counter.mostStepsInOneCall[number], (steps + shares - 1) / shares,
                    "level \(number) (\(level.blockSize) at \(level.offset)): \(steps) steps in \(shares) calls")
                if shares > 1 { XCTAssertLessThan(counter.mostStepsInOneCall[number], steps) }
            }
        }
    }
}

/// Sits between the engine and a `WorkgroupLevelScheduler` and counts the job steps each call runs.
final class StepCountingScheduler: LevelJobScheduler, LevelJobRunner, @unchecked Sendable {
    let inner: WorkgroupLevelScheduler
    /// The engine, kept until `stop()` as every scheduler keeps its runner.
    private var engine: (any LevelJobRunner)?
    /// By level (0, the head's, unused): the steps run in the current call, and the most in any call.
    private var stepsThisCall: [Int] = []
    private(set) var mostStepsInOneCall: [Int] = []

    init(_ inner: WorkgroupLevelScheduler) { self.inner = inner }

    func startCall() {
        for level in stepsThisCall.indices { mostStepsInOneCall[level] = max(mostStepsInOneCall[level], stepsThisCall[level]) }
        stepsThisCall = stepsThisCall.map { _ in 0 }
    }

    func prepare(runner: any LevelJobRunner, levels: [LevelSchedule]) throws {
        _ = try prepare(runner: runner, levels: levels, split: SplitShare(unitCount: 1, expectedCallFrames: 0))
    }
    func prepare(runner: any LevelJobRunner, levels: [LevelSchedule], split: SplitShare) throws -> Int {
        engine = runner
        stepsThisCall = Array(repeating: 0, count: levels.count + 1)
        mostStepsInOneCall = stepsThisCall
        return try inner.prepare(runner: self, levels: levels, split: split)
    }
    func post(level: Int, block: Int, dueInSamples: Int) { inner.post(level: level, block: block, dueInSamples: dueInSamples) }
    func awaitResult(level: Int, block: Int) -> Bool { inner.awaitResult(level: level, block: block) }
    func stop() {
        inner.stop()
        engine = nil
    }

    func runLevelJob(level: Int, block: Int) { engine?.runLevelJob(level: level, block: block) }
    func levelJobStepCount(level: Int) -> Int { engine?.levelJobStepCount(level: level) ?? 1 }
    func runLevelJob(level: Int, block: Int, steps: Range<Int>) {
        stepsThisCall[level] += steps.count
        engine?.runLevelJob(level: level, block: block, steps: steps)
    }
}
