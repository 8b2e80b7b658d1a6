import Convolution
import ConvolverNode
import Foundation
import XCTest

/// Sink mode and the ready-made configs of pipewire-conf/: each config is run as shipped (its
/// /path/to/irs/ placeholder rewritten to generated IRs) by `pipewire -c` in a private daemon,
/// audio is played through it (linked by hand: no session manager here) and compared with numpy's
/// N×M convolution of what the node received.
final class UserConfigTests: XCTestCase {
    private var daemon: PrivatePipeWire!

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
        daemon = try PrivatePipeWire(name: "users")
        try daemon.setQuantum(256)
    }

    override func tearDown() {
        daemon?.stop()
        daemon = nil
    }

    private func path(_ name: String) -> String { daemon.runtimeDirectory + "/" + name }

    /// The repository's pipewire-conf/ (this file is Tests/ConvolverNodeTests/UserConfigTests.swift).
    static let configDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("pipewire-conf").path

    /// Runs pipewire-conf/`name` with its IR directory replaced by the daemon's directory.
    private func startConfig(_ name: String, node: String, portCount: Int) throws -> BackgroundProcess {
        let text = try String(contentsOfFile: Self.configDirectory + "/" + name, encoding: .utf8)
            .replacingOccurrences(of: "/path/to/irs/", with: daemon.runtimeDirectory + "/")
        try text.write(toFile: path(name), atomically: true, encoding: .utf8)
        let client = try daemon.spawn(["pipewire", "-c", path(name)], logName: "\(name).log")
        do {
            try daemon.waitForPorts(ofNode: node, count: portCount, timeout: 30)
        } catch {
            client.stop()
            throw TestFailure("\(error)\nclient log:\n\(client.log)")
        }
        return client
    }

    /// Decaying noise with a direct tap at `tap`, different per seed.
    private static func impulse(frames: Int, tap: Int, seed: UInt64) -> [Float] {
        var random = TestSignals.Random(state: 0x1234_5678 ^ (seed &* 0x9E37_79B9))
        return (0..<frames).map { index in
            (index == tap ? 0.5 : 0) + 0.2 * expf(-Float(index) / Float(frames / 5)) * random.next()
        }
    }

    private func playAndCompare(node: String, positions: [String], outputPositions: [String]? = nil, inputPrefix: String,
                                entries: [MatrixReference.Entry], wet: Double, dry: Double, irSeconds: Double,
                                file: StaticString = #filePath, line: UInt = #line) throws {
        let inputs = positions.count
        let irFrames = Int(irSeconds * 48000)
        // pw-play streams from its first link; the links are made one by one (two per input, ~0.1 s
        // each), so the noise starts only after all of them are in place (8 inputs took ~1.4 s).
        let leadIn = 0.5 + 0.3 * Double(inputs)
        try TestSignals.write(TestSignals.noise(seconds: 1.5, channels: inputs, leadIn: leadIn, leadOut: irSeconds + 0.3),
                              to: path("input.wav"))
        try PlayThrough(daemon: daemon, nodeName: node, positions: positions, outputPositions: outputPositions,
                        nodeInputPrefix: inputPrefix)
            .run(inputPath: path("input.wav"), recordingPath: path("rec.wav"), seconds: leadIn + 1.5 + irSeconds,
                 tailSeconds: 0.3, tag: node)
        if let properties = try? daemon.nodeProperties(node) {
            print("\(node): " + properties.properties.filter { $0.key.hasPrefix("convolver.") }
                .sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        }
        let results = try MatrixReference.compare(recording: path("rec.wav"), inputs: inputs,
                                                  outputs: (outputPositions ?? positions).count, entries: entries,
                                                  wet: wet, dry: dry, workDirectory: daemon.runtimeDirectory)
        XCTAssertEqual(results.count, (outputPositions ?? positions).count, file: file, line: line)
        for (channel, result) in results.enumerated() {
            print("\(node) output \(channel): lag \(result.lag) (end \(result.endLag)), error \(String(format: "%.1f", result.errorDB)) dB, "
                  + "glitches \(result.glitches), \(result.comparedFrames) frames")
            XCTAssertEqual(result.lag, 0, "\(node) output \(channel): zero added latency", file: file, line: line)
            XCTAssertEqual(result.endLag, 0, "\(node) output \(channel): samples dropped or repeated", file: file, line: line)
            // Up to two graph hiccups are tolerated (printed): on this shared VM under load (other
            // builds on the 2 cores) a cycle now and then differs between the node's input and the
            // recorder's copy of it, and the difference rings one IR long (main's ModuleAudioTests
            // show the same in loaded runs). Lag 0 from start to end, and ≤ −90 dB everywhere
            // outside those windows, still pin down the IR, routing, gain and mix.
            XCTAssertLessThanOrEqual(result.glitches.count, 2, "\(node) output \(channel)", file: file, line: line)
            for glitch in result.glitches {
                print("\(node) output \(channel): tolerated glitch at \(glitch[0]), \(glitch[1]) frames")
                XCTAssertLessThanOrEqual(glitch[1], 2 * 1024 + irFrames, "\(node) output \(channel)", file: file, line: line)
            }
            XCTAssertLessThanOrEqual(result.cleanErrorDB, -90, "\(node) output \(channel)", file: file, line: line)
            XCTAssertGreaterThanOrEqual(result.comparedFrames, result.expectedFrames, file: file, line: line)
        }
    }

    // MARK: - Sink mode

    /// `mode = sink`: an Audio/Sink with playback_<POS> inputs; what plays into it arrives
    /// convolved on output_<POS> (recorded downstream) and matches the reference.
    func testSinkModeIsAnAudioSinkAndConvolves() throws {
        try LiveAudio.requireEnabled()
        let ir = [Self.impulse(frames: 2400, tap: 0, seed: 1), Self.impulse(frames: 2400, tap: 5, seed: 2)]
        try TestSignals.write(ir, to: path("ir.wav"))
        let client = try ModuleClient.start(daemon, name: "sink",
            arguments: "node.name = conv-sink mode = sink audio.position = [ FL FR ] filename = \"\(path("ir.wav"))\"")
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "conv-sink", count: 4, timeout: 30)
        XCTAssertEqual(try daemon.portNames(ofNode: "conv-sink"), ["output_FL", "output_FR", "playback_FL", "playback_FR"])
        let node = try XCTUnwrap(try daemon.nodeProperties("conv-sink"))
        XCTAssertEqual(node.properties["media.class"] as? String, "Audio/Sink")
        XCTAssertEqual(node.properties["node.virtual"] as? Bool, true, "pw-dump gives booleans as JSON booleans")
        try playAndCompare(node: "conv-sink", positions: ["FL", "FR"], inputPrefix: "playback",
                           entries: [.init(0, 0, path("ir.wav"), 0), .init(1, 1, path("ir.wav"), 1)],
                           wet: 1, dry: 0, irSeconds: 0.05)
    }

    // MARK: - Ready-made configs

    func testHallSinkConfig() throws {
        try LiveAudio.requireEnabled()
        let hall = try ImpulseResponse.load("builtin:hall", sampleRate: 48000)
        try TestSignals.write(hall.channels, to: path("hall.wav"))
        let client = try startConfig("swift-convolver-hall-sink.conf", node: "convolver-hall", portCount: 4)
        defer { client.stop() }
        XCTAssertEqual(try daemon.nodeProperties("convolver-hall")?.properties["media.class"] as? String, "Audio/Sink")
        try playAndCompare(node: "convolver-hall", positions: ["FL", "FR"], inputPrefix: "playback",
                           entries: [.init(0, 0, path("hall.wav"), 0), .init(1, 1, path("hall.wav"), 1)],
                           wet: 0.3, dry: 0.7, irSeconds: Double(hall.frameCount) / 48000)
    }

    func testRoomCorrectionConfig() throws {
        try LiveAudio.requireEnabled()
        let fir = [Self.impulse(frames: 4096, tap: 40, seed: 3), Self.impulse(frames: 4096, tap: 40, seed: 4)]
        try TestSignals.write(fir, to: path("room-correction.wav"))
        let client = try startConfig("swift-convolver-room-correction.conf", node: "convolver-room", portCount: 4)
        defer { client.stop() }
        // gain = 0.501 in the config: −6 dB.
        try playAndCompare(node: "convolver-room", positions: ["FL", "FR"], inputPrefix: "playback",
                           entries: [.init(0, 0, path("room-correction.wav"), 0), .init(1, 1, path("room-correction.wav"), 1)],
                           wet: 0.501, dry: 0, irSeconds: 0.1)
    }

    func testTrueStereoFourChannelConfig() throws {
        try LiveAudio.requireEnabled()
        try TestSignals.write((0..<4).map { Self.impulse(frames: 4800, tap: $0 * 3, seed: 10 + UInt64($0)) },
                              to: path("true-stereo-4ch.wav"))
        let client = try startConfig("swift-convolver-true-stereo.conf", node: "convolver-true-stereo", portCount: 4)
        defer { client.stop() }
        let file = path("true-stereo-4ch.wav")
        try playAndCompare(node: "convolver-true-stereo", positions: ["FL", "FR"], inputPrefix: "input",
                           entries: [.init(0, 0, file, 0), .init(0, 1, file, 1), .init(1, 0, file, 2), .init(1, 1, file, 3)],
                           wet: 1, dry: 0, irSeconds: 0.1)
    }

    func testTrueStereoTwoFilesConfig() throws {
        try LiveAudio.requireEnabled()
        try TestSignals.write([Self.impulse(frames: 4800, tap: 0, seed: 20), Self.impulse(frames: 4800, tap: 9, seed: 21)],
                              to: path("left.wav"))
        try TestSignals.write([Self.impulse(frames: 4800, tap: 11, seed: 22), Self.impulse(frames: 4800, tap: 2, seed: 23)],
                              to: path("right.wav"))
        let client = try startConfig("swift-convolver-true-stereo-two-files.conf", node: "convolver-true-stereo-2", portCount: 4)
        defer { client.stop() }
        let left = path("left.wav"), right = path("right.wav")
        try playAndCompare(node: "convolver-true-stereo-2", positions: ["FL", "FR"], inputPrefix: "input",
                           entries: [.init(0, 0, left, 0), .init(0, 1, left, 1), .init(1, 0, right, 0), .init(1, 1, right, 1)],
                           wet: 1, dry: 0, irSeconds: 0.1)
    }

    func testCabinetMonoConfig() throws {
        try LiveAudio.requireEnabled()
        try TestSignals.write([Self.impulse(frames: 2400, tap: 0, seed: 30)], to: path("cabinet.wav"))
        let client = try startConfig("swift-convolver-cabinet-mono.conf", node: "convolver-cabinet", portCount: 2)
        defer { client.stop() }
        XCTAssertEqual(try daemon.portNames(ofNode: "convolver-cabinet"), ["input_MONO", "output_MONO"])
        try playAndCompare(node: "convolver-cabinet", positions: ["MONO"], inputPrefix: "input",
                           entries: [.init(0, 0, path("cabinet.wav"), 0)], wet: 1, dry: 0, irSeconds: 0.05)
    }

    func testCabinetStereoConfig() throws {
        try LiveAudio.requireEnabled()
        try TestSignals.write([Self.impulse(frames: 2400, tap: 0, seed: 31)], to: path("cabinet.wav"))
        let client = try startConfig("swift-convolver-cabinet-stereo.conf", node: "convolver-cabinet-stereo", portCount: 4)
        defer { client.stop() }
        let cabinet = path("cabinet.wav")
        try playAndCompare(node: "convolver-cabinet-stereo", positions: ["FL", "FR"], inputPrefix: "input",
                           entries: [.init(0, 0, cabinet, 0), .init(1, 1, cabinet, 0)], wet: 1, dry: 0, irSeconds: 0.05)
    }

    /// 8 inputs → 2 ears through a synthetic 14-channel HRIR in HeSuVi's channel order; the
    /// reference maps the channels independently of the config (filter-chain's hesuvi mapping).
    func testVirtualSurroundHeSuViConfig() throws {
        try LiveAudio.requireEnabled()
        // Each HRIR channel distinct: its own tap position and noise.
        try TestSignals.write((0..<14).map { Self.impulse(frames: 960, tap: 2 * $0, seed: 40 + UInt64($0)) }, to: path("hrir.wav"))
        let client = try startConfig("swift-convolver-virtual-surround-7.1-hesuvi.conf", node: "convolver-surround", portCount: 10)
        defer { client.stop() }
        let positions = ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"]
        XCTAssertEqual(try daemon.portNames(ofNode: "convolver-surround"),
                       (["output_FL", "output_FR"] + positions.map { "playback_\($0)" }).sorted())
        // HeSuVi: 0 FL-L 1 FL-R 2 SL-L 3 SL-R 4 RL-L 5 RL-R 6 FC-L 7 FR-R 8 FR-L 9 SR-R 10 SR-L 11 RR-R 12 RR-L 13 FC-R.
        let leftRight: [String: (Int, Int)] = ["FL": (0, 1), "FR": (8, 7), "FC": (6, 13), "LFE": (6, 13),
                                                "RL": (4, 5), "RR": (12, 11), "SL": (2, 3), "SR": (10, 9)]
        let hrir = path("hrir.wav")
        var entries: [MatrixReference.Entry] = []
        for (input, position) in positions.enumerated() {
            let (left, right) = try XCTUnwrap(leftRight[position])
            entries += [.init(input, 0, hrir, left), .init(input, 1, hrir, right)]
        }
        try playAndCompare(node: "convolver-surround", positions: positions, outputPositions: ["FL", "FR"],
                           inputPrefix: "playback", entries: entries, wet: 1, dry: 0, irSeconds: 0.05)
    }
}

