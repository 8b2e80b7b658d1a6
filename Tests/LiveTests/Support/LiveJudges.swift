import Convolution
import EngineTestSupport
import Foundation
import XCTest

/// The live tests' two judges (docs/testing.md):
/// - `RecordJudge`, of the DSP, the workgroup and the hand-overs: the node's own record of every
///   call (module key `test.record-calls`) held to numpy's convolution of its own input, at float
///   precision, whatever the graph did around it;
/// - `GraphJudge`, of the path through PipeWire: what pw-record got is the node's output on the
///   right ports, in the cycle of the input recorded beside it (zero added latency), lost cycles
///   of the recorder counted and allowed.
/// Both run numpy/scipy (Support/judge_record.py, judge_graph.py), an implementation independent
/// of the engine. `JudgeTests` shows each catches a deliberately broken node (`test.fault`).
struct NodeRecord {
    let path: String

    init(directory: String, name: String) {
        path = directory + "/\(name)-calls.f32"
    }

    /// The module arguments that make the node keep its record (written when it is destroyed).
    var argument: String { "test.record-calls = \"\(path)\"" }

    /// The record, one array per channel (inputs, then outputs; NaN where a call had no output buffer).
    func frames(channels: Int) throws -> [[Float]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let frameCount = samples.count / channels
        return (0..<channels).map { channel in (0..<frameCount).map { samples[$0 * channels + channel] } }
    }
}

/// One IR file channel from one node input to one node output.
struct ImpulseEntry: Encodable {
    var input: Int
    var output: Int
    /// A WAV file, or "none" for a unit impulse.
    var file: String
    var channel: Int
    init(_ input: Int, _ output: Int, _ file: String, _ channel: Int) {
        self.input = input
        self.output = output
        self.file = file
        self.channel = channel
    }

    /// Channel c through `file`'s channel c (or its only channel; nil: a unit impulse).
    static func parallel(channels: Int, file: String?) throws -> [ImpulseEntry] {
        let fileChannels = try file.map { try AudioFile.read(path: $0).channels.count } ?? 1
        return (0..<channels).map { ImpulseEntry($0, $0, file ?? "none", fileChannels > 1 ? $0 : 0) }
    }

    /// 7.1 (FL FR FC LFE RL RR SL SR) to two ears through a 14-channel HeSuVi HRIR, mapped as
    /// filter-chain's example maps it, independently of any config (LFE as FC). HeSuVi's order:
    /// 0 FL-L 1 FL-R 2 SL-L 3 SL-R 4 RL-L 5 RL-R 6 FC-L 7 FR-R 8 FR-L 9 SR-R 10 SR-L 11 RR-R 12 RR-L 13 FC-R.
    static func hesuvi(_ file: String) -> [ImpulseEntry] {
        let ears = [(0, 1), (8, 7), (6, 13), (6, 13), (4, 5), (12, 11), (2, 3), (10, 9)]
        return ears.enumerated().flatMap { input, ear in [ImpulseEntry(input, 0, file, ear.0), ImpulseEntry(input, 1, file, ear.1)] }
    }
}

enum RecordJudge {
    /// What one stretch of played sound should come out as: wet · convolution + dry · input
    /// (wet nil: not judged).
    struct Segment: Encodable {
        var wet: Double?
        var dry: Double
    }

    struct Output: Decodable {
        var worst: Double
        var errorDB: Double
        var wrongFrames: Int
        var firstWrong: Int?
    }

    struct Result: Decodable {
        var frames: Int
        var withoutOutputs: Int
        var receivedFrames: Int
        var playedFrames: Int?
        var segmentStarts: [Int]
        var judgedFrames: Int?
        var outputs: [Output]?
        var error: String?
    }

    private struct Spec: Encodable {
        var calls: String
        var inputs: Int
        var outputs: Int
        var entries: [ImpulseEntry]
        var segments: [Segment]
        var played: String?
    }

    static func judge(
        _ record: NodeRecord, inputs: Int, outputs: Int, entries: [ImpulseEntry], segments: [Segment],
        played: String?, workDirectory: String
    ) throws -> Result {
        guard FileManager.default.fileExists(atPath: record.path) else {
            throw TestFailure("the node wrote no record at \(record.path) (was it destroyed?)")
        }
        return try JudgeScript.run(
            "judge_record.py",
            Spec(
                calls: record.path, inputs: inputs, outputs: outputs, entries: entries,
                segments: segments, played: played),
            workDirectory: workDirectory)
    }

