import Convolution
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
    static func noise(seconds: Double, channels: Int = 2, amplitude: Float = 0.25, leadIn: Double = 0.5,
                      leadOut: Double = 0.5, seed: UInt64 = 1) -> [[Float]] {
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

/// The reference comparison, done by numpy/scipy in double precision (an implementation
/// independent of the engine) by Support/compare_recording.py: expected output o =
/// wet · Σ_entries(input i ∗ IR) + dry · input o, against what the node received (recorded beside
/// its output, see PlayThrough); the lag is found by cross-correlation; the error is measured over
/// every recorded sample of the expected signal after that lag. Places where pw-record lost whole
/// cycles are modelled and listed as graph events (see the script's header).
enum NumpyReference {
    struct ChannelResult: Decodable {
        /// Recording frame of expected frame 0, found by cross-correlation at the start…
        var lag: Int
        /// …and again over the last second of the signal: equal when nothing was dropped or repeated.
        var endLag: Int
        /// Error energy over expected energy, all compared frames (graph events modelled).
        var errorDB: Double
        /// The same, outside the glitch windows.
        var cleanErrorDB: Double
        /// Runs of wrong samples no graph event explains (> 1e-4 off; gaps under 256 frames merged):
        /// [start, length].
        var glitches: [[Int]]
        /// Cycles pw-record lost, each explained at float precision.
        var graphEvents: [GraphEvent]
        /// Normalised correlation and energy ratio of recorded and expected output (compared frames).
        var correlation: Double
        var energyRatio: Double
        var comparedFrames: Int
        var expectedFrames: Int
    }

    struct GraphEvent: Decodable, CustomStringConvertible {
        var kind: String
        var at: Int
        var frames: Int
        var description: String { "\(kind) (\(frames) frames) at \(at)" }
    }

    /// One IR file channel from one input to one output.
    struct Entry: Encodable {
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
    }

    private struct Spec: Encodable {
        var recording: String
        var inputs: Int
        var outputs: Int
        var entries: [Entry]
        var wet: Double
        var dry: Double
        var played: String?
        /// The node's input when the recording holds only its outputs.
        var input: String?
    }

    static let scriptPath = BuildProducts.packageRoot + "/Tests/ConvolverNodeTests/Support/compare_recording.py"

    /// `recording`: the node's `inputs` channels, then its `outputs` channels, or only the outputs
    /// when `input` is the file the node received; `played`: the file pw-play played (to recognise
    /// the blocks the recorder missed).
    static func compare(recording: String, inputs: Int, outputs: Int, entries: [Entry], wet: Double, dry: Double,
                        played: String?, input: String? = nil, workDirectory: String) throws -> [ChannelResult] {
        var spec = Spec(recording: recording, inputs: inputs, outputs: outputs, entries: entries, wet: wet, dry: dry,
                        played: played, input: input)
        if let keep = ProcessInfo.processInfo.environment["SWIFT_CONVOLVER_KEEP_RECORDINGS"] {
            // For a look afterwards: the spec and its files, copied to that directory.
            let prefix = keep + "/" + URL(fileURLWithPath: recording).deletingPathExtension().lastPathComponent + "-\(UUID().uuidString.prefix(8))"
            func copy(_ path: String, _ suffix: String) -> String {
                try? FileManager.default.copyItem(atPath: path, toPath: prefix + suffix)
                return prefix + suffix
            }
            spec.recording = copy(recording, "-recording.wav")
            spec.played = played.map { copy($0, "-played.wav") }
            spec.entries = entries.map { entry in
                var entry = entry
                if entry.file != "none" { entry.file = copy(entry.file, "-ir-" + URL(fileURLWithPath: entry.file).lastPathComponent) }
                return entry
            }
            try? JSONEncoder().encode(spec).write(to: URL(fileURLWithPath: prefix + "-spec.json"))
        }
        let specPath = workDirectory + "/compare-\(UUID().uuidString).json"
        try JSONEncoder().encode(spec).write(to: URL(fileURLWithPath: specPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [scriptPath, specPath]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0, let results = try? JSONDecoder().decode([ChannelResult].self, from: data) else {
            throw TestFailure("compare_recording.py failed: \(String(decoding: data, as: UTF8.self)) \(errorText.suffix(2000))")
        }
        return results
    }

    /// Prints each output's result and asserts: lag 0 (zero added latency) when `zeroLag`, the same
    /// lag at the end (nothing dropped or repeated), the whole input recorded, at most
    /// `allowedGlitches` runs of wrong samples that no graph event explains (each at most
    /// `glitchLimit` frames), and ≤ −90 dB everywhere else. Graph events are printed.
    static func assertMatch(_ results: [ChannelResult], outputs: Int, label: String, zeroLag: Bool = true,
                            allowedGlitches: Int = 0, glitchLimit: Int = .max,
                            file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(results.count, outputs, label, file: file, line: line)
        for (channel, result) in results.enumerated() {
            let name = "\(label) output \(channel)"
            print("\(name): lag \(result.lag) (end \(result.endLag)), error \(String(format: "%.1f", result.errorDB)) dB, "
                  + "outside glitches \(String(format: "%.1f", result.cleanErrorDB)) dB, glitches \(result.glitches), "
                  + "graph events \(result.graphEvents.count): \(result.graphEvents.prefix(5).map(\.description)), "
                  + "\(result.comparedFrames) frames")
            if zeroLag { XCTAssertEqual(result.lag, 0, "\(name): zero added latency", file: file, line: line) }
            XCTAssertEqual(result.endLag, result.lag, "\(name): samples dropped or repeated", file: file, line: line)
            XCTAssertGreaterThanOrEqual(result.comparedFrames, result.expectedFrames, "\(name): the recording must hold the whole input",
                                        file: file, line: line)
            XCTAssertLessThanOrEqual(result.glitches.count, allowedGlitches, "\(name): unexplained wrong samples", file: file, line: line)
            for glitch in result.glitches {
                XCTAssertLessThanOrEqual(glitch[1], glitchLimit, "\(name): glitch \(glitch)", file: file, line: line)
            }
            XCTAssertLessThanOrEqual(allowedGlitches == 0 ? result.errorDB : result.cleanErrorDB, -90, name, file: file, line: line)
        }
    }

    /// Channel c through `impulse`'s channel c (or its only channel; nil: a unit impulse).
    static func compare(recording: String, channels: Int, impulse: String?, wet: Double, dry: Double,
                        played: String? = nil, workDirectory: String) throws -> [ChannelResult] {
        let impulseChannels = try impulse.map { try AudioFile.read(path: $0).channels.count } ?? 1
        let entries = (0..<channels).map { Entry($0, $0, impulse ?? "none", impulseChannels > 1 ? $0 : 0) }
        return try compare(recording: recording, inputs: channels, outputs: channels, entries: entries, wet: wet, dry: dry,
                           played: played, workDirectory: workDirectory)
    }
}

/// pw-play → node → pw-record, all linked by hand (no session manager). One pw-record with
/// twice the channels takes both what pw-play sends (the node's input) and the node's output, in
/// the same cycles: PipeWire 0.3.65's streams do not keep two separate recordings aligned on this
/// VM (measured without any filter: two pw-record on one pw-play drifted by 64 samples in 1 of 4
/// runs of 64 → 256 → 1024 → 128, and pw-play shifts by a quantum at quantum changes), so the
/// node is judged against its own input, in one stream. A zero-latency node's output then lines
/// up with its input at lag 0.
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
    /// The recording's channels: the node's inputs, then its outputs (FL FR RL RR for stereo).
    var recordedPositions: [String] {
        let count = positions.count + (outputPositions ?? positions).count
        return count == 4 ? ["FL", "FR", "RL", "RR"] : (0..<count).map { "AUX\($0)" }
    }

    static func streamProperties(_ name: String) -> String {
        "{ node.name = \(name) node.want-driver = false "
            + "adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve } }"
    }

    /// Plays `inputPath` through the node and records input and output into `recordingPath`.
    /// `whilePlaying` runs once playback has started (quantum or Props changes).
    func run(inputPath: String, recordingPath: String, seconds: Double, tailSeconds: Double,
             tag: String, whilePlaying: () throws -> Void = {}) throws {
        let recorderName = "rec-\(tag)"
        let playerName = "play-\(tag)"
        let recorder = try daemon.spawn([
            "pw-record", "-P", Self.streamProperties(recorderName), "--format", "f32", "--rate", "48000",
            "--channels", "\(recordedPositions.count)", "--channel-map", recordedPositions.joined(separator: ","), recordingPath,
        ], logName: "\(recorderName).log")
        defer { recorder.stop() }
        try daemon.waitForPorts(ofNode: recorderName, count: recordedPositions.count)
        let outputs = outputPositions ?? positions
        for (position, recorded) in zip(outputs, recordedPositions.suffix(outputs.count)) {
            try daemon.link("\(outputNodeName ?? nodeName):output_\(position)", "\(recorderName):input_\(recorded)")
        }
        let player = try daemon.spawn(["pw-play", "-P", Self.streamProperties(playerName),
                                       "--channels", "\(positions.count)", "--channel-map", positions.joined(separator: ","), inputPath],
                                      logName: "\(playerName).log")
        defer { player.stop() }
        try daemon.waitForPorts(ofNode: playerName, count: positions.count)
        for (position, recorded) in zip(positions, recordedPositions) {
            try daemon.link("\(playerName):output_\(position)", "\(recorderName):input_\(recorded)")
            try daemon.link("\(playerName):output_\(position)", "\(nodeName):\(nodeInputPrefix)_\(position)")
        }
        try whilePlaying()
        guard player.waitForExit(timeout: seconds * 3 + 10) else {
            throw TestFailure("pw-play did not finish in time; log: \(player.log)")
        }
        usleep(UInt32(tailSeconds * 1_000_000))
        recorder.interrupt()
    }
}
