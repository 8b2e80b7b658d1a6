import Convolution
import EngineTestSupport
import Foundation
import LevelScheduling
import Workgroup
import XCTest

@testable import ConvolverGraph
@testable import ConvolverNode

/// The module-argument parser and its errors (no PipeWire needed).
final class NodeConfigurationTests: XCTestCase {
    func testSPAJSONSyntaxAsPipeWireWritesIt() throws {
        let value = try SPAJSONValue.parse(
            """
            { node.name = "conv"  audio.position = [ FL, FR ]   # a comment
              gain: 0.5, filename = builtin:hall
              impulses = [ { input = 0 output = 1 filename = "/a \\"b\\".wav" } ] }
            """)
        guard case let .object(members) = value else { return XCTFail("not an object: \(value)") }
        XCTAssertEqual(members.map(\.key), ["node.name", "audio.position", "gain", "filename", "impulses"])
        XCTAssertEqual(members[1].value, .array([.word("FL"), .word("FR")]))
        XCTAssertEqual(members[2].value.number, 0.5)
        XCTAssertEqual(members[3].value.text, "builtin:hall")
        guard case let .array(impulses) = members[4].value, case let .object(entry) = impulses.first else {
            return XCTFail("impulses: \(members[4].value)")
        }
        XCTAssertEqual(entry.last?.value, .string("/a \"b\".wav"))
        // Without braces, as module args may come.
        XCTAssertEqual(try SPAJSONValue.parse("a = 1 b = x"), .object([.init(key: "a", value: .word("1")), .init(key: "b", value: .word("x"))]))
    }

    func testSPAJSONErrorsHaveOffsets() {
        for (text, offset) in [("{ a = [ 1 2 ", 12), ("{ a = \"x", 8), ("{ = 1 }", 2), ("{ a = 1 } }", 10)] {
            XCTAssertThrowsError(try SPAJSONValue.parse(text), text) { error in
                XCTAssertEqual((error as? SPAJSONError)?.offset, offset, "\(text): \(error)")
            }
        }
        let deep = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        XCTAssertThrowsError(try SPAJSONValue.parse(deep))
        // Line and column (from 1) and the text there, as an editor shows them.
        let config = "node.name = x\nfilename = \"/ir.wav\"\n  impulses = [ { input = 0 ] }\n"
        XCTAssertThrowsError(try SPAJSONValue.parse(config)) { error in
            let error = error as? SPAJSONError
            XCTAssertEqual(error?.line, 3)
            XCTAssertEqual(error?.column, 28)
            XCTAssertEqual(error?.nearText, "] }")
            XCTAssertEqual(error?.description.hasPrefix("SPA-JSON syntax error at line 3, column 28 ('] }'): "), true, "\(String(describing: error))")
        }
    }

    /// What a new user writes and expects to work: gains in dB, paths from the home directory,
    /// matrix indices explained as counted from 0.
    func testGainsInDecibelsPathsFromHomeAndZeroBasedIndices() throws {
        let home = try XCTUnwrap(ProcessInfo.processInfo.environment["HOME"])
        let (configuration, _) = try NodeConfiguration.parse(
            pipeWire: .running,
            arguments: """
                filename = "~/irs/hall.wav" gain = "-6dB"
                impulses = [ { input = 0 output = 0 filename = "$HOME/a.wav" gain = "+3 dB" } { input = 1 output = 1 filename = "${HOME}/b.wav" gain = -0.5 } ]
                """)
        XCTAssertEqual(configuration.filename, home + "/irs/hall.wav")
        XCTAssertEqual(configuration.impulses.map(\.filename), [home + "/a.wav", home + "/b.wav"])
        XCTAssertEqual(configuration.gain, 0.501187, accuracy: 1e-6)
        XCTAssertEqual(configuration.impulses.map(\.gain)[0], 1.412538, accuracy: 1e-6)
        XCTAssertEqual(configuration.impulses.map(\.gain)[1], -0.5)
        for (arguments, key, fragment) in [
            ("filename = x gain = \"loud\"", "gain", "not a gain: a linear number (0.5) or decibels"),
            ("filename = x gain = \"60dB\"", "gain", "1000.0 is outside 0.0...100.0"),
            ("impulses = [ { input = 2 output = 0 filename = x } ]", "impulses[0].input", "counted from 0: 0...1"),
            ("impulses = [ { input = 0 output = 5 filename = x } ]", "impulses[0].output", "counted from 0: 0...1"),
        ] {
            XCTAssertThrowsError(try NodeConfiguration.parse(pipeWire: .running, arguments: arguments), arguments) { error in
                let error = error as? NodeConfigurationError
                XCTAssertEqual(error?.key, key, arguments)
                XCTAssertEqual(error?.message.contains(fragment), true, "\(arguments): \(String(describing: error))")
            }
        }
    }