    /// Every heard frame of every judged segment within 1e-4 of numpy's and ≤ −90 dB over all,
    /// and the node got most of what was played.
    static func assertExact(
        _ result: Result, outputs: Int, label: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertNil(result.error, label, file: file, line: line)
        let outputResults = result.outputs ?? []
        print(
            "\(label) record: \(result.frames) frames (\(result.withoutOutputs) without output buffers), "
                + "\(result.receivedFrames) of \(result.playedFrames.map(String.init) ?? "?") played frames received, "
                + "segments at \(result.segmentStarts); "
                + outputResults.enumerated().map {
                    "output \($0.offset): worst \($0.element.worst), "
                        + "\(String(format: "%.1f", $0.element.errorDB)) dB, \($0.element.wrongFrames) wrong from \($0.element.firstWrong.map(String.init) ?? "-")"
                }
                .joined(separator: "; "))
        XCTAssertEqual(outputResults.count, outputs, "\(label): outputs judged", file: file, line: line)
        XCTAssertGreaterThan(result.judgedFrames ?? 0, 0, "\(label): nothing judged", file: file, line: line)
        if let played = result.playedFrames {
            // Not all: cycles the machine loses between player and node are the machine's (seen:
            // 19% in a stall with 246 missed cycles), but most, or the judge would judge little.
            XCTAssertGreaterThanOrEqual(
                Double(result.receivedFrames), 0.5 * Double(played),
                "\(label): the node must have received most of what was played", file: file, line: line)
        }
        for (index, output) in outputResults.enumerated() {
            XCTAssertEqual(
                output.wrongFrames, 0,
                "\(label) output \(index): not the convolution of the node's own input "
                    + "(first wrong frame \(output.firstWrong ?? -1), worst \(output.worst))", file: file, line: line)
            XCTAssertLessThanOrEqual(output.errorDB, -90, "\(label) output \(index)", file: file, line: line)
        }
    }
}

enum GraphJudge {
    struct Channel: Decodable {
        var loudFrames: Int
        var matchedFrames: Int
        var unmatchedFrames: Int
        var firstUnmatched: Int?
        var unmatchedDetail: [Unmatched]
        /// Loud frames found nowhere in the record that the recorder copied while the node was
        /// writing them (a stall: judge_graph.py's docstring). Counted, not errors.
        var readWhileWrittenFrames: Int
        var jumps: [[Int]]
        var jumpCount: Int
        var matchesChannel: Int?
    }

    /// One recorded frame that is not the node's: its recorder cycle, when the recorder copied it
    /// and the node calls nearest to that (start, end; ns).
    struct Unmatched: Decodable, CustomStringConvertible {
        var frame: Int
        var value: Double
        var cycle: Int?
        var copy: [Int]?
        var calls: [[Int]]?
        var description: String {
            "frame \(frame) = \(value) (cycle \(cycle.map(String.init) ?? "?"), copied \(copy ?? []), calls \(calls ?? []))"
        }
    }

    struct Result: Decodable {
        var channels: [Channel]?
        var alignedFrames: Int?
        var misalignedFrames: Int?
        var offsets: [String: Int]?
        var error: String?
    }

    private struct Spec: Encodable {
        var recording: String
        var calls: String
        var inputs: Int
        var outputs: Int
        var channels: [Int]?
    }

    /// `recording`: PlayThrough's, the node's inputs then its outputs; or, with `channels`, the
    /// record channel (inputs, then outputs) of each of its channels.
    static func judge(
        recording: String, record: NodeRecord, inputs: Int, outputs: Int, channels: [Int]? = nil,
        workDirectory: String
    ) throws -> Result {
        try JudgeScript.run(
            "judge_graph.py",
            Spec(
                recording: recording, calls: record.path, inputs: inputs, outputs: outputs,
                channels: channels),
            workDirectory: workDirectory)
    }

