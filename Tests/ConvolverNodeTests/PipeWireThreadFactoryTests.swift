import CPipeWire
import ConvolverNode
import EngineTestSupport
import Glibc
import LevelScheduling
import XCTest

final class PipeWireThreadFactoryTests: XCTestCase {
    /// With a PipeWire context, helpers are made by PipeWire's thread utils and get SCHED_FIFO
    /// from PipeWire's policy (module-rt from client-rt.conf here: root, no RTKit).
    func testPipeWireThreadFactoryHelpersRunSchedFifo() throws {
        pw_init(nil, nil)
        let mainLoop = try XCTUnwrap(pw_main_loop_new(nil))
        defer { pw_main_loop_destroy(mainLoop) }
        let properties = pw_properties_new_string("config.name=client-rt.conf")
        let context = try XCTUnwrap(pw_context_new(pw_main_loop_get_loop(mainLoop), properties, 0))
        defer { pw_context_destroy(context) }

        let runner = TableRunner(levelCount: 1, blockCount: 4)
        let warnings = WarningLog()
        var configuration = WorkgroupSchedulerConfiguration()
        configuration.threadCount = .fixed(1)
        configuration.realtimePriority = 60
        configuration.warn = { warnings.append($0) }
        let scheduler = WorkgroupLevelScheduler(configuration: configuration, threadFactory: PipeWireThreadFactory(context: context))
        try scheduler.prepare(runner: runner, levels: [.init(level: 1, blockSize: 256, dueAfterSamples: 256)])
        defer { scheduler.stop() }
        scheduler.post(level: 1, block: 0, dueInSamples: 256)
        XCTAssertTrue(scheduler.awaitResult(level: 1, block: 0))
        XCTAssertEqual(runner.table[0], 1_000_000)
        let names = try threadNames()
        XCTAssertTrue(names.contains("swconv-helper0"), "threads: \(names)")
        if getuid() == 0 {
            XCTAssertTrue(scheduler.statistics().realtime, "warnings: \(warnings.messages)")
            XCTAssertEqual(runner.helperPolicy.load(ordering: .relaxed), Int(SCHED_FIFO))
            XCTAssertEqual(runner.helperPriority.load(ordering: .relaxed), 60)
        } else {
            XCTAssertEqual(warnings.messages.count, scheduler.statistics().realtime ? 0 : 1)
        }
    }
}
