import Convolution
import EngineTestSupport
import Foundation
import XCTest

/// Test signals and IRs (deterministic), written as 32-bit float WAV with the project's AudioFile.
enum TestSignals {
    /// A small deterministic generator (xorshift), so failures reproduce.
    struct Random {
        var state: UInt64
        mutating func next() -> Float {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Float(state >> 40) / Float(1 << 24) * 2 - 1
        }
    }

    /// Silence for `leadIn` seconds, `seconds` of white noise at `amplitude` per channel, then
    /// `leadOut` seconds of silence.
    /// The lead-in covers the moments while pw-link connects the channels one after the other
    /// (pw-play starts streaming at the first link), so every channel gets all of the noise.
    /// The lead-out must be at least the IR's length: pw-play's last, partial buffer is not
    /// delivered cleanly (pw-record alone drops it; a filter sees it repeated), so the signal and
    /// its whole convolution tail must be over before it.
    static func noise(
        seconds: Double, channels: Int = 2, amplitude: Float = 0.25, leadIn: Double = 0.5,
        leadOut: Double = 0.5, seed: UInt64 = 1
    ) -> [[Float]] {
        var random = Random(state: 0x9E37_79B9_7F4A_7C15 ^ seed)
        let before = [Float](repeating: 0, count: Int(leadIn * 48000))
        let after = [Float](repeating: 0, count: Int(leadOut * 48000))
        let frames = Int(seconds * 48000)
        return (0..<channels).map { _ in before + (0..<frames).map { _ in random.next() * amplitude } + after }
    }

    /// A synthetic stereo IR: decaying noise (~0.1 s), different per channel, with a direct tap.
    static func syntheticImpulse(frames: Int = 4800) -> [[Float]] {
        var random = Random(state: 42)
        return (0..<2).map { channel in
            (0..<frames).map { index in
                let decay = expf(-Float(index) / Float(frames / 5))
                let tap: Float = index == channel * 7 ? 0.6 : 0
                return tap + 0.3 * decay * random.next()
            }
        }
    }

    static func write(_ channels: [[Float]], to path: String) throws {
        try AudioFile.write(path: path, sampleRate: 48000, channels: channels)
    }
}

/// pw-play → node → the test recorder (Tests/SyncRecorder), all linked by hand (no session
/// manager). One recorder with twice the channels takes both what pw-play sends (the node's
/// input) and the node's output, in the same cycles (two separate recordings do not stay aligned
/// on PipeWire 0.3.65), so that `GraphJudge` can tell that the output came in the cycle of its
/// input. Not pw-record: PipeWire 1.x runs it asynchronously, a cycle late (see sync_record.c).
struct PlayThrough {
    let daemon: PrivatePipeWire
    let nodeName: String
    /// The player's channels = the node's inputs, and the node's outputs (nil: the same).
    var positions = ["FL", "FR"]
    var outputPositions: [String]? = nil
    /// `input` for a filter, `playback` for a node in sink mode.
    var nodeInputPrefix = "input"
    /// The node whose `output_<POS>` ports are recorded: nil = `nodeName`; in sink mode `output.<name>`.
    var outputNodeName: String? = nil
    /// Frames of playback latency the recorder's ports report, as an audio device's do (0: none).
    var recorderLatency = 0
    /// The recording's channels: the node's inputs, then its outputs (FL FR RL RR for stereo).
    var recordedPositions: [String] {
        let count = positions.count + (outputPositions ?? positions).count
        return count == 4 ? ["FL", "FR", "RL", "RR"] : (0..<count).map { "AUX\($0)" }
    }

    static func streamProperties(_ name: String) -> String {
        "{ node.name = \(name) node.want-driver = false "
            + "adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve } }"
    }

    /// Plays `inputPath` through the node and records input and output into `recordingPath`
    /// (raw interleaved float32). `whilePlaying` runs once playback has started (quantum or
    /// Props changes).
    func run(
        inputPath: String, recordingPath: String, seconds: Double, tailSeconds: Double,
        tag: String, whilePlaying: () throws -> Void = {}
    ) throws {
        let recorderName = "rec-\(tag)"
        let playerName = "play-\(tag)"
        let recorder = try daemon.spawn(
            [
                try SyncRecorder.executable.get(), recorderName, recordedPositions.joined(separator: ","),
                recordingPath, "\(Int(seconds * 3 + 30))", "\(recorderLatency)",
            ],
            logName: "\(recorderName).log")
        defer { recorder.stop() }
        try daemon.waitForPorts(ofNode: recorderName, named: recordedPositions.map { "input_\($0)" })
        let outputs = outputPositions ?? positions
        for (position, recorded) in zip(outputs, recordedPositions.suffix(outputs.count)) {
            try daemon.link("\(outputNodeName ?? nodeName):output_\(position)", "\(recorderName):input_\(recorded)")
        }
        let player = try daemon.spawn(
            [
                "pw-play", "-P", Self.streamProperties(playerName),
                "--channels", "\(positions.count)", "--channel-map", positions.joined(separator: ","), inputPath,
            ],
            logName: "\(playerName).log")
        defer { player.stop() }
        try daemon.waitForPorts(ofNode: playerName, named: positions.map { "output_\($0)" })
        for (position, recorded) in zip(positions, recordedPositions) {
            try daemon.link("\(playerName):output_\(position)", "\(recorderName):input_\(recorded)")
            try daemon.link("\(playerName):output_\(position)", "\(nodeName):\(nodeInputPrefix)_\(position)")
        }
        try whilePlaying()
        guard player.waitForExit(timeout: seconds * 3 + 10) else {
            // What the graph looked like, so that a hang can be told apart from a slow machine.
            let links = (try? daemon.run(["pw-link", "-l"]).output) ?? "?"
            let top =
                (try? daemon.run(["pw-cli", "ls", "Node"]).output.split(separator: "\n").filter {
                    $0.contains("node.name")
                }.joined(separator: "\n")) ?? "?"
            throw TestFailure(
                "pw-play did not finish in time; its log: \(player.log)\nrecorder log: \(recorder.log)\n"
                    + "links:\n\(links)\nnodes:\n\(top)\ndaemon log:\n\(daemon.log(tail: 30))")
        }
        usleep(UInt32(tailSeconds * 1_000_000))
        recorder.interrupt()
    }
}

/// Tests/SyncRecorder/sync_record.c, compiled once per test run against the PipeWire under test
/// (pkg-config: the system's, or the prefix's of pipewire-1.4.sh).
enum SyncRecorder {
    static let executable = TestTool.compile(
        "Tests/SyncRecorder/sync_record.c", into: "sync_record",
        flags: "$(pkg-config --cflags --libs libpipewire-0.3)")
}

/// The tests' C helpers, compiled with the system C compiler once per test run.
enum TestTool {
    /// `source` (relative to the package) built into a temporary directory as `product`;
    /// `flags` go to a shell (so `$(pkg-config ...)` works).
    static func compile(_ source: String, into product: String, flags: String) -> Result<String, TestFailure> {
        let directory = NSTemporaryDirectory() + "swconv-test-tools-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let output = directory + "/" + product, path = packageRoot + "/" + source
        let compiled: (status: Int32, output: String)
        do { compiled = try runToCompletion("/bin/sh", ["-c", "cc -O2 -Wall -o '\(output)' '\(path)' \(flags)"]) } catch {
            return .failure(TestFailure("cannot run cc: \(error)"))
        }
        guard compiled.status == 0 else { return .failure(TestFailure("cc \(path) failed:\n\(compiled.output)")) }
        return .success(output)
    }
}
