import XCTest
import AllocationCounter
final class AllocationCounterSelfTest: XCTestCase {
    // The counter must be able to fail: an allocation on a watched thread is seen.
    func testCounterSeesAnAllocation() {
        allocation_counter_reset()
        allocation_counter_watch_current_thread(1)
        allocation_counter_arm(1)
        let p = malloc(100)
        let a = [Int](repeating: 1, count: Int.random(in: 10...20))
        allocation_counter_arm(0)
        allocation_counter_watch_current_thread(0)
        free(p)
        XCTAssertGreaterThanOrEqual(allocation_counter_allocations(), 2, "counted \(a.count)")
    }
}