    /// A graph's controls as filter-chain names them in Props ("node:Port", a bare "Port" being the
    /// first node's), with their values; a change is read again with the node's own rules.
    /// filter-chain 0.3.61 to 0.3.80 copy a mixer's lone connected input unscaled (dsp_mix_gain's
    /// one-source case); 0.3.81 and 1.x scale it. Inputs of gain 0 and unconnected ones do not count.
    func testALoneMixerInputIsScaledAsTheRunningFilterChainScalesIt() throws {
        let (configuration, _) = try NodeConfiguration.parse(
            pipeWire: .running,
            arguments: """
                filter.graph = { nodes = [
                    { type = builtin label = copy name = a }
                    { type = builtin label = mixer name = mix control = { "Gain 1" = 0.5 "Gain 2" = 0 } }
                ] links = [ { output = "a:Out" input = "mix:In 1" } ] inputs = [ "a:In" ] outputs = [ "mix:Out" ] }
                """)
        let graph = try XCTUnwrap(configuration.graph)
        func gain(scalesALoneInput: Bool) throws -> Float {
            let rules = FilterChainRules(biquadFormulas: .pipeWire03, delaysThroughSeconds: false, mixerScalesALoneInput: scalesALoneInput)
            let matrix = try graph.matrix(inputChannels: 1, outputChannels: 1, sampleRate: 48000, rules: rules) { _, _ in [] }
            return try XCTUnwrap(matrix.entries.first?.impulse.first)
        }
        XCTAssertEqual(try gain(scalesALoneInput: true), 0.5)
        XCTAssertEqual(try gain(scalesALoneInput: false), 1, "0.3.65: the lone input copied")
    }

    func testGraphControlsAreNamedAndSetAsFilterChainDoes() throws {
        let (configuration, _) = try NodeConfiguration.parse(
            pipeWire: .running,
            arguments: """
                filter.graph = { nodes = [
                    { type = builtin label = bq_peaking name = eq control = { Freq = 1000 Gain = 3 } }
                    { type = sofa label = spatializer name = sp config = { filename = "/x.sofa" } control = { Radius = 3 } }
                    { type = builtin label = linear name = scale }
                ] links = [ { output = "eq:Out" input = "sp:In" } { output = "sp:Out L" input = "scale:In" } ]
                outputs = [ "scale:Out" "sp:Out R" ] }
                """)
        let graph = try XCTUnwrap(configuration.graph)
        XCTAssertEqual(
            graph.controlValues.map { "\($0.name)=\($0.value)" },
            [
                "eq:Freq=1000.0", "eq:Q=0.0", "eq:Gain=3.0", "sp:Azimuth=0.0", "sp:Elevation=0.0", "sp:Radius=3.0", "scale:Mult=1.0",
                "scale:Add=0.0",
            ])
        var refusals: [String] = []
        let changed = graph.settingControls(
            [
                .init(name: "Gain", value: -2, written: "-2"), .init(name: "sp:Azimuth", value: 90, written: "90"),
                .init(name: "sp:Azimuth", value: 400, written: "400"), .init(name: "scale:Add", value: 1, written: "1"),
                .init(name: "scale:Mult", value: nil, written: "\"loud\""),
            ], refusals: &refusals)
        XCTAssertEqual(changed.nodes[0].controls.map(\.value), [1000, 0, -2], "a bare port is the first node's")
        guard case .spatializer(let spatializer) = changed.nodes[1].kind else { return XCTFail("\(changed.nodes[1].kind)") }
        XCTAssertEqual(spatializer.direction, SourceDirection(azimuth: 90, elevation: 0, radius: 3))
        XCTAssertEqual(changed.nodes[2], graph.nodes[2], "refused changes leave the node as it was")
        XCTAssertEqual(
            refusals,
            [
                "sp:Azimuth: 400.0 is outside 0.0...360.0",
                "scale:Add: node 'scale' (builtin linear) was loaded without an offset and compiles into the convolution; an Add cannot be set live (give it in the config)",
                "scale:Mult = \"loud\" (expects a finite number)",
            ])
    }