    /// Every loud recorded output frame is the record's, on the channel of its port, or was
    /// copied while the node was writing it; at least 90% of the
    /// recording located (the rest: cycles the recorder lost); where inputs were recorded too,
    /// most output frames (≥ 80%) in the cycle of their input. `names`: the recorded channels.
    static func assertNodeOutputRecorded(
        _ result: Result, names: [String], label: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertNil(result.error, label, file: file, line: line)
        let channels = result.channels ?? []
        XCTAssertEqual(channels.count, names.count, "\(label): recorded channels", file: file, line: line)
        let aligned = result.alignedFrames ?? 0, misaligned = result.misalignedFrames ?? 0
        print(
            "\(label) graph: "
                + zip(names, channels).map { name, channel in
                    "\(name) \(channel.matchedFrames)/\(channel.loudFrames) located, \(channel.unmatchedFrames) not, "
                        + "\(channel.readWhileWrittenFrames) read while written, \(channel.jumpCount) jumps \(channel.jumps.prefix(4))"
                }.joined(separator: "; ") + "; output-input offsets \(result.offsets ?? [:])")
        for (name, channel) in zip(names, channels) {
            let source = channel.matchesChannel.map { " (it is the node's record channel \($0))" } ?? ""
            XCTAssertGreaterThan(channel.loudFrames, 0, "\(label) \(name): nothing recorded", file: file, line: line)
            if name.hasPrefix("input") {
                // The recorded input only places the output in its cycle. Where the player's two
                // consumers got different samples (PipeWire 1.x: an asynchronous pw-play during a
                // quantum storm, the node's own record exact) that is the graph's doing: counted,
                // and half of the input must still be found to place the output.
                XCTAssertGreaterThanOrEqual(
                    Double(channel.matchedFrames), 0.5 * Double(channel.loudFrames),
                    "\(label) \(name): located", file: file, line: line)
                continue
            }
            XCTAssertEqual(
                channel.unmatchedFrames, 0,
                "\(label) \(name): recorded samples that are not the node's\(source): \(channel.unmatchedDetail)",
                file: file, line: line)
            XCTAssertGreaterThanOrEqual(
                Double(channel.matchedFrames), 0.9 * Double(channel.loudFrames),
                "\(label) \(name): located", file: file, line: line)
        }
        guard names.contains(where: { $0.hasPrefix("input") }) else { return }
        // A node that adds latency, or whose output reaches the graph a cycle late, moves every
        // frame to one other offset. Under load PipeWire 0.3.65 now and then hands the recorder a
        // player's or a node's buffer a cycle early or late (5% of one run's frames, right after a
        // build): so the offset 0 must hold most frames, not all.
        // A negative offset (the output recorded a cycle before the input it came from) no node
        // can cause: it is the recorder taking an asynchronous player's buffer a cycle late (seen
        // on 1.4.2 for half of a starved-helpers run). Latency a node adds is a positive offset.
        let offsets = result.offsets ?? [:]
        let late = offsets.filter { (Int($0.key) ?? 0) > 0 }.values.reduce(0, +)
        XCTAssertGreaterThan(aligned, 0, "\(label): no output frame beside its input", file: file, line: line)
        XCTAssertEqual(
            offsets.filter { (Int($0.key) ?? 0) >= 0 }.max { $0.value < $1.value }?.key, "0",
            "\(label): most output frames not in the cycle of their input (offsets \(offsets))", file: file, line: line)
        XCTAssertGreaterThanOrEqual(
            Double(aligned), 0.8 * Double(aligned + late),
            "\(label): output later than the cycle of its input (offsets \(offsets))", file: file, line: line)
        XCTAssertGreaterThanOrEqual(
            Double(aligned), 0.4 * Double(aligned + misaligned),
            "\(label): output not in the cycle of its input (offsets \(offsets))", file: file, line: line)
    }
}

/// Our node's outputs beside filter-chain's, recorded in the same cycles from one player
/// (judge_against_filter_chain.py): cycle by cycle they must agree.
enum FilterChainJudge {
    struct Comparison: Decodable {
        var cycles: Int
        var agreeing: Int
        var first_disagreeing: [Int]
        var longest_disagreeing: Int
        var error_db: Double?
        var worst: Double
        var miswired_agreeing: Int?
        var swapped_agreeing: Int
        var one_sample_late_agreeing: Int
        var shifted_agreeing: Int
    }

    /// `ours`, `theirs`, `miswired`: the recorded channels of our outputs, filter-chain's and those of a
    /// node run on a deliberately mistranslated config (if any), each in the same order.
    static func compare(
        recording: String, channels: Int, quantum: Int, ours: [Int], theirs: [Int], miswired: [Int]? = nil, limitDB: Double,
        workDirectory: String
    ) throws -> Comparison {
        struct Spec: Encodable {
            var recording: String, channels: Int, quantum: Int, ours: [Int], theirs: [Int], miswired: [Int]?
            var limit_db: Double
        }
        return try JudgeScript.run(
            "judge_against_filter_chain.py",
            Spec(recording: recording, channels: channels, quantum: quantum, ours: ours, theirs: theirs, miswired: miswired, limit_db: limitDB),
            workDirectory: workDirectory)
    }

