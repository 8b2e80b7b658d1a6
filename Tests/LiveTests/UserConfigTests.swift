import Convolution
import ConvolverGraph
import ConvolverNode
import Foundation
import Glibc
import XCTest

/// Sink mode and the ready-made configs of pipewire-conf/: each config is run as shipped (its
/// /path/to/irs/ placeholder rewritten to generated IRs) by `pipewire -c` in a private daemon,
/// audio is played through it (linked by hand: no session manager here), the node's record is
/// compared with numpy's N×M convolution of what it received and the recording with the record
/// (LiveJudges).
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

    /// The record of the node under test.
    private var record: NodeRecord!

    /// Runs pipewire-conf/`name` with its IR directory replaced by the daemon's directory, and the
    /// node's record turned on.
    private func startConfig(_ name: String, node: String, portCount: Int) throws -> BackgroundProcess {
        record = NodeRecord(directory: daemon.runtimeDirectory, name: node)
        let text = try ShippedConfig.text(name, record: record, irDirectory: daemon.runtimeDirectory)
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
    static func impulse(frames: Int, tap: Int, seed: UInt64) -> [Float] {
        var random = TestSignals.Random(state: 0x1234_5678 ^ (seed &* 0x9E37_79B9))
        return (0..<frames).map { index in
            (index == tap ? 0.5 : 0) + 0.2 * expf(-Float(index) / Float(frames / 5)) * random.next()
        }
    }

    /// Plays noise through the node, then stops `client` (the node writes its record) and judges.
    private func playAndCompare(
        node: String, client: BackgroundProcess, outputNode: String? = nil, positions: [String],
        outputPositions: [String]? = nil, inputPrefix: String,
        entries: [ImpulseEntry], wet: Double, dry: Double, irSeconds: Double,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let inputs = positions.count
        // pw-play streams from its first link; the links are made one by one (two per input, ~0.1 s
        // each), so the noise starts only after all of them are in place (8 inputs took ~1.4 s).
        let leadIn = 0.5 + 0.3 * Double(inputs)
        try TestSignals.write(
            TestSignals.noise(seconds: 1.5, channels: inputs, leadIn: leadIn, leadOut: irSeconds + 0.3),
            to: path("input.wav"))
        try PlayThrough(
            daemon: daemon, nodeName: node, positions: positions, outputPositions: outputPositions,
            nodeInputPrefix: inputPrefix, outputNodeName: outputNode
        )
        .run(
            inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: leadIn + 1.5 + irSeconds,
            tailSeconds: 0.3, tag: node)
        if let properties = try? daemon.nodeProperties(node) {
            print(
                "\(node): "
                    + properties.properties.filter { $0.key.hasPrefix("convolver.") }
                    .sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        }
        XCTAssertTrue(client.isRunning, client.log, file: file, line: line)
        client.stop()
        try LiveVerdict(
            record: record, recording: path("rec.f32"), played: path("input.wav"), positions: positions,
            outputPositions: outputPositions, workDirectory: daemon.runtimeDirectory
        )
        .assertExact(entries: entries, segments: [.init(wet: wet, dry: dry)], label: node, file: file, line: line)
    }

    // MARK: - Sink mode

    /// `mode = sink`: an Audio/Sink with playback_<POS> inputs; what plays into it arrives
    /// convolved on its output stream's output.<name>:output_<POS> (recorded downstream) and
    /// matches the reference.
    func testSinkModeIsAnAudioSinkAndConvolves() throws {
        let ir = [Self.impulse(frames: 2400, tap: 0, seed: 1), Self.impulse(frames: 2400, tap: 5, seed: 2)]
        try TestSignals.write(ir, to: path("ir.wav"))
        record = NodeRecord(directory: daemon.runtimeDirectory, name: "conv-sink")
        let client = try ModuleClient.start(
            daemon, name: "sink",
            arguments: "node.name = conv-sink mode = sink audio.position = [ FL FR ] filename = \"\(path("ir.wav"))\" \(record.argument)")
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "conv-sink", count: 4, timeout: 30)
        try daemon.waitForPorts(ofNode: "output.conv-sink", count: 2, timeout: 30)
        XCTAssertEqual(try daemon.portNames(ofNode: "conv-sink"), ["monitor_FL", "monitor_FR", "playback_FL", "playback_FR"])
        XCTAssertEqual(try daemon.portNames(ofNode: "output.conv-sink"), ["output_FL", "output_FR"])
        let node = try XCTUnwrap(try daemon.nodeProperties("conv-sink"))
        XCTAssertEqual(node.properties["media.class"] as? String, "Audio/Sink")
        XCTAssertEqual(node.properties["node.virtual"] as? Bool, true, "pw-dump gives booleans as JSON booleans")
        try playAndCompare(
            node: "conv-sink", client: client, outputNode: "output.conv-sink", positions: ["FL", "FR"], inputPrefix: "playback",
            entries: [.init(0, 0, path("ir.wav"), 0), .init(1, 1, path("ir.wav"), 1)],
            wet: 1, dry: 0, irSeconds: 0.05)
    }

    // MARK: - Ready-made configs

    func testHallSinkConfig() throws {
        let hall = try ImpulseResponse.load("builtin:hall", sampleRate: 48000)
        try TestSignals.write(hall.channels, to: path("hall.wav"))
        let client = try startConfig("swift-convolver-hall-sink.conf", node: "convolver-hall", portCount: 4)
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "output.convolver-hall", count: 2, timeout: 30)
        XCTAssertEqual(try daemon.nodeProperties("convolver-hall")?.properties["media.class"] as? String, "Audio/Sink")
        try playAndCompare(
            node: "convolver-hall", client: client, outputNode: "output.convolver-hall", positions: ["FL", "FR"], inputPrefix: "playback",
            entries: [.init(0, 0, path("hall.wav"), 0), .init(1, 1, path("hall.wav"), 1)],
            wet: 0.3, dry: 0.7, irSeconds: Double(hall.frameCount) / 48000)
    }

    func testRoomCorrectionConfig() throws {
        let fir = [Self.impulse(frames: 4096, tap: 40, seed: 3), Self.impulse(frames: 4096, tap: 40, seed: 4)]
        try TestSignals.write(fir, to: path("room-correction.wav"))
        let client = try startConfig("swift-convolver-room-correction.conf", node: "convolver-room", portCount: 4)
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "output.convolver-room", count: 2, timeout: 30)
        // gain = 0.501 in the config: −6 dB.
        try playAndCompare(
            node: "convolver-room", client: client, outputNode: "output.convolver-room", positions: ["FL", "FR"], inputPrefix: "playback",
            entries: [.init(0, 0, path("room-correction.wav"), 0), .init(1, 1, path("room-correction.wav"), 1)],
            wet: 0.501, dry: 0, irSeconds: 0.1)
    }

    func testTrueStereoFourChannelConfig() throws {
        try TestSignals.write(
            (0..<4).map { Self.impulse(frames: 4800, tap: $0 * 3, seed: 10 + UInt64($0)) },
            to: path("true-stereo-4ch.wav"))
        let client = try startConfig("swift-convolver-true-stereo.conf", node: "convolver-true-stereo", portCount: 4)
        defer { client.stop() }
        let file = path("true-stereo-4ch.wav")
        try playAndCompare(
            node: "convolver-true-stereo", client: client, positions: ["FL", "FR"], inputPrefix: "input",
            entries: [.init(0, 0, file, 0), .init(0, 1, file, 1), .init(1, 0, file, 2), .init(1, 1, file, 3)],
            wet: 1, dry: 0, irSeconds: 0.1)
    }

    func testTrueStereoTwoFilesConfig() throws {
        try TestSignals.write(
            [Self.impulse(frames: 4800, tap: 0, seed: 20), Self.impulse(frames: 4800, tap: 9, seed: 21)],
            to: path("left.wav"))
        try TestSignals.write(
            [Self.impulse(frames: 4800, tap: 11, seed: 22), Self.impulse(frames: 4800, tap: 2, seed: 23)],
            to: path("right.wav"))
        let client = try startConfig("swift-convolver-true-stereo-two-files.conf", node: "convolver-true-stereo-2", portCount: 4)
        defer { client.stop() }
        let left = path("left.wav"), right = path("right.wav")
        try playAndCompare(
            node: "convolver-true-stereo-2", client: client, positions: ["FL", "FR"], inputPrefix: "input",
            entries: [.init(0, 0, left, 0), .init(0, 1, left, 1), .init(1, 0, right, 0), .init(1, 1, right, 1)],
            wet: 1, dry: 0, irSeconds: 0.1)
    }

    func testCabinetMonoConfig() throws {
        try TestSignals.write([Self.impulse(frames: 2400, tap: 0, seed: 30)], to: path("cabinet.wav"))
        let client = try startConfig("swift-convolver-cabinet-mono.conf", node: "convolver-cabinet", portCount: 2)
        defer { client.stop() }
        XCTAssertEqual(try daemon.portNames(ofNode: "convolver-cabinet"), ["input_MONO", "output_MONO"])
        try playAndCompare(
            node: "convolver-cabinet", client: client, positions: ["MONO"], inputPrefix: "input",
            entries: [.init(0, 0, path("cabinet.wav"), 0)], wet: 1, dry: 0, irSeconds: 0.05)
    }

    func testCabinetStereoConfig() throws {
        try TestSignals.write([Self.impulse(frames: 2400, tap: 0, seed: 31)], to: path("cabinet.wav"))
        let client = try startConfig("swift-convolver-cabinet-stereo.conf", node: "convolver-cabinet-stereo", portCount: 4)
        defer { client.stop() }
        let cabinet = path("cabinet.wav")
        try playAndCompare(
            node: "convolver-cabinet-stereo", client: client, positions: ["FL", "FR"], inputPrefix: "input",
            entries: [.init(0, 0, cabinet, 0), .init(1, 1, cabinet, 0)], wet: 1, dry: 0, irSeconds: 0.05)
    }

    /// 8 inputs → 2 ears through a synthetic 14-channel HRIR in HeSuVi's channel order; the
    /// reference maps the channels independently of the config (filter-chain's hesuvi mapping).
    func testVirtualSurroundHeSuViConfig() throws {
        // Each HRIR channel distinct: its own tap position and noise.
        try TestSignals.write((0..<14).map { Self.impulse(frames: 960, tap: 2 * $0, seed: 40 + UInt64($0)) }, to: path("hrir.wav"))
        let client = try startConfig("swift-convolver-virtual-surround-7.1-hesuvi.conf", node: "convolver-surround", portCount: 16)
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "output.convolver-surround", count: 2, timeout: 30)
        let positions = ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"]
        XCTAssertEqual(
            try daemon.portNames(ofNode: "convolver-surround"),
            (positions.map { "monitor_\($0)" } + positions.map { "playback_\($0)" }).sorted())
        XCTAssertEqual(try daemon.portNames(ofNode: "output.convolver-surround"), ["output_FL", "output_FR"])
        try playAndCompare(
            node: "convolver-surround", client: client, outputNode: "output.convolver-surround", positions: positions, outputPositions: ["FL", "FR"],
            inputPrefix: "playback", entries: ImpulseEntry.hesuvi(path("hrir.wav")), wet: 1, dry: 0, irSeconds: 0.05)
    }
}

