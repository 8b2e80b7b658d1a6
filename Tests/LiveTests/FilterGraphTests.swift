import ConvolverGraph
import EngineTestSupport
import Foundation
import XCTest

/// filter-chain's own configs (FilterChainConfigs/: PipeWire's examples, copied with their origin,
/// and a graph of every linear builtin), with only the module's name changed, run by our module.
/// Each node's record is held to an independent evaluation of the config (judge_filter_graph.py:
/// its own SPA-JSON reader, the graph run node by node in the time domain) to 100 dB; on PipeWire
/// 1.x the very same config also runs on filter-chain in the same graph, and both outputs, recorded
/// in the same cycles, must agree to 90 dB cycle by cycle (judge_against_filter_chain.py).
final class FilterGraphTests: XCTestCase {
    private var daemon: PrivatePipeWire!
    private var background: [BackgroundProcess] = []
    private static let quantum = 256

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
        daemon = try PrivatePipeWire(name: "filter-graph")
        try daemon.setQuantum(Self.quantum)
    }

    override func tearDown() {
        for process in background.reversed() { process.stop() }
        background = []
        daemon?.stop()
        daemon = nil
    }

    private func path(_ name: String) -> String { daemon.runtimeDirectory + "/" + name }

    /// The IR files the configs name, made here: a 14-channel HRIR set (HeSuVi's layout), a
    /// 6-channel one (KEMAR's), and a stereo room.
    private func writeImpulses() throws -> [String: String] {
        var random = TestSignals.Random(state: 0x5EED_0042)
        func decaying(channels: Int, frames: Int) -> [[Float]] {
            (0..<channels).map { channel in
                (0..<frames).map { n -> Float in
                    let tap: Float = n == 2 * channel ? 0.5 : 0
                    return tap + 0.2 * expf(-Float(n) / 96) * random.next()
                }
            }
        }
        try TestSignals.write(decaying(channels: 14, frames: 512), to: path("hesuvi.wav"))
        try TestSignals.write(decaying(channels: 6, frames: 384), to: path("kemar.wav"))
        try TestSignals.write(decaying(channels: 2, frames: 600), to: path("ir-stereo.wav"))
        try """
        Preamp: -6.5 dB
        Filter 1: ON PK Fc 105 Hz Gain 5.1 dB Q 0.70
        Filter 2: ON LSC Fc 30 Hz Gain 3.0 dB Q 0.707
        Filter 3: OFF PK Fc 1000 Hz Gain 9.0 dB Q 1.00
        Filter 4: ON HSC Fc 8000 Hz Gain -2.5 dB Q 0.71
        Filter 5: ON LP Fc 18000 Hz
        Filter 6: ON PK Fc 3150 Hz Gain -4.2 dB Q 2.41421

        """.write(toFile: path("eq-apo.txt"), atomically: true, encoding: .utf8)
        return [
            "\"hrir_hesuvi/hrir.wav\"": path("hesuvi.wav"), "\"/home/wim/src/pipewire/hrir_hesuvi/hesuvi.wav\"": path("hesuvi.wav"),
            "\"hrir_kemar/hrir-kemar.wav\"": path("kemar.wav"), "\"ir-stereo.wav\"": path("ir-stereo.wav"),
            "\"eq-apo.txt\"": path("eq-apo.txt"), "\"~/.config/hrtf-sofa/hrtf b_nh724.sofa\"": SOFATests.kemar,
        ]
    }

    /// A config of FilterChainConfigs/ as a `pipewire -c` client: the context a client needs, its IR
    /// paths pointed at the test's files, the streams left for the test to link, and with
    /// `module` (ours: the only change a user makes) and `extraArguments` (ours: its record).
    private func clientConfig(_ name: String, module: String, extraArguments: String, impulses: [String: String]) throws -> String {
        var extraArguments = extraArguments
        var text = try String(
            contentsOfFile: packageRoot + "/Tests/LiveTests/FilterChainConfigs/" + name, encoding: .utf8)
        for (placeholder, file) in impulses { text = text.replacingOccurrences(of: placeholder, with: "\"\(file)\"") }
        text = text.replacingOccurrences(of: "libpipewire-module-filter-chain", with: module)
        // Headless 0.3.65 has no session manager to give a module's streams ports: they configure
        // their own, which needs a fixed rate (docs/facts.md).
        let ports =
            PipeWireInstallation.isOneDotX ? "" : " adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve }"
        for props in ["capture.props", "playback.props"] {
            text = text.replacingOccurrences(of: "\(props) = {", with: "\(props) = { node.autoconnect = false\(ports)")
                .replacingOccurrences(of: "\"\(props)\": {", with: "\"\(props)\": { \"node.autoconnect\": false,\(ports)")
        }
        if !PipeWireInstallation.isOneDotX { extraArguments += " audio.rate = 48000" }
        text = text.replacingOccurrences(of: "args = {", with: "args = { \(extraArguments)")
            .replacingOccurrences(of: "\"args\": {", with: "\"args\": { \(extraArguments)")
        return try ModuleClient.asClient(text)
    }

    private struct GraphAnswer: Decodable {
        struct OutputError: Decodable {
            var errorDB: Double
            var worst: Double
            var energy: Double
        }
        var inputs: Int
        var outputs: Int
        var frames: Int
        var outputErrors: [OutputError]
    }

    /// One run of the judge, several evaluations of the config: one answer each.
    private struct GraphSpec: Encodable {
        struct Evaluation: Encodable {
            var mutate: String?
            var controls: [String: Double]?
        }
        var config: String
        var calls: String
        var rate: Int
        var pipewire = PipeWireInstallation.version
        var evaluations: [Evaluation]
    }

    private struct Streams {
        var input: String
        var output: String
        var inputPorts: [String]
        var outputPorts: [String]
    }

    /// The capture stream's audio inputs and the playback stream's audio outputs, once they are there.
    private func streams(input: String, output: String, inputs: Int, outputs: Int) throws -> Streams {
        try daemon.waitForPorts(ofNode: input, count: inputs, timeout: 60)
        try daemon.waitForPorts(ofNode: output, count: outputs, timeout: 60)
        let inputPorts = try daemon.portNames(ofNode: input).filter { $0.hasPrefix("playback_") || $0.hasPrefix("input_") }
        let outputPorts = try daemon.portNames(ofNode: output).filter { $0.hasPrefix("output_") || $0.hasPrefix("capture_") }
        return Streams(input: input, output: output, inputPorts: inputPorts, outputPorts: outputPorts)
    }

    /// Runs `name` on our module (and, where `alongside`, on filter-chain in the same graph), plays
    /// noise into every input and records every output; judges our record (and the two outputs).
    private func runConfig(
        _ name: String, input: String, output: String, positions: [String], outputs: Int, alongside: Bool,
        outputsAreCopies: Bool = false, agreementDB: Double = -90, controls: [String: Double] = [:], evaluated: Bool = true,
        oursMistake: (from: String, to: String)? = nil, quantum: Int = quantum
    ) throws {
        if quantum != Self.quantum { try daemon.setQuantum(quantum) }
        let impulses = try writeImpulses()
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "ours")
        let ours = try clientConfig(
            name, module: "libpipewire-module-swift-convolver", extraArguments: record.argument, impulses: impulses
        )
        .replacingOccurrences(of: input, with: "ours.\(input)").replacingOccurrences(of: output, with: "ours.\(output)")
        .replacingOccurrences(of: oursMistake?.from ?? "\u{0}", with: oursMistake?.to ?? "")
        try ours.write(toFile: path("ours.conf"), atomically: true, encoding: .utf8)
        let client = try daemon.spawn(["pipewire", "-c", path("ours.conf")], logName: "ours.log")
        background.append(client)
        var systems = [try streams(input: "ours.\(input)", output: "ours.\(output)", inputs: positions.count, outputs: outputs)]
        if alongside {
            try clientConfig(name, module: "libpipewire-module-filter-chain", extraArguments: "", impulses: impulses)
                .write(toFile: path("theirs.conf"), atomically: true, encoding: .utf8)
            background.append(try daemon.spawn(["pipewire", "-c", path("theirs.conf")], logName: "theirs.log"))
            systems.append(try streams(input: input, output: output, inputs: positions.count, outputs: outputs))
        }
        for system in systems {
            XCTAssertEqual(system.inputPorts.count, positions.count, "\(system.input): \(system.inputPorts)")
            XCTAssertEqual(system.outputPorts.count, outputs, "\(system.output): \(system.outputPorts)")
        }
        let pluginsOnly = ours.contains("type = ladspa") && !controls.isEmpty
        func swaps() throws -> String {
            "\(try XCTUnwrap(try daemon.nodeProperties("ours.\(input)")).properties["convolver.swaps"] ?? "")"
        }
        if pluginsOnly { usleep(1_100_000) }  // the node publishes its statistics once a second
        let swapsBefore = pluginsOnly ? try swaps() : ""
        if !controls.isEmpty {
            try setControls(controls, ours: "ours.\(input)", theirs: alongside ? input : nil)

        }

        let leadIn = 0.5 + 0.15 * Double(positions.count * systems.count), seconds = 1.5
        try TestSignals.write(
            TestSignals.noise(seconds: seconds, channels: positions.count, leadIn: leadIn, leadOut: 0.3), to: path("input.wav"))
        let recordedCount = outputs * systems.count
        let recorder = try daemon.spawn(
            [
                try SyncRecorder.executable.get(), "rec", (0..<recordedCount).map { "AUX\($0)" }.joined(separator: ","),
                path("rec.f32"), "60",
            ], logName: "rec.log")
        background.append(recorder)
        try daemon.waitForPorts(ofNode: "rec", count: recordedCount)
        for (index, system) in systems.enumerated() {
            for (port, outputPort) in system.outputPorts.enumerated() {
                try daemon.link("\(system.output):\(outputPort)", "rec:input_AUX\(index * outputs + port)")
            }
        }
        let player = try daemon.spawn(
            [
                "pw-play", "-P",
                "{ node.name = play node.want-driver = false node.autoconnect = false "
                    + "adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve } }",
                "--channels", "\(positions.count)", "--channel-map", positions.joined(separator: ","), path("input.wav"),
            ], logName: "play.log")
        background.append(player)
        try daemon.waitForPorts(ofNode: "play", count: positions.count)
        for system in systems {
            for (position, inputPort) in zip(
                positions, system.inputPorts.sorted(by: { positions.firstIndex(of: $0.portPosition)! < positions.firstIndex(of: $1.portPosition)! }))
            {
                try daemon.link("play:output_\(position)", "\(system.input):\(inputPort)")
            }
        }
        XCTAssertTrue(player.waitForExit(timeout: 3 * (leadIn + seconds) + 10), "pw-play did not finish: \(player.log)")
        usleep(300_000)
        recorder.interrupt()
        XCTAssertTrue(client.isRunning, client.log)
        if pluginsOnly {
            // Plugin controls reach the running plugins: no engine was built and swapped in for them.
            XCTAssertEqual(try swaps(), swapsBefore, "plugin controls rebuilt the graph")
        }
        client.stop()  // writes the record

        if evaluated {
            try judgeByEvaluation(name, ours: ours, record: record, positions: positions, outputs: outputs, controls: controls, seconds: seconds)
        }

        guard alongside else { return }
        let comparison = try FilterChainJudge.compare(
            recording: path("rec.f32"), channels: recordedCount, quantum: quantum, ours: Array(0..<outputs),
            theirs: Array(outputs..<(2 * outputs)), limitDB: agreementDB, workDirectory: daemon.runtimeDirectory)
        print("\(name) beside filter-chain \(PipeWireInstallation.version): \(comparison)")
        if let oursMistake {
            XCTAssertLessThan(
                Double(comparison.agreeing), 0.1 * Double(comparison.cycles), "\(name) with \(oursMistake) passed the judge: \(comparison)")
            return
        }
        FilterChainJudge.assertAgrees(
            comparison, minimumCycles: Int(0.5 * seconds * 48000) / quantum, limitDB: agreementDB,
            outputsMayBeSwapped: outputs == 1 || outputsAreCopies, label: name)
    }

    /// Our record against judge_filter_graph.py's evaluation of the config node by node (linear
    /// graphs: it evaluates builtins only), with the judge's negative controls.
    private func judgeByEvaluation(
        _ name: String, ours: String, record: NodeRecord, positions: [String], outputs: Int, controls: [String: Double], seconds: Double
    ) throws {
        // The judge's teeth: one link left out, one mixer gain 10 % off, one output a sample late,
        // one biquad's frequency 1 % off, one EQ band left out, one spatializer turned by 10 degrees,
        // each non-linear builtin's first control 1 % off.
        let mistakes = ["link", "gain", "delay", "biquad", "band", "direction", "function"]
        let evaluations =
            [GraphSpec.Evaluation(controls: controls)] + (controls.isEmpty ? [] : [GraphSpec.Evaluation()])
            + mistakes.map { GraphSpec.Evaluation(mutate: $0) }
        let answers: [GraphAnswer] = try JudgeScript.run(
            "judge_filter_graph.py", GraphSpec(config: path("ours.conf"), calls: record.path, rate: 48000, evaluations: evaluations),
            workDirectory: daemon.runtimeDirectory)
        guard answers.count == evaluations.count else { return XCTFail("the judge answered \(answers.count) of \(evaluations.count)") }
        let answer = answers[0]
        print("\(name) on our module, against the graph evaluated node by node: \(answer)")
        XCTAssertEqual(answer.inputs, positions.count)
        XCTAssertEqual(answer.outputs, outputs)
        XCTAssertGreaterThan(answer.frames, Int(seconds * 48000), "too little of the node's calls recorded")
        for (index, error) in answer.outputErrors.enumerated() where error.energy > 0 {
            XCTAssertLessThanOrEqual(error.errorDB, -100, "\(name) output \(index): worst \(error.worst)")
        }
        if !controls.isEmpty {
            let unchanged = answers[1]
            XCTAssertTrue(unchanged.outputErrors.contains { $0.errorDB > -100 }, "the controls' change was not heard: \(unchanged)")
        }
        for (mistake, mutated) in zip(mistakes, answers.suffix(mistakes.count)) {
            let failing = mutated.outputErrors.filter { $0.errorDB > -100 }
            if mistake == "gain" && !ours.contains("label = mixer") && !ours.contains("\"mixer\"") { continue }  // no mixer here
            if mistake == "link" && !ours.contains("links") { continue }  // no link here
            // no biquad here, or only at 0 dB (sink-eq6's bands: a frequency off changes nothing)
            if mistake == "biquad" && (!ours.contains("bq_") || name == "sink-eq6.conf") { continue }
            if mistake == "direction" && !ours.contains("spatializer") { continue }
            if mistake == "band" && !ours.contains("param_eq") { continue }
            if mistake == "function" && !ours.contains("label = clamp") { continue }
            XCTAssertFalse(failing.isEmpty, "\(name): a graph with a wrong \(mistake) passed the judge: \(mutated)")
        }
    }

    /// Changes controls live, as a user does: ours by name with `pw-convolver set` (which waits for
    /// the node's answer: the graph compiled again and crossfaded in), filter-chain's with
    /// `pw-cli set-param`; both before the noise starts.
    private func setControls(_ controls: [String: Double], ours: String, theirs: String?) throws {
        let assignments = controls.sorted { $0.key < $1.key }
        let (status, output) = try daemon.run(
            [BuildProducts.directory + "/pw-convolver", "set", ours] + assignments.map { "\($0.key)=\($0.value)" }, timeout: 30)
        XCTAssertEqual(status, 0, output)
        print("pw-convolver set \(ours): \(output)")
        guard let theirs else { return }
        let id = try XCTUnwrap(try daemon.nodeProperties(theirs)).id
        let params = assignments.map { "\"\($0.key)\" \($0.value)" }.joined(separator: " ")
        let (pwStatus, pwOutput) = try daemon.run(["pw-cli", "set-param", "\(id)", "Props", "{ params = [ \(params) ] }"])
        XCTAssertEqual(pwStatus, 0, pwOutput)
    }

    /// filter-chain's streams get their ports from WirePlumber on 1.x, headless (docs/facts.md);
    /// on 0.3.65 from their own port configuration.
    private var alongside: Bool {
        get throws {
            if PipeWireInstallation.isOneDotX { background.append(try daemon.startWirePlumber()) }
            return true
        }
    }

    /// Beside filter-chain, graphs with plugins run at quantum 1024: a cycle this VM's scheduler
    /// drops (gaps of 8-19 ms between calls measured at 256) makes the two sinks disagree for as
    /// long as the plugins remember it (the crossovers' IIRs: 3 cycles at 256), and at 256 that
    /// was 10-20 % of the cycles on a loaded machine.
    private static let pluginQuantum = 1024

    /// LADSPA plugins (swh's gain, compressor and look-ahead limiter, controls away from their
    /// defaults) hosted between compiled parts, beside filter-chain hosting the same plugins: the
    /// plugins are deterministic, so the outputs must agree to 90 dB cycle by cycle.
    func testLADSPASpeakerDSP() throws {
        try runConfig(
            "ladspa-speaker-dsp.conf", input: "effect_input.ladspa-speaker-dsp", output: "effect_output.ladspa-speaker-dsp",
            positions: ["FL", "FR"], outputs: 4, alongside: try alongside, quantum: Self.pluginQuantum)
    }

    /// filter-chain 1.x's non-linear builtins (clamp, linear with an offset, recip, exp, log, abs,
    /// sqrt, mult, max) between convolvers: against the graph judge's numpy formulas on every
    /// version, beside filter-chain where it has them (1.x).
    func testBuiltinFunctions() throws {
        try runConfig(
            "builtin-functions.conf", input: "effect_input.builtin-functions", output: "effect_output.builtin-functions",
            positions: ["FL", "FR"], outputs: 5, alongside: PipeWireInstallation.isOneDotX ? try alongside : false)
    }

    /// An LV2 plugin (LSP's compressor) after a LADSPA one and before per-driver FIRs, beside
    /// filter-chain's own LV2 host (no independent evaluation: the graph judge hosts LADSPA only).
    func testLV2SpeakerDSP() throws {
        try runConfig(
            "lv2-speaker-dsp.conf", input: "effect_input.lv2-speaker-dsp", output: "effect_output.lv2-speaker-dsp",
            positions: ["FL", "FR"], outputs: 4, alongside: try alongside, evaluated: false, quantum: Self.pluginQuantum)
    }

    /// The judge's teeth with LV2: our compressor's ratio 1 % off must not agree with filter-chain.
    func testLV2JudgeCatchesAControlOff() throws {
        try runConfig(
            "lv2-speaker-dsp.conf", input: "effect_input.lv2-speaker-dsp", output: "effect_output.lv2-speaker-dsp",
            positions: ["FL", "FR"], outputs: 4, alongside: try alongside, evaluated: false, oursMistake: ("cr = 6", "cr = 6.06"),
            quantum: Self.pluginQuantum)
    }

    /// Plugins whose output depends on when they were started (swh's sc4m and look-ahead limiter):
    /// judged by the graph judge's own LADSPA host, which replays the node's record call by call
    /// from the plugins' start. Not beside filter-chain (started apart, two hosts differ).
    func testLADSPADynamics() throws {
        try runConfig(
            "ladspa-dynamics.conf", input: "effect_input.ladspa-dynamics", output: "effect_output.ladspa-dynamics",
            positions: ["FL", "FR"], outputs: 2, alongside: false)
    }

    /// Plugin controls changed live (ours with `pw-convolver set`, filter-chain's with pw-cli),
    /// before the noise: they reach the running plugins without a rebuild, and sound as filter-chain's.
    func testLADSPALiveControls() throws {
        try runConfig(
            "ladspa-speaker-dsp.conf", input: "effect_input.ladspa-speaker-dsp", output: "effect_output.ladspa-speaker-dsp",
            positions: ["FL", "FR"], outputs: 4, alongside: try alongside,
            controls: ["ampL:Amps gain (dB)": 1.5, "limitMid:dB limit": -14, "toLR:Width": 0.8, "splitR:Cutoff Frequency (Hz)": 1500],
            quantum: Self.pluginQuantum)
    }

    /// The judge's teeth with plugins: our node given one plugin control 0.001 dB off (0.01 % of
    /// gain) must not agree with filter-chain.
    func testLADSPAJudgeCatchesAControlOff() throws {
        try runConfig(
            "ladspa-speaker-dsp.conf", input: "effect_input.ladspa-speaker-dsp", output: "effect_output.ladspa-speaker-dsp",
            positions: ["FL", "FR"], outputs: 4, alongside: try alongside, evaluated: false,
            oursMistake: ("\"Amps gain (dB)\" = 3 }", "\"Amps gain (dB)\" = 3.001 }"), quantum: Self.pluginQuantum)
    }

    func testHeSuVi71() throws {
        try runConfig(
            "sink-virtual-surround-7.1-hesuvi.conf", input: "effect_input.virtual-surround-7.1-hesuvi",
            output: "effect_output.virtual-surround-7.1-hesuvi", positions: ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"],
            outputs: 2, alongside: try alongside)
    }

    func testKEMAR51() throws {
        try runConfig(
            "sink-virtual-surround-5.1-kemar.conf", input: "effect_input.virtual-surround-5.1-kemar",
            output: "effect_output.virtual-surround-5.1-kemar", positions: ["FL", "FR", "FC", "LFE", "SL", "SR"],
            outputs: 2, alongside: try alongside)
    }

    func testMixFLFR() throws {
        try runConfig(
            "sink-mix-FL-FR.conf", input: "mix_input.mix-FL-FR-to-FL", output: "mix_output.mix-FL-FR-to-FL",
            positions: ["FL", "FR"], outputs: 1, alongside: try alongside)
    }

    func testSourceDuplicateFL() throws {
        try runConfig(
            "source-duplicate-FL.conf", input: "remap_input.remap-FL-to-FL-FR", output: "remap_output.remap-FL-to-FL-FR",
            positions: ["FL"], outputs: 2, alongside: try alongside, outputsAreCopies: true)
    }

    /// filter-chain 0.3.65 has no `linear` and `invert` (1.x has): there ours runs alone.
    func testEveryLinearBuiltin() throws {
        try runConfig(
            "every-linear-builtin.conf", input: "effect_input.every-linear-builtin", output: "effect_output.every-linear-builtin",
            positions: ["FL", "FR", "FC", "LFE", "SL", "SR"], outputs: 6,
            alongside: PipeWireInstallation.isOneDotX ? try alongside : false)
    }

    /// filter-chain runs its biquads in single precision (a float recursion), the node their exact
    /// impulse responses: emulated, filter-chain's own float arithmetic is -64 dB from the exact
    /// result on every-biquad's chain (its 40 Hz high-pass alone -74 dB), where the node's record is
    /// -120 dB from scipy's double-precision lfilter (docs/facts.md). Beside filter-chain, cycles agree to this.
    private static let biquadAgreementDB = -55.0

    /// PipeWire 0.3.65's 6-band EQ sink as shipped (every band at 0 dB): parsed and run as filter-chain
    /// does, then a band turned live as the README shows (`pw-convolver set` by name, pw-cli on filter-chain).
    func testSinkEQ6() throws {
        try runConfig(
            "sink-eq6.conf", input: "effect_input.eq6", output: "effect_output.eq6", positions: ["FL", "FR"], outputs: 2,
            alongside: try alongside, agreementDB: Self.biquadAgreementDB, controls: ["eq_band_3:Gain": -2, "eq_band_3:Freq": 1200])
    }

    /// PipeWire 1.4.2's stereo-to-5.1 upmix: a mixer and a two-channel param_eq crossover (a
    /// 0 Hz high shelf among its bands) for FC and LFE, rear channels through `/hilbert` with a
    /// delay in seconds and a negative gain, two delay nodes left unlinked.
    func testSinkUpmix51() throws {
        try runConfig(
            "sink-upmix-5.1-filter.conf", input: "effect_input.upmix_5.1", output: "effect_output.upmix_5.1", positions: ["FL", "FR"],
            outputs: 6, alongside: PipeWireInstallation.isOneDotX ? try alongside : false, agreementDB: Self.biquadAgreementDB)
    }

    /// PipeWire 0.3.65's LFE example: the stereo mix low-passed at 150 Hz into a third channel.
    func testSinkMakeLFE() throws {
        try runConfig(
            "sink-make-LFE.conf", input: "input_lfe", output: "output_lfe", positions: ["FL", "FR"], outputs: 3,
            alongside: try alongside, agreementDB: Self.biquadAgreementDB)
    }

    /// Every biquad, with gains and Qs that change the sound, beside the running filter-chain (whose
    /// formulas differ between 0.3.x and 1.x: the node follows the running one).
    func testEveryBiquad() throws {
        try runConfig(
            "every-biquad.conf", input: "effect_input.every-biquad", output: "effect_output.every-biquad", positions: ["FL", "FR"],
            outputs: 2, alongside: try alongside, agreementDB: Self.biquadAgreementDB)
    }

    /// A param_eq from an EqualizerAPO file and a per-channel `filters2`; filter-chain has it from 1.4
    /// on (on 0.3.65 ours runs alone).
    func testParamEQ() throws {
        try runConfig(
            "param-eq.conf", input: "effect_input.param-eq", output: "effect_output.param-eq", positions: ["FL", "FR"], outputs: 2,
            alongside: PipeWireInstallation.isOneDotX ? try alongside : false, agreementDB: Self.biquadAgreementDB)
    }

    /// A dcblock and bq_raw nodes with coefficients by rate; filter-chain has both from 1.4 on (on
    /// 0.3.65 ours runs alone).
    func testRawBiquadAndDCBlock() throws {
        try runConfig(
            "raw-biquad-dcblock.conf", input: "effect_input.raw-biquad-dcblock", output: "effect_output.raw-biquad-dcblock",
            positions: ["FL", "FR"], outputs: 2, alongside: PipeWireInstallation.isOneDotX ? try alongside : false,
            agreementDB: Self.biquadAgreementDB)
    }

    /// PipeWire 1.4.2's SOFA sink: one source placed by the sofa plugin's spatializer (MIT's KEMAR
    /// set, resampled to 48 kHz by libmysofa as filter-chain's is); filter-chain has it from 1.4 on.
    func testSpatializerSingle() throws {
        try runConfig(
            "spatializer-single.conf", input: "effect_input.3d", output: "effect_output.3d", positions: ["FC"], outputs: 2,
            alongside: PipeWireInstallation.isOneDotX ? try alongside : false)
    }

    /// PipeWire 1.4.2's headphone surround: eight spatializers into two mixers.
    func testSpatializer71() throws {
        try runConfig(
            "spatializer-7.1.conf", input: "effect_input.spatializer", output: "effect_output.spatializer",
            positions: ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"], outputs: 2,
            alongside: PipeWireInstallation.isOneDotX ? try alongside : false)
    }

    /// Controls changed live in filter-chain's form ("node:Port" in Props): a biquad's gain and
    /// frequency, a mixer gain, a delay. The node's record is judged with the new values (and fails
    /// with the old ones), and equals filter-chain's output after the same change. Its mixer has
    /// one input: filter-chain 0.3.65 copies it unscaled, whatever its gain (FilterChainRules).
    func testLiveControls() throws {
        try runConfig(
            "live-controls.conf", input: "effect_input.live-controls", output: "effect_output.live-controls", positions: ["FL", "FR"],
            outputs: 2, alongside: try alongside, agreementDB: Self.biquadAgreementDB,
            controls: ["eq:Gain": -6, "eq:Freq": 2000, "mix:Gain 1": 0.5, "late:Delay (s)": 0.002])
    }

    /// PipeWire's HeSuVi 7.1 with a 10-band param_eq in front of its eight inputs: 80 biquads and
    /// 16 HRIRs folded into one 8×2 matrix. filter-chain has param_eq from 1.4 on.
    func testHeSuViWithTenBandEQ() throws {
        try runConfig(
            "sink-virtual-surround-7.1-hesuvi-eq10.conf", input: "effect_input.virtual-surround-7.1-hesuvi-eq10",
            output: "effect_output.virtual-surround-7.1-hesuvi-eq10", positions: ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"],
            outputs: 2, alongside: PipeWireInstallation.isOneDotX ? try alongside : false, agreementDB: Self.biquadAgreementDB)
    }

    /// PipeWire master's HeSuVi in `convolver2` form (no released filter-chain has convolver2 yet:
    /// judged against the graph's own evaluation only).
    func testHeSuViConvolver2() throws {
        try runConfig(
            "sink-virtual-surround-7.1-hesuvi-convolver2.conf", input: "effect_input.virtual-surround-7.1-hesuvi",
            output: "effect_output.virtual-surround-7.1-hesuvi", positions: ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"],
            outputs: 2, alongside: false)
    }
}

extension String {
    /// "playback_FL" → "FL".
    fileprivate var portPosition: String { String(self[index(after: firstIndex(of: "_") ?? startIndex)...]) }
}
