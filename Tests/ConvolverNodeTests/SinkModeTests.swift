import Convolution
import Foundation
import XCTest

/// Sink mode (`mode = sink`, `pw-convolver run --sink`) in a real private PipeWire daemon: the
/// capture stream `<name>` (Audio/Sink) and the playback stream `output.<name>`.
/// - with WirePlumber 0.4.13 running against the daemon: a stream played with `--target <name>`
///   is routed into the sink, the sink's output reaches the default sink (a null sink), the
///   recording of that sink's monitor is the convolution of the file (numpy), `wpctl status`
///   lists the sink and `wpctl set-default` makes it the default;
/// - without a session manager: everything linked by hand; one recorder takes the sink's input
///   and its output in the same cycles, so the output must be numpy's convolution at lag 0;
/// - the real-time contract of the sink's stream callbacks (allocations and mutex locks counted
///   on the data thread and the helpers while Props, the quantum and the IR change).
final class SinkModeTests: XCTestCase {
    private var daemon: PrivatePipeWire!
    private var background: [BackgroundProcess] = []

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
        daemon = try PrivatePipeWire(name: "sinkmode")
    }

    override func tearDown() {
        for process in background.reversed() { process.stop() }
        background = []
        daemon?.stop()
        daemon = nil
    }

    private func path(_ name: String) -> String { daemon.runtimeDirectory + "/" + name }

    private func spawn(_ arguments: [String], logName: String, extraEnvironment: [String: String] = [:]) throws -> BackgroundProcess {
        let process = try daemon.spawn(arguments, logName: logName, extraEnvironment: extraEnvironment)
        background.append(process)
        return process
    }

    // MARK: - With WirePlumber

    func testWirePlumberRoutesATargetedStreamThroughTheSinkToTheDefaultSink() throws {
        try SinkSignals.write(SinkSignals.impulse(frames: 4800), to: path("ir.wav"))
        try SinkSignals.write(SinkSignals.noise(leadIn: 0.3, seconds: 1.5, leadOut: 1.0), to: path("input.wav"))
        // A sink for the convolved audio to go to: the headless daemon has no device.
        let (created, createOutput) = try daemon.run(["pw-cli", "create-node", "adapter",
            "{ factory.name = support.null-audio-sink node.name = testsink node.description = TestSink "
                + "media.class = Audio/Sink audio.position = [ FL FR ] object.linger = true }"])
        XCTAssertEqual(created, 0, createOutput)
        try startWirePlumber()
        // WirePlumber makes the only device-like sink the default.
        try waitFor("WirePlumber made testsink the default sink", timeout: 20) {
            (try? self.daemon.run(["pw-metadata", "-n", "default", "0", "default.audio.sink"]).output.contains("testsink")) == true
        }

        let client = try ModuleClient.start(daemon, name: "wp-sink", arguments: """
            node.name = conv-wp node.description = "Convolver WP" mode = sink audio.position = [ FL FR ] filename = "\(path("ir.wav"))"
            """)
        background.append(client)
        // The playback stream goes to the default sink on its own (WirePlumber links it).
        try waitFor("WirePlumber linked output.conv-wp to testsink; client log:\n\(client.log)", timeout: 30) {
            let links = (try? SinkGraph.links(self.daemon)) ?? []
            return links.contains("output.conv-wp:output_FL -> testsink:playback_FL")
                && links.contains("output.conv-wp:output_FR -> testsink:playback_FR")
        }
        let sinkID = try XCTUnwrap(try daemon.nodeProperties("conv-wp")).id
        let status = try daemon.run(["wpctl", "status"]).output
        print(status)
        let sinksSection = status.components(separatedBy: "├─ Sinks:").dropFirst().first?
            .components(separatedBy: "├─ Sink endpoints:").first ?? ""
        XCTAssertTrue(sinksSection.contains("\(sinkID). Convolver WP"), "wpctl status lists the sink:\n\(status)")
        XCTAssertFalse(sinksSection.contains("output.conv-wp"), "the output stream is not a sink")

        // Record what reaches the default sink: its monitor, linked by WirePlumber.
        let recorder = try spawn(["pw-record", "--target", "testsink", "-P", "{ node.name = rec-wp stream.capture.sink = true }",
                                  "--format", "f32", "--rate", "48000", "--channels", "2", path("rec-wp.wav")],
                                 logName: "rec-wp.log")
        try waitFor("WirePlumber linked the recorder to testsink's monitor", timeout: 20) {
            ((try? SinkGraph.links(self.daemon)) ?? []).contains("testsink:monitor_FL -> rec-wp:input_FL")
        }
        let player = try spawn(["pw-play", "--target", "conv-wp", "-P", "{ node.name = play-wp }", path("input.wav")],
                               logName: "play-wp.log")
        var routedLinks: Set<String> = []
        waitUntil(timeout: 10) {
            routedLinks = (try? SinkGraph.links(self.daemon)) ?? []
            return routedLinks.contains("play-wp:output_FL -> conv-wp:playback_FL") || !player.isRunning
        }
        XCTAssertTrue(routedLinks.contains("play-wp:output_FL -> conv-wp:playback_FL")
                      && routedLinks.contains("play-wp:output_FR -> conv-wp:playback_FR"),
                      "WirePlumber routed the targeted stream into the sink: \(routedLinks.sorted())")
        XCTAssertFalse(routedLinks.contains { $0.hasPrefix("play-wp:") && $0.contains("testsink") },
                       "the stream went to the convolver, not straight to the default sink")
        XCTAssertTrue(player.waitForExit(timeout: 20), "pw-play finished; log: \(player.log)")
        usleep(500_000)
        recorder.interrupt()

        let results = try SinkGraph.compare(recording: path("rec-wp.wav"), input: path("input.wav"), impulse: path("ir.wav"),
                                            wet: 1, dry: 0, workDirectory: daemon.runtimeDirectory)
        XCTAssertEqual(results.count, 2)
        for (channel, result) in results.enumerated() {
            print("WirePlumber route, output \(channel): \(result)")
            // The recording starts before playback (lag > 0); the graph sets where, not the node.
            XCTAssertGreaterThan(result.lag, 0, "channel \(channel)")
            XCTAssertGreaterThanOrEqual(result.correlation, 0.99, "channel \(channel): the convolved signal arrived downstream")
            XCTAssertEqual(result.energyRatio, 1, accuracy: 0.05, "channel \(channel): energy of the convolved signal")
        }
        let statistics = try XCTUnwrap(try daemon.nodeProperties("conv-wp")).properties
        XCTAssertGreaterThan(Int("\(statistics["convolver.calls"] ?? 0)") ?? 0, 0, "statistics on the sink node")

        // wpctl set-default: WirePlumber's default sink becomes the convolver.
        let (setDefault, setOutput) = try daemon.run(["wpctl", "set-default", "\(sinkID)"])
        XCTAssertEqual(setDefault, 0, setOutput)
        try waitFor("default.audio.sink is conv-wp", timeout: 10) {
            (try? self.daemon.run(["pw-metadata", "-n", "default", "0", "default.audio.sink"]).output.contains("conv-wp")) == true
        }
        let after = try daemon.run(["wpctl", "status"]).output
        XCTAssertTrue(after.contains("*   \(sinkID). Convolver WP"), "wpctl marks the convolver as default:\n\(after)")
    }

    /// WirePlumber 0.4.13 from the daemon's runtime dir, with Debian's config minus what needs a
    /// D-Bus session (bluetooth/logind, the flatpak portal, device reservation) and minus the
    /// device monitors (no hardware here): those make it quit with "Cannot autolaunch D-Bus".
    private func startWirePlumber() throws {
        let configDirectory = path("wireplumber")
        try FileManager.default.copyItem(atPath: "/usr/share/wireplumber", toPath: configDirectory)
        let mainConfig = configDirectory + "/wireplumber.conf"
        let text = try String(contentsOfFile: mainConfig, encoding: .utf8)
        try text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.contains("bluetooth.lua") }
            .joined(separator: "\n").write(toFile: mainConfig, atomically: true, encoding: .utf8)
        try """
            default_access.properties["enable-flatpak-portal"] = false
            alsa_monitor.enabled = false
            alsa_monitor.properties["alsa.reserve"] = false
            v4l2_monitor.enabled = false
            libcamera_monitor.enabled = false
            """.write(toFile: configDirectory + "/main.lua.d/51-headless-test.lua", atomically: true, encoding: .utf8)
        // Its state (default nodes, stream volumes) goes to the daemon's dir, not the user's ~/.local/state.
        let wireplumber = try spawn(["wireplumber"], logName: "wireplumber.log",
                                    extraEnvironment: ["WIREPLUMBER_CONFIG_DIR": configDirectory,
                                                       "XDG_STATE_HOME": path("state"), "XDG_CONFIG_HOME": path("config-home")])
        try waitFor("WirePlumber connected", timeout: 20) {
            guard wireplumber.isRunning else { return true }
            return (try? self.daemon.run(["wpctl", "status"]).output.contains("WirePlumber")) == true
        }
        guard wireplumber.isRunning else { throw TestFailure("WirePlumber exited:\n\(wireplumber.log)") }
    }

    // MARK: - Without a session manager

    func testWithoutSessionManagerLinkedByHandConvolvesWithZeroAddedLatency() throws {
        try daemon.setQuantum(256)
        try SinkSignals.write(SinkSignals.impulse(frames: 4800), to: path("ir.wav"))
        try SinkSignals.write(SinkSignals.noise(leadIn: 0.8, seconds: 1.5, leadOut: 0.6), to: path("input.wav"))
        // The standalone client here (the module in the WirePlumber test).
        let sink = try spawn([BuildProducts.directory + "/pw-convolver", "run", "--sink", "--name", "conv-hand",
                              "--description", "Convolver by hand", "--ir", path("ir.wav")], logName: "conv-hand.log")
        do {
            try daemon.waitForPorts(ofNode: "conv-hand", count: 4, timeout: 30)
            try daemon.waitForPorts(ofNode: "output.conv-hand", count: 2, timeout: 30)
        } catch {
            throw TestFailure("\(error)\nlog:\n\(sink.log)")
        }
        XCTAssertEqual(try daemon.portNames(ofNode: "conv-hand"), ["monitor_FL", "monitor_FR", "playback_FL", "playback_FR"])
        XCTAssertEqual(try daemon.portNames(ofNode: "output.conv-hand"), ["output_FL", "output_FR"])
        let sinkNode = try XCTUnwrap(try daemon.nodeProperties("conv-hand"))
        let outputNode = try XCTUnwrap(try daemon.nodeProperties("output.conv-hand"))
        XCTAssertEqual(sinkNode.properties["media.class"] as? String, "Audio/Sink")
        XCTAssertEqual(outputNode.properties["media.class"] as? String, "Stream/Output/Audio")
        XCTAssertEqual(outputNode.properties["node.passive"] as? Bool, true)
        let linkGroup = try XCTUnwrap(sinkNode.properties["node.link-group"] as? String)
        XCTAssertEqual(outputNode.properties["node.link-group"] as? String, linkGroup)
        XCTAssertEqual(outputNode.properties["node.group"] as? String, sinkNode.properties["node.group"] as? String)

        // Props on the sink node reach the convolver: output = gain·mix·wet + (1 − mix)·dry.
        let (status, output) = try daemon.run(["pw-cli", "set-param", "\(sinkNode.id)", "Props",
                                               "{ params = [ \"gain\" 0.5 \"mix\" 0.8 ] }"])
        XCTAssertEqual(status, 0, output)
        try waitFor("Props show gain 0.5", timeout: 10) {
            (try? SinkGraph.convolverProps(self.daemon, node: "conv-hand"))?.first { $0.0 == "gain" }?.1 == 0.5
        }

        // Up to two runs: on this VM a run now and then loses a cycle in the recorder (printed).
        var passed = false
        for attempt in 1...2 where !passed {
            let results = try playByHand(attempt: attempt)
            XCTAssertEqual(results.count, 2)
            passed = results.count == 2
            for (channel, result) in results.enumerated() {
                print("by hand, attempt \(attempt), output \(channel): \(result)")
                passed = passed && result.lag == 0 && result.errorDB <= -80 && result.correlation >= 0.9999
            }
        }
        XCTAssertTrue(passed, "the sink's output is numpy's 0.4·(input ∗ IR) + 0.2·input at lag 0 (see the printed runs)")
        let statistics = try XCTUnwrap(try daemon.nodeProperties("conv-hand")).properties
        XCTAssertGreaterThan(Int("\(statistics["convolver.calls"] ?? 0)") ?? 0, 0, "statistics on the sink node")
        print("conv-hand: " + statistics.filter { $0.key.hasPrefix("convolver.") }.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value)" }.joined(separator: " "))
    }

    /// pw-play → conv-hand:playback_<POS>, output.conv-hand:output_<POS> → one pw-record that also
    /// takes pw-play's output, all linked by hand.
    private func playByHand(attempt: Int) throws -> [SinkGraph.ChannelResult] {
        let recorder = "rec-hand\(attempt)", player = "play-hand\(attempt)"
        let recording = path("\(recorder).wav")
        let record = try spawn(["pw-record", "-P", SinkGraph.handLinkedStream(recorder), "--format", "f32", "--rate", "48000",
                                "--channels", "4", "--channel-map", "FL,FR,RL,RR", recording], logName: "\(recorder).log")
        try daemon.waitForPorts(ofNode: recorder, count: 4)
        try daemon.link("output.conv-hand:output_FL", "\(recorder):input_RL")
        try daemon.link("output.conv-hand:output_FR", "\(recorder):input_RR")
        let play = try spawn(["pw-play", "-P", SinkGraph.handLinkedStream(player), path("input.wav")], logName: "\(player).log")
        try daemon.waitForPorts(ofNode: player, count: 2)
        for position in ["FL", "FR"] {
            try daemon.link("\(player):output_\(position)", "\(recorder):input_\(position)")
            try daemon.link("\(player):output_\(position)", "conv-hand:playback_\(position)")
        }
        guard play.waitForExit(timeout: 20) else { throw TestFailure("pw-play did not finish; log: \(play.log)") }
        usleep(300_000)
        record.interrupt()
        return try SinkGraph.compare(recording: recording, input: nil, impulse: path("ir.wav"), wet: 0.4, dry: 0.2,
                                     workDirectory: daemon.runtimeDirectory)
    }

    func testUnknownChannelPositionIsRefusedInSinkMode() throws {
        // Filter mode takes any name for its port names; a stream's format needs a PipeWire position.
        let (status, output) = try daemon.run([BuildProducts.directory + "/pw-convolver", "run", "--sink", "--name", "conv-bad",
                                               "--position", "FL,XQ", "--ir", "builtin:dirac"], timeout: 20)
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(output.contains("audio.position") && output.contains("XQ"), output)
    }

    // MARK: - Real-time contract

    /// The sink's two stream callbacks and the helpers, watched by Tests/RealtimeCheck while audio
    /// plays and Props, the quantum and the IR change: no allocation, no mutex lock.
    func testSinkModeCallbacksAllocateAndLockNothing() throws {
        try daemon.setQuantum(256)
        try SinkSignals.write(SinkSignals.impulse(frames: 96000), to: path("ir-a.wav"))
        try SinkSignals.write(SinkSignals.impulse(frames: 48000, seed: 7), to: path("ir-b.wav"))
        try SinkSignals.write(SinkSignals.noise(leadIn: 0.5, seconds: 12, leadOut: 0.5), to: path("input.wav"))
        let host = try RealtimeCheckHost(daemon: daemon, name: "conv-rtsink",
                                         arguments: "node.name = conv-rtsink mode = sink audio.position = [ FL FR ] filename = \"\(path("ir-a.wav"))\"")
        background.append(host.client)
        try daemon.waitForPorts(ofNode: "output.conv-rtsink", count: 2, timeout: 30)
        let nodeID = try XCTUnwrap(try daemon.nodeProperties("conv-rtsink")).id
        let record = try spawn(["pw-record", "-P", SinkGraph.handLinkedStream("rec-rt"), "--format", "f32", "--rate", "48000",
                                "--channels", "2", path("rec-rt.wav")], logName: "rec-rt.log")
        try daemon.waitForPorts(ofNode: "rec-rt", count: 2)
        let play = try spawn(["pw-play", "-P", SinkGraph.handLinkedStream("play-rt"), path("input.wav")], logName: "play-rt.log")
        try daemon.waitForPorts(ofNode: "play-rt", count: 2)
        for position in ["FL", "FR"] {
            try daemon.link("output.conv-rtsink:output_\(position)", "rec-rt:input_\(position)")
            try daemon.link("play-rt:output_\(position)", "conv-rtsink:playback_\(position)")
        }
        usleep(2_000_000)
        try host.arm()
        let changes: [[String]] = [
            ["pw-cli", "set-param", "\(nodeID)", "Props", "{ params = [ \"gain\" 0.5 \"mix\" 0.3 \"bypass\" true ] }"],
            ["pw-metadata", "-n", "settings", "0", "clock.force-quantum", "1024"],
            ["pw-cli", "set-param", "\(nodeID)", "Props", "{ params = [ \"filename\" \"\(path("ir-b.wav"))\" \"bypass\" false ] }"],
            ["pw-metadata", "-n", "settings", "0", "clock.force-quantum", "64"],
            ["pw-cli", "set-param", "\(nodeID)", "Props", "{ params = [ \"gain\" 1.0 \"mix\" 1.0 ] }"],
            ["pw-metadata", "-n", "settings", "0", "clock.force-quantum", "256"],
        ]
        for change in changes {
            let (status, output) = try daemon.run(change)
            XCTAssertEqual(status, 0, "\(change.joined(separator: " ")): \(output)")
            usleep(800_000)
        }
        usleep(800_000)
        let report = try host.dump()
        _ = play.waitForExit(timeout: 20)
        record.interrupt()
        print(report.summary)
        let statistics = try XCTUnwrap(try daemon.nodeProperties("conv-rtsink")).properties
        XCTAssertEqual("\(statistics["convolver.ir"] ?? "")", path("ir-b.wav"), "the IR change reached the sink")
        XCTAssertFalse(report.dataThreads.isEmpty, "the data thread was watched")
        XCTAssertFalse(report.helperThreads.isEmpty, "helper threads were watched")
        for thread in report.dataThreads + report.helperThreads {
            XCTAssertEqual(thread.allocations, 0, "\(thread.name) (\(thread.tid)) allocated:\n\(report.sites(of: thread))")
            XCTAssertEqual(thread.mutexLocks, 0, "\(thread.name) (\(thread.tid)) locked a mutex:\n\(report.sites(of: thread))")
        }
        XCTAssertTrue(host.client.isRunning, "host log:\n\(host.client.log)")
    }

    private func waitFor(_ what: String, timeout: TimeInterval, _ condition: @escaping () -> Bool) throws {
        guard waitUntil(timeout: timeout, condition) else {
            throw TestFailure("timed out after \(timeout) s waiting until \(what)\ndaemon log:\n\(daemon.log(tail: 30))")
        }
    }
}

