import Convolution
import EngineTestSupport
import Foundation
import XCTest

/// The module loaded by a `pipewire -c` client process into a private headless daemon; audio from
/// pw-play through the node into pw-record. The node's own record is numpy's convolution of its
/// input (zero added latency: at lag 0), and the recorder got that output in the cycle of its
/// input (LiveJudges).
final class ModuleAudioTests: XCTestCase {
    private var daemon: PrivatePipeWire!
    private let positions = ["FL", "FR"]

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
        daemon = try PrivatePipeWire(name: "audio")
        try daemon.setQuantum(256)
    }

    override func tearDown() {
        daemon?.stop()
        daemon = nil
    }

    private func path(_ name: String) -> String { daemon.runtimeDirectory + "/" + name }

    /// The node the current test runs and its record.
    private var nodeUnderTest = ""
    private var record: NodeRecord!

    private func startNode(_ name: String, arguments: String) throws -> BackgroundProcess {
        nodeUnderTest = name
        record = NodeRecord(directory: daemon.runtimeDirectory, name: name)
        let client = try ModuleClient.start(
            daemon, name: name,
            arguments: "node.name = \(name) audio.position = [ FL FR ] \(record.argument) \(arguments)")
        do {
            try daemon.waitForPorts(ofNode: name, count: 4, timeout: 30)
        } catch {
            throw TestFailure("\(error)\nclient log:\n\(client.log)")
        }
        return client
    }

    /// Stops the node's client (the node writes its record) and judges the record and the recording.
    private func assertMatches(impulse: String?, client: BackgroundProcess, file: StaticString = #filePath, line: UInt = #line) throws {
        if let node = try? daemon.nodeProperties(nodeUnderTest) {
            let statistics = node.properties.filter { $0.key.hasPrefix("convolver.") }.sorted { $0.key < $1.key }
            print("node statistics: " + statistics.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        }
        XCTAssertTrue(client.isRunning, "the client survived; log:\n\(client.log)", file: file, line: line)
        client.stop()
        try LiveVerdict(record: record, recording: path("rec.f32"), played: path("input.wav"), workDirectory: daemon.runtimeDirectory)
            .assertExact(
                entries: try ImpulseEntry.parallel(channels: positions.count, file: impulse), label: nodeUnderTest,
                file: file, line: line)
    }

    func testNodeAndPortsAppear() throws {
        try TestSignals.write(TestSignals.syntheticImpulse(), to: path("ir.wav"))
        let client = try startNode("conv-ports", arguments: "filename = \"\(path("ir.wav"))\"")
        defer { client.stop() }
        XCTAssertEqual(try daemon.portNames(ofNode: "conv-ports"), ["input_FL", "input_FR", "output_FL", "output_FR"])
        let node = try XCTUnwrap(try daemon.nodeProperties("conv-ports"))
        XCTAssertEqual(node.properties["media.class"] as? String ?? "", "", "a filter has no media.class")
        XCTAssertEqual(node.properties["node.description"] as? String, "Convolver")
    }

    func testSyntheticImpulseResponseMatchesReference() throws {
        try TestSignals.write(TestSignals.syntheticImpulse(), to: path("ir.wav"))
        try TestSignals.write(TestSignals.noise(seconds: 2), to: path("input.wav"))
        let client = try startNode("conv-synth", arguments: "filename = \"\(path("ir.wav"))\"")
        defer { client.stop() }
        try PlayThrough(daemon: daemon, nodeName: "conv-synth")
            .run(inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: 2, tailSeconds: 0.3, tag: "synth")
        try assertMatches(impulse: path("ir.wav"), client: client)
    }

    func testBuiltinHallMatchesReference() throws {
        let hall = try ImpulseResponse.load("builtin:hall", sampleRate: 48000)
        try TestSignals.write(hall.channels, to: path("hall.wav"))
        let hallSeconds = Double(hall.frameCount) / 48000
        try TestSignals.write(TestSignals.noise(seconds: 1.5, leadOut: hallSeconds + 0.3), to: path("input.wav"))
        let client = try startNode("conv-hall", arguments: "filename = \"builtin:hall\"")
        defer { client.stop() }
        try PlayThrough(daemon: daemon, nodeName: "conv-hall")
            .run(inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: 1.5 + hallSeconds, tailSeconds: 0.3, tag: "hall")
        try assertMatches(impulse: path("hall.wav"), client: client)
    }

    /// The graph runs another quantum than the node planned for (the client's default): it
    /// re-plans for the graph's and takes the new engine while its input is silent (here: before
    /// any sound), so the output stays exact.
    func testReplansForTheRunningQuantumInSilence() throws {
        try TestSignals.write(TestSignals.syntheticImpulse(), to: path("ir.wav"))
        try TestSignals.write(TestSignals.noise(seconds: 2, leadIn: 1), to: path("input.wav"))
        let client = try startNode("conv-replan", arguments: "filename = \"\(path("ir.wav"))\"")
        defer { client.stop() }
        let before = try XCTUnwrap(try daemon.nodeProperties("conv-replan")).properties
        let quantum = "\(before["convolver.plan-quantum"] ?? "")" == "256" ? 512 : 256
        try daemon.setQuantum(quantum)
        try PlayThrough(daemon: daemon, nodeName: "conv-replan")
            .run(inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: 3, tailSeconds: 0.3, tag: "replan")
        var after: [String: Any] = [:]
        for _ in 0..<30 {  // statistics are published once a second
            after = try XCTUnwrap(try daemon.nodeProperties("conv-replan")).properties
            if "\(after["convolver.swaps"] ?? "")" == "1" { break }
            usleep(100_000)
        }
        print("plan \(before["convolver.plan"] ?? "") → \(after["convolver.plan"] ?? "") at quantum \(quantum)")
        XCTAssertEqual("\(after["convolver.plan-quantum"] ?? "")", "\(quantum)")
        XCTAssertEqual("\(after["convolver.swaps"] ?? "")", "1", "one engine swap, the re-plan")
        try assertMatches(impulse: path("ir.wav"), client: client)
    }

    /// 64 → 256 → 1024 → 128 while playing: the output equals the convolution of what the node
    /// received at every frame, so the node dropped or repeated no sample.
    func testQuantumChangesKeepOutputContinuous() throws {
        try TestSignals.write(TestSignals.syntheticImpulse(), to: path("ir.wav"))
        try TestSignals.write(TestSignals.noise(seconds: 4), to: path("input.wav"))
        try daemon.setQuantum(64)
        let client = try startNode("conv-quantum", arguments: "filename = \"\(path("ir.wav"))\"")
        defer { client.stop() }
        try PlayThrough(daemon: daemon, nodeName: "conv-quantum")
            .run(inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: 4, tailSeconds: 0.3, tag: "quantum") {
                for quantum in [256, 1024, 128] {
                    usleep(800_000)
                    try daemon.setQuantum(quantum)
                }
            }
        try assertMatches(impulse: path("ir.wav"), client: client)
    }

    /// Quanta that are not powers of two (PipeWire rounds quanta down to one unless its
    /// `clock.power-of-two-quantum` is false), changing while playing: 480 (a common hardware
    /// period), then 100 and 333. The node re-plans for 480 in the lead-in's silence and runs the
    /// other sizes on that plan (it re-plans only in silence); the output equals the convolution of
    /// what it received at every frame. (jconvolver runs only at powers of two.)
    func testQuantaThatAreNotPowersOfTwoKeepOutputExact() throws {
        daemon.stop()
        daemon = try PrivatePipeWire(name: "odd-quanta", extraProperties: "clock.power-of-two-quantum = false")
        try TestSignals.write(TestSignals.syntheticImpulse(), to: path("ir.wav"))
        try TestSignals.write(TestSignals.noise(seconds: 5, leadIn: 1), to: path("input.wav"))
        try daemon.setQuantum(480)
        let client = try startNode("conv-odd", arguments: "filename = \"\(path("ir.wav"))\"")
        defer { client.stop() }
        var ran: [String] = []  // the quanta the graph ran the node at, by its profiler
        try PlayThrough(daemon: daemon, nodeName: "conv-odd")
            .run(inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: 6.5, tailSeconds: 0.3, tag: "odd") {
                usleep(1_500_000)  // the lead-in and some sound
                for quantum in [100, 333] {
                    ran.append(try daemon.profiledQuantum(ofNode: "conv-odd", seconds: 0.8).quantum)
                    try daemon.setQuantum(quantum)
                    usleep(300_000)
                }
                ran.append(try daemon.profiledQuantum(ofNode: "conv-odd", seconds: 0.8).quantum)
            }
        print("quanta the graph ran the node at: \(ran)")
        XCTAssertEqual(ran, ["480", "100", "333"])
        let properties = try XCTUnwrap(try daemon.nodeProperties("conv-odd")).properties
        print("plan \(properties["convolver.plan"] ?? "") for quantum \(properties["convolver.plan-quantum"] ?? "")")
        XCTAssertEqual("\(properties["convolver.plan-quantum"] ?? "")", "480", "re-planned for 480 in the lead-in")
        try assertMatches(impulse: path("ir.wav"), client: client)
    }

    // MARK: - IR files at another rate than the graph's

    /// A 44.1 kHz cabinet IR (energy from its first frames, as cabinet IRs have) on the 48 kHz
    /// graph. The node convolves with it resampled at its own time: its record is the exact
    /// convolution with the IR the loader makes, whose peak is on the frame where scipy's
    /// resample_poly puts it; the recording is that output in its input's cycle; and the node
    /// reports no latency to the graph.
    func testIRFileAtAnotherRateAddsNoLatency() throws {
        let cabinet = try ResampleReference.writeCabinet(rate: 44_100, directory: daemon.runtimeDirectory)
        let resampled = try ImpulseResponse.load(cabinet.wav, sampleRate: 48_000)
        let verdict = try ResampleReference.judge(
            resampled.channels[0], targetRate: 48_000, of: cabinet,
            directory: daemon.runtimeDirectory)
        print("44.1 kHz cabinet at 48 kHz: \(verdict)")
        XCTAssertEqual(verdict.oursPeakFrame, verdict.referencePeakFrame, "\(verdict)")
        XCTAssertLessThanOrEqual(verdict.errorAfterHeadDB, -60, "\(verdict)")
        try assertLatency(ofNodeWith: "filename = \"\(cabinet.wav)\"", name: "conv-cabinet", impulse: resampled, expected: 0)
    }

    /// `resample.pre-ringing = keep`: the node convolves with the whole band-limited response,
    /// the resampler's ringing before time 0 kept and the IR that much later, and reports that
    /// delay as its ProcessLatency, which PipeWire adds to the playback latency its input ports
    /// report upstream (what a player compensates for lip sync).
    func testKeptPreRingingIsReportedAsTheNodesLatency() throws {
        let cabinet = try ResampleReference.writeCabinet(rate: 44_100, directory: daemon.runtimeDirectory)
        let kept = try ImpulseResponse.load(cabinet.wav, sampleRate: 48_000, options: .init(preRinging: .keep))
        XCTAssertGreaterThan(kept.addedDelayFrames, 0)
        try assertLatency(
            ofNodeWith: "filename = \"\(cabinet.wav)\" resample.pre-ringing = keep", name: "conv-kept",
            impulse: kept, expected: kept.addedDelayFrames)
    }

    /// `latency = auto` with a linear-phase FIR (a windowed-sinc low-pass of 401 taps, its peak and
    /// its delay at frame 200): the node reports those 200 frames as its latency.
    func testLatencyAutoReportsALinearPhaseFIRsDelay() throws {
        let taps = (0..<401).map { n -> Float in
            let x = Double(n - 200) * 0.25  // cutoff at a quarter of the rate's Nyquist band
            let sinc = x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x)
            return Float(0.25 * sinc * (0.54 - 0.46 * cos(2 * Double.pi * Double(n) / 400)))
        }
        try TestSignals.write([taps], to: path("fir.wav"))
        try assertLatency(
            ofNodeWith: "filename = \"\(path("fir.wav"))\" latency = auto", name: "conv-fir",
            impulse: ImpulseResponse(sampleRate: 48_000, channels: [taps]), expected: 200)
    }

    /// Plays through the node into a recorder that reports 500 frames of playback latency, as a
    /// device would; the node's ProcessLatency and `convolver.latency-frames` are `expected`, its
    /// input ports report 500 + `expected`, its output ports 500, and its record is exact with `impulse`.
    private func assertLatency(
        ofNodeWith arguments: String, name: String, impulse: ImpulseResponse, expected: Int,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        try TestSignals.write([impulse.channels[0]], to: path("ir48.wav"))
        try TestSignals.write(TestSignals.noise(seconds: 2), to: path("input.wav"))
        let client = try startNode(name, arguments: arguments)
        defer { client.stop() }
        XCTAssertEqual(try processLatency(ofNode: name), expected, "ProcessLatency", file: file, line: line)
        var playback = PlayThrough(daemon: daemon, nodeName: name)
        playback.recorderLatency = 500
        var portLatency: [String: Int?] = [:]
        try playback.run(inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: 2, tailSeconds: 0.3, tag: name) {
            usleep(500_000)
            for port in ["input_FL", "output_FL"] { portLatency[port] = try playbackLatency(ofNode: name, port: port) }
        }
        print("\(name): playback latency of its ports \(portLatency) (frames), ProcessLatency \(expected)")
        XCTAssertEqual(portLatency["input_FL"], 500 + expected, "input port", file: file, line: line)
        XCTAssertEqual(portLatency["output_FL"], 500, "output port", file: file, line: line)
        let properties = try XCTUnwrap(try daemon.nodeProperties(name)).properties
        XCTAssertEqual("\(properties["convolver.latency-frames"] ?? "")", "\(expected)", file: file, line: line)
        try assertMatches(impulse: path("ir48.wav"), client: client, file: file, line: line)
    }

    /// The node's ProcessLatency in frames (pw-dump), nil without one.
    private func processLatency(ofNode node: String) throws -> Int? {
        try daemon.params(ofNode: node, "ProcessLatency").first?["rate"] as? Int
    }

    /// The playback latency (frames) a port reports: its Latency param of direction Input (the
    /// way to the sinks), `maxRate`.
    private func playbackLatency(ofNode node: String, port: String) throws -> Int? {
        let params = try daemon.params(ofNode: node, port: port, "Latency")
        return params.first { $0["direction"] as? String == "Input" }?["maxRate"] as? Int
    }
}
