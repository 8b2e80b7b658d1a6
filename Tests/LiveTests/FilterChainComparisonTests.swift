import Foundation
import XCTest

/// Switching from filter-chain: PipeWire's own `sink-virtual-surround-7.1-hesuvi.conf`, as shipped,
/// and our translation of it (pipewire-conf/swift-convolver-virtual-surround-7.1-hesuvi.conf) run
/// side by side on one 14-channel HRIR. One player feeds both sinks and one recorder takes both
/// outputs in the same cycles, so they are compared cycle by cycle (judge_against_filter_chain.py),
/// beside our node's own record held to numpy's convolution. Both add no latency, so each cycle of
/// their outputs must agree to float precision, but for the few where one of the two sinks missed
/// the asynchronous player's buffer (counted; see the judge). A third node runs a mistranslated
/// copy (the FR input's ears swapped), which the same judge must fail in every cycle.
final class FilterChainComparisonTests: XCTestCase {
    private var daemon: PrivatePipeWire!
    private var background: [BackgroundProcess] = []
    private static let positions = ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"]
    private static let quantum = 256
    private static let hrirFrames = 512

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
        // Debian 12's PipeWire 0.3.65 ships no filter-chain/ sink configs; 1.4.2's package does.
        try XCTSkipUnless(
            PipeWireInstallation.isOneDotX,
            "PipeWire \(PipeWireInstallation.version) ships no "
                + "sink-virtual-surround-7.1-hesuvi.conf; this comparison runs on PipeWire 1.4.2 (make test-pipewire-1.4)")
        daemon = try PrivatePipeWire(name: "filter-chain-hesuvi")
        try daemon.setQuantum(Self.quantum)
    }

    override func tearDown() {
        for process in background.reversed() { process.stop() }
        background = []
        daemon?.stop()
        daemon = nil
    }

    private func path(_ name: String) -> String { daemon.runtimeDirectory + "/" + name }

    /// PipeWire's shipped config as a `pipewire -c` client: the context it needs before its module,
    /// the HRIR's path made absolute, and its streams left for the test to link.
    private func filterChainConfig(hrir: String) throws -> String {
        let shippedPath =
            (ProcessInfo.processInfo.environment["PIPEWIRE_CONFIG_DIR"] ?? "/usr/share/pipewire")
            + "/filter-chain/sink-virtual-surround-7.1-hesuvi.conf"
        let shipped = try String(contentsOfFile: shippedPath, encoding: .utf8)
        guard shipped.contains("\"hrir_hesuvi/hrir.wav\""), shipped.contains("context.modules = [") else {
            throw TestFailure("\(shippedPath) is not the HeSuVi sink this test knows")
        }
        return try ModuleClient.asClient(
            shipped
                .replacingOccurrences(of: "\"hrir_hesuvi/hrir.wav\"", with: "\"\(hrir)\"")
                .replacingOccurrences(of: "capture.props = {", with: "capture.props = { node.autoconnect = false")
                .replacingOccurrences(of: "playback.props = {", with: "playback.props = { node.autoconnect = false"))
    }

    func testOurHeSuViTranslationSoundsLikeFilterChains() throws {
        // 14 distinct HRIR channels (HeSuVi's order), each with its own tap and decaying noise.
        var random = TestSignals.Random(state: 0x5EED_04E5)
        let hrir: [[Float]] = (0..<14).map { channel in
            (0..<Self.hrirFrames).map { n -> Float in
                let tap: Float = n == 2 * channel ? 0.5 : 0
                return tap + 0.2 * expf(-Float(n) / 96) * random.next()
            }
        }
        try TestSignals.write(hrir, to: path("hrir.wav"))
        // WirePlumber 0.5 gives filter-chain's streams their ports (headless, 1.4.2's come up with one each without it).
        background.append(try daemon.startWirePlumber())
        try filterChainConfig(hrir: path("hrir.wav")).write(toFile: path("filter-chain.conf"), atomically: true, encoding: .utf8)
        background.append(try daemon.spawn(["pipewire", "-c", path("filter-chain.conf")], logName: "filter-chain.log"))
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "convolver-surround")
        let ours = try ShippedConfig.text(
            "swift-convolver-virtual-surround-7.1-hesuvi.conf", record: record,
            irDirectory: daemon.runtimeDirectory
        )
        .replacingOccurrences(
            of: "mode             = sink",
            with: """
                mode = sink capture.props = { node.autoconnect = false } playback.props = { node.autoconnect = false }
                """)
        try ours.write(toFile: path("ours.conf"), atomically: true, encoding: .utf8)
        let client = try daemon.spawn(["pipewire", "-c", path("ours.conf")], logName: "ours.log")
        background.append(client)
        let miswired = ours.replacingOccurrences(of: "\"convolver-surround\"", with: "\"miswired\"")
            .replacingOccurrences(of: "channel =  8 }   # FR -> left ear", with: "channel =  7 }")
            .replacingOccurrences(of: "channel =  7 }   # FR -> right ear", with: "channel =  8 }")
            .replacingOccurrences(of: record.path, with: path("miswired-calls.f32"))
        XCTAssertFalse(miswired.contains("# FR ->"), "the mistranslation no longer applies to the shipped config")
        try miswired.write(toFile: path("miswired.conf"), atomically: true, encoding: .utf8)
        background.append(try daemon.spawn(["pipewire", "-c", path("miswired.conf")], logName: "miswired.log"))
        let theirs = (input: "effect_input.virtual-surround-7.1-hesuvi", output: "effect_output.virtual-surround-7.1-hesuvi")
        for (node, count) in [
            (theirs.input, 8), (theirs.output, 2), ("convolver-surround", 16), ("output.convolver-surround", 2),
            ("miswired", 16), ("output.miswired", 2),
        ] {
            try daemon.waitForPorts(ofNode: node, count: count, timeout: 60)
        }

        // Noise only once every link is in place (four per input, made one by one).
        let leadIn = 0.5 + 0.45 * Double(Self.positions.count), seconds = 2.0
        try TestSignals.write(
            TestSignals.noise(seconds: seconds, channels: Self.positions.count, leadIn: leadIn, leadOut: 0.3),
            to: path("input.wav"))
        let recorded = Self.positions.map { "input_\($0)" } + ["theirs_FL", "theirs_FR", "ours_FL", "ours_FR", "miswired_FL", "miswired_FR"]
        let recorder = try daemon.spawn(
            [
                try SyncRecorder.executable.get(), "rec", (0..<recorded.count).map { "AUX\($0)" }.joined(separator: ","),
                path("rec.f32"), "60",
            ], logName: "rec.log")
        background.append(recorder)
        try daemon.waitForPorts(ofNode: "rec", count: recorded.count)
        for (index, output) in [
            "\(theirs.output):output_FL", "\(theirs.output):output_FR",
            "output.convolver-surround:output_FL", "output.convolver-surround:output_FR",
            "output.miswired:output_FL", "output.miswired:output_FR",
        ].enumerated() {
            try daemon.link(output, "rec:input_AUX\(Self.positions.count + index)")
        }
        let player = try daemon.spawn(
            [
                "pw-play", "-P",
                "{ node.name = play node.want-driver = false node.autoconnect = false "
                    + "adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve } }",
                "--channels", "\(Self.positions.count)", "--channel-map", Self.positions.joined(separator: ","),
                path("input.wav"),
            ], logName: "play.log")
        background.append(player)
        try daemon.waitForPorts(ofNode: "play", count: Self.positions.count)
        for (index, position) in Self.positions.enumerated() {
            try daemon.link("play:output_\(position)", "rec:input_AUX\(index)")
            try daemon.link("play:output_\(position)", "\(theirs.input):playback_\(position)")
            try daemon.link("play:output_\(position)", "convolver-surround:playback_\(position)")
            try daemon.link("play:output_\(position)", "miswired:playback_\(position)")
        }
        XCTAssertTrue(player.waitForExit(timeout: 3 * (leadIn + seconds) + 10), "pw-play did not finish: \(player.log)")
        usleep(300_000)
        recorder.interrupt()
        XCTAssertTrue(client.isRunning, client.log)
        client.stop()  // writes the record

        // Our node: numpy's 8x2 convolution of its own input (the mapping written out independently of the config).
        let leftRight: [String: (Int, Int)] = [
            "FL": (0, 1), "FR": (8, 7), "FC": (6, 13), "LFE": (6, 13),
            "RL": (4, 5), "RR": (12, 11), "SL": (2, 3), "SR": (10, 9),
        ]
        let entries = try Self.positions.enumerated().flatMap { input, position -> [ImpulseEntry] in
            let (left, right) = try XCTUnwrap(leftRight[position])
            return [.init(input, 0, path("hrir.wav"), left), .init(input, 1, path("hrir.wav"), right)]
        }
        let dsp = try RecordJudge.judge(
            record, inputs: 8, outputs: 2, entries: entries, segments: [.init(wet: 1, dry: 0)],
            played: path("input.wav"), workDirectory: daemon.runtimeDirectory)
        RecordJudge.assertExact(dsp, outputs: 2, label: "convolver-surround")

        // Beside filter-chain, cycle by cycle.
        let comparison = try FilterChainJudge.compare(
            recording: path("rec.f32"), channels: recorded.count, quantum: Self.quantum, ours: [10, 11], theirs: [8, 9],
            miswired: [12, 13], limitDB: -90, workDirectory: daemon.runtimeDirectory)
        print("HeSuVi beside filter-chain \(PipeWireInstallation.version): \(comparison)")
        FilterChainJudge.assertAgrees(
            comparison, minimumCycles: Int(0.5 * seconds * 48000) / Self.quantum, limitDB: -90, outputsMayBeSwapped: false,
            label: "our HeSuVi translation")
    }
}