/// Deterministic test signals of this file (the shared ones in Support/ are being reworked).
private enum SinkSignals {
    struct Random {
        var state: UInt64
        mutating func next() -> Float {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Float(state >> 40) / Float(1 << 24) * 2 - 1
        }
    }

    /// Stereo white noise at 0.25 between silences (seconds at 48 kHz).
    static func noise(leadIn: Double, seconds: Double, leadOut: Double) -> [[Float]] {
        var random = Random(state: 0x5EED_0F_51CC)
        return (0..<2).map { _ in
            [Float](repeating: 0, count: Int(leadIn * 48000)) + (0..<Int(seconds * 48000)).map { _ in 0.25 * random.next() }
                + [Float](repeating: 0, count: Int(leadOut * 48000))
        }
    }

    /// A stereo IR: a direct tap (different per channel) and decaying noise.
    static func impulse(frames: Int, seed: UInt64 = 3) -> [[Float]] {
        var random = Random(state: 0xC0FFEE ^ seed)
        return (0..<2).map { channel in
            (0..<frames).map { index in
                (index == channel * 11 ? 0.5 : 0) + 0.25 * expf(-Float(index) / Float(frames / 5)) * random.next()
            }
        }
    }

    static func write(_ channels: [[Float]], to path: String) throws {
        try AudioFile.write(path: path, sampleRate: 48000, channels: channels)
    }
}

