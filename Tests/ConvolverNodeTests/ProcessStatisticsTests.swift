import XCTest

@testable import ConvolverNode

/// The missed-cycle count (cycles the graph's clock moved past between two calls of the node) and
/// the late-cycle counts.
final class ProcessStatisticsTests: XCTestCase {
    func testSkippedCyclesAreTheClockStepsBeyondThePreviousCycle() {
        func skipped(_ from: UInt64, _ duration: UInt64, _ to: UInt64) -> Int {
            ProcessStatistics.skippedCycles(previousPosition: from, previousDuration: duration, position: to, rate: 48000)
        }
        XCTAssertEqual(skipped(1000, 256, 1256), 0, "the next cycle")
        XCTAssertEqual(skipped(1000, 256, 1512), 1, "one cycle skipped")
        XCTAssertEqual(skipped(1000, 256, 2024), 3)
        XCTAssertEqual(skipped(1000, 256, 1384), 1, "a partial cycle counts")
        XCTAssertEqual(skipped(1000, 1024, 2024), 0, "after a quantum change the clock moves by the old quantum")
        XCTAssertEqual(skipped(1000, 0, 5000), 0, "the first call")
        XCTAssertEqual(skipped(5000, 256, 1000), 0, "a jump back (a new driver)")
        XCTAssertEqual(skipped(1000, 256, 1000 + 48001), 0, "more than a second (a new driver)")
    }

    func testRecordClockAddsUpTheMissedCycles() throws {
        let statistics = try ProcessStatistics()
        for position: UInt64 in [0, 256, 512, 1024, 1280, 2048] {
            statistics.recordClock(position: position, duration: 256, rate: 48000)
        }
        XCTAssertEqual(statistics.missedCycles.load(ordering: .relaxed), 1 + 2)
    }

    func testLateCyclesStartedLateOwnAndStalled() throws {
        let statistics = try ProcessStatistics()
        let period: UInt64 = 5_333_333  // 256 frames at 48 kHz
        func call(busy: UInt64, cpu: UInt64, wait: UInt64 = 0, late: Bool) {
            statistics.record(CallTimes(busy: busy, cpu: cpu, wait: wait), frameCount: 256, periodNanos: period, late: late)
        }
        for _ in 0..<50 { call(busy: 40_000, cpu: 30_000, late: false) }
        call(busy: 40_000, cpu: 30_000, late: true)  // woken too late
        call(busy: 6_000_000, cpu: 50_000, late: true)  // preempted midway
        call(busy: 6_000_000, cpu: 5_990_000, late: true)  // one call 150 times its usual: the machine held it
        call(busy: 6_000_000, cpu: 40_000, wait: 5_900_000, late: true)  // waited for a helper
        call(busy: 6_000_000, cpu: 5_900_000, late: false)
        XCTAssertEqual(statistics.calls.load(ordering: .relaxed), 55)
        XCTAssertEqual(statistics.lateCycles.load(ordering: .relaxed), 4)
        XCTAssertEqual(statistics.lateCyclesStartedLate.load(ordering: .relaxed), 1)
        XCTAssertEqual(statistics.lateCyclesStalled.load(ordering: .relaxed), 1)
        XCTAssertEqual(statistics.lateCyclesOwn.load(ordering: .relaxed), 1, "only the call that waited for a helper past the period")
    }

    /// Work that is long every time is the node's own, from the first call on; and a stall inside a
    /// data-thread job (gauged by the scheduler) is taken out of the call's CPU time.
    func testSteadyOverrunsAreOwnAndStallsInJobsAreNot() throws {
        let statistics = try ProcessStatistics()
        let period: UInt64 = 1_333_333  // 64 frames at 48 kHz
        for _ in 0..<20 {
            statistics.record(CallTimes(busy: 1_500_000, cpu: 1_490_000), frameCount: 64, periodNanos: period, late: true)
        }
        XCTAssertEqual(statistics.lateCyclesOwn.load(ordering: .relaxed), 20)
        let job = CallTimes(busy: 3_000_000, cpu: 2_990_000, jobs: 2_950_000, stalledInJobs: 2_900_000)
        statistics.record(job, frameCount: 64, periodNanos: period, late: true)
        XCTAssertEqual(statistics.lateCyclesOwn.load(ordering: .relaxed), 20)
        XCTAssertEqual(statistics.lateCyclesStalled.load(ordering: .relaxed), 1)
    }
}
