// A graph of linear, time-invariant nodes is one matrix of impulse responses: in series the IRs
// convolve, in parallel they add, a gain scales, a delay shifts. Each port's signal is kept as its
// response to each graph input (`PortResponse`), in double precision, in the order the nodes run.
import Convolution
import Glibc

/// A finite impulse response starting `offset` samples late (a delay costs no taps).
struct DelayedTaps: Equatable {
    var offset: Int
    var taps: [Double]

    static let identity = DelayedTaps(offset: 0, taps: [1])

    func scaled(by gain: Double) -> DelayedTaps { DelayedTaps(offset: offset, taps: taps.map { $0 * gain }) }

    func delayed(by frames: Int) -> DelayedTaps { DelayedTaps(offset: offset + frames, taps: taps) }

    /// Direct convolution (the graph's IRs are convolved once, off the real-time thread).
    func convolved(with impulse: [Double]) -> DelayedTaps {
        if taps.count == 1 { return DelayedTaps(offset: offset, taps: impulse.map { $0 * taps[0] }) }
        if impulse.count == 1 { return scaled(by: impulse[0]) }
        guard !taps.isEmpty, !impulse.isEmpty else { return DelayedTaps(offset: offset, taps: []) }
        var result = [Double](repeating: 0, count: taps.count + impulse.count - 1)
        for (i, tap) in taps.enumerated() where tap != 0 {
            for (j, sample) in impulse.enumerated() { result[i + j] += tap * sample }
        }
        return DelayedTaps(offset: offset, taps: result)
    }

    static func + (left: DelayedTaps, right: DelayedTaps) -> DelayedTaps {
        let start = min(left.offset, right.offset)
        let end = max(left.offset + left.taps.count, right.offset + right.taps.count)
        var taps = [Double](repeating: 0, count: end - start)
        for (index, tap) in left.taps.enumerated() { taps[left.offset - start + index] += tap }
        for (index, tap) in right.taps.enumerated() { taps[right.offset - start + index] += tap }
        return DelayedTaps(offset: start, taps: taps)
    }

    /// The samples from time 0, as the engine takes them.
    var samples: [Float] { [Float](repeating: 0, count: offset) + taps.map { Float($0) } }
}

extension FilterGraph.Impulse {
    /// How filter-chain's convolver reads this IR, as our loader's options (sample for sample):
    /// - `length` counts from the file's start, `offset` is cut from it (plugin_builtin.c,
    ///   `read_samples_from_sf`); "/dirac" takes neither; "/hilbert" is made `length - offset` long;
    /// - `delay`: seconds × rate truncated in single precision; whole samples as such on 0.3.x, but
    ///   through seconds on 1.x (`delay_i / (float)rate`, then × the file's rate and truncated: 7
    ///   samples at 48 kHz become 6 there), when `delaysThroughSeconds`.
    package func loadOptions(sampleRate: Int, delaysThroughSeconds: Bool, preRinging: PreRinging) throws(ConvolverNodeError) -> ImpulseResponseOptions
    {
        let rate = Float(sampleRate)
        let delayFrames: Int
        switch delay {
        case .samples(let frames) where delaysThroughSeconds: delayFrames = Int(Float(frames) / rate * rate)
        case .samples(let frames): delayFrames = frames
        case .seconds(let seconds): delayFrames = Int(Float(seconds) * rate)
        }
        var offset = self.offset, length = self.length
        switch filenames[0] {
        case "/dirac": (offset, length) = (0, 0)
        case "/hilbert": (offset, length) = (0, max(1, (length > 0 ? length : 1024) - offset))
        default:
            if length > 0 {
                guard length > offset else {
                    throw .impulseResponse(
                        key: "filter.graph convolver '\(filenames[0])'",
                        message: "length \(length) counts from the file's start (as in filter-chain) and leaves nothing after offset \(offset)",
                        errno: EINVAL)
                }
                length -= offset
            }
        }
        return ImpulseResponseOptions(
            offset: .samples(offset), length: .samples(length), delay: .samples(delayFrames), gain: Float(gain),
            resampleQuality: resampleQuality, preRinging: preRinging)
    }
}