    /// At least `minimumCycles` of filter-chain's output, nine in ten of them agreeing within `limitDB`,
    /// and none of the negative controls agreeing. One run of disagreeing cycles up to a quarter of the
    /// recording is set aside: either sink can miss one of the player's buffers (each takes them on
    /// its own), and then the two differ for the IR's length; a mistranslation disagrees throughout.
    static func assertAgrees(
        _ comparison: Comparison, minimumCycles: Int, limitDB: Double, outputsMayBeSwapped: Bool, label: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let cycles = Double(comparison.cycles)
        XCTAssertGreaterThan(comparison.cycles, minimumCycles, "\(label): too little of filter-chain's output recorded", file: file, line: line)
        let missedBuffer = comparison.longest_disagreeing <= comparison.cycles / 4 ? comparison.longest_disagreeing : 0
        // One sink that missed one of the player's buffers disagrees until the IR has passed (the
        // run set aside) or, when the other sink's input stays a buffer apart, until the end: those
        // cycles agree shifted. Most cycles must agree as recorded: a node late by a block fails.
        XCTAssertGreaterThanOrEqual(
            Double(comparison.agreeing), 0.5 * cycles, "\(label) does not sound like filter-chain, even shifted: \(comparison)",
            file: file, line: line)
        XCTAssertGreaterThanOrEqual(
            Double(comparison.agreeing + comparison.shifted_agreeing), 0.9 * (cycles - Double(missedBuffer)),
            "\(label) does not sound like filter-chain: cycles \(comparison.first_disagreeing)...", file: file, line: line)
        XCTAssertLessThanOrEqual(comparison.error_db ?? .infinity, limitDB, "\(label): worst \(comparison.worst)", file: file, line: line)
        // The judge's teeth: a mistranslated config, swapped outputs or one sample of latency fail it.
        if let miswired = comparison.miswired_agreeing { XCTAssertLessThan(Double(miswired), 0.1 * cycles, label, file: file, line: line) }
        if !outputsMayBeSwapped { XCTAssertLessThan(Double(comparison.swapped_agreeing), 0.1 * cycles, label, file: file, line: line) }
        XCTAssertLessThan(Double(comparison.one_sample_late_agreeing), 0.1 * cycles, label, file: file, line: line)
    }
}

/// Runs one of the judges' Python scripts on a JSON spec and decodes its JSON answer.
enum JudgeScript {
    static func run<Spec: Encodable, Answer: Decodable>(_ script: String, _ spec: Spec, workDirectory: String) throws -> Answer {
        try ReferenceScript.run(
            packageRoot + "/Tests/LiveTests/Support/" + script, spec,
            workDirectory: workDirectory)
    }
}

/// A live test's usual verdict: a node (started with `record.argument`, now destroyed so its
/// record is written) played `played` through PlayThrough into `recording`.
struct LiveVerdict {
    var record: NodeRecord
    var recording: String
    var played: String
    var positions = ["FL", "FR"]
    var outputPositions: [String]? = nil
    var workDirectory: String

    func assertExact(
        entries: [ImpulseEntry], segments: [RecordJudge.Segment] = [.init(wet: 1, dry: 0)], label: String,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let outputs = outputPositions ?? positions
        let dsp = try RecordJudge.judge(
            record, inputs: positions.count, outputs: outputs.count, entries: entries,
            segments: segments, played: played, workDirectory: workDirectory)
        RecordJudge.assertExact(dsp, outputs: outputs.count, label: label, file: file, line: line)
        try assertGraphPath(label: label, file: file, line: line)
    }

    func assertGraphPath(label: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let outputs = outputPositions ?? positions
        let graph = try GraphJudge.judge(
            recording: recording, record: record, inputs: positions.count, outputs: outputs.count,
            workDirectory: workDirectory)
        GraphJudge.assertNodeOutputRecorded(
            graph, names: positions.map { "input \($0)" } + outputs.map { "output \($0)" },
            label: label, file: file, line: line)
    }
}
