import Convolution
import XCTest

final class PartitionPlannerTests: XCTestCase {
    func testPlansCoverTheImpulseAndLeaveEveryLevelAFullPeriod() {
        for length in [1, 100, 5000, 48000, 480_000] {
            for quantum in [64, 256, 1000, 1024] {
                let plan = PartitionPlanner.plan(.init(impulseLength: length, inputCount: 2, outputCount: 2, entryCount: 2,
                                                       expectedBlockSize: quantum, maxPartitionSize: 16384))
                XCTAssertNoThrow(try plan.validate(), "\(plan)")
                XCTAssertGreaterThanOrEqual(plan.levels.last!.end, length, "\(plan)")
                XCTAssertLessThan(plan.levels.last!.offset, length, "a level that covers nothing: \(plan)")
                XCTAssertLessThanOrEqual(plan.levels.map(\.blockSize).max()!, 16384)
            }
        }
    }

    func testLongImpulsesAtSmallBlocksGetNonUniformPlansCheaperThanUniform() {
        let problem = PartitionPlanner.Problem(impulseLength: 480_000, inputCount: 2, outputCount: 2, entryCount: 2,
                                               expectedBlockSize: 64, maxPartitionSize: 16384)
        let plan = PartitionPlanner.plan(problem)
        XCTAssertGreaterThanOrEqual(plan.levels.count, 3, "\(plan)")
        let uniform = PartitionPlanner.layout(length: 480_000, headBlock: 64, tailSizes: [])!
        let (uniformCost, _) = PartitionPlanner.cost(uniform, problem, .measured)
        XCTAssertLessThan(plan.estimatedCoreFraction * 5, uniformCost, "plan \(plan)")
    }
}
