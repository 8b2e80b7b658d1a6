import FixedMemory
import XCTest

@testable import Convolution

/// Memory the machine cannot give is an error the loader reports, not a crash of the user's PipeWire.
final class ResourceErrorTests: XCTestCase {
    func testAnImpossibleAllocationIsAnError() {
        // 4 PiB: more than any address space here gives.
        XCTAssertThrowsError(try AlignedFloats(count: 1 << 50)) { error in
            XCTAssertEqual(error as? ResourceError, .outOfMemory(bytes: 1 << 52))
            XCTAssertEqual("\(error)", "out of memory allocating \(1 << 52) bytes")
        }
        // A size whose bytes overflow Int.
        XCTAssertThrowsError(try SplitSpectra(count: Int.max / 8, binCount: 1024)) { error in
            XCTAssertEqual(error as? ResourceError, .outOfMemory(bytes: Int.max))
        }
    }
}
