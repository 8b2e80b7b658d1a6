// How an engine is built from a NodeConfiguration: the IRs loaded and aligned, the matrix made,
// the engine planned. Off the real-time thread.
import Convolution
import ConvolverGraph
import Glibc
import LevelScheduling
import Workgroup

/// What every build of one node shares: where its helper threads come from, what its plans are
/// priced with, and the SOFA files its earlier builds read. One thread at a time.
struct EngineFactory {
    /// The pw_context whose module-rt policy the helper threads get (nil: pthreads).
    let context: OpaquePointer?
    /// The node prices its plans with `MeasuredMachineCosts.thisMachine`; tests and render use fixed costs.
    let costs: MachineCosts
    /// SOFA files read by earlier builds (a fresh cache reads them again).
    let hrtfSets = HRTFSetCache()
    /// The plugin controls of the node's graph, which every build's plugins take (nil: no plugins).
    let hostedControls: HostedControls?

    init(context: OpaquePointer?, costs: MachineCosts, graph: FilterGraph?) {
        self.context = context
        self.costs = costs
        hostedControls = graph.flatMap { $0.hasHostedNodes ? HostedControls(graph: $0) : nil }
    }

    /// Loads the IR(s) of `configuration` at `sampleRate`, builds the matrix and plans the engine.
    /// Slow (file I/O, resampling, FFT planning): never on the data thread.
    func makeSlot(
        _ configuration: NodeConfiguration, sampleRate: Int, expectedBlockSize: Int
    )
        throws(ConvolverNodeError) -> EngineSlot
    {
        if let graph = configuration.graph, graph.hasHostedNodes {
            return try makeStagedSlot(graph, configuration, sampleRate: sampleRate, expectedBlockSize: expectedBlockSize)
        }
        let (matrix, latencyFrames, autogainDB) = try preparedMatrix(configuration, sampleRate: sampleRate)
        let stage = try compiledStage(matrix, configuration, sampleRate: sampleRate, expectedBlockSize: expectedBlockSize)
        return EngineSlot(
            stages: [stage], stagedGraph: nil, sampleRate: sampleRate, planDescription: "\(stage.engine.plan)",
            plannedBlockSize: expectedBlockSize, impulseFrames: matrix.impulseLength, latencyFrames: latencyFrames,
            autogainDB: autogainDB)
    }

    /// A graph with hosted plugins: its stages planned, each matrix an engine, the plugins
    /// instantiated between them.
    private func makeStagedSlot(
        _ graph: FilterGraph, _ configuration: NodeConfiguration, sampleRate: Int, expectedBlockSize: Int
    ) throws(ConvolverNodeError) -> EngineSlot {
        if configuration.autogain {
            throw .configuration(
                NodeConfigurationError(key: "autogain", message: "a graph with plugins has no impulse response to normalize; leave autogain out"))
        }
        let reader = GraphFileReader(factory: self, configuration: configuration, sampleRate: sampleRate, rules: FilterChainRules(graph.pipeWire))
        let plan = try graph.stagePlan(
            inputChannels: configuration.channelCount, outputChannels: configuration.outputCount, sampleRate: sampleRate,
            rules: reader.rules, read: reader.read)
        var compiled: [CompiledStage?] = []
        do throws(ConvolverNodeError) {
            for step in plan.steps {
                guard let matrix = step.matrix else {
                    compiled.append(nil)
                    continue
                }
                compiled.append(try compiledStage(matrix, configuration, sampleRate: sampleRate, expectedBlockSize: expectedBlockSize))
            }
            let controls = hostedControls ?? HostedControls(graph: graph)
            let staged = try StagedGraph(graph: graph, plan: plan, compiled: compiled, controls: controls, sampleRate: sampleRate)
            guard !staged.compiledStages.isEmpty else {
                throw .configuration(
                    NodeConfigurationError(key: "filter.graph", message: "no graph input or plugin reaches any graph output"))
            }
            let plans = zip(plan.steps, compiled).map { step, stage in
                let plugins = step.runs.map { graph.nodes[$0.node].name }
                return (stage.map { "\($0.engine.plan)" } ?? "-") + (plugins.isEmpty ? "" : " → " + Set(plugins).sorted().joined(separator: ","))
            }
            let latency = graph.declaredLatencyFrames(sampleRate: sampleRate) ?? 0
            return EngineSlot(
                stages: staged.compiledStages, stagedGraph: staged, sampleRate: sampleRate,
                planDescription: plans.joined(separator: " | "), plannedBlockSize: expectedBlockSize,
                impulseFrames: staged.compiledStages.reduce(0) { $0 + $1.impulseFrames }, latencyFrames: latency, autogainDB: nil)
        } catch {
            for stage in compiled { stage?.stop() }
            throw error
        }
    }

