@testable import ConvolverNode
import XCTest

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

    func testLateCyclesThatStartedLateAreThoseWhoseCallFitTheirPeriod() {
        let statistics = ProcessStatistics()
        let period: UInt64 = 5_333_333  // 256 frames at 48 kHz
        statistics.record(busyNanos: 40_000, late: false, periodNanos: period)
        statistics.record(busyNanos: 40_000, late: true, periodNanos: period)     // woken too late
        statistics.record(busyNanos: 6_000_000, late: true, periodNanos: period)  // its own work too long
        statistics.record(busyNanos: 6_000_000, late: false, periodNanos: period)
        XCTAssertEqual(statistics.calls.load(ordering: .relaxed), 4)
        XCTAssertEqual(statistics.lateCycles.load(ordering: .relaxed), 2)
        XCTAssertEqual(statistics.lateCyclesStartedLate.load(ordering: .relaxed), 1)
    }
}