/// numpy/scipy reference for an N×M matrix: output o = wet · Σ_entries(input i ∗ IR channel) ·
/// gain + dry · input o. Same lag and error measures as NumpyReference.
enum MatrixReference {
    struct Entry: Encodable {
        var input: Int
        var output: Int
        var file: String
        var channel: Int
        init(_ input: Int, _ output: Int, _ file: String, _ channel: Int) {
            self.input = input
            self.output = output
            self.file = file
            self.channel = channel
        }
    }

    static let script = #"""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    from scipy.io import wavfile
    from scipy.signal import fftconvolve
    spec = json.load(open(sys.argv[1]))
    def load(path):
        rate, data = wavfile.read(path)
        data = np.asarray(data, dtype=np.float64)
        return data.reshape(len(data), -1)
    def find_lag(got, probe, offset):
        n = 1 << int(np.ceil(np.log2(len(got) + len(probe))))
        corr = np.fft.irfft(np.fft.rfft(got, n) * np.conj(np.fft.rfft(probe, n)), n)[: len(got)]
        return int(np.argmax(np.abs(corr))) - offset
    def db(num, den):
        return float(10 * np.log10(max(num, 1e-300) / max(den, 1e-300)))
    both = load(spec["recording"])
    ni, no = spec["inputs"], spec["outputs"]
    x = both[:, :ni]; r = both[:, ni:ni + no]
    irs = {}
    length = len(x)
    for e in spec["entries"]:
        irs.setdefault(e["file"], load(e["file"]))
        length = max(length, len(x) + len(irs[e["file"]]) - 1)
    active = np.nonzero(np.any(np.abs(x) > 0, axis=1))[0]
    first, last = int(active[0]), int(active[-1])
    out = []
    for o in range(no):
        expected = np.zeros(length)
        for e in spec["entries"]:
            if e["output"] != o: continue
            y = spec["wet"] * fftconvolve(x[:, e["input"]], irs[e["file"]][:, e["channel"]])
            expected[:len(y)] += y
        if o < ni: expected[:len(x)] += spec["dry"] * x[:, o]
        got = r[:, o]
        lag = find_lag(got, expected[: first + 48000], 0)
        tail_start = max(first, last - 48000)
        end_lag = find_lag(got, expected[tail_start: last], tail_start)
        m = max(0, min(len(expected), len(got) - lag))
        err = got[lag:lag + m] - expected[:m]
        bad = np.nonzero(np.abs(err) > 1e-4)[0]
        glitches = []
        for index in bad:
            if glitches and index - (glitches[-1][0] + glitches[-1][1]) < 256:
                glitches[-1][1] = int(index) - glitches[-1][0] + 1
            else:
                glitches.append([int(index), 1])
        mask = np.ones(m, dtype=bool)
        for start, span in glitches: mask[start:start + span] = False
        out.append({"lag": lag, "endLag": end_lag, "errorDB": db(np.sum(err ** 2), np.sum(expected[:m] ** 2)),
                    "cleanErrorDB": db(np.sum(err[mask] ** 2), np.sum(expected[:m][mask] ** 2)),
                    "glitches": glitches[:20], "comparedFrames": int(m), "expectedFrames": int(len(x))})
    print(json.dumps(out))
    """#

    private struct Spec: Encodable {
        var recording: String
        var inputs: Int
        var outputs: Int
        var entries: [Entry]
        var wet: Double
        var dry: Double
    }

    /// `recording`: the node's `inputs` channels, then its `outputs` channels.
    static func compare(recording: String, inputs: Int, outputs: Int, entries: [Entry], wet: Double, dry: Double,
                        workDirectory: String) throws -> [NumpyReference.ChannelResult] {
        let scriptPath = workDirectory + "/compare-matrix.py"
        let specPath = workDirectory + "/compare-matrix.json"
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        try JSONEncoder().encode(Spec(recording: recording, inputs: inputs, outputs: outputs, entries: entries,
                                      wet: wet, dry: dry)).write(to: URL(fileURLWithPath: specPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [scriptPath, specPath]
        let pipe = Pipe()
        process.standardOutput = pipe
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let results = try? JSONDecoder().decode([NumpyReference.ChannelResult].self, from: data) else {
            throw TestFailure("compare-matrix.py failed: \(String(decoding: data, as: UTF8.self)) \(errorText.suffix(2000))")
        }
        return results
    }
}

/// The `mode` and `output.position` keys (no PipeWire needed).
final class SinkModeConfigurationTests: XCTestCase {
    func testModeKey() throws {
        XCTAssertEqual(try NodeConfiguration.parse(arguments: "filename = builtin:dirac").0.mode, .filter)
        XCTAssertEqual(try NodeConfiguration.parse(arguments: "filename = builtin:dirac mode = sink").0.mode, .sink)
        XCTAssertThrowsError(try NodeConfiguration.parse(arguments: "filename = builtin:dirac mode = source")) { error in
            XCTAssertEqual((error as? NodeConfigurationError)?.key, "mode")
            XCTAssertTrue("\(error)".contains("source"), "\(error)")
        }
    }

    func testOutputPositions() throws {
        let (configuration, _) = try NodeConfiguration.parse(arguments: """
            audio.position = [ FL FR FC ] output.position = [ FL FR ]
            impulses = [ { input = 2 output = 1 filename = builtin:dirac } ]
            """)
        XCTAssertEqual(configuration.channelCount, 3)
        XCTAssertEqual(configuration.outputCount, 2)
        // An output index beyond the outputs names the entry.
        XCTAssertThrowsError(try NodeConfiguration.parse(arguments: """
            audio.position = [ FL FR FC ] output.position = [ FL FR ]
            impulses = [ { input = 2 output = 2 filename = builtin:dirac } ]
            """)) { error in XCTAssertEqual((error as? NodeConfigurationError)?.key, "impulses[0].output") }
        // Different counts need a matrix.
        XCTAssertThrowsError(try NodeConfiguration.parse(arguments: "audio.position = [ FL FR FC ] output.position = [ FL FR ] filename = builtin:dirac")) {
            error in XCTAssertEqual((error as? NodeConfigurationError)?.key, "output.position")
        }
    }
}
