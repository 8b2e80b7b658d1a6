import XCTest

@testable import ConvolverNode

/// The helpers' load a node publishes (`convolver.helper-load-percent`).
final class HelperLoadTests: XCTestCase {
    func testLoadIsBusyTimeOverThreadsTimesElapsedTime() {
        var load = HelperLoad()
        let second: UInt64 = 1_000_000_000
        XCTAssertNil(load.percent(busyNanos: 7_000_000, threads: 2, now: 10 * second), "the first reading has no interval")
        XCTAssertEqual(load.percent(busyNanos: 507_000_000, threads: 2, now: 11 * second) ?? -1, 25, accuracy: 1e-9)
        XCTAssertEqual(load.percent(busyNanos: 507_000_000, threads: 2, now: 12 * second) ?? -1, 0, accuracy: 1e-9, "idle")
        XCTAssertEqual(
            load.percent(busyNanos: 100_000_000, threads: 1, now: 13 * second) ?? -1, 10, accuracy: 1e-9,
            "a counter that went down is a new group's: all of it is new")
        XCTAssertNil(load.percent(busyNanos: 100_000_000, threads: 0, now: 14 * second), "no helpers")
        XCTAssertNil(load.percent(busyNanos: 100_000_000, threads: 1, now: 14 * second), "no time passed")
    }
}
