import AllocationCounter
import ConvolverNode
import Convolution
import CPipeWire
import Foundation
import Glibc
import Synchronization
import Workgroup
import XCTest

/// A level-job runner for scheduler tests that do not need DSP: each job writes a value derived
/// from (level, block) into a preallocated table, can sleep for chosen jobs (injected delays), and
/// remembers the scheduling policy its helper ran under.
final class TableRunner: LevelJobRunner, @unchecked Sendable {
    let levelCount: Int, blockCount: Int
    let table: UnsafeMutablePointer<Int>
    var injectedDelays: [Int: UInt32] = [:]  // (level << 32 | block) -> µs
    let helperPolicy = Atomic<Int>(-1), helperPriority = Atomic<Int>(-1)

    init(levelCount: Int, blockCount: Int) {
        self.levelCount = levelCount
        self.blockCount = blockCount
        table = .allocate(capacity: levelCount * blockCount)
        table.initialize(repeating: -1, count: levelCount * blockCount)
    }

    func runLevelJob(level: Int, block: Int) {
        if helperPolicy.load(ordering: .relaxed) < 0 {
            var parameters = sched_param()
            helperPolicy.store(Int(sched_getscheduler(0) & 0xff), ordering: .relaxed)
            sched_getparam(0, &parameters)
            helperPriority.store(Int(parameters.sched_priority), ordering: .relaxed)
        }
        if !injectedDelays.isEmpty, let delay = injectedDelays[level << 32 | block] { usleep(delay) }
        table[level * blockCount + block % blockCount] = level * 1_000_000 + block
    }
}

final class WorkgroupSchedulerTests: XCTestCase {
    func testJobsMapToLevelsAndBlocksAndLateResultsAreCounted() throws {
        let runner = TableRunner(levelCount: 2, blockCount: 32)
        runner.injectedDelays[1 << 32 | 5] = 400_000
        var configuration = WorkgroupSchedulerConfiguration()
        configuration.threadCount = .fixed(2)
        configuration.realtimePriority = nil
        let scheduler = WorkgroupLevelScheduler(configuration: configuration)
        try scheduler.prepare(runner: runner, levels: [.init(blockSize: 128, dueAfterSamples: 128),
                                                        .init(blockSize: 256, dueAfterSamples: 256)])
        defer { scheduler.stop() }
        var late: [Int] = []
        for block in 0..<32 {
            let start = monotonicNanos()
            // A 50 ms wait limit for this "cycle"; deadlines from the level's dueInSamples at 48 kHz.
            scheduler.beginCycle(startNanos: start, waitLimitNanos: start + 50_000_000, sampleRate: 48000)
            scheduler.post(level: 0, block: block, dueInSamples: 128)
            scheduler.post(level: 1, block: block, dueInSamples: 9600)  // 200 ms
            XCTAssertTrue(scheduler.awaitResult(level: 0, block: block))
            if !scheduler.awaitResult(level: 1, block: block) {
                late.append(block)
                XCTAssertLessThan(monotonicNanos() - start, 300_000_000, "the wait overran its limit")
                scheduler.beginCycle(startNanos: start, waitLimitNanos: .max, sampleRate: 48000)
                XCTAssertTrue(scheduler.awaitResult(level: 1, block: block))
            }
            XCTAssertEqual(runner.table[block], block)
            XCTAssertEqual(runner.table[32 + block], 1_000_000 + block)
        }
        XCTAssertEqual(late, [5])
        let statistics = scheduler.statistics()
        XCTAssertEqual(statistics.lateLevels, 1)
        XCTAssertEqual(statistics.levels.map(\.lateResults), [0, 1])
        XCTAssertEqual(statistics.levels[1].jobs.intervals, 32)
        XCTAssertEqual(statistics.levels[1].jobs.lateIntervals, 1, "only the 400 ms job missed its 200 ms deadline")
        XCTAssertEqual(statistics.helpers.intervals, 64)
    }

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
        try scheduler.prepare(runner: runner, levels: [.init(blockSize: 256, dueAfterSamples: 256)])
        defer { scheduler.stop() }
        scheduler.post(level: 0, block: 0, dueInSamples: 256)
        XCTAssertTrue(scheduler.awaitResult(level: 0, block: 0))
        XCTAssertEqual(runner.table[0], 0)
        let names = try threadNames()
        XCTAssertTrue(names.contains("swconv-0"), "threads: \(names)")
        if getuid() == 0 {
            XCTAssertTrue(scheduler.statistics().realtime, "warnings: \(warnings.messages)")
            XCTAssertEqual(runner.helperPolicy.load(ordering: .relaxed), Int(SCHED_FIFO))
            XCTAssertEqual(runner.helperPriority.load(ordering: .relaxed), 60)
        } else {
            XCTAssertEqual(warnings.messages.count, scheduler.statistics().realtime ? 0 : 1)
        }
    }

    /// SCHED_DEADLINE where the kernel allows it (root here, FACTS.md), else the SCHED_FIFO fallback.
    func testDeadlineSchedulingOrFallbackToFifo() throws {
        let runner = TableRunner(levelCount: 1, blockCount: 4)
        var configuration = WorkgroupSchedulerConfiguration()
        configuration.threadCount = .fixed(1)
        configuration.realtimePriority = 20
        configuration.deadlineScheduling = true
        configuration.deadlineRuntimeFraction = 0.3
        let scheduler = WorkgroupLevelScheduler(configuration: configuration)
        try scheduler.prepare(runner: runner, levels: [.init(blockSize: 256, dueAfterSamples: 256)])
        defer { scheduler.stop() }
        scheduler.post(level: 0, block: 0, dueInSamples: 256)
        XCTAssertTrue(scheduler.awaitResult(level: 0, block: 0))
        let granted = scheduler.statistics().deadlineScheduling
        print("SCHED_DEADLINE for helpers: \(granted ? "granted" : "refused, SCHED_FIFO fallback")")
        let schedDeadline = 6
        XCTAssertEqual(runner.helperPolicy.load(ordering: .relaxed), granted ? schedDeadline : Int(SCHED_FIFO))
        if getuid() == 0 { XCTAssertTrue(granted, "root on kernel ≥ 3.14 should get SCHED_DEADLINE") }
    }
}

func threadNames() throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap {
        try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)
    }.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}

final class WarningLog: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ message: String) { lock.lock(); stored.append(message); lock.unlock() }
    var messages: [String] { lock.lock(); defer { lock.unlock() }; return stored }
}
