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

    func testRecordClockAddsUpTheMissedCycles() {
        let statistics = ProcessStatistics()
        for position: UInt64 in [0, 256, 512, 1024, 1280, 2048] {
            statistics.recordClock(position: position, duration: 256, rate: 48000)
        }
        XCTAssertEqual(statistics.missedCycles.load(ordering: .relaxed), 1 + 2)
    }

    func testLateCyclesStartedLateAndOwn() {
        let statistics = ProcessStatistics()
        let period: UInt64 = 5_333_333  // 256 frames at 48 kHz
        statistics.record(busyNanos: 40_000, late: false, periodNanos: period, ownNanos: 30_000)
        statistics.record(busyNanos: 40_000, late: true, periodNanos: period, ownNanos: 30_000)  // woken too late
        statistics.record(busyNanos: 6_000_000, late: true, periodNanos: period, ownNanos: 5_900_000)  // its own work too long
        statistics.record(busyNanos: 6_000_000, late: true, periodNanos: period, ownNanos: 50_000)  // stalled midway
        statistics.record(busyNanos: 6_000_000, late: false, periodNanos: period, ownNanos: 5_900_000)
        XCTAssertEqual(statistics.calls.load(ordering: .relaxed), 5)
        XCTAssertEqual(statistics.lateCycles.load(ordering: .relaxed), 3)
        XCTAssertEqual(statistics.lateCyclesStartedLate.load(ordering: .relaxed), 1)
        XCTAssertEqual(statistics.lateCyclesOwn.load(ordering: .relaxed), 1, "only the call whose own CPU time and waits passed the period")
    }
}