extension UserConfigTests {
    /// 8 inputs → 2 ears from the KEMAR SOFA set: each input through the set's filters for its
    /// speaker's direction (the test's own table of ITU angles), LFE unfiltered, each ear scaled by
    /// its autogain (which the node must report); the filters at the graph's 48 kHz.
    func testVirtualSurroundSOFAConfig() throws {
        let name = "swift-convolver-virtual-surround-7.1-sofa.conf"
        let client = try startConfig(name, node: "convolver-sofa-surround", portCount: 16)
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "output.convolver-sofa-surround", count: 2, timeout: 30)
        let positions = ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"]
        let azimuths: [String: Double] = ["FL": 30, "FR": -30, "FC": 0, "RL": 150, "RR": -150, "SL": 90, "SR": -90]
        let set = try HRTFSet(path: SOFATests.kemar)
        var filters: [[[Float]]] = []  // per input, per ear
        for position in positions {
            if let azimuth = azimuths[position] {
                filters.append(try ImpulseResponse.load(set, direction: SourceDirection(azimuth: azimuth), sampleRate: 48000).channels)
            } else {
                filters.append([[1], [1]])  // LFE: unfiltered
            }
        }
        // The ears' autogain for this matrix (its levels are AutogainTests' to judge), as the node reports it.
        let matrix = ConvolutionMatrix(
            inputCount: 8, outputCount: 2,
            entries: filters.enumerated().flatMap { input, ears in
                ears.enumerated().map { ConvolutionMatrix.Entry(input: input, output: $0.offset, impulse: $0.element) }
            })
        let gains = try Autogain.gains(matrix, sampleRate: 48000)
        var reported = ""
        XCTAssertTrue(
            waitUntil(timeout: 5) {  // statistics come once a second
                reported = ((try? self.daemon.nodeProperties("convolver-sofa-surround"))?.properties["convolver.autogain-db"] as? String) ?? ""
                return reported.contains(",")
            }, "convolver.autogain-db: '\(reported)'")
        XCTAssertEqual(reported, gains.map { String(format: "%.2f", 20 * log10($0)) }.joined(separator: ","))
        var entries: [ImpulseEntry] = []
        for (input, ears) in filters.enumerated() {
            let file = path("sofa-\(input).wav")
            try TestSignals.write([ears[0].map { $0 * gains[0] }, ears[1].map { $0 * gains[1] }], to: file)
            entries += [.init(input, 0, file, 0), .init(input, 1, file, 1)]
        }
        try playAndCompare(
            node: "convolver-sofa-surround", client: client, outputNode: "output.convolver-sofa-surround",
            positions: positions, outputPositions: ["FL", "FR"], inputPrefix: "playback", entries: entries,
            wet: 1, dry: 0, irSeconds: 0.05)
    }
}

