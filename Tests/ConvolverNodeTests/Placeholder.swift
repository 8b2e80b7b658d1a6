import XCTest
final class ConvolverNodeTestsPlaceholder: XCTestCase { func testNothing() {} }
