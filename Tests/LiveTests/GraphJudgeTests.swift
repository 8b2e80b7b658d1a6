import EngineTestSupport
import Foundation
import XCTest

/// `GraphJudge` excuses a recorded output sample that is nowhere in the node's record only when
/// the recorder copied it while one of the node's calls was writing (judge_graph.py). Synthetic
/// files, no PipeWire: the same wrong sample in a cycle copied during its call is excused, in a
/// cycle copied after its call it is not.
final class GraphJudgeTests: XCTestCase {
    func testOnlySamplesCopiedWhileTheNodeWroteAreExcused() throws {
        let directory = NSTemporaryDirectory() + "graph-judge-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let quantum = 256, cycles = 40
        var generator = SeededGenerator(seed: 7)
        let input = [Float].noise(quantum * cycles, using: &generator)
        // The node's record: input, output (any function of it will do), frame by frame.
        let record: [Float] = input.flatMap { sample -> [Float] in [sample, 0.5 * sample + 0.01] }
        // Call k wrote at 100-200 ns past k µs; the recorder copied cycle k at 300-400, after it,
        // but cycle 5 at 150-180, during call 5.
        var callTimes: [UInt64] = [], copyTimes: [UInt64] = []
        for cycle in 0..<cycles {
            let microsecond = UInt64(cycle * 1000)
            callTimes += [UInt64(quantum), microsecond + 100, microsecond + 200]
            copyTimes += cycle == 5 ? [UInt64(quantum), 5150, 5180] : [UInt64(quantum), microsecond + 300, microsecond + 400]
        }
        var recording = record
        for cycle in [5, 9] { recording[2 * cycle * quantum + 1] = 0.75 }  // output, first frame of the cycle

        let nodeRecord = NodeRecord(directory: directory, name: "synthetic")
        try write(record, to: nodeRecord.path)
        try write(callTimes, to: nodeRecord.path + ".times")
        try write(recording, to: directory + "/rec.f32")
        try write(copyTimes, to: directory + "/rec.f32.times")
        let result = try GraphJudge.judge(
            recording: directory + "/rec.f32", record: nodeRecord, inputs: 1, outputs: 1, workDirectory: directory)

        let output = try XCTUnwrap(result.channels?.last)
        XCTAssertEqual(output.readWhileWrittenFrames, 1, "the sample copied during call 5")
        XCTAssertEqual(output.unmatchedFrames, 1, "the sample copied after call 9 ended")
        XCTAssertEqual(output.firstUnmatched, 9 * quantum)
        XCTAssertEqual(output.unmatchedDetail.first?.cycle, 9)
    }

    private func write<Element>(_ values: [Element], to path: String) throws {
        try values.withUnsafeBytes { Data($0) }.write(to: URL(fileURLWithPath: path))
    }
}
