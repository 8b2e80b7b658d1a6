import XCTest

@testable import Convolution

final class PartitionPlannerTests: XCTestCase {
    func testPlansCoverTheImpulseAndLeaveEveryLevelAFullPeriod() {
        for length in [1, 100, 5000, 48000, 480_000] {
            for quantum in [64, 256, 1000, 1024] {
                let plan = PartitionPlanner.plan(
                    .init(
                        impulseLength: length, inputCount: 2, outputCount: 2, entryCount: 2,
                        expectedBlockSize: quantum, maxPartitionSize: 16384),
                    costs: Self.costs)
                XCTAssertNoThrow(try plan.validate(), "\(plan)")
                XCTAssertGreaterThanOrEqual(plan.levels.last!.end, length, "\(plan)")
                XCTAssertLessThan(plan.levels.last!.offset, length, "a level that covers nothing: \(plan)")
                XCTAssertLessThanOrEqual(plan.levels.map(\.blockSize).max()!, 16384)
            }
        }
    }

    func testLongImpulsesAtSmallBlocksGetNonUniformPlansCheaperThanUniform() {
        let problem = PartitionPlanner.Problem(
            impulseLength: 480_000, inputCount: 2, outputCount: 2, entryCount: 2,
            expectedBlockSize: 64, maxPartitionSize: 16384)
        let plan = PartitionPlanner.plan(problem, costs: Self.costs)
        XCTAssertGreaterThanOrEqual(plan.levels.count, 3, "\(plan)")
        let uniform = PartitionPlanner.layout(length: 480_000, headBlock: 64, tailSizes: [])!
        let (uniformCost, _) = PartitionPlanner.cost(uniform, problem, Self.costs)
        XCTAssertLessThan(plan.estimatedCoreFraction * 5, uniformCost, "plan \(plan)")
    }

    /// Fixed machine costs (N log N FFTs), so the choice is deterministic.
    private static let costs = MachineCosts(
        fftPairNanoseconds: Dictionary(uniqueKeysWithValues: (6...15).map { 1 << $0 }.map { ($0, 0.5 * Double($0) * log2(Double($0))) }),
        multiplyAddNanosecondsPerBin: 0.7, directTapNanoseconds: 0.05)

    private static func problem(seconds: Double, quantum: Int, placement: LevelPlacement?) -> PartitionPlanner.Problem {
        var problem = PartitionPlanner.Problem(
            impulseLength: Int(seconds * 48000), inputCount: 2, outputCount: 2, entryCount: 2,
            expectedBlockSize: quantum, maxPartitionSize: 16384)
        problem.placement = placement
        return problem
    }

    func testHelperJobsCostTheirHandOverAndDataThreadLevelsCountAsDataThreadTime() {
        let levels = PartitionPlanner.layout(length: 144_000, headBlock: 256, tailSizes: [1024, 8192])!
        let (bare, bareDataThread) = PartitionPlanner.cost(levels, Self.problem(seconds: 3, quantum: 256, placement: nil), Self.costs)

        // Both tails on helpers, each job 1 ms dearer.
        var placement = LevelPlacement(
            dataThreadJobNanoseconds: 0, dataThreadJobFraction: 0, minimumHelperSlackSeconds: 0,
            helperJobOverheadNanoseconds: 1_000_000)
        var (total, dataThread) = PartitionPlanner.cost(levels, Self.problem(seconds: 3, quantum: 256, placement: placement), Self.costs)
        XCTAssertEqual(dataThread, bareDataThread, accuracy: 1e-12)
        XCTAssertEqual(total - bare, (48000.0 / 1024 + 48000.0 / 8192) * 1e-3, accuracy: 1e-9)

        // The 1024-frame level cheap enough for the data thread: its jobs move there, without hand-over.
        let problem = Self.problem(seconds: 3, quantum: 256, placement: placement)
        let shortJob = PartitionPlanner.jobNanoseconds(levels[1], problem, Self.costs)
        XCTAssertLessThan(shortJob, PartitionPlanner.jobNanoseconds(levels[2], problem, Self.costs))
        placement.dataThreadJobNanoseconds = shortJob
        placement.dataThreadJobFraction = 1
        (total, dataThread) = PartitionPlanner.cost(levels, Self.problem(seconds: 3, quantum: 256, placement: placement), Self.costs)
        XCTAssertEqual(dataThread - bareDataThread, 48000.0 / 1024 * shortJob / 1e9, accuracy: 1e-12)
        XCTAssertEqual(total - bare, 48000.0 / 8192 * 1e-3, accuracy: 1e-9)

        // Due sooner than the slack after its block (1024 frames = 21 ms): on the data thread too.
        placement = LevelPlacement(
            dataThreadJobNanoseconds: 0, dataThreadJobFraction: 0, minimumHelperSlackSeconds: 0.022,
            helperJobOverheadNanoseconds: 1_000_000)
        (total, dataThread) = PartitionPlanner.cost(levels, Self.problem(seconds: 3, quantum: 256, placement: placement), Self.costs)
        XCTAssertEqual(dataThread - bareDataThread, 48000.0 / 1024 * shortJob / 1e9, accuracy: 1e-12)
    }