/// A port's signal as its response to each graph input (by input index); absent inputs do not reach it.
typealias PortResponse = [Int: DelayedTaps]

/// What a node reads from a file: a convolver's IR for one instance (`instance` is its default
/// file channel), or one ear's filter from a spatializer's HRTF set; at the graph's rate.
package enum FileRequest {
    case impulse(FilterGraph.Impulse, instance: Int)
    case ear(FilterGraph.Spatializer, right: Bool)
}

extension FilterGraph {
    /// The nodes in an order in which each runs after every node linked into it (filter-chain's
    /// order); a cycle is refused with the names of the nodes on it.
    func evaluationOrder() throws(NodeConfigurationError) -> [Int] {
        var pending = nodes.indices.map { node in links.filter { $0.input.node == node }.count }
        var order: [Int] = []
        var ready = nodes.indices.filter { pending[$0] == 0 }
        while let node = ready.first {
            ready.removeFirst()
            order.append(node)
            for link in links where link.output.node == node {
                pending[link.input.node] -= 1
                if pending[link.input.node] == 0 { ready.append(link.input.node) }
            }
        }
        guard order.count == nodes.count else {
            let cycle = nodes.indices.filter { pending[$0] > 0 }.map { "'\(nodes[$0].name)'" }
            throw NodeConfigurationError(
                key: "filter.graph.links",
                message: "the links form a cycle through nodes \(cycle.joined(separator: ", ")): a graph must run from its inputs to its outputs")
        }
        return order
    }

    /// How many copies of the graph run side by side (filter-chain's "instances"): the capture
    /// channels over the graph's inputs, which must equal the playback channels over its outputs.
    func instanceCount(inputChannels: Int, outputChannels: Int) throws(ConvolverNodeError) -> Int {
        let instances = inputChannels / inputs.count
        guard instances == outputChannels / outputs.count else {
            throw .configuration(
                NodeConfigurationError(
                    key: "filter.graph",
                    message: "the capture side has \(inputChannels) channels for the graph's \(inputs.count) inputs, the playback "
                        + "side \(outputChannels) for its \(outputs.count) outputs: \(inputChannels)/\(inputs.count) must equal "
                        + "\(outputChannels)/\(outputs.count) (check inputs, outputs and audio.channels)"))
        }
        return max(instances, 1)  // fewer channels than inputs: one instance, some ports unconnected (filter-chain warns)
    }

    /// What the linear nodes of one instance compute: each graph output's and each hosted node
    /// input's signal as its response to each source. Sources are the graph inputs (keys
    /// 0..<inputs.count), then the hosted nodes' outputs (`hostedSourceKeys`), which the compiled
    /// parts take as they come. A hosted input that nothing feeds is nil (filter-chain gives it silence).
    struct LinearResponses {
        var outputs: [PortResponse?]
        /// By node index, then audio input (empty for a node that is not hosted).
        var hostedInputs: [[PortResponse?]]
    }

    /// The first source key of each hosted node's outputs (by node index; nil: not hosted).
    var hostedSourceKeys: [Int?] {
        var next = inputs.count
        return nodes.map { node in
            guard node.kind.hosted != nil else { return nil }
            defer { next += node.outputNames.count }
            return next
        }
    }

