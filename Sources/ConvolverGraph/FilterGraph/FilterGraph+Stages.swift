// A graph with hosted plugins is cut into stages: before each wave of plugins, one matrix computes
// every plugin input that wave needs from the graph's inputs and the outputs of the plugins that
// ran before; after the last wave, one matrix computes the graph's outputs. Each matrix is a
// zero-latency engine, so a plugin hears in the same cycle what filter-chain would feed it.
import Convolution

/// Where every signal of a graph with hosted nodes lives while a cycle runs, and what runs in
/// which order. Channels are numbered over all instances: sources are the stream's inputs
/// (0..<inputChannels), then each hosted output; sinks are the hosted inputs something feeds.
public struct StagePlan: Sendable {
    /// One plugin instance: its node, its instance, and the sink (input) and source (output)
    /// channels its audio ports are connected to; nil: an input nothing feeds (silence).
    public struct Run: Sendable, Equatable {
        public var node: Int
        public var instance: Int
        public var inputs: [Int?]
        public var outputs: [Int]
    }

    /// A matrix from some sources to some channels, and the plugins that run after it.
    public struct Step: Sendable {
        /// Its input k is source `sources[k]`; its output k is `targets[k]` (sink channels, or the
        /// stream's outputs in the last step). nil: nothing to compute (no input is fed).
        public var matrix: ConvolutionMatrix?
        public var sources: [Int]
        public var targets: [Int]
        public var runs: [Run]
    }

    public var inputChannels: Int
    public var outputChannels: Int
    public var sourceCount: Int
    public var sinkCount: Int
    /// In the order they run; the last one writes the stream's outputs and runs no plugin.
    public var steps: [Step]
}

extension FilterGraph {
    /// Whether some node is hosted (the graph then runs in stages, not as one matrix).
    public var hasHostedNodes: Bool {
        nodes.contains { $0.kind.hosted != nil }
    }

    /// Each hosted node's wave: 1 + the largest wave among the hosted nodes it hears, through any
    /// linear path (nodes of one wave never hear each other). Not hosted: nil.
    func hostedWaves() throws(ConvolverNodeError) -> [Int?] {
        let order: [Int]
        do { order = try evaluationOrder() } catch { throw .configuration(error) }
        var heard = [Int](repeating: 0, count: nodes.count)  // the latest wave a node's output carries
        var waves = [Int?](repeating: nil, count: nodes.count)
        for node in order {
            let upstream = links.filter { $0.input.node == node }.map { heard[$0.output.node] }.max() ?? 0
            if nodes[node].kind.hosted != nil {
                waves[node] = upstream + 1
                heard[node] = upstream + 1
            } else {
                heard[node] = upstream
            }
        }
        return waves
    }

    /// The stages for `inputChannels` → `outputChannels` at `sampleRate` (IRs read through `read`).
    package func stagePlan(
        inputChannels: Int, outputChannels: Int, sampleRate: Int, rules: FilterChainRules,
        read: (_ node: String, FileRequest) throws(ConvolverNodeError) -> [Double]
    ) throws(ConvolverNodeError) -> StagePlan {
        let instances = try instanceCount(inputChannels: inputChannels, outputChannels: outputChannels)
        let waves = try hostedWaves()
        let hosted = nodes.indices.filter { waves[$0] != nil }
        let sourceKeys = hostedSourceKeys
        let outputsPerInstance = hosted.reduce(0) { $0 + nodes[$1].outputNames.count }
        let inputsPerInstance = hosted.reduce(0) { $0 + nodes[$1].inputNames.count }
        // An instance's local source key as a channel: a stream input, or a hosted output.
        func sourceChannel(_ key: Int, instance: Int) -> Int? {
            if key < inputs.count {
                let channel = instance * inputs.count + key
                return channel < inputChannels ? channel : nil
            }
            return inputChannels + instance * outputsPerInstance + (key - inputs.count)
        }
        var firstSink: [Int: Int] = [:]  // node -> its first input's index among an instance's sinks
        var nextSink = 0
        for node in hosted {
            firstSink[node] = nextSink
            nextSink += nodes[node].inputNames.count
        }
        let waveCount = waves.compactMap { $0 }.max() ?? 0
        // Per step: target channel -> its response (source channel -> taps); and the runs.
        var targets = [[Int: [Int: DelayedTaps]]](repeating: [:], count: waveCount + 1)
        var runs = [[StagePlan.Run]](repeating: [], count: waveCount + 1)
        for instance in 0..<instances {
            let responses = try linearResponses(instance: instance, sampleRate: sampleRate, rules: rules, read: read)
            func channels(_ response: PortResponse) -> [Int: DelayedTaps] {
                var result: [Int: DelayedTaps] = [:]
                for (key, taps) in response where taps.taps.contains(where: { $0 != 0 }) {
                    if let channel = sourceChannel(key, instance: instance) { result[channel] = taps }
                }
                return result
            }
            for node in hosted {
                let wave = waves[node]! - 1
                var run = StagePlan.Run(node: node, instance: instance, inputs: [], outputs: [])
                for (index, response) in responses.hostedInputs[node].enumerated() {
                    guard let response else {
                        run.inputs.append(nil)
                        continue
                    }
                    let sink = instance * inputsPerInstance + firstSink[node]! + index
                    targets[wave][sink] = channels(response)
                    run.inputs.append(sink)
                }
                run.outputs = nodes[node].outputNames.indices.map {
                    inputChannels + instance * outputsPerInstance + (sourceKeys[node]! - inputs.count) + $0
                }
                runs[wave].append(run)
            }
            for (output, response) in responses.outputs.enumerated() {
                let channel = instance * outputs.count + output
                guard let response, channel < outputChannels else { continue }
                targets[waveCount][channel] = channels(response)
            }
        }
        let steps = (0...waveCount).map { step -> StagePlan.Step in
            let last = step == waveCount
            let targetChannels = last ? Array(0..<outputChannels) : targets[step].keys.sorted()
            let sources = Set(targets[step].values.flatMap(\.keys)).sorted()
            var entries: [ConvolutionMatrix.Entry] = []
            for (output, target) in targetChannels.enumerated() {
                for (source, taps) in (targets[step][target] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    entries.append(.init(input: sources.firstIndex(of: source)!, output: output, impulse: taps.samples))
                }
            }
            let matrix =
                entries.isEmpty ? nil : ConvolutionMatrix(inputCount: sources.count, outputCount: targetChannels.count, entries: entries)
            return StagePlan.Step(matrix: matrix, sources: sources, targets: targetChannels, runs: runs[step])
        }
        return StagePlan(
            inputChannels: inputChannels, outputChannels: outputChannels,
            sourceCount: inputChannels + instances * outputsPerInstance, sinkCount: instances * inputsPerInstance, steps: steps)
    }
}
