import Convolution
import ConvolverGraph
import EngineTestSupport
import LevelScheduling
import Workgroup
import XCTest

/// Graphs with LADSPA plugins (swh-plugins, a Debian package) without PipeWire: how they are read,
/// cut into stages and run, against a direct evaluation; and every refusal with its message.
final class HostedGraphTests: XCTestCase {
    private let version = PipeWireVersion(0, 3, 65)

    private func graph(_ text: String) throws -> (FilterGraph, warnings: [String]) {
        let (configuration, warnings) = try NodeConfiguration.parse(pipeWire: version, arguments: "filter.graph = { \(text) }")
        return (try XCTUnwrap(configuration.graph), warnings)
    }

    private func refusal(_ text: String) -> String {
        do {
            _ = try graph(text)
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    /// A convolver, swh's amp at +6 dB, a delayed and scaled tap: three steps (a matrix before the
    /// amp, none between, one after), run in calls of changing sizes (one longer than the buffers
    /// between stages), against the chain evaluated directly.
    func testAPluginBetweenCompiledPartsMatchesTheChainEvaluatedDirectly() throws {
        let (graph, _) = try graph(
            """
            nodes = [
              { type = builtin name = room label = convolver config = { filename = "room" } }
              { type = ladspa name = gain plugin = amp_1181 label = amp control = { "Amps gain (dB)" = 6 } }
              { type = builtin name = tap label = convolver config = { filename = "tap" } }
            ]
            links = [ { output = "room:Out" input = "gain:Input" } { output = "gain:Output" input = "tap:In" } ]
            """)
        var generator = SeededGenerator(seed: 62)
        let room = [Float].noise(700, using: &generator).enumerated().map { $1 * expf(-Float($0) / 150) }
        let tap = [Float](repeating: 0, count: 9) + [0.5]
        let plan = try graph.stagePlan(
            inputChannels: 1, outputChannels: 1, sampleRate: 48000, rules: FilterChainRules(version)
        ) { _, request throws(ConvolverNodeError) in
            guard case .impulse(let impulse, _) = request else { return [] }
            return (impulse.filenames[0] == "room" ? room : tap).map(Double.init)
        }
        XCTAssertEqual(plan.steps.count, 2)
        XCTAssertEqual(plan.steps[0].runs.map(\.node), [1])
        XCTAssertEqual(plan.sourceCount, 2)
        XCTAssertEqual(plan.sinkCount, 1)

        let controls = HostedControls(graph: graph)
        let staged = try StagedGraph(
            graph: graph, plan: plan, compiled: plan.steps.map { try $0.matrix.map(compiled) }, controls: controls, sampleRate: 48000)
        defer { for stage in staged.compiledStages { stage.stop() } }
        let input = [Float].noise(30000, using: &generator)
        var output = [Float](repeating: 0, count: input.count)
        var done = 0
        for size in [256, 33, 9000, 1024, 100].cycled(toCover: input.count) {
            let count = min(size, input.count - done)
            guard count > 0 else { break }
            input.withUnsafeBufferPointer { samples in
                output.withUnsafeMutableBufferPointer { out in
                    var inputs: [UnsafePointer<Float>?] = [samples.baseAddress! + done]
                    var outputs: [UnsafeMutablePointer<Float>?] = [out.baseAddress! + done]
                    for stage in staged.compiledStages { stage.beginCycle(startNanos: 0, waitLimitNanos: .max, sampleRate: 48000) }
                    staged.process(inputs: &inputs, outputs: &outputs, frameCount: count)
                }
            }
            done += count
        }
        let amp = powf(10, 6 * 0.05)  // swh amp: DB_CO(gain), single precision
        let heard = Reference.convolve(input, room).map { Float($0) * amp }
        let expected = Reference.convolve(heard, tap)
        XCTAssertLessThan(Reference.relativeErrorDB(output, expected), -100)
        // The judge's teeth: the amp's gain 0.01 % off fails.
        XCTAssertGreaterThan(Reference.relativeErrorDB(output, expected.map { $0 * 1.0001 }), -100)

        // A control change is heard from the next call on, with no rebuild: the amp at -6 dB.
        controls.set(node: 1, port: "Amps gain (dB)", value: -6)
        let more = [Float].noise(2048, using: &generator)
        var after = [Float](repeating: 0, count: more.count)
        more.withUnsafeBufferPointer { samples in
            after.withUnsafeMutableBufferPointer { out in
                var inputs: [UnsafePointer<Float>?] = [samples.baseAddress]
                var outputs: [UnsafeMutablePointer<Float>?] = [out.baseAddress]
                staged.process(inputs: &inputs, outputs: &outputs, frameCount: more.count)
            }
        }
        let whole = input + more
        let quieter = powf(10, -6 * 0.05)
        let heardAfter = Reference.convolve(whole, room).enumerated().map { Float($1) * ($0 < input.count ? amp : quieter) }
        let expectedAfter = Array(Reference.convolve(heardAfter, tap).suffix(more.count))
        XCTAssertLessThan(Reference.relativeErrorDB(after, expectedAfter), -100)
    }

    /// An LV2 plugin (x42's stereoroute, from Mid/Side back to left and right: L = M + S, R = M - S)
    /// after two FIRs, ports by symbol as filter-chain names them, against the chain evaluated directly.
    func testAnLV2PluginBetweenCompiledPartsMatchesTheChainEvaluatedDirectly() throws {
        let (graph, _) = try graph(
            """
            nodes = [
              { type = builtin name = mid label = convolver config = { filename = "mid" } }
              { type = builtin name = side label = convolver config = { filename = "side" } }
              { type = lv2 name = toLR plugin = "http://gareus.org/oss/lv2/stereoroute" control = { routing = 8 } }
            ]
            links = [ { output = "mid:Out" input = "toLR:in_left" } { output = "side:Out" input = "toLR:in_right" } ]
            inputs = [ "mid:In" "side:In" ] outputs = [ "toLR:out_left" "toLR:out_right" ]
            """)
        XCTAssertEqual(graph.nodes[2].inputNames, ["in_left", "in_right"])
        XCTAssertEqual(graph.nodes[2].controls.map(\.port), ["routing"])
        var generator = SeededGenerator(seed: 63)
        let firs = ["mid": [Float].noise(300, using: &generator), "side": [Float].noise(40, using: &generator)]
        let plan = try graph.stagePlan(
            inputChannels: 2, outputChannels: 2, sampleRate: 48000, rules: FilterChainRules(version)
        ) { _, request throws(ConvolverNodeError) in
            guard case .impulse(let impulse, _) = request else { return [] }
            return firs[impulse.filenames[0]]!.map(Double.init)
        }
        let staged = try StagedGraph(
            graph: graph, plan: plan, compiled: plan.steps.map { try $0.matrix.map(compiled) }, controls: HostedControls(graph: graph),
            sampleRate: 48000)
        defer { for stage in staged.compiledStages { stage.stop() } }
        let inputs = [[Float].noise(20000, using: &generator), [Float].noise(20000, using: &generator)]
        var left = [Float](repeating: 0, count: 20000), right = left
        var done = 0
        for size in [256, 33, 9000, 1024, 100].cycled(toCover: 20000) {
            let count = min(size, 20000 - done)
            guard count > 0 else { break }
            inputs[0].withUnsafeBufferPointer { mid in
                inputs[1].withUnsafeBufferPointer { side in
                    left.withUnsafeMutableBufferPointer { leftOut in
                        right.withUnsafeMutableBufferPointer { rightOut in
                            var ins: [UnsafePointer<Float>?] = [mid.baseAddress! + done, side.baseAddress! + done]
                            var outs: [UnsafeMutablePointer<Float>?] = [leftOut.baseAddress! + done, rightOut.baseAddress! + done]
                            for stage in staged.compiledStages { stage.beginCycle(startNanos: 0, waitLimitNanos: .max, sampleRate: 48000) }
                            staged.process(inputs: &ins, outputs: &outs, frameCount: count)
                        }
                    }
                }
            }
            done += count
        }
        let mid = Reference.convolve(inputs[0], firs["mid"]!), side = Reference.convolve(inputs[1], firs["side"]!)
        let sum = zip(mid, side).map { Double(Float($0) + Float($1)) }, difference = zip(mid, side).map { Double(Float($0) - Float($1)) }
        XCTAssertLessThan(Reference.relativeErrorDB(left, sum), -100)
        XCTAssertLessThan(Reference.relativeErrorDB(right, difference), -100)
        // The judge's teeth: outputs swapped fail.
        XCTAssertGreaterThan(Reference.relativeErrorDB(left, difference), -10)
    }

    /// A plugin between two plugins with a FIR on one path: waves by what each plugin hears.
    func testPluginsRunInWavesByWhatTheyHear() throws {
        let (graph, _) = try graph(
            """
            nodes = [
              { type = ladspa name = toMS plugin = matrix_st_ms_1420 label = matrixStMS }
              { type = ladspa name = mid plugin = dyson_compress_1403 label = dysonCompress }
              { type = builtin name = fir label = convolver config = { filename = "/dirac" gain = 0.5 } }
              { type = ladspa name = side plugin = dyson_compress_1403 label = dysonCompress }
              { type = ladspa name = toLR plugin = matrix_ms_st_1421 label = matrixMSSt }
            ]
            links = [
              { output = "toMS:Mid" input = "mid:Input" } { output = "toMS:Side" input = "fir:In" }
              { output = "fir:Out" input = "side:Input" } { output = "mid:Output" input = "toLR:Mid" }
              { output = "side:Output" input = "toLR:Side" }
            ]
            inputs = [ "toMS:Left" "toMS:Right" ] outputs = [ "toLR:Left" "toLR:Right" ]
            """)
        let plan = try graph.stagePlan(inputChannels: 2, outputChannels: 2, sampleRate: 48000, rules: FilterChainRules(version)) {
            _, _ throws(ConvolverNodeError) in [1]
        }
        XCTAssertEqual(plan.steps.map { $0.runs.map(\.node) }, [[0], [1, 3], [4], []])
        XCTAssertEqual(plan.steps.last?.targets, [0, 1])
    }

    func testRefusalsNameWhatWasWrong() {
        let amp = "{ type = ladspa name = gain plugin = amp_1181 label = amp }"
        XCTAssertTrue(
            refusal("nodes = [ { type = ladspa name = x plugin = no_such_plugin label = amp } ]").contains(
                "LADSPA plugin 'no_such_plugin' not found; searched /usr/lib64/ladspa/no_such_plugin.so, /usr/lib/ladspa/no_such_plugin.so"),
            refusal("nodes = [ { type = ladspa name = x plugin = no_such_plugin label = amp } ]"))
        XCTAssertTrue(
            refusal("nodes = [ { type = ladspa name = x plugin = amp_1181 label = ampp } ]").contains("has no label 'ampp'; its labels are 'amp'"))
        XCTAssertTrue(
            refusal("nodes = [ { type = ladspa name = x plugin = /usr/lib/x86_64-linux-gnu/libm.so.6 label = amp } ]").contains(
                "no ladspa_descriptor function"))
        XCTAssertTrue(
            refusal("nodes = [ \(amp) ] inputs = [ \"gain:Inptu\" ]").contains(
                "node 'gain' (amp) has no input port 'Inptu'; its inputs are 'Input'"))
        XCTAssertTrue(
            refusal("nodes = [ { type = ladspa name = x plugin = amp_1181 label = amp control = { \"Amps gain (dB)\" = nan } } ]").contains(
                "is not a finite number"))
        XCTAssertTrue(
            refusal("nodes = [ { type = lv2 name = x plugin = \"http://calf.sourceforge.net/plugins/BassEnhancr\" } ]").contains(
                "LV2 plugin <http://calf.sourceforge.net/plugins/BassEnhancr> is not installed ("),
            refusal("nodes = [ { type = lv2 name = x plugin = \"http://calf.sourceforge.net/plugins/BassEnhancr\" } ]"))
        XCTAssertTrue(
            refusal("nodes = [ { type = lv2 name = x plugin = \"http://gareus.org/oss/lv2/Stereoroute\" } ]").contains(
                "similar: <http://gareus.org/oss/lv2/stereoroute>"),
            refusal("nodes = [ { type = lv2 name = x plugin = \"http://gareus.org/oss/lv2/Stereoroute\" } ]"))
        XCTAssertTrue(refusal("nodes = [ { type = lv2 name = x label = y } ]").contains("node 'x' (lv2) needs plugin = \"URI\""))
        XCTAssertTrue(refusal("nodes = [ { type = ladspa name = x plugin = amp_1181 } ]").contains("needs plugin ="))
    }

    /// filter-chain passes a control outside its hints on: so do we, with a warning that names the range.
    func testControlOutsideItsHintsIsPassedOnWithAWarning() throws {
        let (graph, warnings) = try graph(
            "nodes = [ { type = ladspa name = gain plugin = amp_1181 label = amp control = { \"Amps gain (dB)\" = 80 \"Gian\" = 1 } } ]")
        XCTAssertEqual(graph.nodes[0].controls.map(\.value), [80])
        XCTAssertTrue(warnings.contains { $0.contains("80.0 is above its hinted maximum 70.0") }, "\(warnings)")
        XCTAssertTrue(
            warnings.contains {
                $0.contains("no control port 'Gian' on LADSPA plugin /usr/lib/ladspa/amp_1181.so 'amp'; its controls are 'Amps gain (dB)'")
            }, "\(warnings)")
    }

    /// Defaults from LADSPA hints as filter-chain computes them (sc4m's: low, middle, minimum ...).
    func testDefaultsFollowTheHintsAsFilterChainComputesThem() throws {
        let (graph, _) = try graph("nodes = [ { type = ladspa name = comp plugin = sc4m_1916 label = sc4m } ]")
        let defaults = Dictionary(uniqueKeysWithValues: graph.nodes[0].controls.map { ($0.port, $0.value) })
        XCTAssertEqual(defaults["Attack time (ms)"], Double(Float(1.5 * 0.75 + 400 * 0.25)))
        XCTAssertEqual(defaults["Knee radius (dB)"], Double(Float(1 * 0.75 + 10 * 0.25)))
        XCTAssertEqual(defaults["Ratio (1:n)"], 1)
        XCTAssertEqual(defaults["Threshold level (dB)"], 0)
    }

    private func compiled(_ matrix: ConvolutionMatrix) throws -> CompiledStage {
        var configuration = WorkgroupSchedulerConfiguration()
        configuration.threadCount = .fixed(1)
        configuration.realtimePriority = nil
        let scheduler = WorkgroupLevelScheduler(configuration: configuration)
        let engine = try ConvolutionEngine(
            matrix: matrix, configuration: EngineConfiguration(expectedBlockSize: 256, costs: .typical), scheduler: scheduler)
        return CompiledStage(engine: engine, workgroupScheduler: scheduler, jobScheduler: scheduler, impulseFrames: matrix.impulseLength)
    }
}

extension Array where Element == Int {
    /// The sizes repeated until they add up to at least `total`.
    fileprivate func cycled(toCover total: Int) -> [Int] {
        var result: [Int] = [], sum = 0
        while sum < total {
            for size in self where sum < total {
                result.append(size)
                sum += size
            }
        }
        return result
    }
}