private enum SinkGraph {
    /// pw-play / pw-record properties for linking by hand without a session manager (FACTS.md).
    static func handLinkedStream(_ name: String) -> String {
        "{ node.name = \(name) node.want-driver = false "
            + "adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve } }"
    }

    /// Links as "node:port -> node:port", from `pw-link -l`.
    static func links(_ daemon: PrivatePipeWire) throws -> Set<String> {
        let (status, output) = try daemon.run(["pw-link", "-l"])
        guard status == 0 else { throw TestFailure("pw-link -l failed: \(output)") }
        var links: Set<String> = []
        var current = ""
        for line in output.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("|->") {
                links.insert("\(current) -> \(trimmed.dropFirst(3).trimmingCharacters(in: .whitespaces))")
            } else if trimmed.hasPrefix("|<-") {
                links.insert("\(trimmed.dropFirst(3).trimmingCharacters(in: .whitespaces)) -> \(current)")
            } else {
                current = trimmed
            }
        }
        return links
    }

    /// The convolver's own Props (`params` holding "gain") of the node `node`, from pw-dump.
    static func convolverProps(_ daemon: PrivatePipeWire, node: String) throws -> [(String, Double)] {
        for object in try daemon.dump() where (object["type"] as? String) == "PipeWire:Interface:Node" {
            let info = object["info"] as? [String: Any]
            guard ((info?["props"] as? [String: Any])?["node.name"] as? String) == node,
                  let props = (info?["params"] as? [String: Any])?["Props"] as? [[String: Any]] else { continue }
            for entry in props {
                guard let params = entry["params"] as? [Any], params.contains(where: { ($0 as? String) == "gain" }) else { continue }
                return stride(from: 0, to: params.count - 1, by: 2).compactMap { index in
                    guard let key = params[index] as? String, let value = params[index + 1] as? Double else { return nil }
                    return (key, value)
                }
            }
        }
        return []
    }

    struct ChannelResult: Decodable, CustomStringConvertible {
        /// Recording frame of the expected signal's frame 0 (cross-correlation).
        var lag: Int
        /// Error energy over expected energy, aligned at `lag`, over the overlap.
        var errorDB: Double
        var correlation: Double
        /// Recorded energy over expected energy, aligned at `lag`.
        var energyRatio: Double
        var comparedFrames: Int
        var description: String {
            "lag \(lag), error \(String(format: "%.1f", errorDB)) dB, correlation \(String(format: "%.6f", correlation)), "
                + "energy ratio \(String(format: "%.4f", energyRatio)), \(comparedFrames) frames"
        }
    }

    /// numpy/scipy in double precision: expected = wet·(x ∗ h) + dry·x per channel, where x is
    /// the recording's first half of channels (`input == nil`) or the file `input`; the output is
    /// the recording's second half (`input == nil`) or all of it.
    static let script = #"""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    from scipy.io import wavfile
    from scipy.signal import fftconvolve
    rec, inp, ir, wet, dry = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
    def load(path):
        data = np.asarray(wavfile.read(path)[1], dtype=np.float64)
        return data.reshape(len(data), -1)
    r = load(rec); h = load(ir)
    if inp == "none":
        n = r.shape[1] // 2; x = r[:, :n]; y = r[:, n:]
    else:
        x = load(inp); y = r
    out = []
    for c in range(y.shape[1]):
        e = wet * fftconvolve(x[:, c], h[:, c]); e[:len(x)] += dry * x[:, c]
        got = y[:, c]
        size = 1 << int(np.ceil(np.log2(len(got) + len(e))))
        corr = np.fft.irfft(np.fft.rfft(got, size) * np.conj(np.fft.rfft(e, size)), size)
        lag = int(np.argmax(np.abs(corr)))
        if lag >= size // 2: lag -= size
        a = got[max(lag, 0):]; b = e[max(-lag, 0):]
        m = min(len(a), len(b)); a = a[:m]; b = b[:m]
        err = a - b
        out.append({"lag": lag, "errorDB": float(10 * np.log10(max(np.sum(err ** 2), 1e-300) / np.sum(b ** 2))),
                    "correlation": float(np.dot(a, b) / np.sqrt(np.dot(a, a) * np.dot(b, b))),
                    "energyRatio": float(np.sum(a ** 2) / np.sum(b ** 2)), "comparedFrames": int(m)})
    print(json.dumps(out))
    """#

    static func compare(recording: String, input: String?, impulse: String, wet: Double, dry: Double,
                        workDirectory: String) throws -> [ChannelResult] {
        let scriptPath = workDirectory + "/compare-sink.py"
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [scriptPath, recording, input ?? "none", impulse, "\(wet)", "\(dry)"]
        let pipe = Pipe()
        process.standardOutput = pipe
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0, let results = try? JSONDecoder().decode([ChannelResult].self, from: data) else {
            throw TestFailure("compare-sink.py failed: \(String(decoding: data, as: UTF8.self)) \(errorText.suffix(2000))")
        }
        return results
    }
}