    func testTheHandOverCostLeadsToPlansWithFewerHelperJobs() {
        func helperJobsPerSecond(overhead: Double) -> Double {
            let placement = LevelPlacement(
                dataThreadJobNanoseconds: 0, dataThreadJobFraction: 0, minimumHelperSlackSeconds: 0,
                helperJobOverheadNanoseconds: overhead)
            let plan = PartitionPlanner.plan(Self.problem(seconds: 10, quantum: 256, placement: placement), costs: Self.costs)
            return plan.tails.reduce(0) { $0 + 48000 / Double($1.blockSize) }
        }
        XCTAssertLessThan(helperJobsPerSecond(overhead: 500_000), helperJobsPerSecond(overhead: 0))
    }

    /// An IR of a few dozen taps is summed in the time domain where that beats an FFT head live
    /// (its first transform of a call cold); a long one, or taps priced dear, never is.
    func testShortImpulsesGetADirectHeadWhereItIsCheaper() throws {
        func plan(taps: Int, quantum: Int, costs: MachineCosts = Self.costs) -> PartitionPlan {
            PartitionPlanner.plan(Self.problem(taps: taps, quantum: quantum), costs: costs)
        }
        for quantum in [64, 256, 1024] {
            XCTAssertEqual(plan(taps: 48, quantum: quantum).levels, [.direct(taps: 48)])
            XCTAssertFalse(plan(taps: PartitionPlanner.maxDirectTaps + 1, quantum: quantum).head.isDirect)
        }
        XCTAssertEqual("\(plan(taps: 48, quantum: 256))", "direct 48")
        var dear = Self.costs
        dear.directTapNanoseconds = 5
        XCTAssertFalse(plan(taps: 48, quantum: 256, costs: dear).head.isDirect, "\(plan(taps: 48, quantum: 256, costs: dear))")

        XCTAssertNoThrow(try PartitionPlan(levels: [.direct(taps: 1)]).validate())
        for levels: [PartitionPlan.Level] in [
            [.direct(taps: 0)], [.direct(taps: PartitionPlanner.maxDirectTaps + 1)],
            [.direct(taps: 64), .init(blockSize: 64, segmentCount: 1, offset: 128)],
            [.init(blockSize: 64, segmentCount: 2, offset: 0), .init(blockSize: 64, segmentCount: 1, offset: 128, isDirect: true)],
        ] {
            XCTAssertThrowsError(try PartitionPlan(levels: levels).validate(), "\(levels)")
        }
    }

    private static func problem(taps: Int, quantum: Int) -> PartitionPlanner.Problem {
        PartitionPlanner.Problem(
            impulseLength: taps, inputCount: 2, outputCount: 2, entryCount: 2, expectedBlockSize: quantum,
            maxPartitionSize: 16384)
    }
}