    /// Each graph output's response to each graph input, for one instance; `read(node, request)`
    /// loads what a node takes from a file.
    func linearResponses(
        instance: Int, sampleRate: Int, rules: FilterChainRules,
        read: (_ node: String, FileRequest) throws(ConvolverNodeError) -> [Double]
    ) throws(ConvolverNodeError) -> LinearResponses {
        var outputsOf: [[PortResponse]] = nodes.map { [PortResponse](repeating: [:], count: $0.outputNames.count) }
        var hostedInputs: [[PortResponse?]] = nodes.map { _ in [] }
        let sourceKeys = hostedSourceKeys
        func signal(at port: Port) -> PortResponse {
            if let graphInput = inputs.firstIndex(of: port) { return [graphInput: .identity] }
            guard let link = links.first(where: { $0.input == port }) else { return [:] }  // unlinked: silence
            return outputsOf[link.output.node][link.output.index]
        }
        /// A graph input or a linked input: filter-chain gives an unconnected one no buffer.
        func isConnected(_ port: Port) -> Bool { inputs.contains(port) || links.contains { $0.input == port } }
        let order: [Int]
        do { order = try evaluationOrder() } catch { throw .configuration(error) }
        for nodeIndex in order {
            let node = nodes[nodeIndex]
            let input = signal(at: Port(node: nodeIndex, index: 0))
            switch node.kind {
            case .ladspa, .lv2, .function:
                hostedInputs[nodeIndex] = node.inputNames.indices.map { index in
                    let port = Port(node: nodeIndex, index: index)
                    return isConnected(port) ? signal(at: port) : nil
                }
                for index in node.outputNames.indices { outputsOf[nodeIndex][index] = [sourceKeys[nodeIndex]! + index: .identity] }
            case .copy: outputsOf[nodeIndex][0] = input
            case .scale(let gain): outputsOf[nodeIndex][0] = input.mapValues { $0.scaled(by: gain) }
            case .delay(let seconds, _):
                // filter-chain's truncation of seconds × rate in single precision.
                let frames = Int((Float(seconds) * Float(sampleRate)).rounded(.towardZero))
                outputsOf[nodeIndex][0] = input.mapValues { $0.delayed(by: frames) }
            case .mixer(let gains):
                let mixed = gains.indices.filter { gains[$0] != 0 && isConnected(Port(node: nodeIndex, index: $0)) }
                let alone = mixed.count == 1 && !rules.mixerScalesALoneInput
                var sum: PortResponse = [:]
                for index in mixed {
                    for (graphInput, taps) in signal(at: Port(node: nodeIndex, index: index)) {
                        let scaled = alone ? taps : taps.scaled(by: gains[index])
                        sum[graphInput] = sum[graphInput].map { $0 + scaled } ?? scaled
                    }
                }
                outputsOf[nodeIndex][0] = sum
            case .convolver(let ir):
                let samples = try read(node.name, .impulse(ir, instance: instance))
                outputsOf[nodeIndex][0] = input.mapValues { $0.convolved(with: samples) }
            case .convolverBank(let irs):
                for (index, ir) in irs.enumerated() {
                    let samples = try read(node.name, .impulse(ir, instance: instance))
                    outputsOf[nodeIndex][index] = input.mapValues { $0.convolved(with: samples) }
                }
            case .spatializer(let spatializer):
                for (index, right) in [false, true].enumerated() {
                    let samples = try read(node.name, .ear(spatializer, right: right))
                    outputsOf[nodeIndex][index] = input.mapValues { $0.convolved(with: samples).scaled(by: spatializer.gain) }
                }
            case .equalizer(let channels):
                // param_eq exists from 1.4 on: its bands follow 1.x's formulas on any version.
                for (channel, bands) in channels.enumerated() {
                    var signal = signal(at: Port(node: nodeIndex, index: channel))
                    for band in bands {
                        signal = try Self.filtered(signal, through: band, node: node.name, sampleRate: sampleRate, formulas: .pipeWire1)
                    }
                    outputsOf[nodeIndex][channel] = signal
                }
            case .rawBiquad(let sets):
                outputsOf[nodeIndex][0] = try Self.filtered(
                    input, through: Biquad.RateSet.closest(sets, to: sampleRate), node: node.name, sampleRate: sampleRate,
                    formulas: rules.biquadFormulas)
            case .biquad(let biquad):
                outputsOf[nodeIndex][0] = try Self.filtered(
                    input, through: biquad, node: node.name, sampleRate: sampleRate, formulas: rules.biquadFormulas)
            }
        }
        return LinearResponses(outputs: outputs.map { port in port.map { outputsOf[$0.node][$0.index] } }, hostedInputs: hostedInputs)
    }

