import Foundation
import XCTest

/// The live judges (LiveJudges) catch deliberately broken nodes (`test.fault`), so that they cannot
/// rot into judges that always pass: a node whose longest tail level drops one block and one whose
/// output comes one sample late fail `RecordJudge`; one whose output ports carry each other's
/// channel, and one that changes a sample of its output after its record is taken, fail
/// `GraphJudge` (their records, in the node's channel order, are right).
final class JudgeTests: XCTestCase {
    private var daemon: PrivatePipeWire!

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
        daemon = try PrivatePipeWire(name: "judges")
        try daemon.setQuantum(256)
    }

    override func tearDown() {
        daemon?.stop()
        daemon = nil
    }

    private func path(_ name: String) -> String { daemon.runtimeDirectory + "/" + name }

    /// Plays noise through a node with `fault`, stops it; returns both judges' results.
    private func playThroughBrokenNode(
        fault: String, impulseFrames: Int, seconds: Double
    )
        throws -> (record: RecordJudge.Result, graph: GraphJudge.Result)
    {
        try TestSignals.write(TestSignals.syntheticImpulse(frames: impulseFrames), to: path("ir.wav"))
        try TestSignals.write(TestSignals.noise(seconds: seconds, leadOut: Double(impulseFrames) / 48000 + 0.3), to: path("input.wav"))
        let node = "conv-\(fault)"
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: node)
        let client = try ModuleClient.start(
            daemon, name: node,
            arguments: "node.name = \(node) audio.position = [ FL FR ] "
                + "filename = \"\(path("ir.wav"))\" test.fault = \(fault) \(record.argument)")
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: node, count: 4, timeout: 30)
        try PlayThrough(daemon: daemon, nodeName: node)
            .run(inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: seconds + 1.5, tailSeconds: 0.3, tag: fault)
        client.stop()
        let entries = try ImpulseEntry.parallel(channels: 2, file: path("ir.wav"))
        let dsp = try RecordJudge.judge(
            record, inputs: 2, outputs: 2, entries: entries, segments: [.init(wet: 1, dry: 0)],
            played: path("input.wav"), workDirectory: daemon.runtimeDirectory)
        let graph = try GraphJudge.judge(
            recording: path("rec.f32"), record: record, inputs: 2, outputs: 2,
            workDirectory: daemon.runtimeDirectory)
        return (dsp, graph)
    }

    private func wrongFrames(_ result: RecordJudge.Result) -> [Int] { (result.outputs ?? []).map(\.wrongFrames) }

    /// A 1 s IR at quantum 256 has tail levels; the longest leaves out the block holding 3 s.
    func testDroppedTailBlockFailsTheRecordJudge() throws {
        let (dsp, _) = try playThroughBrokenNode(fault: "drop-tail-block", impulseFrames: 48000, seconds: 6)
        print("drop-tail-block: wrong frames \(wrongFrames(dsp)), first at \((dsp.outputs ?? []).map { $0.firstWrong ?? -1 })")
        XCTAssertTrue(wrongFrames(dsp).allSatisfy { $0 > 0 }, "the record judge must see the dropped block on every output")
    }

    func testOneSampleLateFailsTheRecordJudge() throws {
        let (dsp, _) = try playThroughBrokenNode(fault: "delay-one-sample", impulseFrames: 4800, seconds: 2)
        print("delay-one-sample: wrong frames \(wrongFrames(dsp))")
        XCTAssertTrue(wrongFrames(dsp).allSatisfy { $0 > 1000 }, "the record judge must see the added latency")
    }

    func testSwappedOutputPortsFailTheGraphJudge() throws {
        let (dsp, graph) = try playThroughBrokenNode(fault: "swap-outputs", impulseFrames: 4800, seconds: 2)
        let outputs = Array((graph.channels ?? []).suffix(2))
        print(
            "swap-outputs: record wrong frames \(wrongFrames(dsp)); recorded outputs unmatched "
                + "\(outputs.map(\.unmatchedFrames)), matching record channels \(outputs.map { $0.matchesChannel ?? -1 })")
        XCTAssertEqual(wrongFrames(dsp), [0, 0], "the record is in the node's channel order: right")
        XCTAssertEqual(outputs.count, 2)
        XCTAssertTrue(outputs.allSatisfy { $0.unmatchedFrames > 1000 }, "the graph judge must see the swap")
        XCTAssertEqual(outputs.map(\.matchesChannel), [3, 2], "output_FL carries the node's FR output and the other way round")
    }

    /// One sample in every 64th call, changed after the call has recorded it: the recorder reads
    /// it after the call has ended, so no stall excuses it (not read while written).
    func testOutputChangedAfterItsRecordFailsTheGraphJudge() throws {
        let (dsp, graph) = try playThroughBrokenNode(fault: "alter-after-record", impulseFrames: 4800, seconds: 2)
        let outputs = Array((graph.channels ?? []).suffix(2))
        print(
            "alter-after-record: record wrong frames \(wrongFrames(dsp)); recorded outputs unmatched "
                + "\(outputs.map(\.unmatchedFrames)), read while written \(outputs.map(\.readWhileWrittenFrames)), "
                + "first \(outputs.map { $0.unmatchedDetail.first?.description ?? "-" })")
        XCTAssertEqual(wrongFrames(dsp), [0, 0], "the record is taken before the change: right")
        XCTAssertEqual(outputs.count, 2)
        // 3.5 s of calls at quantum 256 change 10 samples per output.
        XCTAssertTrue(outputs.allSatisfy { $0.unmatchedFrames >= 5 }, "the graph judge must see the changed samples")
    }
}
