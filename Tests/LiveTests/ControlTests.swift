import Foundation
import XCTest

/// Props (gain, mix, bypass) set live with pw-cli, read back with enum-params, heard in the
/// output; statistics in the node's properties.
final class ControlTests: XCTestCase {
    private var daemon: PrivatePipeWire!
    private let positions = ["FL", "FR"]

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
        daemon = try PrivatePipeWire(name: "control")
        try daemon.setQuantum(256)
    }

    override func tearDown() {
        daemon?.stop()
        daemon = nil
    }

    private func path(_ name: String) -> String { daemon.runtimeDirectory + "/" + name }

    /// The `params` struct of `pw-cli enum-params <id> Props`, as key → printed value.
    private func readProps(_ id: Int) throws -> [String: String] {
        let (status, output) = try daemon.run(["pw-cli", "enum-params", "\(id)", "Props"])
        XCTAssertEqual(status, 0, output)
        let lines = output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        var values: [String: String] = [:]
        for (index, line) in lines.enumerated() where line.hasPrefix("String \"") && index + 1 < lines.count {
            let key = line.dropFirst("String \"".count).dropLast()
            let valueLine = lines[index + 1].split(separator: " ", maxSplits: 1)
            if valueLine.count == 2 { values[String(key)] = String(valueLine[1]) }
        }
        return values
    }

    private func setProps(_ id: Int, _ params: String) throws {
        let (status, output) = try daemon.run(["pw-cli", "set-param", "\(id)", "Props", "{ params = [ \(params) ] }"])
        XCTAssertEqual(status, 0, output)
    }

    /// Plays 1.5 s of noise through the node (other noise each time, so the graph judge can tell
    /// the plays apart in the node's record); the record is judged when the node is gone.
    private func play(tag: String, seed: UInt64) throws {
        try TestSignals.write(TestSignals.noise(seconds: 1.5, seed: seed), to: path("input.wav"))
        try PlayThrough(daemon: daemon, nodeName: "conv-control")
            .run(inputPath: path("input.wav"), recordingPath: path("rec-\(tag).f32"), seconds: 1.5, tailSeconds: 0.3, tag: tag)
    }

    func testPropsChangeOutputAndReadBack() throws {
        try TestSignals.write(TestSignals.syntheticImpulse(), to: path("ir.wav"))
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "conv-control")
        let client = try ModuleClient.start(
            daemon, name: "conv-control",
            arguments: "node.name = conv-control filename = \"\(path("ir.wav"))\" \(record.argument)")
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "conv-control", count: 4, timeout: 30)
        let id = try XCTUnwrap(try daemon.nodeProperties("conv-control")).id

        XCTAssertEqual(try readProps(id)["gain"], "1.000000")
        try setProps(id, "\"gain\" 0.5 \"mix\" 0.25 \"bypass\" false")
        XCTAssertTrue(waitUntil(timeout: 5) { (try? self.readProps(id)["mix"]) == "0.250000" })
        let props = try readProps(id)
        XCTAssertEqual(props["gain"], "0.500000")
        XCTAssertEqual(props["bypass"], "false")
        // Output = gain·mix·wet + (1 − mix)·dry once the ~5 ms glide is over (before playback).
        try play(tag: "mix", seed: 1)

        try setProps(id, "\"bypass\" true")
        XCTAssertTrue(waitUntil(timeout: 5) { (try? self.readProps(id)["bypass"]) == "true" })
        try play(tag: "bypass", seed: 2)

        // A bad value is ignored (with a warning), the rest applies.
        try setProps(id, "\"gain\" 1e9 \"mix\" 1.0 \"bypass\" false")
        XCTAssertTrue(waitUntil(timeout: 5) { (try? self.readProps(id)["bypass"]) == "false" })
        XCTAssertEqual(try readProps(id)["gain"], "0.500000")
        XCTAssertEqual(try readProps(id)["mix"], "1.000000")
        // A gain in decibels, as in the module's arguments.
        try setProps(id, "\"gain\" \"-6dB\"")
        XCTAssertTrue(
            waitUntil(timeout: 5) { (try? self.readProps(id)["gain"]) == "0.501187" }, "gain reads \(String(describing: try? readProps(id)["gain"]))")

        XCTAssertTrue(client.isRunning, client.log)
        client.stop()
        let entries = try ImpulseEntry.parallel(channels: positions.count, file: path("ir.wav"))
        let result = try RecordJudge.judge(
            record, inputs: 2, outputs: 2, entries: entries,
            segments: [.init(wet: 0.5 * 0.25, dry: 0.75), .init(wet: 0, dry: 1)],
            played: nil, workDirectory: daemon.runtimeDirectory)
        RecordJudge.assertExact(result, outputs: 2, label: "mix, then bypass")
        for tag in ["mix", "bypass"] {
            try LiveVerdict(
                record: record, recording: path("rec-\(tag).f32"), played: path("input.wav"),
                workDirectory: daemon.runtimeDirectory
            ).assertGraphPath(label: tag)
        }
    }

    /// `width` in Props: mid/side of the wet signal, side × width. Set to 0 live (read back), the
    /// two outputs are both the mid of the two wet channels; a module loaded with `width = 2`
    /// puts out mid + 2·side. Each judged exactly as the N×M convolution it amounts to.
    func testWidthInPropsAndArguments() throws {
        let impulse = TestSignals.syntheticImpulse()
        func entries(_ weights: [[Float]], tag: String) throws -> [ImpulseEntry] {
            // weights[output][input]: output o = Σ_i weights[o][i] · (input i ∗ impulse channel i).
            var list: [ImpulseEntry] = []
            for (output, row) in weights.enumerated() {
                for (input, weight) in row.enumerated() {
                    let file = path("width-\(tag)-\(input)-\(output).wav")
                    try TestSignals.write([impulse[input].map { $0 * weight }], to: file)
                    list.append(.init(input, output, file, 0))
                }
            }
            return list
        }
        try TestSignals.write(impulse, to: path("ir.wav"))
        for (tag, width, weights) in [("narrow", 0.0, [[Float(0.5), 0.5], [0.5, 0.5]]), ("wide", 2.0, [[Float(1.5), -0.5], [-0.5, 1.5]])] {
            let record = NodeRecord(directory: daemon.runtimeDirectory, name: "conv-control")
            let arguments = "node.name = conv-control filename = \"\(path("ir.wav"))\" \(record.argument)"
            let client = try ModuleClient.start(daemon, name: "conv-control", arguments: arguments + (tag == "wide" ? " width = 2" : ""))
            defer { client.stop() }
            try daemon.waitForPorts(ofNode: "conv-control", count: 4, timeout: 30)
            let id = try XCTUnwrap(try daemon.nodeProperties("conv-control")).id
            if tag == "narrow" {
                XCTAssertEqual(try readProps(id)["width"], "1.000000")
                try setProps(id, "\"width\" \(width)")
                try setProps(id, "\"width\" 3")  // out of range: ignored
            }
            XCTAssertTrue(waitUntil(timeout: 5) { (try? self.readProps(id)["width"]) == String(format: "%.6f", width) }, tag)
            try play(tag: tag, seed: 3)
            XCTAssertTrue(client.isRunning, client.log)
            client.stop()
            let result = try RecordJudge.judge(
                record, inputs: 2, outputs: 2, entries: try entries(weights, tag: tag),
                segments: [.init(wet: 1, dry: 0)], played: nil, workDirectory: daemon.runtimeDirectory)
            RecordJudge.assertExact(result, outputs: 2, label: "width \(width)")
        }
    }

    func testStatisticsPropertiesAppearAndMove() throws {
        try TestSignals.write(TestSignals.syntheticImpulse(), to: path("ir.wav"))
        let client = try ModuleClient.start(
            daemon, name: "conv-stats",
            arguments: "node.name = conv-stats filename = \"\(path("ir.wav"))\" workgroup = { split = on }")
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "conv-stats", count: 4, timeout: 30)
        // Linked to a recorder, the node runs every cycle.
        let recorder = try daemon.spawn(
            [
                "pw-record", "-P", PlayThrough.streamProperties("rec-stats"), "--format", "f32",
                "--channels", "2", path("stats.wav"),
            ], logName: "rec-stats.log")
        defer { recorder.stop() }
        try daemon.waitForPorts(ofNode: "rec-stats", count: 2)
        for position in positions { try daemon.link("conv-stats:output_\(position)", "rec-stats:input_\(position)") }

        func statistics() throws -> [String: Any] {
            try XCTUnwrap(try daemon.nodeProperties("conv-stats")).properties.filter { $0.key.hasPrefix("convolver.") }
        }
        func number(_ value: Any?) -> Double? {
            (value as? Double) ?? (value as? Int).map(Double.init) ?? (value as? String).flatMap(Double.init)
        }
        var first: [String: Any] = [:]
        XCTAssertTrue(
            waitUntil(timeout: 5) {
                first = (try? statistics()) ?? [:]
                return (number(first["convolver.calls"]) ?? 0) > 0
            }, "statistics: \(first)")
        for key in [
            "convolver.calls", "convolver.late-cycles", "convolver.late-cycles-started-late", "convolver.late-cycles-own",
            "convolver.late-cycles-stalled", "convolver.missed-cycles",
            "convolver.late-levels", "convolver.helper-margin-p99-us", "convolver.busy-p99-us", "convolver.busy-max-us", "convolver.plan",
            "convolver.rate",
            "convolver.split-parts", "convolver.late-splits",
        ] {
            XCTAssertNotNil(first[key], "\(key) missing in \(first)")
        }
        // split = on: the head's per-output work of the two outputs goes to two parts.
        XCTAssertEqual(number(first["convolver.split-parts"]), 2, "\(first)")
        // Its part runs on the process's workgroup (this IR has no level on a helper).
        XCTAssertTrue("\(first["convolver.workgroup"] ?? "")".hasPrefix("process "), "\(first)")
        XCTAssertGreaterThanOrEqual(number(first["convolver.helper-threads"]) ?? 0, 1, "\(first)")
        usleep(2_200_000)
        let second = try statistics()
        print("statistics: \(second)")
        let callsBefore = try XCTUnwrap(number(first["convolver.calls"]))
        let callsAfter = try XCTUnwrap(number(second["convolver.calls"]))
        // ~187 calls/s at q=256, 48 kHz; generous bounds (noisy VM).
        XCTAssertGreaterThan(callsAfter - callsBefore, 100)
        XCTAssertGreaterThan(try XCTUnwrap(number(second["convolver.busy-p99-us"])), 0)
        XCTAssertGreaterThanOrEqual(
            try XCTUnwrap(number(second["convolver.busy-max-us"])),
            try XCTUnwrap(number(second["convolver.busy-p99-us"])))
        XCTAssertEqual(number(second["convolver.rate"]), 48000)
    }

    /// A new graph rate and a new IR by Props "filename": both built off the main loop, then
    /// swapped in; a missing file keeps the current IR.
    func testRateChangeAndFilenameSwap() throws {
        try TestSignals.write(TestSignals.syntheticImpulse(), to: path("ir.wav"))
        let client = try ModuleClient.start(daemon, name: "conv-swap", arguments: "node.name = conv-swap filename = \"builtin:dirac\"")
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "conv-swap", count: 4, timeout: 30)
        let recorder = try daemon.spawn(
            [
                "pw-record", "-P", PlayThrough.streamProperties("rec-swap"), "--format", "f32",
                "--channels", "2", path("swap.wav"),
            ], logName: "rec-swap.log")
        defer { recorder.stop() }
        try daemon.waitForPorts(ofNode: "rec-swap", count: 2)
        for position in positions { try daemon.link("conv-swap:output_\(position)", "rec-swap:input_\(position)") }
        let id = try XCTUnwrap(try daemon.nodeProperties("conv-swap")).id
        func property(_ key: String) -> String? {
            guard let value = (try? daemon.nodeProperties("conv-swap"))?.properties[key] else { return nil }
            return "\(value)"
        }

        try daemon.run(["pw-metadata", "-n", "settings", "0", "clock.force-rate", "96000"])
        XCTAssertTrue(waitUntil(timeout: 10) { property("convolver.rate") == "96000" }, "rate: \(property("convolver.rate") ?? "-")")

        try setProps(id, "\"filename\" \"\(path("ir.wav"))\"")
        XCTAssertTrue(waitUntil(timeout: 10) { (try? self.readProps(id)["filename"]) == "\"\(self.path("ir.wav"))\"" })
        XCTAssertTrue(waitUntil(timeout: 5) { property("convolver.ir") == self.path("ir.wav") })

        try setProps(id, "\"filename\" \"/nonexistent/other.wav\"")
        XCTAssertTrue(waitUntil(timeout: 10) { client.log.contains("keeping the current IR") }, client.log.suffix(2000).description)
        XCTAssertEqual(try readProps(id)["filename"], "\"\(path("ir.wav"))\"")
        XCTAssertTrue(client.isRunning)
        try daemon.run(["pw-metadata", "-n", "settings", "0", "clock.force-rate", "0"])
    }

    // MARK: - pw-convolver set and status

    private func pwConvolver(_ arguments: [String], timeout: TimeInterval = 30) throws -> (status: Int32, output: String) {
        try daemon.run([BuildProducts.directory + "/pw-convolver"] + arguments, timeout: timeout)
    }

    /// A filter graph's controls by name ("node:Port", as filter-chain's Props name them): a good
    /// value is applied once the graph is compiled again; an unknown node or port, a value out of
    /// range or NaN, and values the compiler refuses (a biquad that rings for minutes) are each
    /// answered with their names, and the running graph is kept.
    func testGraphControlsByNameAreRefusedWithTheirNames() throws {
        let graph =
            "filter.graph = { nodes = [ "
            + "{ type = builtin label = bq_peaking name = eq control = { Freq = 1000 Q = 1 Gain = 3 } } "
            + "{ type = builtin label = mixer name = mix } ] links = [ { output = \"eq:Out\" input = \"mix:In 1\" } ] }"
        let client = try ModuleClient.start(daemon, name: "conv-graph", arguments: "node.name = conv-graph audio.channels = 2 \(graph)")
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "conv-graph", count: 2, timeout: 30)  // a graph without media.class: two streams
        let id = try XCTUnwrap(try daemon.nodeProperties("conv-graph")).id
        XCTAssertEqual(try readProps(id)["eq:Freq"], "1000.000000", "Props list the graph's controls")
        XCTAssertEqual(try readProps(id)["mix:Gain 1"], "1.000000")

        var (status, output) = try pwConvolver(["set", "conv-graph", "mix:Gain 1=0.5", "eq:Gain=-4"])
        XCTAssertEqual(status, 0, output)
        XCTAssertEqual(try readProps(id)["mix:Gain 1"], "0.500000")
        XCTAssertEqual(try readProps(id)["eq:Gain"], "-4.000000")

        (status, output) = try pwConvolver(["set", "conv-graph", "eq:Q=50", "nobody:Gain=1", "mix:Frequency=1", "eq:Freq=nan"])
        XCTAssertEqual(status, 1, output)
        for message in [
            "eq:Q: 50.0 is outside 0.0...10.0", "unknown control 'nobody:Gain': no node is named 'nobody' (the nodes: 'eq', 'mix')",
            "unknown control 'mix:Frequency': node 'mix' (mixer) has the controls 'Gain 1'", "eq:Freq = \"nan\" (expects a finite number)",
        ] {
            XCTAssertTrue(output.contains(message), "\(message) in: \(output)")
        }
        (status, output) = try pwConvolver(["set", "conv-graph", "eq:Freq=0.2", "eq:Q=10", "eq:Gain=6"])
        XCTAssertEqual(status, 1, output)
        XCTAssertTrue(output.contains("no finite impulse response"), output)
        XCTAssertEqual(try readProps(id)["eq:Freq"], "1000.000000", "the running graph is kept")
        XCTAssertEqual(try readProps(id)["eq:Gain"], "-4.000000")
        XCTAssertTrue(client.isRunning)
    }

    /// `pw-convolver set` by node name: good values are applied and echoed (exit 0); a refused one
    /// exits 1 with the node's own message, the others applied; an IR that cannot be read is
    /// answered once its build failed. The node publishes each answer (pw-dump shows it), and
    /// `status --json` agrees with pw-dump.
    func testSetByNameAnswersWithTheNodesOwnMessage() throws {
        try TestSignals.write(TestSignals.syntheticImpulse(), to: path("ir.wav"))
        let client = try ModuleClient.start(daemon, name: "conv-set", arguments: "node.name = conv-set filename = \"builtin:dirac\"")
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "conv-set", count: 4, timeout: 30)
        let id = try XCTUnwrap(try daemon.nodeProperties("conv-set")).id
        func answer() throws -> String? { try daemon.nodeProperties("conv-set")?.properties["convolver.control-answer"] as? String }

        var (status, output) = try pwConvolver(["set", "conv-set", "gain=-6dB", "mix=0.5"])
        XCTAssertEqual(status, 0, output)
        XCTAssertEqual(output.trimmingCharacters(in: .whitespacesAndNewlines), "conv-set: gain=0.501187 mix=0.5")
        XCTAssertEqual(try readProps(id)["gain"], "0.501187")
        XCTAssertEqual(try answer(), "1 ok")

        (status, output) = try pwConvolver(["set", "\(id)", "mix=3", "gain=0.25", "loudness=1"])
        XCTAssertEqual(status, 1, output)
        XCTAssertTrue(output.contains("node 'conv-set' refused: mix = 3.0 (expects 0...1); unknown key 'loudness'"), output)
        XCTAssertEqual(try readProps(id)["gain"], "0.250000", "the values not refused are applied")
        XCTAssertEqual(try readProps(id)["mix"], "0.500000")
        XCTAssertTrue(try XCTUnwrap(try answer()).hasPrefix("2 refused: mix = 3.0"))

        (status, output) = try pwConvolver(["set", "conv-set", "gain=nan"])
        XCTAssertEqual(status, 1, output)
        XCTAssertTrue(output.contains("gain = \"nan\" (expects 0...100 linear, or decibels like \"-6dB\")"), output)

        (status, output) = try pwConvolver(["set", "conv-set", "filename=/nonexistent/other.wav"])
        XCTAssertEqual(status, 1, output)
        XCTAssertTrue(output.contains("refused: keeping the current IR:") && output.contains("/nonexistent/other.wav"), output)
        (status, output) = try pwConvolver(["set", "conv-set", "filename=\(path("ir.wav"))"])
        XCTAssertEqual(status, 0, output)
        let described = try XCTUnwrap(try daemon.nodeProperties("conv-set")).properties
        XCTAssertEqual(described["convolver.ir"] as? String, path("ir.wav"), "the answer comes with the engine it installed")
        XCTAssertNotEqual(described["convolver.plan"] as? String, "direct 1", "the answer comes with the engine it installed")
        XCTAssertEqual(try readProps(id)["filename"], "\"\(path("ir.wav"))\"")

        (status, output) = try pwConvolver(["set", "nosuch", "gain=1"])
        XCTAssertEqual(status, 1, output)
        XCTAssertTrue(output.contains("no node 'nosuch' in the graph; swift-convolver nodes: conv-set"), output)
        (status, output) = try pwConvolver(["set", "Dummy-Driver", "gain=1"])
        XCTAssertEqual(status, 1, output)
        XCTAssertTrue(output.contains("node 'Dummy-Driver' is not a swift-convolver node"), output)

        (status, output) = try pwConvolver(["status", "conv-set"])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.hasPrefix("conv-set (id \(id)): \(path("ir.wav"))"), output)
        XCTAssertTrue(output.contains("last set: 5 ok"), output)

        (status, output) = try pwConvolver(["status", "--json"])
        XCTAssertEqual(status, 0, output)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], output)
        let nodes = try XCTUnwrap(json["nodes"] as? [[String: Any]])
        XCTAssertEqual(nodes.count, 1)
        let node = nodes[0]
        XCTAssertEqual(node["id"] as? Int, id)
        let properties = try XCTUnwrap(node["properties"] as? [String: String])
        let dumped = try XCTUnwrap(try daemon.nodeProperties("conv-set")).properties
        for key in ["node.name", "convolver.ir", "convolver.rate", "convolver.control-answer", "convolver.plan"] {
            XCTAssertEqual(properties[key], dumped[key].map { "\($0)" }, key)
        }
        let props = try XCTUnwrap(node["props"] as? [String: Any])
        let dumpedParams = try XCTUnwrap(try daemon.params(ofNode: "conv-set", "Props").first?["params"] as? [Any])
        XCTAssertEqual(props.count * 2, dumpedParams.count, "\(props) vs \(dumpedParams)")
        for index in stride(from: 0, to: dumpedParams.count, by: 2) {
            let key = try XCTUnwrap(dumpedParams[index] as? String)
            if let ours = props[key] as? Double, let theirs = dumpedParams[index + 1] as? Double, !(props[key] is Bool) {
                XCTAssertEqual(ours, theirs, accuracy: 1e-6, key)  // pw-dump prints 6 decimals
            } else {
                XCTAssertEqual("\(props[key] ?? "missing")", "\(dumpedParams[index + 1])", key)
            }
        }
        XCTAssertTrue(client.isRunning, client.log)
    }
}
