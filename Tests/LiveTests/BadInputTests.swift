import Convolution
import Foundation
import XCTest

@testable import ConvolverGraph
@testable import ConvolverNode

/// The bad-input matrix (issue 5, item 3) as one table. Every row is run at unit level (module
/// arguments through `NodeConfiguration.parse`, then the IR(s) through `EngineFactory.makeMatrix`
/// at 48 kHz, exactly what a module load or a Props "filename" does before planning), and rows
/// marked `live` also against a private daemon: as a Props "filename" on a running node, as a
/// module load in a `pipewire -c` client, or as a graph change (quantum, rate). Live, a healthy
/// second convolver node must keep processing throughout, and the node under test must survive.
final class BadInputTests: XCTestCase {
    enum Input {
        /// Module arguments (inside `{ }`); `$DIR` is the test's directory.
        case arguments(String)
        /// An IR file made by the row, loaded as `filename`.
        case file(name: String, make: (String) throws -> Void)
        /// A graph setting: `clock.force-quantum` or `clock.force-rate`.
        case graph(setting: String, value: Int)
    }

    enum Expect {
        /// An error whose message contains every fragment.
        case error([String])
        /// Accepted; warnings (if any) contain every fragment. `why` says why accepting is right.
        case accepted(warnings: [String], why: String)
        /// Graph rows: the node keeps processing, at `rate` if given.
        case keepsProcessing(rate: Int?)
    }

    enum Live { case none, props, moduleLoad, graph }

    struct Row {
        var name: String
        var input: Input
        var expect: Expect
        var live: Live
    }

    private var directory = ""

    private func writeWAV(_ channels: [[Float]], _ path: String) throws {
        try AudioFile.write(path: path, sampleRate: 48000, channels: channels)
    }