    /// `matrix` as an engine planned for `expectedBlockSize`, its levels on the process's workgroup.
    private func compiledStage(
        _ matrix: ConvolutionMatrix, _ configuration: NodeConfiguration, sampleRate: Int, expectedBlockSize: Int
    ) throws(ConvolverNodeError) -> CompiledStage {
        var schedulerConfiguration = WorkgroupSchedulerConfiguration()
        schedulerConfiguration.threadCount = configuration.workgroupThreads
        if configuration.workgroupPriority > 0 { schedulerConfiguration.realtimePriority = Int32(configuration.workgroupPriority) }
        schedulerConfiguration.sampleRate = Double(sampleRate)
        schedulerConfiguration.split = configuration.workgroupSplit
        schedulerConfiguration.sharedWorkgroup = configuration.workgroupShared
        schedulerConfiguration.warn = { message in PipeWireLog.warning(message) }
        let engineConfiguration = EngineConfiguration(
            expectedBlockSize: expectedBlockSize,
            maxPartitionSize: configuration.maxPartitionSize,
            placement: .node,
            sampleRate: Double(sampleRate),
            costs: costs)
        let threadFactory: any ThreadFactory = context.map { PipeWireThreadFactory(context: $0) } ?? PthreadThreadFactory()
        let scheduler = WorkgroupLevelScheduler(configuration: schedulerConfiguration, threadFactory: threadFactory)
        let jobScheduler = FaultInjectingScheduler.wrapping(
            scheduler, fault: configuration.testFault, sampleRate: sampleRate, expectedBlockSize: expectedBlockSize)
        let engine: ConvolutionEngine
        do {
            engine = try ConvolutionEngine(matrix: matrix, configuration: engineConfiguration, scheduler: jobScheduler)
        } catch {
            jobScheduler.stop()
            throw .engine("\(error)")
        }
        return CompiledStage(
            engine: engine, workgroupScheduler: scheduler, jobScheduler: jobScheduler, impulseFrames: matrix.impulseLength)
    }

    /// The matrix the engine runs: `makeMatrix`'s, with `autogain` applied (its gains in dB), and
    /// the latency the node reports for it.
    func preparedMatrix(
        _ configuration: NodeConfiguration, sampleRate: Int
    )
        throws(ConvolverNodeError) -> (matrix: ConvolutionMatrix, latencyFrames: Int, autogainDB: [Double]?)
    {
        var (matrix, resamplerDelay) = try makeMatrix(configuration, sampleRate: sampleRate)
        let declared = configuration.graph?.declaredLatencyFrames(sampleRate: sampleRate).map(IRLatency.samples)
        let latencyFrames = Self.reportedLatency(declared ?? configuration.latency, of: matrix, resamplerDelay: resamplerDelay)
        guard configuration.autogain else { return (matrix, latencyFrames, nil) }
        let gains: [Float]
        do { gains = try Autogain.gains(matrix, sampleRate: Double(sampleRate)) } catch { throw .engine("autogain: \(error)") }
        matrix = Autogain.apply(gains, to: matrix)
        return (matrix, latencyFrames, gains.map { 20 * log10(Double($0)) })
    }

