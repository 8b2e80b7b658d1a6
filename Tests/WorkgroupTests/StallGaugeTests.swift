import Workgroup
import XCTest

final class StallGaugeTests: XCTestCase {
    /// A stage of 100 µs with a little jitter: a run of 3 ms is a stall of everything beyond the
    /// usual time; runs up to ten times the usual (cold caches) are work.
    func testALoneLongRunIsAStallAndColdRunsAreWork() {
        var gauge = StallGauge()
        for run in 0..<200 { XCTAssertEqual(gauge.stalledNanos(ofRun: 95_000 + UInt64(run % 10) * 1_000), 0) }
        let usual = gauge.usualNanos
        XCTAssertEqual(Double(usual), 100_000, accuracy: 8_000)
        XCTAssertEqual(gauge.stalledNanos(ofRun: 3_000_000), 3_000_000 - usual)
        XCTAssertEqual(gauge.stalledNanos(ofRun: 950_000), 0, "below 8 × 100 µs + 200 µs")
        XCTAssertLessThan(gauge.usualNanos, usual * 11 / 10, "two long runs move the median by a few percent")
    }

    /// A stage whose every run is long is work from its first run; when its work grows, the median
    /// follows and the longer runs stop counting as stalls.
    func testSteadyWorkIsNeverAStall() {
        var gauge = StallGauge()
        for _ in 0..<50 { XCTAssertEqual(gauge.stalledNanos(ofRun: 2_000_000), 0) }
        var stalls = 0
        for _ in 0..<300 where gauge.stalledNanos(ofRun: 30_000_000) > 0 { stalls += 1 }
        XCTAssertLessThan(stalls, 80, "a fifteenfold heavier stage is followed within tens of runs")
        XCTAssertEqual(gauge.stalledNanos(ofRun: 30_000_000), 0)
    }
}
