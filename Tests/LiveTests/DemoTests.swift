import Convolution
import EngineTestSupport
import Foundation
import XCTest

/// `make demo` (scripts/demo.sh) as a new user meets it: with a PipeWire that has a default output
/// it is heard there, at a moderate level, and leaves nothing behind; with none answering it starts
/// a private daemon, records, and stops the daemon again.
final class DemoTests: XCTestCase {
    private var daemon: PrivatePipeWire?
    private var background: [BackgroundProcess] = []

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
    }

    override func tearDown() {
        for process in background.reversed() { process.stop() }
        background = []
        daemon?.stop()
        daemon = nil
    }

    private var demoScript: String { packageRoot + "/scripts/demo.sh" }

    private func demoDirectories() -> Set<String> {
        Set(((try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []).filter { $0.hasPrefix("swift-convolver-demo.") })
    }

    /// A session as on a desktop: WirePlumber, a sink it made the default (a null sink here), whose
    /// monitor this test records while the demo plays.
    func testDemoIsHeardOnTheDefaultOutputAndLeavesNothingBehind() throws {
        let daemon = try PrivatePipeWire(name: "demo")
        self.daemon = daemon
        try daemon.createNullSink("speakers", description: "Speakers")
        background.append(try daemon.startWirePlumber())
        XCTAssertTrue(
            waitUntil(timeout: 20) {
                (try? daemon.run(["pw-metadata", "-n", "default", "0", "default.audio.sink"]).output.contains("speakers")) == true
            }, "WirePlumber made the null sink the default output")
        let monitorPath = daemon.runtimeDirectory + "/heard.wav"
        let monitor = try daemon.spawn(
            [
                "pw-record", "-P", "{ node.name = heard node.autoconnect = false stream.capture.sink = true }",
                "--format", "f32", "--rate", "48000", "--channels", "2", monitorPath,
            ], logName: "heard.log")
        background.append(monitor)
        try daemon.waitForPorts(ofNode: "heard", count: 2)
        for channel in ["FL", "FR"] { try daemon.link("speakers:monitor_\(channel)", "heard:input_\(channel)") }

        let before = demoDirectories()
        let (status, output) = try daemon.run(
            ["env", "PW_CONVOLVER=\(BuildProducts.directory)/pw-convolver", "bash", demoScript], timeout: 90)
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("Your default output is speakers: you hear the test signal"), output)
        XCTAssertTrue(output.contains("that was four notes through builtin:hall, on speakers"), output)
        XCTAssertEqual(demoDirectories(), before, "the demo leaves no directory behind")
        let nodes = try daemon.dump().compactMap { object -> String? in
            guard object["type"] as? String == "PipeWire:Interface:Node" else { return nil }
            return ((object["info"] as? [String: Any])?["props"] as? [String: Any])?["node.name"] as? String
        }
        XCTAssertFalse(nodes.contains { $0.hasPrefix("swift-convolver-demo") || $0.hasPrefix("demo-") }, "\(nodes)")

        monitor.interrupt()  // its WAV header (pw-record's exit status on SIGINT varies by version)
        let heard = try AudioFile.read(path: monitorPath).channels
        for (index, channel) in heard.enumerated() {
            let peak = channel.map(abs).max() ?? 0
            // The notes peak at -12 dBFS in; the hall adds a little: moderate, not silent.
            XCTAssertGreaterThan(peak, 0.05, "channel \(index) heard nothing")
            XCTAssertLessThan(peak, 0.5, "channel \(index) too loud")
            let audible = channel.filter { abs($0) > 0.001 }.count
            XCTAssertGreaterThan(audible, 48000 * 3, "channel \(index): the notes and the hall's tail, seconds of them")
        }
    }

    /// No PipeWire answers (an empty runtime directory): the demo starts its own headless daemon,
    /// records the hall, and stops that daemon.
    func testDemoWithoutPipeWireRecordsInAPrivateDaemon() throws {
        let runtime = PrivatePipeWire.scratchDirectory + "swconv-demo-empty-\(getpid())"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [demoScript]
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtime
        environment["PW_CONVOLVER"] = BuildProducts.directory + "/pw-convolver"
        environment["PIPEWIRE_MODULE_DIR"] = PipeWireInstallation.moduleSearchPath
        environment.removeValue(forKey: "PIPEWIRE_REMOTE")
        process.environment = environment
        let outputPath = runtime + "/demo.out"
        FileManager.default.createFile(atPath: outputPath, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = process.standardOutput
        try process.run()
        XCTAssertTrue(waitUntil(timeout: 90) { !process.isRunning }, "the demo ended")
        process.waitUntilExit()
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        XCTAssertEqual(process.terminationStatus, 0, output)
        XCTAssertTrue(output.contains("No PipeWire answering: starting a private headless one"), output)
        let line = try XCTUnwrap(output.split(separator: "\n").first { $0.hasSuffix("hall-recording.wav") }, output)
        let recording = line.trimmingCharacters(in: .whitespaces)
        let work = URL(fileURLWithPath: recording).deletingLastPathComponent().path
        defer { try? FileManager.default.removeItem(atPath: work) }
        let channels = try AudioFile.read(path: recording).channels
        XCTAssertEqual(channels.count, 2)
        XCTAssertGreaterThan(channels[0].map(abs).max() ?? 0, 0.05, "the recording holds the hall")
        // Its private daemon is gone: the pid file removed, and no process serves its socket.
        XCTAssertFalse(FileManager.default.fileExists(atPath: work + "/pipewire/pipewire.pid"))
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        probe.arguments = ["timeout", "5", "pw-cli", "info", "0"]
        probe.environment = environment.merging(["XDG_RUNTIME_DIR": work + "/pipewire"]) { $1 }
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        try probe.run()
        probe.waitUntilExit()
        XCTAssertNotEqual(probe.terminationStatus, 0, "the demo's daemon still answers")
    }
}
