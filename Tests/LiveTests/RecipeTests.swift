import Convolution
import EngineTestSupport
import Foundation
import XCTest

/// The README's recipes, run as a user runs them (`Recipe`, `RecipeRunner`): the Debian package
/// installed with dpkg in an isolated system, a fresh home with the user's files in it, a private
/// daemon with WirePlumber, and a null sink `device` standing in for the user's headphones or
/// speakers (the default output). The commands are the README's own. Then an app plays (or the
/// recipe plays itself): WirePlumber must route it through the convolver to the device, what
/// reaches the device must be the node's output (GraphJudge, from the device's monitor) and the
/// node's output must be the convolution of what it got (RecordJudge; the config's own DSP is
/// also UserConfigTests' and FilterGraphTests').
final class RecipeTests: XCTestCase {
    private var daemon: PrivatePipeWire!
    private var system: IsolatedSystem!
    private var runner: RecipeRunner!
    private var background: [BackgroundProcess] = []
    /// The recorder of the device's monitor.
    private var ears: BackgroundProcess?
    private var home: String { runner.home }

    override func setUpWithError() throws {
        let package = try BuildProducts.requireDebianPackage()
        daemon = try PrivatePipeWire(name: "recipes")
        try daemon.setQuantum(256)
        system = try IsolatedSystem(directory: daemon.runtimeDirectory + "/isolated")
        let install = try system.run(["dpkg", "-i", package])
        guard install.status == 0 else { throw TestFailure("dpkg -i: \(install.output)") }
        runner = try RecipeRunner(daemon: daemon, system: system, home: daemon.runtimeDirectory + "/home")
        background.append(try daemon.startWirePlumber(withDefaultSink: "device", description: "Headphones"))
    }

    override func tearDown() {
        runner?.stop()
        for process in background { process.stop() }
        background = []
        system?.remove()
        daemon?.stop()
        daemon = nil
    }

    private func userFile(_ relative: String) throws -> String {
        let path = home + "/" + relative
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        return path
    }

    /// Records the device's monitor (what the user hears), linked by WirePlumber.
    private func recordDevice() throws -> String {
        let recording = daemon.runtimeDirectory + "/heard.wav"
        let ears = try daemon.spawn(
            [
                "pw-record", "--target", "device", "-P",
                "{ node.name = ears stream.capture.sink = true node.target = device target.object = device node.dont-reconnect = true }",
                "--format", "f32", "--rate", "48000", "--channels", "2", recording,
            ], logName: "ears.log")
        background.append(ears)
        self.ears = ears
        guard waitUntil(timeout: 20, { ((try? self.daemon.links()) ?? []).contains("device:monitor_FL -> ears:input_FL") })
        else { throw TestFailure("WirePlumber did not link the recorder to the device's monitor") }
        return recording
    }

    /// An app playing `channels` of noise to the default output: WirePlumber must link it to
    /// `sink`, and `sink`'s output stream `stream` to the device.
    private func playToDefault(channels: Int, sink: String, stream: String) throws {
        let file = daemon.runtimeDirectory + "/app.wav"
        try TestSignals.write(TestSignals.noise(seconds: 1.5, channels: channels, leadIn: 0.3, leadOut: 0.5), to: file)
        let app = try daemon.spawn(["pw-play", "-P", "{ node.name = app }", file], logName: "app.log")
        var links: Set<String> = []
        _ = waitUntil(timeout: 10) {
            links = (try? self.daemon.links()) ?? []
            return links.contains("app:output_FL -> \(sink):playback_FL") || !app.isRunning
        }
        XCTAssertTrue(links.contains("app:output_FL -> \(sink):playback_FL"), "the app plays into \(sink): \(links.sorted())")
        XCTAssertFalse(links.contains { $0.hasPrefix("app:") && $0.contains("device") }, "and not straight to the device")
        XCTAssertTrue(
            links.contains("\(stream):output_FL -> device:playback_FL") && links.contains("\(stream):output_FR -> device:playback_FR"),
            "\(stream) plays to the device: \(links.sorted())")
        XCTAssertTrue(
            links.contains("device:monitor_FL -> ears:input_FL") && !links.contains { $0.hasSuffix("-> ears:input_FL") && !$0.hasPrefix("device:") },
            "the ears still hear the device alone: \(links.sorted())")
        XCTAssertTrue(app.waitForExit(timeout: 20), "the app finished: \(app.log)")
        usleep(300_000)
    }