    /// A port's signal through a biquad; one that is unstable, or rings for more than a minute, is refused.
    private static func filtered(
        _ input: PortResponse, through biquad: Biquad, node: String, sampleRate: Int, formulas: Biquad.Formulas
    ) throws(ConvolverNodeError) -> PortResponse {
        let coefficients = biquad.coefficients(sampleRate: sampleRate, formulas: formulas)
        func refused(_ why: String) -> ConvolverNodeError {
            .configuration(
                NodeConfigurationError(
                    key: "filter.graph node '\(node)'",
                    message: "\(biquad) at \(sampleRate) Hz "
                        + "has the coefficients \(coefficients), which \(why): it has no finite impulse response"))
        }
        guard coefficients.isStable else { throw refused("put a pole on or outside the unit circle") }
        var output: PortResponse = [:]
        for (graphInput, taps) in input {
            guard let result = taps.filtered(through: coefficients, sampleRate: sampleRate, maxFrames: 60 * sampleRate) else {
                throw refused("ring on for more than 60 s")
            }
            output[graphInput] = result
        }
        return output
    }

    /// The whole graph as one matrix: `instances` copies side by side, stream channel k feeding
    /// input k mod (graph inputs) of copy k / (graph inputs), as filter-chain wires its instances.
    package func matrix(
        inputChannels: Int, outputChannels: Int, sampleRate: Int, rules: FilterChainRules,
        read: (_ node: String, FileRequest) throws(ConvolverNodeError) -> [Double]
    ) throws(ConvolverNodeError) -> ConvolutionMatrix {
        guard !hasHostedNodes else {
            throw .configuration(
                NodeConfigurationError(
                    key: "filter.graph",
                    message: "a graph with plugins is no single matrix: it runs in stages on the node (pw-convolver run, or the module)"))
        }
        let instances = try instanceCount(inputChannels: inputChannels, outputChannels: outputChannels)
        var entries: [ConvolutionMatrix.Entry] = []
        for instance in 0..<instances {
            let responses = try linearResponses(
                instance: instance, sampleRate: sampleRate, rules: rules, read: read
            ).outputs
            for (output, response) in responses.enumerated() {
                let outputChannel = instance * outputs.count + output
                guard let response, outputChannel < outputChannels else { continue }
                for (input, taps) in response.sorted(by: { $0.key < $1.key }) {
                    let inputChannel = instance * inputs.count + input
                    guard inputChannel < inputChannels, taps.taps.contains(where: { $0 != 0 }) else { continue }
                    entries.append(.init(input: inputChannel, output: outputChannel, impulse: taps.samples))
                }
            }
        }
        guard !entries.isEmpty else {
            throw .configuration(NodeConfigurationError(key: "filter.graph", message: "no graph input reaches any graph output"))
        }
        return ConvolutionMatrix(inputCount: inputChannels, outputCount: outputChannels, entries: entries)
    }

    /// The latency the graph's convolvers and spatializers declare (1.6's `latency`), in frames: the largest.
    package func declaredLatencyFrames(sampleRate: Int) -> Int? {
        let seconds = nodes.flatMap { node -> [Double] in
            switch node.kind {
            case .convolver(let ir): return ir.latencySeconds.map { [$0] } ?? []
            case .convolverBank(let irs): return irs.compactMap(\.latencySeconds)
            case .spatializer(let spatializer): return spatializer.latencySeconds.map { [$0] } ?? []
            default: return []
            }
        }
        return seconds.max().map { Int(($0 * Double(sampleRate)).rounded()) }
    }
}
