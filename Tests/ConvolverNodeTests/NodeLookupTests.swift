import XCTest

@testable import ConvolverNode

/// Which node `pw-convolver set|status NAME` means: an id, a node.name or an object.serial.
final class NodeLookupTests: XCTestCase {
    private let graph: [(id: UInt32, properties: [String: String])] = [
        (35, ["node.name": "conv-a", "object.serial": "40"]),
        (40, ["node.name": "conv-b", "object.serial": "35"]),
        (41, ["node.name": "twin", "object.serial": "52"]),
        (42, ["node.name": "twin", "object.serial": "53"]),
    ]

    func testAnIdPicksThatNodeEvenWhereItIsAnotherNodesSerial() {
        // Seen live: `set 40` meant node 40 and was refused as ambiguous with the node of serial 40.
        XCTAssertEqual(NodeControlClient.nodeIDs(matching: "35", among: graph), [35])
        XCTAssertEqual(NodeControlClient.nodeIDs(matching: "40", among: graph), [40])
    }

    func testNamesThenSerials() {
        XCTAssertEqual(NodeControlClient.nodeIDs(matching: "conv-b", among: graph), [40])
        XCTAssertEqual(NodeControlClient.nodeIDs(matching: "53", among: graph), [42], "a serial that is no id")
        XCTAssertEqual(NodeControlClient.nodeIDs(matching: "twin", among: graph), [41, 42], "two nodes of one name: ambiguous")
        XCTAssertEqual(NodeControlClient.nodeIDs(matching: "nobody", among: graph), [])
    }
}