    func testDefaultsAndEveryKey() throws {
        let (configuration, warnings) = try NodeConfiguration.parse(
            pipeWire: .running,
            arguments: """
                node.name = hall node.description = "Hall" audio.channels = 2 audio.position = [ FL FR ]
                filename = "/ir.wav" gain = 0.5 mix = 0.25 bypass = true delay = 10 offset = 20 length = 30
                resample.quality = 10 workgroup = { threads = 2 rt.prio = 70 } partition = { max = 8192 }
                target.object = sink node.group = g1
                """)
        XCTAssertEqual(warnings, [])
        XCTAssertEqual(configuration.nodeName, "hall")
        XCTAssertEqual(configuration.nodeDescription, "Hall")
        XCTAssertEqual(configuration.positions, ["FL", "FR"])
        XCTAssertEqual(configuration.filename, "/ir.wav")
        XCTAssertEqual(configuration.gain, 0.5)
        XCTAssertEqual(configuration.mix, 0.25)
        XCTAssertTrue(configuration.bypass)
        XCTAssertEqual([configuration.delay, configuration.offset, configuration.length], [10, 20, 30])
        XCTAssertEqual(configuration.resampleQuality, 10)
        XCTAssertEqual(configuration.workgroupThreads, .fixed(2))
        XCTAssertEqual(configuration.workgroupPriority, 70)
        XCTAssertEqual(configuration.maxPartitionSize, 8192)
        XCTAssertEqual(configuration.targetObject, "sink")
        XCTAssertEqual(configuration.extraNodeProperties, ["node.group": "g1"])

        let (defaults, _) = try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = builtin:dirac audio.channels = 1")
        XCTAssertEqual(defaults.positions, ["MONO"])
        XCTAssertEqual(defaults.nodeName, "swift-convolver")
        XCTAssertEqual(defaults.workgroupThreads, .auto)
        XCTAssertEqual(
            try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x audio.channels = 3").0.positions, ["AUX0", "AUX1", "AUX2"])
    }

    /// The test-only keys: off unless given; every fault by its name.
    func testTestOnlyKeys() throws {
        let defaults = try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x").0
        XCTAssertNil(defaults.testRecordCallsPath)
        XCTAssertNil(defaults.testFault)
        XCTAssertEqual(
            try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x test.record-calls = \"/tmp/r.f32\"").0.testRecordCallsPath,
            "/tmp/r.f32")
        for fault in TestFault.allCases {
            XCTAssertEqual(
                try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x test.fault = \(fault.rawValue)").0.testFault, fault)
        }
    }

    /// WirePlumber 0.5's smart-filter keys go on the sink node: booleans and names as text, the
    /// match object and the name lists as strict JSON; in filter mode they are an error.
    func testSmartFilterKeys() throws {
        let (configuration, warnings) = try NodeConfiguration.parse(
            pipeWire: .running,
            arguments: """
                filename = x mode = sink filter.smart = true filter.smart.name = "my eq"
                filter.smart.target = { node.name = "alsa_output.pci" } filter.smart.before = [ eq other ] filter.smart.disabled = false
                """)
        XCTAssertEqual(warnings, [])
        XCTAssertEqual(configuration.extraNodeProperties["filter.smart"], "true")
        XCTAssertEqual(configuration.extraNodeProperties["filter.smart.name"], "my eq")
        XCTAssertEqual(configuration.extraNodeProperties["filter.smart.target"], "{ \"node.name\": \"alsa_output.pci\" }")
        XCTAssertEqual(configuration.extraNodeProperties["filter.smart.before"], "[ \"eq\", \"other\" ]")
        XCTAssertEqual(configuration.extraNodeProperties["filter.smart.disabled"], "false")
        XCTAssertThrowsError(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x filter.smart = true")) { error in
            XCTAssertEqual((error as? NodeConfigurationError)?.key, "filter.smart", "\(error)")
        }
        XCTAssertThrowsError(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x mode = sink filter.smart = maybe")) { error in
            XCTAssertEqual((error as? NodeConfigurationError)?.key, "filter.smart", "\(error)")
        }
    }

    /// filter-chain's convolver and sink spellings beside ours.
    func testFilterChainSpellings() throws {
        let (configuration, warnings) = try NodeConfiguration.parse(
            pipeWire: .running,
            arguments: """
                filename = [ "/ir-44100.wav" "/ir-48000.wav" ] resample_quality = 10
                impulses = [ { input = 0 output = 0 filename = [ /a.wav /b.wav ] } { input = 1 output = 1 filename = "/hilbert" } ]
                capture.props = { node.name = "effect_input.x" node.description = "X" media.class = Audio/Sink
                                  audio.position = [ FL FR ] node.latency = "1024/48000" }
                playback.props = { node.name = "effect_output.x" node.passive = true audio.position = [ FL FR ] }
                """)
        XCTAssertEqual(warnings, [])
        XCTAssertEqual(configuration.resampleQuality, 10)
        XCTAssertEqual(configuration.filename, "/ir-44100.wav")
        XCTAssertEqual(configuration.rateAlternatives, ["/ir-44100.wav", "/ir-48000.wav"])
        XCTAssertEqual(configuration.impulses.map(\.rateAlternatives), [["/a.wav", "/b.wav"], []])
        XCTAssertEqual(configuration.mode, .sink, "media.class = Audio/Sink in capture.props")
        XCTAssertEqual(configuration.nodeName, "effect_input.x")
        XCTAssertEqual(configuration.nodeDescription, "X")
        XCTAssertEqual(configuration.positions, ["FL", "FR"])
        XCTAssertEqual(configuration.captureProperties, ["node.latency": "1024/48000"])
        XCTAssertEqual(configuration.playbackProperties, ["node.name": "effect_output.x", "node.passive": "true"])
        XCTAssertEqual(configuration.playbackNodeName, "effect_output.x")
        // Top-level keys win over the streams' properties.
        let (named, _) = try NodeConfiguration.parse(
            pipeWire: .running, arguments: "filename = x node.name = mine capture.props = { node.name = theirs media.class = Audio/Sink }")
        XCTAssertEqual(named.nodeName, "mine")
        XCTAssertEqual(named.playbackNodeName, "output.mine")
        for (arguments, key) in [
            ("mode = filter capture.props = { media.class = Audio/Sink }", "capture.props"),
            ("playback.props = { node.passive = true }", "playback.props"),
            ("capture.props = { media.class = Audio/Source }", "capture.props.media.class"),
            ("filename = [ ]", "filename"),
        ] {
            XCTAssertThrowsError(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x " + arguments), arguments) { error in
                XCTAssertEqual((error as? NodeConfigurationError)?.key, key, "\(arguments): \(error)")
            }
        }
    }

    /// `latency`: samples or `auto`; the reported latency adds the resampler's kept ringing, and
    /// `auto` is the loudest sample's frame (which includes it).
    func testLatencyKey() throws {
        XCTAssertEqual(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x latency = 300").0.latency, .samples(300))
        XCTAssertEqual(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x latency = auto").0.latency, .auto)
        XCTAssertNil(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x").0.latency)
        // Never ignored: a sink's streams report their own latency, so there it is an error.
        for bad in ["latency = -1", "latency = soon", "latency = 1.5", "latency = 300 mode = sink", "latency = auto mode = stream"] {
            XCTAssertThrowsError(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x " + bad), bad) { error in
                XCTAssertEqual((error as? NodeConfigurationError)?.key, "latency", "\(bad): \(error)")
            }
        }
        var impulse = [Float](repeating: 0.1, count: 50)
        impulse[20] = -0.9
        let matrix = ConvolutionMatrix(inputCount: 1, outputCount: 1, entries: [.init(input: 0, output: 0, impulse: impulse)])
        XCTAssertEqual(EngineFactory.reportedLatency(nil, of: matrix, resamplerDelay: 7), 7)
        XCTAssertEqual(EngineFactory.reportedLatency(.samples(300), of: matrix, resamplerDelay: 7), 307)
        XCTAssertEqual(EngineFactory.reportedLatency(.auto, of: matrix, resamplerDelay: 7), 20)
    }

    func testSPAJSONAsStrictJSON() throws {
        let value = try SPAJSONValue.parse("{ a = 1 b = [ x \"y z\" true null ] c = { d = \"q\\\"t\" } }")
        XCTAssertEqual(value.json, "{ \"a\": 1, \"b\": [ \"x\", \"y z\", true, null ], \"c\": { \"d\": \"q\\\"t\" } }")
        let parsed = try JSONSerialization.jsonObject(with: Data(value.json.utf8)) as? [String: Any]
        XCTAssertEqual(parsed?["a"] as? Int, 1)
    }

    func testUnknownKeysWarn() throws {
        let (_, warnings) = try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x colour = blue workgroup = { speed = 2 }")
        XCTAssertEqual(warnings, ["unknown key 'colour' ignored", "unknown key 'workgroup.speed' ignored"])
    }

    func testWrongValuesNameTheKey() {
        let cases: [(String, String)] = [
            ("gain = -1", "gain"), ("mix = 1.5", "mix"), ("bypass = maybe", "bypass"), ("delay = 1.5", "delay"),
            ("audio.channels = 0", "audio.channels"), ("audio.channels = 65", "audio.channels"),
            ("audio.position = [ FL FL ]", "audio.position"), ("audio.position = [ F-L ]", "audio.position"),
            ("partition = { max = 1000 }", "partition.max"), ("workgroup = { threads = 0 }", "workgroup.threads"),
            ("resample.quality = 15", "resample.quality"), ("impulses = [ { input = 0 output = 0 } ]", "impulses[0].filename"),
            ("impulses = [ { input = 2 output = 0 filename = x } ]", "impulses[0].input"), ("node.name = \"\"", "node.name"),
            ("test.fault = explode", "test.fault"), ("test.record-calls = \"\"", "test.record-calls"),
        ]
        for (arguments, key) in cases {
            XCTAssertThrowsError(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x " + arguments), arguments) { error in
                XCTAssertEqual((error as? NodeConfigurationError)?.key, key, "\(arguments): \(error)")
            }
        }
        XCTAssertThrowsError(try NodeConfiguration.parse(pipeWire: .running, arguments: "gain = 1")) { error in
            XCTAssertEqual((error as? NodeConfigurationError)?.key, "filename")
        }
        XCTAssertThrowsError(try NodeConfiguration.parse(pipeWire: .running, arguments: "{ filename = x ")) { error in
            XCTAssertEqual((error as? NodeConfigurationError)?.key, "args")
        }
    }

    /// Random bytes and mutations of a valid config never crash the parser (bounded run).
    func testParserSurvivesRandomAndMutatedInput() {
        var random = SeededGenerator(seed: 7)
        let valid = Array(
            "{ node.name = \"x\" audio.position = [ FL FR ] filename = builtin:hall impulses = [ { input = 0 output = 1 filename = a } ] }".utf8)
        let alphabet = Array("{}[]=:,\"\\# \naz09.-".utf8)
        for round in 0..<3000 {
            var bytes = valid
            let edits = Int.random(in: 1...8, using: &random)
            for _ in 0..<edits {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                let byte = alphabet.randomElement(using: &random)!
                if round % 3 == 0 { bytes.remove(at: position) } else { bytes[position] = byte }
                if bytes.isEmpty { break }
            }
            _ = try? NodeConfiguration.parse(pipeWire: .running, arguments: String(decoding: bytes, as: UTF8.self))
        }
    }

    /// `workgroup.split` in the module's arguments: auto by default, on/off (or true/false), and a
    /// wrong value names the key.
    func testSplitModuleKey() throws {
        XCTAssertEqual(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x").0.workgroupSplit, .auto)
        XCTAssertEqual(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x workgroup = { split = on }").0.workgroupSplit, .on)
        XCTAssertEqual(
            try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x workgroup = { split = false }").0.workgroupSplit, .off)
        XCTAssertThrowsError(try NodeConfiguration.parse(pipeWire: .running, arguments: "filename = x workgroup = { split = sometimes }")) { error in
            XCTAssertEqual((error as? NodeConfigurationError)?.key, "workgroup.split", "\(error)")
        }
    }
}