    /// The node's latency: the resampler's kept ringing plus `latency` samples, or with `auto` the
    /// frame of the loudest IR sample (which includes that ringing).
    static func reportedLatency(_ latency: IRLatency?, of matrix: ConvolutionMatrix, resamplerDelay: Int) -> Int {
        switch latency {
        case nil: return resamplerDelay
        case .samples(let frames)?: return resamplerDelay + frames
        case .auto?:
            var (peak, frame) = (Float(0), 0)
            for entry in matrix.entries {
                for (index, sample) in entry.impulse.enumerated() where abs(sample) > peak { (peak, frame) = (abs(sample), index) }
            }
            return frame
        }
    }

    /// The matrix of `configuration`'s IRs at `sampleRate`, and the latency they carry: with the
    /// resampler's ringing kept, every entry is delayed to the latest one's, so the outputs stay
    /// aligned and the graph can compensate one latency.
    func makeMatrix(
        _ configuration: NodeConfiguration, sampleRate: Int
    ) throws(ConvolverNodeError) -> (matrix: ConvolutionMatrix, resamplerDelayFrames: Int) {
        let channelCount = configuration.channelCount
        if let graph = configuration.graph {
            return (try graphMatrix(graph, configuration, sampleRate: sampleRate), 0)
        }
        if configuration.isSOFA, let filename = configuration.filename {
            return try makeHRTFMatrix(configuration, path: filename, sampleRate: sampleRate)
        }
        if configuration.impulses.isEmpty, let filename = configuration.filename {
            let options = Self.loadOptions(
                configuration, offset: configuration.offset, length: configuration.length,
                delay: configuration.delay)
            let impulseResponse = try Self.load(
                ImpulseResponse.closestInRate(filename, configuration.rateAlternatives, to: Double(sampleRate)),
                key: "filename", sampleRate: sampleRate, options: options)
            do {
                return (
                    try ConvolutionMatrix(impulseResponse: impulseResponse, channelCount: channelCount),
                    impulseResponse.addedDelayFrames
                )
            } catch {
                throw .impulseResponse(key: "filename", message: "\(error)", errno: EINVAL)
            }
        }
        var loaded: [LoadedEntry] = []
        for (index, impulse) in configuration.impulses.enumerated() {
            let options = Self.loadOptions(
                configuration, channel: impulse.channel, offset: impulse.offset, length: impulse.length,
                delay: impulse.delay, gain: impulse.gain)
            let spec = ImpulseResponse.closestInRate(impulse.filename, impulse.rateAlternatives, to: Double(sampleRate))
            let response = try Self.load(spec, key: "impulses[\(index)]", sampleRate: sampleRate, options: options)
            loaded.append((impulse.input, impulse.output, response.channels[0], response.addedDelayFrames))
        }
        let (entries, resamplerDelayFrames) = Self.aligned(loaded)
        let matrix = ConvolutionMatrix(inputCount: channelCount, outputCount: configuration.outputCount, entries: entries)
        do {
            try matrix.validate()
        } catch {
            throw .impulseResponse(key: "impulses", message: "\(error)", errno: EINVAL)
        }
        return (matrix, resamplerDelayFrames)
    }

    /// filter-chain's graph compiled into one matrix.
    func graphMatrix(
        _ graph: FilterGraph, _ configuration: NodeConfiguration, sampleRate: Int
    ) throws(ConvolverNodeError) -> ConvolutionMatrix {
        let reader = GraphFileReader(factory: self, configuration: configuration, sampleRate: sampleRate, rules: FilterChainRules(graph.pipeWire))
        return try graph.matrix(
            inputChannels: configuration.channelCount, outputChannels: configuration.outputCount, sampleRate: sampleRate,
            rules: reader.rules, read: reader.read)
    }

