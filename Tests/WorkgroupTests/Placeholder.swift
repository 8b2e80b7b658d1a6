import XCTest
final class WorkgroupTestsPlaceholder: XCTestCase { func testNothing() {} }
