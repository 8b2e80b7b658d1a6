import CConvolverShims
import Convolution
import Foundation
import XCTest

@testable import ConvolverGraph
@testable import ConvolverNode

/// Sink mode (`mode = sink`, `pw-convolver run --sink`) in a real private PipeWire daemon: the
/// capture stream `<name>` (Audio/Sink) and the playback stream `output.<name>`.
/// - with WirePlumber 0.4.13 running against the daemon: a stream played with `--target <name>`
///   is routed into the sink, the sink's output reaches the default sink (a null sink), the
///   recording of that sink's monitor is the convolution of the file (numpy), `wpctl status`
///   lists the sink and `wpctl set-default` makes it the default, after which an untargeted
///   stream goes into it while its output stays on the device; `--target` sends the output
///   stream to another sink;
/// - without a session manager: everything linked by hand; one recorder takes the sink's input
///   and its output in the same cycles; the node's record must be numpy's convolution of its
///   input, and the recording the node's output in the cycle of its input (LiveJudges);
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
        background.append(try daemon.startWirePlumber(withDefaultSink: "testsink", description: "TestSink"))

        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "conv-wp")
        let client = try ModuleClient.start(
            daemon, name: "wp-sink",
            arguments: """
                node.name = conv-wp node.description = "Convolver WP" mode = sink audio.position = [ FL FR ] filename = "\(path("ir.wav"))" \
                \(record.argument)
                """)
        background.append(client)
        // The playback stream goes to the default sink on its own (WirePlumber links it).
        try waitFor("WirePlumber linked output.conv-wp to testsink; client log:\n\(client.log)", timeout: 30) {
            let links = (try? self.daemon.links()) ?? []
            return links.contains("output.conv-wp:output_FL -> testsink:playback_FL")
                && links.contains("output.conv-wp:output_FR -> testsink:playback_FR")
        }
        let sinkID = try XCTUnwrap(try daemon.nodeProperties("conv-wp")).id
        let status = try daemon.run(["wpctl", "status"]).output
        print(status)
        if PipeWireInstallation.isOneDotX {
            // wpctl 0.5 lists a link-group pair under Filters, by node name, with its media class.
            let filters = status.components(separatedBy: "├─ Filters:").dropFirst().first?.components(separatedBy: "└─ Streams:").first ?? ""
            XCTAssertTrue(filters.contains("\(sinkID). conv-wp") && filters.contains("[Audio/Sink]"), "wpctl status lists the sink:\n\(status)")
        } else {
            // The Sinks section, up to Sink endpoints.
            let sinksSection =
                status.components(separatedBy: "├─ Sinks:").dropFirst().first?
                .components(separatedBy: "├─ Sink endpoints:").first ?? ""
            XCTAssertTrue(sinksSection.contains("\(sinkID). Convolver WP"), "wpctl status lists the sink:\n\(status)")
            XCTAssertFalse(sinksSection.contains("output.conv-wp"), "the output stream is not a sink")
        }

        // Record what reaches the default sink: its monitor, linked by WirePlumber.
        let recorder = try spawn(
            [
                "pw-record", "--target", "testsink", "-P", "{ node.name = rec-wp stream.capture.sink = true }",
                "--format", "f32", "--rate", "48000", "--channels", "2", path("rec-wp.wav"),
            ],
            logName: "rec-wp.log")
        try waitFor("WirePlumber linked the recorder to testsink's monitor", timeout: 20) {
            ((try? self.daemon.links()) ?? []).contains("testsink:monitor_FL -> rec-wp:input_FL")
        }
        let player = try spawn(
            ["pw-play", "--target", "conv-wp", "-P", "{ node.name = play-wp }", path("input.wav")],
            logName: "play-wp.log")
        var routedLinks: Set<String> = []
        waitUntil(timeout: 10) {
            routedLinks = (try? self.daemon.links()) ?? []
            return routedLinks.contains("play-wp:output_FL -> conv-wp:playback_FL") || !player.isRunning
        }
        XCTAssertTrue(
            routedLinks.contains("play-wp:output_FL -> conv-wp:playback_FL")
                && routedLinks.contains("play-wp:output_FR -> conv-wp:playback_FR"),
            "WirePlumber routed the targeted stream into the sink: \(routedLinks.sorted())")
        XCTAssertFalse(
            routedLinks.contains { $0.hasPrefix("play-wp:") && $0.contains("testsink") },
            "the stream went to the convolver, not straight to the default sink")
        XCTAssertTrue(player.waitForExit(timeout: 20), "pw-play finished; log: \(player.log)")
        usleep(500_000)
        recorder.interrupt()

        let statistics = try XCTUnwrap(try daemon.nodeProperties("conv-wp")).properties
        XCTAssertGreaterThan(Int("\(statistics["convolver.calls"] ?? 0)") ?? 0, 0, "statistics on the sink node")

        // wpctl set-default: WirePlumber's default sink becomes the convolver.
        let (setDefault, setOutput) = try daemon.run(["wpctl", "set-default", "\(sinkID)"])
        XCTAssertEqual(setDefault, 0, setOutput)
        try waitFor("default.audio.sink is conv-wp", timeout: 10) {
            (try? self.daemon.run(["pw-metadata", "-n", "default", "0", "default.audio.sink"]).output.contains("conv-wp")) == true
        }
        let after = try daemon.run(["wpctl", "status"]).output
        if !PipeWireInstallation.isOneDotX {  // wpctl 0.5 marks no default among Filters
            XCTAssertTrue(after.contains("*   \(sinkID). Convolver WP"), "wpctl marks the convolver as default:\n\(after)")
        }
        // As the default, an app without a target plays into it, and its output stream (same
        // link group) is never linked into itself: it stays on the device sink.
        try SinkSignals.write(SinkSignals.noise(leadIn: 0, seconds: 1.0, leadOut: 0), to: path("short.wav"))
        let defaultPlayer = try spawn(
            ["pw-play", "-P", "{ node.name = play-default }", path("short.wav")],
            logName: "play-default.log")
        var defaultLinks: Set<String> = []
        waitUntil(timeout: 10) {
            defaultLinks = (try? self.daemon.links()) ?? []
            return defaultLinks.contains("play-default:output_FR -> conv-wp:playback_FR") || !defaultPlayer.isRunning
        }
        XCTAssertTrue(
            defaultLinks.contains("play-default:output_FL -> conv-wp:playback_FL")
                && defaultLinks.contains("play-default:output_FR -> conv-wp:playback_FR"),
            "an untargeted stream goes to the default sink, the convolver: \(defaultLinks.sorted())")
        XCTAssertTrue(
            defaultLinks.contains("output.conv-wp:output_FL -> testsink:playback_FL"),
            "the output stream still goes to the device sink: \(defaultLinks.sorted())")
        XCTAssertFalse(
            defaultLinks.contains { $0.hasPrefix("output.conv-wp:") && $0.contains("-> conv-wp:") },
            "the sink's output is not linked into itself")
        XCTAssertTrue(defaultPlayer.waitForExit(timeout: 20), "pw-play finished; log: \(defaultPlayer.log)")

        // target.object (--target): the output stream goes to that sink, not to the default.
        try daemon.createNullSink("othersink", description: "OtherSink")
        let targeted = try spawn(
            [
                BuildProducts.directory + "/pw-convolver", "run", "--sink", "--name", "conv-target",
                "--target", "othersink", "--ir", path("ir.wav"),
            ], logName: "conv-target.log")
        try waitFor("WirePlumber linked output.conv-target to othersink; log:\n\(targeted.log)", timeout: 30) {
            let links = (try? self.daemon.links()) ?? []
            return links.contains("output.conv-target:output_FL -> othersink:playback_FL")
                && links.contains("output.conv-target:output_FR -> othersink:playback_FR")
        }
        XCTAssertFalse(
            ((try? daemon.links()) ?? []).contains { $0.hasPrefix("output.conv-target:") && !$0.contains("othersink") },
            "output.conv-target goes only to its target")

        // Both plays into conv-wp: its output was the convolution of its input throughout, and
        // what reached the default sink's monitor was that output (the recorder is not beside
        // the player: only the outputs are judged).
        XCTAssertTrue(client.isRunning, client.log)
        client.stop()
        let graph = try GraphJudge.judge(
            recording: path("rec-wp.wav"), record: record, inputs: 2, outputs: 2, channels: [2, 3],
            workDirectory: daemon.runtimeDirectory)
        GraphJudge.assertNodeOutputRecorded(graph, names: ["testsink monitor FL", "testsink monitor FR"], label: "WirePlumber route")
        let result = try RecordJudge.judge(
            record, inputs: 2, outputs: 2, entries: SinkGraph.stereo(path("ir.wav")),
            segments: [.init(wet: 1, dry: 0)], played: nil, workDirectory: daemon.runtimeDirectory)
        RecordJudge.assertExact(result, outputs: 2, label: "WirePlumber route")
    }

    /// WirePlumber 0.5's smart filters (`filter.smart = true` on the sink): an app that plays to
    /// the default sink is heard through the convolver, with no `wpctl set-default` and no
    /// pw-link, and `filter.smart.disabled` in the `filters` metadata takes it out again.
    /// WirePlumber 0.4 (beside PipeWire 0.3.65) has no smart filters: there the keys only reach
    /// the sink node's properties, which is what this test checks on it.
    func testWirePlumberSmartFilterPutsTheSinkBeforeTheDefaultSink() throws {
        try daemon.setQuantum(256)
        try SinkSignals.write(SinkSignals.impulse(frames: 4800), to: path("ir.wav"))
        try SinkSignals.write(SinkSignals.noise(leadIn: 0.3, seconds: 1.5, leadOut: 0.5), to: path("input.wav"))
        background.append(try daemon.startWirePlumber(withDefaultSink: "testsink", description: "TestSink"))
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "conv-smart")
        let client = try ModuleClient.start(
            daemon, name: "smart",
            arguments: """
                node.name = conv-smart mode = sink audio.position = [ FL FR ] filename = "\(path("ir.wav"))" \
                filter.smart = true filter.smart.name = swift-convolver \(record.argument)
                """)
        background.append(client)
        try daemon.waitForPorts(ofNode: "conv-smart", count: 4, timeout: 30)
        let sink = try XCTUnwrap(try daemon.nodeProperties("conv-smart"))
        XCTAssertTrue(["true", "1"].contains("\(sink.properties["filter.smart"] ?? "")"), "\(sink.properties)")
        XCTAssertEqual("\(sink.properties["filter.smart.name"] ?? "")", "swift-convolver")
        guard PipeWireInstallation.isOneDotX else {
            print("WirePlumber 0.4 has no smart filters: the keys are on the sink node, nothing routes by them")
            return
        }

        // An app that plays to the default sink goes through the convolver, on to testsink.
        let player = try spawn(["pw-play", "-P", "{ node.name = play-smart }", path("input.wav")], logName: "play-smart.log")
        try waitFor("WirePlumber put the smart filter in front of testsink", timeout: 20) {
            let links = (try? self.daemon.links()) ?? []
            return links.contains("play-smart:output_FL -> conv-smart:playback_FL")
                && links.contains("output.conv-smart:output_FL -> testsink:playback_FL")
        }
        XCTAssertFalse(
            ((try? daemon.links()) ?? []).contains { $0.hasPrefix("play-smart:") && $0.contains("testsink") },
            "the app is not linked straight to the device")
        XCTAssertTrue(player.waitForExit(timeout: 20), "pw-play finished; log: \(player.log)")

        // Disabled through the filters metadata: the next app goes straight to testsink.
        let (disabled, disableOutput) = try daemon.run([
            "pw-metadata", "-n", "filters", "\(sink.id)", "filter.smart.disabled", "true",
            "Spa:String:JSON",
        ])
        XCTAssertEqual(disabled, 0, disableOutput)
        try SinkSignals.write(SinkSignals.noise(leadIn: 0, seconds: 1.0, leadOut: 0), to: path("short.wav"))
        let direct = try spawn(["pw-play", "-P", "{ node.name = play-direct }", path("short.wav")], logName: "play-direct.log")
        try waitFor("WirePlumber linked the next app straight to testsink", timeout: 20) {
            ((try? self.daemon.links()) ?? []).contains("play-direct:output_FL -> testsink:playback_FL")
        }
        XCTAssertFalse(
            ((try? daemon.links()) ?? []).contains { $0.hasPrefix("play-direct:") && $0.contains("conv-smart") },
            "a disabled smart filter is left out")
        XCTAssertTrue(direct.waitForExit(timeout: 20), "pw-play finished; log: \(direct.log)")

        XCTAssertTrue(client.isRunning, client.log)
        client.stop()
        let result = try RecordJudge.judge(
            record, inputs: 2, outputs: 2, entries: SinkGraph.stereo(path("ir.wav")),
            segments: [.init(wet: 1, dry: 0)], played: path("input.wav"), workDirectory: daemon.runtimeDirectory)
        RecordJudge.assertExact(result, outputs: 2, label: "smart filter")
    }

    // MARK: - Without a session manager

    func testWithoutSessionManagerLinkedByHandConvolvesWithZeroAddedLatency() throws {
        try daemon.setQuantum(256)
        try SinkSignals.write(SinkSignals.impulse(frames: 4800), to: path("ir.wav"))
        try SinkSignals.write(SinkSignals.noise(leadIn: 0.8, seconds: 1.5, leadOut: 0.6), to: path("input.wav"))
        // The standalone client here (the module in the WirePlumber test).
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "conv-hand")
        let sink = try spawn(
            [
                BuildProducts.directory + "/pw-convolver", "run", "--sink", "--name", "conv-hand",
                "--description", "Convolver by hand", "--ir", path("ir.wav"), "--args", "{ \(record.argument) }",
            ],
            logName: "conv-hand.log")
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

        // Props on the sink node reach the convolver: output = gain·mix·wet + (1 − mix)·dry. Set by
        // the sink's name, as a user does: the sink node carries them.
        let (status, output) = try daemon.run([BuildProducts.directory + "/pw-convolver", "set", "conv-hand", "gain=0.5", "mix=0.8"], timeout: 30)
        XCTAssertEqual(status, 0, output)
        XCTAssertEqual(output.trimmingCharacters(in: .whitespacesAndNewlines), "conv-hand: gain=0.5 mix=0.8")
        try waitFor("Props show gain 0.5", timeout: 10) {
            (try? SinkGraph.convolverProps(self.daemon, node: "conv-hand"))?.first { $0.0 == "gain" }?.1 == 0.5
        }

        let recording = try playByHand(sink: "conv-hand", positions: ["FL", "FR"], input: path("input.wav"))
        let statistics = try XCTUnwrap(try daemon.nodeProperties("conv-hand")).properties
        XCTAssertGreaterThan(Int("\(statistics["convolver.calls"] ?? 0)") ?? 0, 0, "statistics on the sink node")
        print(
            "conv-hand: "
                + statistics.filter { $0.key.hasPrefix("convolver.") }.sorted { $0.key < $1.key }
                .map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        // Teardown of both streams (destroy order, hooks) while linked: a clean exit, no crash.
        XCTAssertEqual(sink.interrupt(), 0, "pw-convolver run --sink exits cleanly on SIGINT; log:\n\(sink.log)")
        XCTAssertTrue(
            waitUntil(timeout: 5) {
                do { return try self.daemon.nodeProperties("output.conv-hand") == nil && self.daemon.nodeProperties("conv-hand") == nil } catch {
                    return false
                }
            }, "both streams are gone with the client")
        let result = try judgeByHand(
            sink: "conv-hand", record: record, recording: recording, positions: ["FL", "FR"], input: path("input.wav"),
            entries: SinkGraph.stereo(path("ir.wav")), wet: 0.4, dry: 0.2)
        // The gain/mix glide lands exactly on 0.4/0.2 (float precision, as without Props: about
        // −130 dB); a glide that stalled a few 1e-6 short of its target measured −101 dB here.
        for (channel, output) in (result.outputs ?? []).enumerated() {
            XCTAssertLessThanOrEqual(output.errorDB, -120, "output \(channel): Props applied exactly")
        }
    }

    /// The standalone client's engine and sink format start at the daemon's default.clock.rate (a
    /// 44.1 kHz graph), so that the sink is not resampled in and out; the module does the same.
    func testStandaloneSinkStartsAtTheDaemonsRate() throws {
        daemon.stop()
        daemon = try PrivatePipeWire(name: "sinkrate", extraProperties: "default.clock.rate = 44100")
        let sink = try spawn(
            [BuildProducts.directory + "/pw-convolver", "run", "--sink", "--name", "conv-rate", "--ir", "builtin:dirac"],
            logName: "conv-rate.log")
        try waitFor("the sink's ports", timeout: 30) { (try? self.daemon.portNames(ofNode: "conv-rate").count) == 4 }
        try waitFor("convolver.rate 44100, log:\n\(sink.log)", timeout: 10) {
            ((try? self.daemon.nodeProperties("conv-rate"))??.properties["convolver.rate"]).map { "\($0)" } == "44100"
        }
        XCTAssertEqual(sink.interrupt(), 0, sink.log)
    }

    /// The shipped hall sink (pipewire-conf/swift-convolver-hall-sink.conf, as is), linked by hand.
    func testShippedHallSinkConfigByHand() throws {
        try daemon.setQuantum(256)
        let hall = try ImpulseResponse.load("builtin:hall", sampleRate: 48000)
        try SinkSignals.write(hall.channels, to: path("hall.wav"))
        let hallSeconds = Double(hall.frameCount) / 48000
        try SinkSignals.write(SinkSignals.noise(leadIn: 0.8, seconds: 1.0, leadOut: hallSeconds + 0.3), to: path("input.wav"))
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "convolver-hall")
        try ShippedConfig.text("swift-convolver-hall-sink.conf", record: record, irDirectory: daemon.runtimeDirectory)
            .write(toFile: path("hall-sink.conf"), atomically: true, encoding: .utf8)
        let client = try spawn(["pipewire", "-c", path("hall-sink.conf")], logName: "hall-sink.log")
        do {
            try daemon.waitForPorts(ofNode: "convolver-hall", count: 4, timeout: 30)
            try daemon.waitForPorts(ofNode: "output.convolver-hall", count: 2, timeout: 30)
        } catch {
            throw TestFailure("\(error)\nlog:\n\(client.log)")
        }
        XCTAssertEqual(try daemon.nodeProperties("convolver-hall")?.properties["media.class"] as? String, "Audio/Sink")
        let recording = try playByHand(sink: "convolver-hall", positions: ["FL", "FR"], input: path("input.wav"))
        // The module unloads with its host process: both streams destroyed, a clean exit.
        XCTAssertEqual(client.interrupt(), 0, "pipewire -c hall-sink.conf exits cleanly on SIGINT; log:\n\(client.log)")
        try judgeByHand(
            sink: "convolver-hall", record: record, recording: recording, positions: ["FL", "FR"], input: path("input.wav"),
            entries: SinkGraph.stereo(path("hall.wav")), wet: 0.3, dry: 0.7)
    }

    /// filter-chain's spellings, as in PipeWire's own sink-*.conf files, loaded as our module's
    /// arguments: the sink and its output named by `capture.props` / `playback.props`
    /// (`media.class = Audio/Sink` makes the node a sink), a `filename` array of one IR at two
    /// rates (the graph's 48 kHz file is used: the 44.1 kHz one is a different IR, which the judge
    /// would catch) and `resample_quality`. Linked by hand, the output is exact.
    func testFilterChainSpellingsMakeTheSameSink() throws {
        try daemon.setQuantum(256)
        try SinkSignals.write(SinkSignals.impulse(frames: 4800), to: path("ir-48000.wav"))
        try AudioFile.write(path: path("ir-44100.wav"), sampleRate: 44_100, channels: [[0.5, 0, 0, 0.25]])
        try SinkSignals.write(SinkSignals.noise(leadIn: 0.8, seconds: 1.0, leadOut: 0.4), to: path("input.wav"))
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "effect_input.fc")
        let client = try ModuleClient.start(
            daemon, name: "fc-spellings",
            arguments: """
                filename = [ "\(path("ir-44100.wav"))" "\(path("ir-48000.wav"))" ] resample_quality = 10 \(record.argument)
                capture.props = { node.name = "effect_input.fc" node.description = "FC sink" media.class = Audio/Sink
                                  audio.position = [ FL FR ] }
                playback.props = { node.name = "effect_output.fc" node.passive = true audio.position = [ FL FR ] }
                """)
        do {
            try daemon.waitForPorts(ofNode: "effect_input.fc", count: 4, timeout: 30)
            try daemon.waitForPorts(ofNode: "effect_output.fc", count: 2, timeout: 30)
        } catch {
            throw TestFailure("\(error)\nlog:\n\(client.log)")
        }
        let sinkNode = try XCTUnwrap(try daemon.nodeProperties("effect_input.fc")).properties
        XCTAssertEqual(sinkNode["media.class"] as? String, "Audio/Sink")
        XCTAssertEqual(sinkNode["node.description"] as? String, "FC sink")
        XCTAssertEqual(try daemon.nodeProperties("effect_output.fc")?.properties["node.passive"] as? Bool, true)
        let recording = try playByHand(
            sink: "effect_input.fc", output: "effect_output.fc", positions: ["FL", "FR"],
            input: path("input.wav"))
        XCTAssertEqual(client.interrupt(), 0, "the module's host exits cleanly; log:\n\(client.log)")
        try judgeByHand(
            sink: "effect_input.fc", record: record, recording: recording, positions: ["FL", "FR"],
            input: path("input.wav"), entries: SinkGraph.stereo(path("ir-48000.wav")), wet: 1, dry: 0)
    }

    /// 8 inputs → 2 outputs (the 7.1 → binaural shape): the sink and its output stream have
    /// different channel counts. A matrix module config, each input to both outputs.
    func testSevenOneToStereoSinkByHand() throws {
        try daemon.setQuantum(256)
        let positions = ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"]
        try SinkSignals.write(
            (0..<16).map { SinkSignals.impulse(frames: 960, seed: 40 + UInt64($0))[$0 % 2] },
            to: path("matrix.wav"))
        // pw-play streams from its first link; the 16 links to the sink and the recorder are made one
        // by one (~0.1 s each, more under load), so the noise starts only after all of them.
        try SinkSignals.write(
            SinkSignals.noise(leadIn: 0.5 + 0.3 * 8, seconds: 1.0, leadOut: 0.5, channels: 8),
            to: path("input.wav"))
        var entries: [ImpulseEntry] = []
        var impulses: [String] = []
        for input in 0..<8 {
            for output in 0..<2 {
                entries.append(.init(input, output, path("matrix.wav"), 2 * input + output))
                impulses.append("{ input = \(input) output = \(output) filename = \"\(path("matrix.wav"))\" channel = \(2 * input + output) }")
            }
        }
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "conv-surround")
        let client = try ModuleClient.start(
            daemon, name: "surround",
            arguments: """
                node.name = conv-surround mode = sink audio.position = [ \(positions.joined(separator: " ")) ] \
                output.position = [ FL FR ] impulses = [ \(impulses.joined(separator: " ")) ] \(record.argument)
                """)
        background.append(client)
        do {
            try daemon.waitForPorts(ofNode: "conv-surround", count: 16, timeout: 30)
            try daemon.waitForPorts(ofNode: "output.conv-surround", count: 2, timeout: 30)
        } catch {
            throw TestFailure("\(error)\nlog:\n\(client.log)")
        }
        XCTAssertEqual(try daemon.portNames(ofNode: "output.conv-surround"), ["output_FL", "output_FR"])
        let recording = try playByHand(
            sink: "conv-surround", positions: positions, outputPositions: ["FL", "FR"],
            input: path("input.wav"))
        client.stop()
        try judgeByHand(
            sink: "conv-surround", record: record, recording: recording, positions: positions, outputPositions: ["FL", "FR"],
            input: path("input.wav"), entries: entries, wet: 1, dry: 0)
    }

    /// pw-play → `sink`:playback_<POS>, output.`sink`:output_<POS> → one pw-record that also takes
    /// pw-play's output (PlayThrough). Returns the recording.
    private func playByHand(
        sink: String, output: String? = nil, positions: [String], outputPositions: [String]? = nil,
        input: String
    ) throws -> String {
        let recording = path("rec-\(sink).f32")
        let seconds = Double(try AudioFile.info(path: input).frameCount) / 48000
        try PlayThrough(
            daemon: daemon, nodeName: sink, positions: positions, outputPositions: outputPositions,
            nodeInputPrefix: "playback", outputNodeName: output ?? "output.\(sink)"
        )
        .run(inputPath: input, recordingPath: recording, seconds: seconds, tailSeconds: 0.3, tag: sink)
        return recording
    }

    /// The node's record (its client stopped) against numpy, and the recording against the record.
    @discardableResult
    private func judgeByHand(
        sink: String, record: NodeRecord, recording: String, positions: [String], outputPositions: [String]? = nil,
        input: String, entries: [ImpulseEntry], wet: Double, dry: Double,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> RecordJudge.Result {
        let outputs = outputPositions ?? positions
        let result = try RecordJudge.judge(
            record, inputs: positions.count, outputs: outputs.count, entries: entries,
            segments: [.init(wet: wet, dry: dry)], played: input, workDirectory: daemon.runtimeDirectory)
        RecordJudge.assertExact(result, outputs: outputs.count, label: "\(sink) by hand", file: file, line: line)
        try LiveVerdict(
            record: record, recording: recording, played: input, positions: positions, outputPositions: outputPositions,
            workDirectory: daemon.runtimeDirectory
        ).assertGraphPath(label: "\(sink) by hand", file: file, line: line)
        return result
    }

    /// The capture stream's ASYNC flag follows the libpipewire that runs, not the headers of the
    /// build: the package built on Debian 12 (0.3.65's headers) on a 1.x system lost half of what
    /// was played into its sink without it (measured on 1.6.9: 35 968 of 72 000 frames).
    func testCaptureStreamIsAsyncWhereTheRunningPipeWireHasTheFlag() {
        let hasAsync = PipeWireVersion.running.isAtLeast(0, 3, 73)
        XCTAssertEqual(cpw_stream_flag_async(), hasAsync ? 1 << 10 : 0, "libpipewire \(PipeWireVersion.running)")
    }

    func testUnknownChannelPositionIsRefusedInSinkMode() throws {
        // Filter mode takes any name for its port names; a stream's format needs a PipeWire position.
        let (status, output) = try daemon.run(
            [
                BuildProducts.directory + "/pw-convolver", "run", "--sink", "--name", "conv-bad",
                "--position", "FL,XQ", "--ir", "builtin:dirac",
            ], timeout: 20)
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
        let host = try RealtimeCheckHost(
            daemon: daemon, name: "conv-rtsink",
            arguments: "node.name = conv-rtsink mode = sink audio.position = [ FL FR ] filename = \"\(path("ir-a.wav"))\"")
        background.append(host.client)
        try daemon.waitForPorts(ofNode: "output.conv-rtsink", count: 2, timeout: 30)
        let nodeID = try XCTUnwrap(try daemon.nodeProperties("conv-rtsink")).id
        let record = try spawn(
            [
                "pw-record", "-P", SinkGraph.handLinkedStream("rec-rt"), "--format", "f32", "--rate", "48000",
                "--channels", "2", path("rec-rt.wav"),
            ], logName: "rec-rt.log")
        try daemon.waitForPorts(ofNode: "rec-rt", count: 2)
        let play = try spawn(["pw-play", "-P", SinkGraph.handLinkedStream("play-rt"), path("input.wav")], logName: "play-rt.log")
        try daemon.waitForPorts(ofNode: "play-rt", count: 2)
        for position in ["FL", "FR"] {
            try daemon.link("output.conv-rtsink:output_\(position)", "rec-rt:input_\(position)")
            try daemon.link("play-rt:output_\(position)", "conv-rtsink:playback_\(position)")
        }
        usleep(2_000_000)
        let callsBefore = try Self.calls(daemon, node: "conv-rtsink")
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
        // Statistics are published once a second: read them after the next publication.
        usleep(1_200_000)
        let callsAfter = try Self.calls(daemon, node: "conv-rtsink")
        _ = play.waitForExit(timeout: 20)
        record.interrupt()
        print(report.summary)
        print("convolver.calls before arming \(callsBefore), after the dump \(callsAfter)")
        let statistics = try XCTUnwrap(try daemon.nodeProperties("conv-rtsink")).properties
        XCTAssertEqual("\(statistics["convolver.ir"] ?? "")", path("ir-b.wav"), "the IR change reached the sink")
        // ~5.6 s armed at quanta 64…1024: hundreds of playback callbacks ran the convolver under watch.
        XCTAssertGreaterThan(callsAfter - callsBefore, 200, "the sink's callbacks ran while armed")
        report.assertRealtimeSafe()
        XCTAssertTrue(host.client.isRunning, "host log:\n\(host.client.log)")
    }

    /// What makes the zeros above mean something in sink mode: with the fault that allocates
    /// an array in every `RealtimeProcessor.process` call, the counter sees it on the watched data
    /// thread, i.e. the sink's playback callback runs on a thread the check watches.
    func testCounterCatchesAnAllocatingSinkCallback() throws {
        try daemon.setQuantum(256)
        try SinkSignals.write(SinkSignals.impulse(frames: 4800), to: path("ir.wav"))
        try SinkSignals.write(SinkSignals.noise(leadIn: 0.2, seconds: 5, leadOut: 0.2), to: path("input.wav"))
        let host = try RealtimeCheckHost(
            daemon: daemon, name: "conv-allocsink",
            arguments: "node.name = conv-allocsink mode = sink audio.position = [ FL FR ] filename = \"\(path("ir.wav"))\""
                + " test.fault = allocate-in-process")
        background.append(host.client)
        try daemon.waitForPorts(ofNode: "output.conv-allocsink", count: 2, timeout: 30)
        let record = try spawn(
            [
                "pw-record", "-P", SinkGraph.handLinkedStream("rec-alloc"), "--format", "f32", "--rate", "48000",
                "--channels", "2", path("rec-alloc.wav"),
            ], logName: "rec-alloc.log")
        try daemon.waitForPorts(ofNode: "rec-alloc", count: 2)
        let play = try spawn(["pw-play", "-P", SinkGraph.handLinkedStream("play-alloc"), path("input.wav")], logName: "play-alloc.log")
        try daemon.waitForPorts(ofNode: "play-alloc", count: 2)
        for position in ["FL", "FR"] {
            try daemon.link("output.conv-allocsink:output_\(position)", "rec-alloc:input_\(position)")
            try daemon.link("play-alloc:output_\(position)", "conv-allocsink:playback_\(position)")
        }
        usleep(1_000_000)
        try host.arm()
        usleep(2_000_000)
        let report = try host.dump()
        play.stop()
        record.interrupt()
        print(report.summary)
        // 2 s at 256 frames per call is ~375 calls; allow for calls at other sizes.
        XCTAssertGreaterThan(
            report.dataThreads.map(\.allocations).reduce(0, +), 100,
            "the counter must catch the allocating sink callback")
    }

    /// The sink node's `convolver.calls` statistic.
    private static func calls(_ daemon: PrivatePipeWire, node: String) throws -> Int {
        let properties = try XCTUnwrap(try daemon.nodeProperties(node)).properties
        return Int("\(properties["convolver.calls"] ?? "")") ?? 0
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

    /// White noise at 0.25 between silences (seconds at 48 kHz), different per channel.
    static func noise(leadIn: Double, seconds: Double, leadOut: Double, channels: Int = 2) -> [[Float]] {
        var random = Random(state: 0x5EED_0F_51CC)
        return (0..<channels).map { _ in
            [Float](repeating: 0, count: Int(leadIn * 48000)) + (0..<Int(seconds * 48000)).map { _ in 0.25 * random.next() }
                + [Float](repeating: 0, count: Int(leadOut * 48000))
        }
    }

    /// A stereo IR: a direct tap (different per channel) and decaying noise.
    static func impulse(frames: Int, seed: UInt64 = 3) -> [[Float]] {
        var random = Random(state: 0xC0FFEE ^ seed)
        return (0..<2).map { channel in
            (0..<frames).map { index -> Float in
                let tap: Float = index == channel * 11 ? 0.5 : 0
                return tap + 0.25 * expf(-Float(index) / Float(frames / 5)) * random.next()
            }
        }
    }

    static func write(_ channels: [[Float]], to path: String) throws {
        try AudioFile.write(path: path, sampleRate: 48000, channels: channels)
    }
}

enum SinkGraph {
    /// pw-play / pw-record properties for linking by hand without a session manager (docs/facts.md).
    static func handLinkedStream(_ name: String) -> String {
        "{ node.name = \(name) node.want-driver = false "
            + "adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve } }"
    }

    /// The convolver's own Props (`params` holding "gain") of the node `node`, from pw-dump.
    static func convolverProps(_ daemon: PrivatePipeWire, node: String) throws -> [(String, Double)] {
        for object in try daemon.dump() where (object["type"] as? String) == "PipeWire:Interface:Node" {
            let info = object["info"] as? [String: Any]
            guard ((info?["props"] as? [String: Any])?["node.name"] as? String) == node,
                let props = (info?["params"] as? [String: Any])?["Props"] as? [[String: Any]]
            else { continue }
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

    /// Stereo `file` channel i on input i → output i.
    static func stereo(_ file: String) -> [ImpulseEntry] { [.init(0, 0, file, 0), .init(1, 1, file, 1)] }
}