    /// A valid 1 s stereo WAV's bytes, for the truncation rows.
    private func validWAVBytes() throws -> [UInt8] {
        let path = directory + "/valid-source.wav"
        try writeWAV([[Float](repeating: 0.1, count: 48000), [Float](repeating: 0.1, count: 48000)], path)
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    private func rows() -> [Row] {
        let bytes = { (name: String, make: @escaping () throws -> [UInt8]) -> Input in
            .file(name: name) { path in try Data(try make()).write(to: URL(fileURLWithPath: path)) }
        }
        return [
            Row(
                name: "nonexistent path", input: .arguments("filename = \"$DIR/nonexistent/ir.wav\""),
                expect: .error(["filename", "nonexistent/ir.wav", "does not exist"]), live: .props),
            Row(name: "directory", input: .arguments("filename = \"$DIR\""), expect: .error(["filename", "swconv-node-"]), live: .props),
            Row(name: "empty file", input: bytes("empty.wav") { [] }, expect: .error(["filename", "empty.wav", "empty"]), live: .props),
            Row(
                name: "truncated header", input: bytes("truncated-header.wav") { Array(try self.validWAVBytes().prefix(20)) },
                expect: .error(["filename", "truncated-header.wav"]), live: .props),
            Row(
                name: "truncated data",
                input: bytes("truncated-data.wav") {
                    let all = try self.validWAVBytes(); return Array(all.prefix(all.count / 2))
                },
                expect: .error(["filename", "truncated-data.wav", "truncated"]), live: .none),
            Row(
                name: "non-audio file", input: bytes("text.wav") { Array("this is not a WAV file\n".utf8) },
                expect: .error(["filename", "text.wav", "not audio"]), live: .props),
            Row(
                name: "absurd sample rate in the header (2147483647 Hz; crashed libsoxr before)",
                input: bytes("absurd-rate.wav") {
                    var all = try self.validWAVBytes(); all.replaceSubrange(24..<28, with: [0xFF, 0xFF, 0xFF, 0x7F]); return all
                },
                expect: .error(["filename", "absurd-rate.wav", "2147483647 Hz"]), live: .none),
            Row(
                name: "NaN sample", input: .file(name: "nan.wav") { try self.writeWAV([[1, 0, .nan, 0]], $0) },
                expect: .error(["filename", "nan.wav", "nan", "frame 2"]), live: .props),
            Row(
                name: "Inf sample", input: .file(name: "inf.wav") { try self.writeWAV([[1, -.infinity, 0]], $0) },
                expect: .error(["filename", "inf.wav", "inf", "frame 1"]), live: .none),
            Row(
                name: "all-zero IR", input: .file(name: "zero.wav") { try self.writeWAV([[Float](repeating: 0, count: 256)], $0) },
                expect: .accepted(warnings: [], why: "silence is a valid filter (filter-chain accepts it too): the node outputs the dry part only"),
                live: .props),
            Row(
                name: "SOFA file that is not SOFA", input: bytes("not-hrtf.sofa") { Array("this is not an HRTF set\n".utf8) },
                expect: .error(["filename", "not-hrtf.sofa", "not an HRTF set libmysofa can read"]), live: .props),
            Row(
                name: "truncated SOFA file",
                input: bytes("truncated.sofa") {
                    Array(try Data(contentsOf: URL(fileURLWithPath: SOFATests.kemar)).prefix(100_000))
                },
                expect: .error(["filename", "truncated.sofa", "not an HRTF set"]), live: .props),
            Row(
                name: "SOFA azimuth NaN", input: .arguments("filename = \"\(SOFATests.kemar)\" sofa = { azimuth = nan }"),
                expect: .error(["sofa.azimuth", "'nan' is not a number"]), live: .moduleLoad),
            Row(
                name: "SOFA elevation out of range", input: .arguments("filename = \"\(SOFATests.kemar)\" sofa = { elevation = 95 }"),
                expect: .error(["sofa.elevation", "95.0 is outside -90.0...90.0"]), live: .none),
            Row(
                name: "SOFA with a speaker position that has no direction",
                input: .arguments("filename = \"\(SOFATests.kemar)\" audio.position = [ FL FR AUX3 ]"),
                expect: .error(["audio.position", "AUX3 has no standard speaker direction"]), live: .none),
            Row(
                name: "width 3", input: .arguments("filename = \"builtin:dirac\" width = 3"),
                expect: .error(["width", "3.0 is outside 0.0...2.0"]), live: .moduleLoad),
            Row(
                name: "width on a mono node", input: .arguments("filename = \"builtin:dirac\" audio.channels = 1 width = 0.5"),
                expect: .error(["width", "needs a node with two outputs"]), live: .none),
            Row(
                name: "0 channels", input: .arguments("filename = \"builtin:dirac\" audio.channels = 0"),
                expect: .error(["audio.channels", "0"]), live: .moduleLoad),
            Row(
                name: "65 channels", input: .arguments("filename = \"builtin:dirac\" audio.channels = 65"),
                expect: .error(["audio.channels", "65"]), live: .none),
            Row(
                name: "channel index out of range",
                input: .arguments("impulses = [ { input = 0 output = 0 filename = \"builtin:hall\" channel = 7 } ]"),
                expect: .error(["impulses[0]", "no channel 7"]), live: .moduleLoad),
            Row(
                name: "IR over the size limit", input: .arguments("filename = \"builtin:dirac\" delay = 16777216"),
                expect: .error(["filename", "too long", "limit is 60", "MiB"]), live: .moduleLoad),
            Row(
                name: "negative gain", input: .arguments("filename = \"builtin:dirac\" gain = -1"), expect: .error(["gain", "-1"]), live: .moduleLoad),
            Row(
                name: "absurd gain", input: .arguments("filename = \"builtin:dirac\" gain = 1e9"), expect: .error(["gain", "1000000000"]), live: .none
            ),
            Row(name: "negative mix", input: .arguments("filename = \"builtin:dirac\" mix = -0.5"), expect: .error(["mix", "-0.5"]), live: .none),
            Row(name: "absurd mix", input: .arguments("filename = \"builtin:dirac\" mix = 7"), expect: .error(["mix", "7"]), live: .none),
            Row(name: "negative delay", input: .arguments("filename = \"builtin:dirac\" delay = -3"), expect: .error(["delay", "-3"]), live: .none),
            Row(name: "absurd delay", input: .arguments("filename = \"builtin:dirac\" delay = 1e12"), expect: .error(["delay"]), live: .none),
            Row(
                name: "negative offset", input: .arguments("filename = \"builtin:dirac\" offset = -1"), expect: .error(["offset", "-1"]), live: .none),
            Row(
                name: "non-numeric offset", input: .arguments("filename = \"builtin:dirac\" offset = lots"), expect: .error(["offset", "lots"]),
                live: .none),
            Row(
                name: "negative length", input: .arguments("filename = \"builtin:dirac\" length = -10"), expect: .error(["length", "-10"]),
                live: .none),
            Row(name: "absurd length", input: .arguments("filename = \"builtin:dirac\" length = 1e15"), expect: .error(["length"]), live: .none),
            Row(
                name: "negative crossfade", input: .arguments("filename = \"builtin:dirac\" crossfade = -1"), expect: .error(["crossfade", "-1"]),
                live: .none),
            Row(
                name: "crossfade with a unit", input: .arguments("filename = \"builtin:dirac\" crossfade = \"20ms\" crossfade.shape = linear"),
                expect: .accepted(warnings: [], why: "a valid crossfade"), live: .none),
            Row(
                name: "absurd crossfade", input: .arguments("filename = \"builtin:dirac\" crossfade = 3600"), expect: .error(["crossfade", "3600"]),
                live: .none),
            Row(
                name: "unknown crossfade shape", input: .arguments("filename = \"builtin:dirac\" crossfade.shape = cubic"),
                expect: .error(["crossfade.shape", "cubic"]), live: .none),
            Row(
                name: "unknown pre-ringing choice", input: .arguments("filename = \"builtin:dirac\" resample.pre-ringing = trim"),
                expect: .error(["resample.pre-ringing", "trim", "cut or keep"]), live: .none),
            Row(
                name: "unknown key", input: .arguments("filename = \"builtin:dirac\" frobnicate = 1"),
                expect: .accepted(warnings: ["frobnicate"], why: "unknown keys are warnings, as in PipeWire's modules"), live: .none),
            // filter-chain's graphs: what cannot run is refused by name.
            graphRow(
                "a LADSPA plugin that is not installed", "{ type = ladspa name = enc plugin = no_such_encoder label = surroundEncoder }",
                live: .moduleLoad, ["node 'enc' plugin", "'no_such_encoder' not found", "/usr/lib/ladspa/no_such_encoder.so", "LADSPA_PATH"]),
            graphRow(
                "a LADSPA label the plugin does not have", "{ type = ladspa name = enc plugin = surround_encoder_1401 label = surroundDecoder }",
                live: .moduleLoad, ["node 'enc' plugin", "no label 'surroundDecoder'", "its labels are 'surroundEncoder'"]),
            graphRow(
                "a LADSPA port that does not exist", "{ type = ladspa name = gain plugin = amp_1181 label = amp }", inputs: "\"gain:Inptu\"",
                outputs: "\"gain:Output\"", live: .moduleLoad, ["node 'gain' (amp) has no input port 'Inptu'", "its inputs are 'Input'"]),
            graphRow(
                "a LADSPA control of NaN", "{ type = ladspa name = gain plugin = amp_1181 label = amp control = { \"Amps gain (dB)\" = nan } }",
                inputs: "\"gain:Input\"", outputs: "\"gain:Output\"", ["node 'gain' control \"Amps gain (dB)\"", "not a finite number"]),
            graphRow(
                "an LV2 plugin that is not installed", "{ type = lv2 name = comp plugin = \"http://lsp-plug.in/plugins/lv2/comp_mono\" }",
                live: .moduleLoad, ["node 'comp' plugin", "LV2 plugin <http://lsp-plug.in/plugins/lv2/comp_mono> is not installed", "LV2_PATH"]),
            graphRow(
                "an LV2 port that does not exist", "{ type = lv2 name = comp plugin = \"http://lsp-plug.in/plugins/lv2/compressor_mono\" }",
                inputs: "\"comp:input\"", outputs: "\"comp:out\"",
                ["node 'comp' (http://lsp-plug.in/plugins/lv2/compressor_mono) has no input port 'input'", "its inputs are 'in'"]),
            graphRow(
                "a generator (sine)", "{ type = builtin label = sine name = tone }", live: .moduleLoad,
                ["node 'tone'", "sine", "is a generator", "keep this graph on filter-chain"]),
            graphRow(
                "a builtin function's port that does not exist", "{ type = builtin label = clamp name = limit }", inputs: "\"limit:Input\"",
                outputs: "\"limit:Out\"", ["node 'limit' (clamp) has no input port 'Input'", "its inputs are 'In'"]),
            graphRow("ebur128", "{ type = builtin label = ebur128 name = meter }", ["node 'meter'", "ebur128"]),
            graphRow(
                "a raw biquad without coefficients", "{ type = builtin label = bq_raw name = raw }",
                ["node 'raw' config", "bq_raw needs config = { coefficients"]),
            graphRow(
                "a raw biquad with its pole on the unit circle",
                "{ type = builtin label = bq_raw name = raw config = { coefficients = [ { rate = 48000 b0 = 1 a1 = -1 } ] } }",
                ["node 'raw'", "b0 b1 b2 a0 a1 a2 = 1.0 0.0 0.0 1.0 -1.0 0.0", "on or outside the unit circle"]),
            graphRow(
                "a dcblock with R = 1 (a pole on the unit circle)", "{ type = builtin label = dcblock name = dc control = { R = 1 } }",
                inputs: "\"dc:In 1\"", outputs: "\"dc:Out 1\"", ["node 'dc'", "on or outside the unit circle"]),
            graphRow(
                "a spatializer without a file", "{ type = sofa label = spatializer name = sp }",
                ["node 'sp' config filename", "needs the filename of a SOFA file"]),
            graphRow(
                "a spatializer's missing file", "{ type = sofa label = spatializer name = sp config = { filename = \"$DIR/missing.sofa\" } }",
                extra: "capture.props = { audio.position = [ FC ] }", live: .moduleLoad, ["node 'sp'", "missing.sofa", "does not exist"]),
            graphRow(
                "a spatializer azimuth of NaN",
                "{ type = sofa label = spatializer name = sp config = { filename = \"$DIR/x.sofa\" } control = { Azimuth = nan } }",
                ["node 'sp'", "Azimuth", "not a finite number"]),
            graphRow(
                "a sofa node that is not a spatializer", "{ type = sofa label = binaural name = b }",
                ["node 'b'", "'sofa' node", "keep this graph on filter-chain"]),
            graphRow(
                "a biquad Q out of range", "{ type = builtin label = bq_peaking name = eq control = { Freq = 1000 Q = 20 } }",
                ["node 'eq'", "control \"Q\"", "outside 0.0...10.0"]),
            graphRow(
                "a biquad frequency of NaN", "{ type = builtin label = bq_lowpass name = lp control = { Freq = nan } }",
                ["node 'lp'", "Freq", "not a finite number"]),
            graphRow(
                "a param_eq file that does not exist",
                "{ type = builtin label = param_eq name = eq config = { filename = \"/nonexistent/eq.txt\" } }",
                ["node 'eq' config filename", "cannot read the EqualizerAPO file '/nonexistent/eq.txt'", "No such file"]),
            graphRow(
                "a param_eq band gain of NaN",
                "{ type = builtin label = param_eq name = eq config = { filters = [ { type = bq_peaking freq = 100 gain = nan } ] } }",
                ["filters[0].gain", "not a number"]),
            graphRow(
                "a biquad that rings for minutes", "{ type = builtin label = bq_peaking name = slow control = { Freq = 0.2 Q = 10 Gain = 6 } }",
                ["node 'slow'", "bq_peaking", "coefficients", "no finite impulse response"]),
            graphRow("an unknown builtin", "{ type = builtin label = frobnicator name = f }", ["node 'f'", "unknown builtin label 'frobnicator'"]),
            graphRow(
                "a link to a missing node", "{ type = builtin label = copy name = a } { type = builtin label = copy name = b }",
                links: "{ output = \"a:Out\" input = \"nobody:In\" }", ["links[0].input", "no node is named 'nobody'"]),
            graphRow(
                "a link to a missing port", "{ type = builtin label = copy name = a } { type = builtin label = mixer name = m }",
                links: "{ output = \"a:Out\" input = \"m:In 9\" }", live: .moduleLoad,
                ["links[0].input", "'m:In 9'", "no input port 'In 9'", "'In 8'"]),
            graphRow(
                "a duplicate node name", "{ type = builtin label = copy name = a } { type = builtin label = copy name = a }",
                ["nodes[1]", "second node named 'a'"]),
            graphRow(
                "a cycle",
                "{ type = builtin label = copy name = a } { type = builtin label = mixer name = m } { type = builtin label = copy name = b }",
                links: "{ output = \"a:Out\" input = \"m:In 1\" } { output = \"m:Out\" input = \"a:In\" }",
                inputs: "\"m:In 2\"", outputs: "\"b:Out\"", live: .moduleLoad, ["cycle", "'a'", "'m'"]),
            graphRow(
                "an input linked twice",
                "{ type = builtin label = copy name = a } { type = builtin label = copy name = b } { type = builtin label = copy name = c }",
                links: "{ output = \"a:Out\" input = \"c:In\" } { output = \"b:Out\" input = \"c:In\" }",
                ["links[1].input", "already has a link", "mixer"]),
            graphRow(
                "a mixer gain of NaN", "{ type = builtin label = mixer name = m control = { \"Gain 1\" = nan } }", live: .moduleLoad,
                ["node 'm'", "Gain 1", "not a finite number"]),
            graphRow(
                "a delay beyond max-delay",
                "{ type = builtin label = delay name = d config = { max-delay = 0.5 } control = { \"Delay (s)\" = 0.7 } }",
                ["node 'd'", "Delay (s)", "beyond its max-delay of 0.5"]),
            graphRow(
                "an input that names an output port", "{ type = builtin label = copy name = a }", inputs: "\"a:Out\"",
                ["inputs[0]", "'a:Out'", "no input port 'Out'"]),
            graphRow(
                "0 channels", "{ type = builtin label = copy name = a }", extra: "audio.channels = 0", ["audio.channels", "0"]),
            graphRow(
                "65 channels", "{ type = builtin label = copy name = a }", extra: "audio.channels = 65", ["audio.channels", "65"]),
            graphRow(
                "instances that do not divide", "{ type = builtin label = mixer name = m }", inputs: "\"m:In 1\" \"m:In 2\"",
                extra: "capture.props = { audio.position = [ FL FR ] } playback.props = { audio.position = [ FL FR ] }",
                ["capture side has 2 channels", "playback side 2", "2/2 must equal 2/1"]),
            graphRow(
                "our own keys beside filter.graph", "{ type = builtin label = copy name = a }", extra: "filename = \"builtin:hall\"",
                ["filename", "filter.graph", "one or the other"]),
            graphRow(
                "a convolver without a file", "{ type = builtin label = convolver name = c config = { gain = 0.5 } }",
                ["node 'c'", "filename"]),
            graphRow(
                "a convolver's missing file", "{ type = builtin label = convolver name = c config = { filename = \"$DIR/missing.wav\" } }",
                live: .moduleLoad, ["node 'c'", "missing.wav", "does not exist"]),
            graphRow(
                "a graph that reaches no output", "{ type = builtin label = copy name = a } { type = builtin label = copy name = b }",
                inputs: "\"a:In\"", outputs: "\"b:Out\"", ["no graph input reaches any graph output"]),
            Row(name: "malformed SPA-JSON", input: .arguments("filename = \"unterminated"), expect: .error(["args"]), live: .moduleLoad),
            Row(name: "malformed SPA-JSON (brackets)", input: .arguments("impulses = [ { input = 0 ] }"), expect: .error([]), live: .none),
            Row(
                name: "quantum 16384 (> 8192)", input: .graph(setting: "clock.force-quantum", value: 16384),
                expect: .keepsProcessing(rate: nil), live: .graph),
            Row(name: "rate 44.1 kHz", input: .graph(setting: "clock.force-rate", value: 44100), expect: .keepsProcessing(rate: 44100), live: .graph),
            Row(name: "rate 96 kHz", input: .graph(setting: "clock.force-rate", value: 96000), expect: .keepsProcessing(rate: 96000), live: .graph),
            Row(
                name: "rate 192 kHz", input: .graph(setting: "clock.force-rate", value: 192000), expect: .keepsProcessing(rate: 192000), live: .graph),
        ]
    }

    /// A row of filter-chain's `filter.graph` form; `inputs`/`outputs` default to the first node's
    /// and the last node's ports, as in filter-chain.
    private func graphRow(
        _ name: String, _ nodes: String, links: String = "", inputs: String? = nil, outputs: String? = nil, extra: String = "",
        live: Live = .none, _ fragments: [String]
    ) -> Row {
        let ports = (inputs.map { " inputs = [ \($0) ]" } ?? "") + (outputs.map { " outputs = [ \($0) ]" } ?? "")
        return Row(
            name: "filter.graph: " + name,
            input: .arguments("\(extra) filter.graph = { nodes = [ \(nodes) ] links = [ \(links) ]\(ports) }"),
            expect: .error(fragments), live: live)
    }

    /// The row's module arguments (file rows: written, then used as `filename`).
    private func arguments(_ row: Row) throws -> String? {
        switch row.input {
        case let .arguments(text): return text.replacingOccurrences(of: "$DIR", with: directory)
        case let .file(name, make):
            try make(directory + "/" + name)
            return "filename = \"\(directory)/\(name)\""
        case .graph: return nil
        }
    }

    /// Unit level: the error message, or nil and the warnings when accepted.
    private func evaluate(_ arguments: String) -> (error: String?, warnings: [String]) {
        do {
            let (configuration, warnings) = try NodeConfiguration.parse(pipeWire: .running, arguments: "{ \(arguments) }")
            do {
                _ = try EngineFactory(context: nil, costs: .typical, graph: nil).makeMatrix(configuration, sampleRate: 48000)
                return (nil, warnings)
            } catch {
                return ("\(error)", warnings)
            }
        } catch {
            return ("\(error)", [])
        }
    }

    func testEveryRowAtUnitLevel() throws {
        directory = NSTemporaryDirectory() + "swconv-node-badinput-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var graphRows = 0
        for row in rows() {
            guard let arguments = try arguments(row) else { graphRows += 1; continue }
            let (error, warnings) = evaluate(arguments)
            print("bad input | \(row.name) | \(error.map { "error: \($0)" } ?? "accepted, warnings: \(warnings)")")
            switch row.expect {
            case let .error(fragments):
                guard let error else { XCTFail("\(row.name): accepted, expected an error"); continue }
                for fragment in fragments {
                    XCTAssertTrue(error.lowercased().contains(fragment.lowercased()), "\(row.name): '\(error)' lacks '\(fragment)'")
                }
            case let .accepted(expectedWarnings, _):
                XCTAssertNil(error, row.name)
                for fragment in expectedWarnings {
                    XCTAssertTrue(warnings.contains { $0.contains(fragment) }, "\(row.name): warnings \(warnings) lack '\(fragment)'")
                }
            case .keepsProcessing: XCTFail("\(row.name): not a graph row")
            }
        }
        XCTAssertEqual(graphRows, 4, "graph rows run live in testLiveSubset")
    }

    private func property(_ daemon: PrivatePipeWire, _ node: String, _ key: String) -> String? {
        guard let value = (try? daemon.nodeProperties(node))?.properties[key] else { return nil }
        return "\(value)"
    }

    private func calls(_ daemon: PrivatePipeWire, _ node: String) -> Int { Int(property(daemon, node, "convolver.calls") ?? "") ?? -1 }

    /// Waits until the node's published call count rises (statistics come once a second).
    private func keepsProcessing(_ daemon: PrivatePipeWire, _ node: String, _ context: String) {
        let before = calls(daemon, node)
        XCTAssertTrue(waitUntil(timeout: 6) { self.calls(daemon, node) > before }, "\(node) stopped processing after \(context)")
    }

    func testLiveSubset() throws {
        try BuildProducts.requireModule()
        let daemon = try PrivatePipeWire(name: "badinput")
        defer { daemon.stop() }
        try daemon.setQuantum(256)
        directory = daemon.runtimeDirectory

        // A healthy node and the node under test, both driven by one recorder.
        let healthy = try ModuleClient.start(daemon, name: "conv-healthy", arguments: "node.name = conv-healthy filename = \"builtin:hall\"")
        defer { healthy.stop() }
        let target = try ModuleClient.start(daemon, name: "conv-target", arguments: "node.name = conv-target filename = \"builtin:dirac\"")
        defer { target.stop() }
        try daemon.waitForPorts(ofNode: "conv-healthy", count: 4, timeout: 30)
        try daemon.waitForPorts(ofNode: "conv-target", count: 4, timeout: 30)
        let recorder = try daemon.spawn(
            [
                "pw-record", "-P", PlayThrough.streamProperties("rec-bad"), "--format", "f32",
                "--channels", "4", "--channel-map", "FL,FR,RL,RR", directory + "/bad.wav",
            ],
            logName: "rec-bad.log")
        defer { recorder.stop() }
        try daemon.waitForPorts(ofNode: "rec-bad", count: 4)
        try daemon.link("conv-healthy:output_FL", "rec-bad:input_FL")
        try daemon.link("conv-healthy:output_FR", "rec-bad:input_FR")
        try daemon.link("conv-target:output_FL", "rec-bad:input_RL")
        try daemon.link("conv-target:output_FR", "rec-bad:input_RR")
        keepsProcessing(daemon, "conv-healthy", "start")
        let targetID = try XCTUnwrap(try daemon.nodeProperties("conv-target")).id

        for row in rows() where row.live != .none {
            switch row.live {
            case .props:
                guard let arguments = try arguments(row),
                    let filename = arguments.split(separator: "\"").dropFirst().first.map(String.init)
                else { continue }
                let (status, output) = try daemon.run([
                    "pw-cli", "set-param", "\(targetID)", "Props",
                    "{ params = [ \"filename\" \"\(filename)\" ] }",
                ])
                XCTAssertEqual(status, 0, output)
                switch row.expect {
                case .error:
                    XCTAssertTrue(
                        waitUntil(timeout: 10) {
                            target.log.split(separator: "\n").contains { $0.contains("keeping the current IR") && $0.contains(filename) }
                        }, "\(row.name): no error naming \(filename) in the log: \(target.log.suffix(1500))")
                    print("bad input live (Props) | \(row.name) | " + (target.log.split(separator: "\n").last { $0.contains(filename) } ?? ""))
                default:
                    XCTAssertTrue(
                        waitUntil(timeout: 10) { self.property(daemon, "conv-target", "convolver.ir") == filename },
                        "\(row.name): not installed")
                    print("bad input live (Props) | \(row.name) | installed")
                    // Back to a sounding IR, so later rows start from the same state.
                    _ = try daemon.run(["pw-cli", "set-param", "\(targetID)", "Props", "{ params = [ \"filename\" \"builtin:dirac\" ] }"])
                    XCTAssertTrue(waitUntil(timeout: 10) { self.property(daemon, "conv-target", "convolver.ir") == "builtin:dirac" })
                }
                XCTAssertTrue(target.isRunning, "\(row.name): the node's process died")
                keepsProcessing(daemon, "conv-target", row.name)
            case .moduleLoad:
                guard let arguments = try arguments(row) else { continue }
                let name = "conv-bad-\(row.name.filter { $0.isLetter || $0.isNumber })"
                let client = try ModuleClient.start(daemon, name: name, arguments: "node.name = \(name) \(arguments)")
                XCTAssertTrue(client.waitForExit(timeout: 20), "\(row.name): the client loaded the module anyway")
                let line = client.log.split(separator: "\n").first { $0.contains("cannot load module") } ?? ""
                // PipeWire 1.x parses the whole config itself and refuses malformed SPA-JSON before
                // the module sees its arguments, with its own error naming the place.
                let configError = client.log.split(separator: "\n").first { $0.contains("error in config") }
                if line.isEmpty, PipeWireInstallation.isOneDotX, let configError, case .error(["args"]) = row.expect {
                    print("bad input live (module load) | \(row.name) | \(configError)")
                    client.stop()
                    continue
                }
                print("bad input live (module load) | \(row.name) | \(line)")
                if case let .error(fragments) = row.expect {
                    for fragment in fragments {
                        XCTAssertTrue(line.lowercased().contains(fragment.lowercased()), "\(row.name): '\(line)' lacks '\(fragment)'")
                    }
                }
                client.stop()
            case .graph:
                guard case let .graph(setting, value) = row.input, case let .keepsProcessing(rate) = row.expect else { continue }
                try daemon.run(["pw-metadata", "-n", "settings", "0", setting, "\(value)"])
                if let rate {
                    XCTAssertTrue(
                        waitUntil(timeout: 15) { self.property(daemon, "conv-target", "convolver.rate") == "\(rate)" },
                        "\(row.name): rate \(self.property(daemon, "conv-target", "convolver.rate") ?? "-")")
                }
                usleep(1_500_000)
                keepsProcessing(daemon, "conv-target", row.name)
                if setting == "clock.force-quantum" {
                    let (quantum, line) = try daemon.profiledQuantum(ofNode: "conv-target")
                    print("bad input live (graph) | \(row.name) | pw-convolver top: \(line)")
                    XCTAssertEqual(
                        quantum, "8192",
                        "force-quantum \(value) is clamped to the daemon's default.clock.max-quantum 8192")
                }
                print(
                    "bad input live (graph) | \(row.name) | rate \(property(daemon, "conv-target", "convolver.rate") ?? "-"), "
                        + "busy max \(property(daemon, "conv-target", "convolver.busy-max-us") ?? "-") us, "
                        + "late cycles \(property(daemon, "conv-target", "convolver.late-cycles") ?? "-")")
                try daemon.run(["pw-metadata", "-n", "settings", "0", setting, "0"])
                if setting == "clock.force-quantum" { try daemon.setQuantum(256) }
            case .none: break
            }
            XCTAssertTrue(target.isRunning && healthy.isRunning, "\(row.name): a node's process died")
            XCTAssertTrue(daemon.answers(), "\(row.name): the daemon stopped answering")
            keepsProcessing(daemon, "conv-healthy", row.name)
        }
    }

    /// Fuzz of the IR loader: random bytes and mutations of a valid WAV's header and data (flipped,
    /// replaced and inserted bytes, cut lengths), written to a file and loaded. Every load must
    /// throw a typed `ImpulseResponseError` or return an IR with only finite samples; a crash
    /// fails the run. Bounded: SWIFT_CONVOLVER_FUZZ_SECONDS (default 5 s) or 20000 rounds.
    func testImpulseResponseLoaderFuzz() throws {
        directory = NSTemporaryDirectory() + "swconv-node-irfuzz-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let seconds = Double(ProcessInfo.processInfo.environment["SWIFT_CONVOLVER_FUZZ_SECONDS"] ?? "") ?? 5
        let sourcePath = directory + "/source.wav"
        var sine = (0..<2000).map { Float(0.5 * sin(Double($0) * 0.05) * exp(-Double($0) / 500)) }
        try writeWAV([sine, sine.reversed()], sourcePath)
        let stereo = Array(try Data(contentsOf: URL(fileURLWithPath: sourcePath)))
        sine = Array(sine.prefix(64))
        try writeWAV([sine], sourcePath)
        let mono = Array(try Data(contentsOf: URL(fileURLWithPath: sourcePath)))
        var random = TestSignals.Random(state: 0xF022)
        func below(_ limit: Int) -> Int { min(limit - 1, Int((random.next() + 1) / 2 * Float(limit))) }
        let path = directory + "/fuzz.wav"
        let end = Date().addingTimeInterval(seconds)
        var rounds = 0, loaded = 0
        var errorKinds: [String: Int] = [:]
        while Date() < end && rounds < 20000 {
            rounds += 1
            var bytes = below(2) == 0 ? stereo : mono
            switch below(6) {
            case 0: bytes = (0..<below(300)).map { _ in UInt8(below(256)) }  // random bytes
            case 1: bytes = Array(bytes.prefix(below(bytes.count)))  // cut anywhere
            case 2:  // header: a few bytes of the first 80
                for _ in 0...below(4) { bytes[below(80)] = UInt8(below(256)) }
            case 3:  // header size fields: extremes
                let field = [4, 16, 20, 22, 24, 28, 32, 34, 40, 40 + 4][below(10)]
                let value: UInt32 = [0, 1, 0xFFFF_FFFF, 0x7FFF_FFFF, 0x8000_0000, UInt32(below(100_000))][below(6)]
                for index in 0..<4 where field + index < bytes.count { bytes[field + index] = UInt8((value >> (8 * UInt32(index))) & 0xFF) }
            case 4:  // data: random bytes (NaN/Inf/huge floats)
                for _ in 0...below(40) { bytes[80 + below(bytes.count - 80)] = UInt8(below(256)) }
            default:  // insert or delete in the header
                let position = below(60)
                if below(2) == 0 { bytes.insert(UInt8(below(256)), at: position) } else { bytes.remove(at: position) }
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            var options = ImpulseResponseOptions()
            options.maxSeconds = 2  // keep the fuzz's memory small; the limit is a typed error too
            do {
                let impulseResponse = try ImpulseResponse.load(path, sampleRate: [48000, 44100, 96000][below(3)], options: options)
                loaded += 1
                for channel in impulseResponse.channels {
                    XCTAssertTrue(channel.allSatisfy { $0.isFinite }, "round \(rounds): non-finite sample in a loaded IR")
                }
            } catch {
                // The error is typed (`throws(ImpulseResponseError)`); count it by its case.
                errorKinds[Mirror(reflecting: error).children.first?.label ?? "\(error)", default: 0] += 1
            }
        }
        print("IR loader fuzz: \(rounds) rounds in \(seconds) s max, \(loaded) loaded with finite samples, typed errors: \(errorKinds)")
        XCTAssertGreaterThan(rounds, 100)
    }

    /// Extends NodeConfigurationTests' parser fuzz: any byte (not only SPA-JSON's alphabet), deep
    /// nesting, and structure-aware inputs (known keys with hostile values). Every outcome is a
    /// `NodeConfigurationError` naming a key with a message, or a configuration within the
    /// documented limits. Bounded: SWIFT_CONVOLVER_FUZZ_SECONDS (default 5 s) or 1 000 000 rounds.
    func testArgumentsParserFuzz() {
        let seconds = Double(ProcessInfo.processInfo.environment["SWIFT_CONVOLVER_FUZZ_SECONDS"] ?? "") ?? 5
        var random = TestSignals.Random(state: 0xA265)
        func below(_ limit: Int) -> Int { min(limit - 1, Int((random.next() + 1) / 2 * Float(limit))) }
        let keys = [
            "filename", "gain", "mix", "bypass", "delay", "offset", "length", "resample.quality", "audio.channels",
            "audio.position", "impulses", "workgroup", "partition", "crossfade", "crossfade.shape", "node.name", "target.object",
        ]
        let values = [
            "-1", "0", "1e309", "nan", "inf", "-inf", "1e9", "0.5", "\"50ms\"", "\"-3ms\"", "\"\"", "[ ]", "{ }", "[ FL FR FL ]",
            "[ { input = 0 output = 9 filename = \"builtin:dirac\" } ]", "{ threads = 999 rt.prio = -1 }", "{ max = 1000 }",
            "builtin:nothing", "\"\\u0000\"", "[ [ [ [ ] ] ] ]", "true", "equal-power", "18446744073709551616",
        ]
        let end = Date().addingTimeInterval(seconds)
        var rounds = 0, accepted = 0
        while Date() < end && rounds < 1_000_000 {
            rounds += 1
            let text: String
            switch below(4) {
            case 0: text = String(decoding: (0..<below(200)).map { _ in UInt8(below(256)) }, as: UTF8.self)
            case 1:
                let depth = below(3000)
                text = "a = " + String(repeating: below(2) == 0 ? "[" : "{ b = ", count: depth)
            default:
                text =
                    (0..<1 + below(6)).map { _ in "\(keys[below(keys.count)]) = \(values[below(values.count)])" }.joined(separator: " ")
                    + " filename = \"builtin:dirac\""
            }
            do {
                let (configuration, _) = try NodeConfiguration.parse(pipeWire: .running, arguments: "{ \(text) }")
                accepted += 1
                XCTAssertTrue((0...NodeConfiguration.gainLimit).contains(configuration.gain), text)
                XCTAssertTrue((0...1).contains(configuration.mix), text)
                XCTAssertTrue((1...NodeConfiguration.channelLimit).contains(configuration.channelCount), text)
                XCTAssertTrue((0...NodeConfiguration.crossfadeLimit).contains(configuration.crossfadeSeconds), text)
                for value in [configuration.delay, configuration.offset, configuration.length] {
                    XCTAssertTrue((0...NodeConfiguration.sampleCountLimit).contains(value), text)
                }
                for impulse in configuration.impulses {
                    XCTAssertTrue(impulse.input < configuration.channelCount && impulse.output < configuration.channelCount, text)
                }
            } catch {
                XCTAssertFalse(error.key.isEmpty, text)
                XCTAssertFalse(error.message.isEmpty, text)
            }
        }
        print("arguments parser fuzz: \(rounds) rounds, \(accepted) accepted within limits, the rest refused with a key and message")
        XCTAssertGreaterThan(rounds, 100)
    }

    /// The `crossfade` key's accepted forms and defaults (the rows above only check acceptance).
    func testCrossfadeKeyValues() throws {
        let defaults = try NodeConfiguration.parse(pipeWire: .running, arguments: "{ filename = \"builtin:dirac\" }").0
        XCTAssertEqual(defaults.crossfadeSeconds, 0.05)
        XCTAssertTrue(defaults.crossfadeEqualPower)
        let milliseconds = try NodeConfiguration.parse(
            pipeWire: .running, arguments: "{ filename = \"builtin:dirac\" crossfade = \"20ms\" crossfade.shape = linear }"
        ).0
        XCTAssertEqual(milliseconds.crossfadeSeconds, 0.02, accuracy: 1e-12)
        XCTAssertFalse(milliseconds.crossfadeEqualPower)
        XCTAssertEqual(
            try NodeConfiguration.parse(pipeWire: .running, arguments: "{ filename = \"builtin:dirac\" crossfade = 0.5 }").0.crossfadeSeconds, 0.5)
        XCTAssertEqual(
            try NodeConfiguration.parse(pipeWire: .running, arguments: "{ filename = \"builtin:dirac\" crossfade = \"2s\" }").0.crossfadeSeconds, 2)
        XCTAssertEqual(
            try NodeConfiguration.parse(pipeWire: .running, arguments: "{ filename = \"builtin:dirac\" crossfade = 0 }").0.crossfadeSeconds, 0)
    }
}