    /// Every input to both ears through the HRTF set's filters for its direction (its speaker's,
    /// turned by `sofa`; LFE unfiltered), resampled like any IR and aligned to one resampler delay.
    func makeHRTFMatrix(
        _ configuration: NodeConfiguration, path: String, sampleRate: Int
    )
        throws(ConvolverNodeError) -> (matrix: ConvolutionMatrix, resamplerDelayFrames: Int)
    {
        let set: HRTFSet
        do { set = try hrtfSets.set(path: path, normalizedAt: nil) } catch {
            throw .impulseResponse(key: "filename", message: error.description, errno: EINVAL)
        }
        let options = Self.loadOptions(
            configuration, offset: configuration.offset, length: configuration.length,
            delay: configuration.delay)
        var loaded: [LoadedEntry] = []
        for (input, position) in configuration.positions.enumerated() {
            // One input is the source `sofa` places, whatever its position is called.
            let speaker = configuration.channelCount == 1 ? SourceDirection() : SpeakerDirections.direction(of: position)
            guard let speaker, position != "LFE" else {
                loaded += [(input, 0, [1], 0), (input, 1, [1], 0)]  // LFE: unfiltered
                continue
            }
            do {
                let ears = try ImpulseResponse.load(
                    set, direction: speaker.rotated(by: configuration.sofa),
                    sampleRate: Double(sampleRate), options: options)
                loaded += (0..<2).map { (input, $0, ears.channels[$0], ears.addedDelayFrames) }
            } catch {
                throw .impulseResponse(key: "filename", message: error.description, errno: EINVAL)
            }
        }
        let (entries, resamplerDelayFrames) = Self.aligned(loaded)
        return (ConvolutionMatrix(inputCount: configuration.channelCount, outputCount: 2, entries: entries), resamplerDelayFrames)
    }

    /// One matrix entry's IR as loaded, with the resampler ringing it kept (`ImpulseResponse.addedDelayFrames`).
    typealias LoadedEntry = (input: Int, output: Int, impulse: [Float], addedDelayFrames: Int)

    /// The entries, each IR delayed to the one with the most kept ringing, so the outputs stay
    /// aligned; and that delay.
    static func aligned(_ loaded: [LoadedEntry]) -> (entries: [ConvolutionMatrix.Entry], resamplerDelayFrames: Int) {
        let delay = loaded.map(\.addedDelayFrames).max() ?? 0
        return (
            loaded.map { entry in
                ConvolutionMatrix.Entry(
                    input: entry.input, output: entry.output,
                    impulse: [Float](repeating: 0, count: delay - entry.addedDelayFrames) + entry.impulse)
            }, delay
        )
    }

    /// How every IR of `configuration` is loaded (its resampling); offset, length, delay (samples)
    /// and gain are the IR's own.
    static func loadOptions(
        _ configuration: NodeConfiguration, channel: Int? = nil, offset: Int, length: Int, delay: Int,
        gain: Double = 1
    ) -> ImpulseResponseOptions {
        ImpulseResponseOptions(
            channel: channel, offset: .samples(offset), length: .samples(length), delay: .samples(delay),
            gain: Float(gain), resampleQuality: configuration.resampleQuality,
            preRinging: configuration.resamplePreRinging)
    }

    /// `ImpulseResponse.load`, its error turned into one naming the module key.
    static func load(
        _ spec: String, key: String, sampleRate: Int,
        options: ImpulseResponseOptions
    ) throws(ConvolverNodeError) -> ImpulseResponse {
        do {
            return try ImpulseResponse.load(spec, sampleRate: Double(sampleRate), options: options)
        } catch {
            let code: Int32
            switch error {
            case .fileNotFound: code = ENOENT
            case .unreadable: code = EACCES
            case .tooLong: code = EFBIG
            default: code = EINVAL
            }
            throw .impulseResponse(key: key, message: error.description, errno: code)
        }
    }
}

/// What a node with this configuration computes, for `pw-convolver render` to compute it offline.
extension NodeConfiguration {
    /// The matrix the node's engine runs at `sampleRate` (SOFA placement and autogain applied).
    public func engineMatrix(sampleRate: Int) throws(ConvolverNodeError) -> ConvolutionMatrix {
        // No engine is planned here, so no costs are asked of the machine.
        try EngineFactory(context: nil, costs: .typical, graph: graph).preparedMatrix(self, sampleRate: sampleRate).matrix
    }

    /// Output = wet · engine output + dry · the input of the same index (`gain`, `mix`, `bypass`).
    public var wetAndDryAmounts: (wet: Float, dry: Float) {
        OutputMix.targetAmounts(gain: Float(gain), mix: Float(mix), bypass: bypass)
    }
}