    /// Stops the unit `unit` (the node writes its record) and judges what was heard and the node's record.
    private func judge(
        unit: String, record: NodeRecord, heard: String, inputs: Int, outputs: Int,
        heardChannels: [Int], entries: [ImpulseEntry]?, wet: Double = 1, dry: Double = 0, label: String
    ) throws {
        let process = try XCTUnwrap(runner.units[unit])
        XCTAssertTrue(process.isRunning, "swift-convolver@\(unit) runs: \(process.log)")
        _ = ears?.interrupt()
        process.stop()
        let graph = try GraphJudge.judge(
            recording: heard, record: record, inputs: inputs, outputs: outputs, channels: heardChannels,
            workDirectory: daemon.runtimeDirectory)
        GraphJudge.assertNodeOutputRecorded(graph, names: ["device monitor FL", "device monitor FR"], label: label)
        guard let entries else { return }
        let result = try RecordJudge.judge(
            record, inputs: inputs, outputs: outputs, entries: entries, segments: [.init(wet: wet, dry: dry)],
            played: nil, workDirectory: daemon.runtimeDirectory)
        RecordJudge.assertExact(result, outputs: outputs, label: label)
    }

    /// A recipe that makes `sink` the default output (or keeps it so): run it, let an app play
    /// `inputs` channels to the default output, judge the sink.
    private func runSinkRecipe(
        _ title: String, unit: String, sink: String, stream: String, inputs: Int, entries: [ImpulseEntry],
        wet: Double = 1, label: String
    ) throws {
        let heard = try recordDevice()
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: sink)
        try runner.run(try Recipe(title), record: record, nodes: [unit: (sink, 2 * inputs)])
        try playToDefault(channels: inputs, sink: sink, stream: stream)
        try judge(
            unit: unit, record: record, heard: heard, inputs: inputs, outputs: 2, heardChannels: [inputs, inputs + 1],
            entries: entries, wet: wet, label: label)
    }

    func testHeadphonesVirtualSurroundFromHeSuViWAV() throws {
        let hrir = try userFile("Downloads/hrir.wav")
        try TestSignals.write((0..<14).map { UserConfigTests.impulse(frames: 960, tap: 2 * $0, seed: 40 + UInt64($0)) }, to: hrir)
        try runSinkRecipe(
            "Headphones: 7.1 virtual surround", unit: "hesuvi", sink: "convolver-surround", stream: "output.convolver-surround",
            inputs: 8, entries: ImpulseEntry.hesuvi(hrir), label: "HeSuVi recipe")
    }

    func testRoomCorrectionFromOneFIRPerSpeaker() throws {
        // The tool's export at both rates, each file different: the node must take the 48 kHz ones.
        for (speaker, seed) in [("left", UInt64(60)), ("right", 70)] {
            for (rate, offset) in [(44100, UInt64(0)), (48000, 5)] {
                try AudioFile.write(
                    path: try userFile("room/\(speaker)-\(rate).wav"), sampleRate: Double(rate),
                    channels: [UserConfigTests.impulse(frames: 4096, tap: 40, seed: seed + offset)])
            }
        }
        try runSinkRecipe(
            "Room correction", unit: "room", sink: "room-correction", stream: "output.room-correction", inputs: 2,
            entries: [.init(0, 0, home + "/room/left-48000.wav", 0), .init(1, 1, home + "/room/right-48000.wav", 0)],
            wet: pow(10, -6.0 / 20), label: "room-correction recipe")
    }

    /// The ready-made SOFA config, run by name from the package's directory: its own DSP is
    /// UserConfigTests' (exact against libmysofa); here the route, the azimuth set live, and that
    /// the ears hear two different channels.
    func testHeadphonesVirtualSurroundFromSOFA() throws {
        let heard = try recordDevice()
        try runner.run(
            try Recipe("Headphones: virtual surround from a SOFA"),
            nodes: ["swift-convolver-virtual-surround-7.1-sofa": ("convolver-sofa-surround", 16)])
        let status = try system.run(["pw-convolver", "status", "convolver-sofa-surround", "--json"], environment: runner.environment)
        let nodes = (try? JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any])?["nodes"] as? [[String: Any]]
        let props = nodes?.first?["props"] as? [String: Any]
        XCTAssertEqual(props?["sofa.azimuth"] as? Double, 20, "the azimuth set live: \(status.output)")
        try playToDefault(channels: 8, sink: "convolver-sofa-surround", stream: "output.convolver-sofa-surround")
        _ = ears?.interrupt()
        let ears = try AudioFile.read(path: heard).channels
        let loudness = ears.map { channel in sqrt(channel.reduce(0) { $0 + Double($1 * $1) } / Double(max(1, channel.count))) }
        XCTAssertTrue(loudness.allSatisfy { $0 > 1e-3 }, "both ears hear it: RMS \(loudness)")
        XCTAssertNotEqual(ears[0], ears[1], "binaural: the ears differ")
    }

    /// The reverb recipe, then the live-control recipe on the same node.
    func testReverbForOneAppAndLiveControl() throws {
        try TestSignals.write(TestSignals.syntheticImpulse(frames: 9600), to: try userFile("Music/church.wav"))
        try TestSignals.write(TestSignals.syntheticImpulse(frames: 4800), to: try userFile("Music/cathedral.wav"))
        try TestSignals.write(TestSignals.noise(seconds: 1.5, leadIn: 0.3, leadOut: 0.6), to: try userFile("Music/song.wav"))
        let heard = try recordDevice()
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "convolver-hall")
        try runner.run(try Recipe("A reverb for one app"), record: record, nodes: ["reverb": ("convolver-hall", 4)])
        try runner.run(try Recipe("Live control"))
        let status = try system.run(["pw-convolver", "status", "convolver-hall"], environment: runner.environment)
        XCTAssertTrue(status.output.contains("filename=\(home)/Music/cathedral.wav"), "the new IR plays: \(status.output)")
        try judge(
            unit: "reverb", record: record, heard: heard, inputs: 2, outputs: 2, heardChannels: [2, 3],
            entries: ImpulseEntry.parallel(channels: 2, file: home + "/Music/church.wav"), wet: 0.3, dry: 0.7,
            label: "reverb recipe")
    }

    /// The user's interface is a player nothing links (its capture port) and the null sink
    /// (its playback ports): the recipe's two `# yours` lines name them.
    func testGuitarCabinetOnALiveInput() throws {
        let cabinet = try userFile("Music/cabinet.wav")
        try TestSignals.write([UserConfigTests.impulse(frames: 2400, tap: 0, seed: 80)], to: cabinet)
        let riff = daemon.runtimeDirectory + "/riff.wav"
        try TestSignals.write(TestSignals.noise(seconds: 1.5, channels: 1, leadIn: 0.5, leadOut: 0.5), to: riff)
        let heard = try recordDevice()
        let guitar = try daemon.spawn(
            ["pw-play", "-P", "{ node.name = guitar node.autoconnect = false }", riff], logName: "guitar.log")
        background.append(guitar)
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "convolver-cabinet")
        try runner.run(
            try Recipe("A guitar cabinet"), yours: ["guitar": "guitar:output_MONO", "speakers": "device"], record: record,
            nodes: ["cabinet": ("convolver-cabinet", 2)])
        XCTAssertTrue(guitar.waitForExit(timeout: 20), "the guitar played: \(guitar.log)")
        usleep(300_000)
        try judge(
            unit: "cabinet", record: record, heard: heard, inputs: 1, outputs: 1, heardChannels: [1, 1],
            entries: [.init(0, 0, cabinet, 0)], label: "cabinet recipe")
    }

    /// The sink and the output stream of PipeWire's HeSuVi example.
    private static let filterChainSink = "effect_input.virtual-surround-7.1-hesuvi"
    private static let filterChainStream = "effect_output.virtual-surround-7.1-hesuvi"

    /// PipeWire's own HeSuVi example in the user's filter-chain.conf.d, its IR path made absolute
    /// as a user's is; the HRIR it names.
    private func writeFilterChainExample() throws -> String {
        let hrir = try userFile(".config/pipewire/hrir_hesuvi/hrir.wav")
        try TestSignals.write((0..<14).map { UserConfigTests.impulse(frames: 960, tap: 2 * $0, seed: 90 + UInt64($0)) }, to: hrir)
        let example = try String(
            contentsOfFile: packageRoot + "/Tests/LiveTests/FilterChainConfigs/sink-virtual-surround-7.1-hesuvi.conf",
            encoding: .utf8)
        try example.replacingOccurrences(of: "\"hrir_hesuvi/hrir.wav\"", with: "\"\(hrir)\"")
            .write(
                toFile: try userFile(".config/pipewire/filter-chain.conf.d/sink-virtual-surround-7.1-hesuvi.conf"), atomically: true, encoding: .utf8)
        return hrir
    }

    /// PipeWire's own HeSuVi example as a user keeps it in filter-chain.conf.d (its IR path
    /// made absolute, as a user's is), switched by the recipe.
    func testYourFilterChainConfig() throws {
        let hrir = try writeFilterChainExample()
        try runSinkRecipe(
            "Your filter-chain config", unit: "my-hesuvi", sink: Self.filterChainSink, stream: Self.filterChainStream, inputs: 8,
            entries: ImpulseEntry.hesuvi(hrir), label: "filter-chain recipe")
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: home + "/.config/pipewire/filter-chain.conf.d/sink-virtual-surround-7.1-hesuvi.conf"),
            "filter-chain's copy is moved away")
    }

    /// The same config left in filter-chain.conf.d, run by PipeWire 1.x's own filter-chain.service
    /// (0.3.65 has none, as the README says).
    func testYourFilterChainConfigOnFilterChainsService() throws {
        guard PipeWireInstallation.isOneDotX else {
            XCTAssertFalse(FileManager.default.fileExists(atPath: "/usr/lib/systemd/user/filter-chain.service"), "0.3.65 has no filter-chain.service")
            return
        }
        let hrir = try writeFilterChainExample()
        // The user chose filter-chain's sink as their output long ago; the recipe keeps the name.
        let chosen = try daemon.run([
            "pw-metadata", "-n", "default", "0", "default.configured.audio.sink", "{ \"name\": \"\(Self.filterChainSink)\" }", "Spa:String:JSON",
        ])
        XCTAssertEqual(chosen.status, 0, chosen.output)
        try runSinkRecipe(
            "Or keep it where it is", unit: "filter-chain", sink: Self.filterChainSink, stream: Self.filterChainStream, inputs: 8,
            entries: ImpulseEntry.hesuvi(hrir), label: "filter-chain service recipe")
    }

    /// The judge's teeth: a recipe whose command fails fails its test, with the command and its output.
    func testARecipeWithAFailingCommandFails() throws {
        let broken = Recipe(
            title: "broken", lines: ["mkdir -p ~/.config/swift-convolver", "cp /usr/share/swift-convolver/no-such.conf ~/.config/swift-convolver/"])
        XCTAssertThrowsError(try runner.run(broken)) { error in
            XCTAssertTrue("\(error)".contains("no-such.conf"), "\(error)")
        }
        let unknownUnit = Recipe(title: "no config", lines: ["systemctl --user enable --now swift-convolver@nothing-here"])
        try runner.run(unknownUnit)
        let unit = try XCTUnwrap(runner.units["nothing-here"])
        XCTAssertTrue(unit.waitForExit(timeout: 10), "the unit's command exits without a config")
        XCTAssertTrue(unit.log.contains("no nothing-here.conf in"), unit.log)
    }

    /// Troubleshooting's messages are the ones users get: a missing IR named by `pw-convolver run
    /// --config`, a module PipeWire cannot find, and `pw-convolver status` listing what runs.
    func testTroubleshootingMessagesAreTheOnesUsersGet() throws {
        let readme = try String(contentsOfFile: packageRoot + "/README.md", encoding: .utf8)
        let troubleshooting = try XCTUnwrap(readme.components(separatedBy: "\n## Troubleshooting\n").dropFirst().first)
            .components(separatedBy: "\n## ").first!.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        func quoted(after marker: String) throws -> String {
            let after = try XCTUnwrap(troubleshooting.components(separatedBy: marker).dropFirst().first, "README: '\(marker)'")
            return String(after.prefix { $0 != "`" })
        }
        let missing = try quoted(after: "An error names the key and the file, e.g. `")
        let config = try userFile(".config/swift-convolver/hesuvi.conf")
        try String(contentsOfFile: packageRoot + "/pipewire-conf/swift-convolver-virtual-surround-7.1-hesuvi.conf", encoding: .utf8)
            .replacingOccurrences(of: "/path/to/irs/hrir.wav", with: "/home/me/hrir.wav")
            .write(toFile: config, atomically: true, encoding: .utf8)
        let run = try system.run(["pw-convolver", "run", "--config", config], environment: runner.environment)
        XCTAssertNotEqual(run.status, 0)
        XCTAssertTrue(run.output.contains(missing), "README quotes '\(missing)'; pw-convolver says: \(run.output)")

        let notFound = try quoted(after: "**Module not found** (`")
        let (status, output) = try runToCompletion(
            "/usr/bin/env", ["pipewire", "-c", config],
            environment: daemon.environment(extra: ["PIPEWIRE_MODULE_DIR": PipeWireInstallation.moduleDirectory]))
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(output.contains(notFound), "README quotes '\(notFound)'; pipewire says: \(output)")

        try runner.run(
            Recipe(title: "a running node", lines: ["systemctl --user enable --now swift-convolver@swift-convolver-hall-sink"]),
            nodes: ["swift-convolver-hall-sink": ("convolver-hall", 4)])
        let listed = try system.run(["pw-convolver", "status"], environment: runner.environment)
        XCTAssertEqual(listed.status, 0, listed.output)
        XCTAssertTrue(listed.output.contains("convolver-hall"), "pw-convolver status lists the running nodes: \(listed.output)")
    }
}
