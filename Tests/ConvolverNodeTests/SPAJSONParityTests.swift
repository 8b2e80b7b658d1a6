import CPipeWire
import EngineTestSupport
import Foundation
import XCTest

@testable import ConvolverGraph
@testable import ConvolverNode

/// Our SPA-JSON reader (kept for its error positions) against SPA's own `spa_json_*`: every config
/// this project ships or tests, and the syntax PipeWire's configs use, read to the same tree.
final class SPAJSONParityTests: XCTestCase {
    func testEveryConfigReadsAsSPAReadsIt() throws {
        let root = packageRoot
        var paths: [String] = []
        for directory in ["pipewire-conf", "Tests/LiveTests/FilterChainConfigs"] {
            for name in try FileManager.default.contentsOfDirectory(atPath: root + "/" + directory) where name.hasSuffix(".conf") {
                paths.append(root + "/" + directory + "/" + name)
            }
        }
        XCTAssertGreaterThan(paths.count, 20)
        for path in paths {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            let spa = Self.spaRead(text)
            guard case let .object(members) = spa, !members.isEmpty else { return XCTFail("SPA read nothing from \(path)") }
            XCTAssertEqual(try SPAJSONValue.parse(text), spa, path)
        }
    }

    func testSyntaxCornersReadAsSPAReadsThem() throws {
        let texts = [
            #"a = 1 b = "two" c = [ 1 2 3 ] d = { e = f }"#,
            #"{ "strict": [1, 2.5e-3, -4], "nested": {"x": null, "y": true} }"#,
            "key = value # a comment\nother: \"x y\"",
            #"escaped = "tab\there \"quoted\" back\\slash \u00e9""#,
            "args = { node.name = n audio.position = [ FL FR ] gain = -6dB path = ~/ir.wav }",
            "empty = { } list = [ ] word=adjacent",
        ]
        for text in texts {
            XCTAssertEqual(try SPAJSONValue.parse(text), Self.spaRead(text), text)
        }
        // The comparison sees a difference anywhere in the tree.
        XCTAssertNotEqual(try SPAJSONValue.parse("a = { b = [ 1 \"2\" ] }"), Self.spaRead("a = { b = [ 1 2 ] }"))
    }

    /// The tree `spa_json_*` reads from `text`: a value, or top-level members without braces as
    /// PipeWire reads a config file.
    static func spaRead(_ text: String) -> SPAJSONValue {
        let bytes = Array(text.utf8CString)
        return bytes.withUnsafeBufferPointer { buffer -> SPAJSONValue in
            var iterator = spa_json()
            spa_json_init(&iterator, buffer.baseAddress, buffer.count - 1)
            var probe = iterator
            var token: UnsafePointer<CChar>?
            let length = spa_json_next(&probe, &token)
            if length > 0, let token, spa_json_is_container(token, length) != 0 || spa_json_is_string(token, length) {
                iterator = probe
                return value(token, length, &iterator)
            }
            return .object(members(&iterator))
        }
    }

    private static func value(_ token: UnsafePointer<CChar>, _ length: Int32, _ iterator: inout spa_json) -> SPAJSONValue {
        if spa_json_is_container(token, length) != 0 {
            var inner = spa_json()
            spa_json_enter(&iterator, &inner)
            if spa_json_is_object(token, length) != 0 { return .object(members(&inner)) }
            var elements: [SPAJSONValue] = []
            var element: UnsafePointer<CChar>?
            while case let elementLength = spa_json_next(&inner, &element), elementLength > 0, let element {
                elements.append(value(element, elementLength, &inner))
            }
            return .array(elements)
        }
        if spa_json_is_string(token, length) { return .string(unescaped(token, length)) }
        return .word(String(decoding: UnsafeRawBufferPointer(start: token, count: Int(length)), as: UTF8.self))
    }

    private static func members(_ iterator: inout spa_json) -> [SPAJSONMember] {
        var members: [SPAJSONMember] = []
        var key: UnsafePointer<CChar>?
        while case let keyLength = spa_json_next(&iterator, &key), keyLength > 0, let key {
            var token: UnsafePointer<CChar>?
            let length = spa_json_next(&iterator, &token)
            guard length > 0, let token else { break }
            members.append(SPAJSONMember(key: unescaped(key, keyLength), value: value(token, length, &iterator)))
        }
        return members
    }

    private static func unescaped(_ token: UnsafePointer<CChar>, _ length: Int32) -> String {
        var result = [CChar](repeating: 0, count: Int(length) + 1)
        _ = spa_json_parse_stringn(token, length, &result, Int32(result.count))
        return String(cString: result)
    }
}