/// The `mode` and `output.position` keys (no PipeWire needed).
final class SinkModeConfigurationTests: XCTestCase {
    func testModeKey() throws {
        XCTAssertEqual(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = builtin:dirac").0.mode, .filter)
        XCTAssertEqual(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = builtin:dirac mode = sink").0.mode, .sink)
        XCTAssertEqual(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = builtin:dirac mode = source").0.mode, .source)
        XCTAssertEqual(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = builtin:dirac mode = stream").0.mode, .stream)
        XCTAssertThrowsError(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = builtin:dirac mode = speaker")) { error in
            XCTAssertEqual((error as? NodeConfigurationError)?.key, "mode")
            XCTAssertTrue("\(error)".contains("'speaker' is not filter, sink, source, stream"), "\(error)")
        }
    }

    func testOutputPositions() throws {
        let (configuration, _) = try NodeConfiguration.parse(
            pipeWire: .running,
            arguments: """
                audio.position = [ FL FR FC ] output.position = [ FL FR ]
                impulses = [ { input = 2 output = 1 filename = builtin:dirac } ]
                """)
        XCTAssertEqual(configuration.channelCount, 3)
        XCTAssertEqual(configuration.outputCount, 2)
        // An output index beyond the outputs names the entry.
        XCTAssertThrowsError(
            try NodeConfiguration.parse(
                pipeWire: .running,
                arguments: """
                    audio.position = [ FL FR FC ] output.position = [ FL FR ]
                    impulses = [ { input = 2 output = 2 filename = builtin:dirac } ]
                    """)
        ) { error in XCTAssertEqual((error as? NodeConfigurationError)?.key, "impulses[0].output") }
        // Different counts need a matrix.
        XCTAssertThrowsError(
            try NodeConfiguration.parse(
                pipeWire: .running, arguments: "audio.position = [ FL FR FC ] output.position = [ FL FR ] filename = builtin:dirac")
        ) {
            error in XCTAssertEqual((error as? NodeConfigurationError)?.key, "output.position")
        }
    }
}
