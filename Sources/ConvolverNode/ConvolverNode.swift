// The convolver as a PipeWire node, on the main loop: engines built off the real-time thread when
// the rate, the quantum or the IR changes, live Props (gain, mix, bypass, width, filename, sofa.*),
// statistics in the node's properties once a second. How it meets the graph is its transport:
// a pw_filter (FilterTransport) or a virtual sink's two streams (SinkTransport).
import CConvolverShims
import CPipeWire
import Convolution
import ConvolverGraph
import Glibc
import Workgroup

/// One convolver node on a PipeWire core. Lives on the main loop thread: create, use and
/// `destroy()` it there. The data thread only runs the transport's process and `RealtimeProcessor.process`.
public final class ConvolverNode {
    public private(set) var configuration: NodeConfiguration
    private let loop: UnsafeMutablePointer<pw_loop>
    /// Builds this node's engines: here the first, then on the builder's worker.
    private let factory: EngineFactory
    /// The newest engine built, active or pending (a second reference, for statistics).
    private var newestSlot: EngineSlot?
    /// Late levels of engines already replaced.
    private var lateLevelsOfReplacedEngines = 0
    private var lateSplitsOfReplacedEngines = 0
    /// Builds engines for new rates and IRs off the main loop (created with the wake event).
    private var builder: EngineBuilder?
    /// What was asked of the builder, and whether a finished build is still wanted.
    private var requests: EngineRequests
    /// The pw_filter or the sink's streams (nil once destroyed).
    private var transport: (any NodeTransport)?
    private let realtime: RealtimeProcessor
    private var statisticsTimer: UnsafeMutablePointer<spa_source>?
    private var wakeEvent: UnsafeMutablePointer<spa_source>?
    private var controls: LiveControls
    private var lastPublished: [String: String] = [:]
    private var helperLoad = HelperLoad()
    private var controlAnswers = ControlAnswers()
    /// The process latency last reported to the graph (nil: not yet).
    private var publishedLatencyFrames: Int?
    /// Bytes for building a param pod (PipeWire copies the pods it is given).
    private static let podBytes = 32768

    /// Builds the engine for `sampleRate` (the graph's expected rate; a different actual rate
    /// makes the node rebuild), creates its transport (filter or sink streams) and connects it.
    public init(
        core: OpaquePointer, context: OpaquePointer?, loop: UnsafeMutablePointer<pw_loop>,
        configuration: NodeConfiguration, sampleRate: Int, expectedBlockSize: Int
    ) throws(ConvolverNodeError) {
        self.configuration = configuration
        factory = EngineFactory(context: context, costs: MeasuredMachineCosts.thisMachine, graph: configuration.graph)
        self.loop = loop
        requests = EngineRequests(sampleRate: sampleRate, expectedBlockSize: expectedBlockSize)
        controls = LiveControls(
            gain: configuration.gain, mix: configuration.mix, bypass: configuration.bypass,
            width: configuration.width)
        do {
            realtime = try RealtimeProcessor(
                inputCount: configuration.channelCount, outputCount: configuration.outputCount,
                controls: controls, crossfadeSeconds: configuration.crossfadeSeconds,
                crossfadeEqualPower: configuration.crossfadeEqualPower,
                testRecordCallsPath: configuration.testRecordCallsPath, testFault: configuration.testFault)
        } catch {
            throw .engine("\(error)")
        }

        let slot = try factory.makeSlot(configuration, sampleRate: sampleRate, expectedBlockSize: expectedBlockSize)
        newestSlot = slot
        realtime.activeEngine = EngineExchange.retain(slot)

        do {
            try createTransport(core: core)
        } catch {
            destroy()
            throw error
        }
    }

    deinit {
        destroy()
    }

    /// The node's global id (SPA_ID_INVALID until the server assigned it). In sink mode the
    /// sink's (capture stream's) id: the node that carries Props and statistics.
    public var nodeID: UInt32 { transport?.nodeID ?? UInt32.max }

    private var userData: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private func createTransport(core: OpaquePointer) throws(ConvolverNodeError) {
        let onProps: (UnsafePointer<spa_pod>) -> Void = { [unowned self] pod in self.propsChanged(pod) }
        transport =
            configuration.mode != .filter
            ? try SinkTransport(core: core, configuration: configuration, realtime: realtime, onProps: onProps)
            : try FilterTransport(core: core, configuration: configuration, realtime: realtime, onProps: onProps)
        try connect()
    }

    /// Wake event, builder and statistics timer, then connects the transport.
    private func connect() throws(ConvolverNodeError) {
        wakeEvent = cpw_loop_add_event(loop, PipeWireCallbacks.wakeEvent, userData)
        realtime.wakeLoop = loop
        realtime.wakeSource = wakeEvent
        let wakeLoop = loop, wakeSource = wakeEvent
        // cpw_loop_signal_event (an eventfd write) may be called from any thread.
        builder = EngineBuilder(factory: factory) { _ = cpw_loop_signal_event(wakeLoop, wakeSource) }
        statisticsTimer = cpw_loop_add_timer(loop, PipeWireCallbacks.statisticsTimer, userData)
        var interval = timespec(tv_sec: 1, tv_nsec: 0)
        var first = timespec(tv_sec: 1, tv_nsec: 0)
        _ = cpw_loop_update_timer(loop, statisticsTimer, &first, &interval, false)

        try transport?.connect(sampleRate: requests.sampleRate)
        publishProps()
        publishLatency()
        publishStatistics()
    }

    /// Destroys the transport (after which the data thread no longer runs `process`), then frees
    /// the engines and sources. Idempotent.
    public func destroy() {
        transport?.destroy()
        transport = nil
        // A build in progress may still signal the wake event: wait for it, free what it made.
        if let builder {
            for completion in builder.finish() {
                if case let .success(slot) = completion.result { slot.stop() }
            }
        }
        builder = nil
        if let statisticsTimer { cpw_loop_destroy_source(loop, statisticsTimer) }
        statisticsTimer = nil
        if let wakeEvent { cpw_loop_destroy_source(loop, wakeEvent) }
        wakeEvent = nil
        realtime.wakeSource = nil
        // The data thread is gone: every engine slot is ours to free.
        realtime.callRecorder?.write()
        for slot in [
            realtime.activeEngine, realtime.fadingEngine, realtime.engines.takeUnclaimedOffer(),
            realtime.engines.takeRetired(),
        ] {
            if let slot { EngineExchange.release(slot) }
        }
        realtime.activeEngine = nil
        realtime.fadingEngine = nil
        newestSlot = nil
    }

    // MARK: - Engines

    /// Hands a built engine to the data thread: at its next call, or with `inSilence` once the
    /// engine in use holds only zeros (a re-plan of the same IR must not change the output).
    private func install(_ slot: EngineSlot, configuration: NodeConfiguration, inSilence: Bool = false) {
        if let previous = newestSlot {
            let statistics = previous.schedulerStatistics()
            lateLevelsOfReplacedEngines += statistics.lateLevels
            lateSplitsOfReplacedEngines += statistics.split?.lateSplits ?? 0
        }
        newestSlot = slot
        publishLatency()
        if let unused = realtime.engines.offer(slot, inSilence: inSilence) {
            EngineExchange.release(unused)  // the data thread never took it
        }
        PipeWireLog.info(
            "\(configuration.nodeName): engine for \(slot.sampleRate) Hz ready (\(slot.planDescription))"
                + (inSilence ? ", planned for quantum \(slot.plannedBlockSize): taken in silence" : ""))
    }

    /// Asks the builder for an engine for `sampleRate` with `configuration` (main loop).
    private func requestEngine(_ configuration: NodeConfiguration, sampleRate: Int, purpose: EngineBuilder.Purpose) {
        builder?.request(requests.request(configuration, sampleRate: sampleRate, purpose: purpose))
    }

    /// The node's wake event, on the main loop: the data thread retired an engine or saw a new
    /// graph rate or quantum, or the builder finished a build.
    func handleWakeEvent() {
        realtime.mainLoopWoken.store(false, ordering: .releasing)
        if let retired = realtime.engines.takeRetired() { EngineExchange.release(retired) }
        for completion in builder?.takeCompletions() ?? [] {
            let request = completion.request
            let succeeded = (try? completion.result.get()) != nil
            let verdict = requests.completed(request, succeeded: succeeded, impulseSource: configuration.impulseSource)
            switch completion.result {
            case .success(let slot):
                guard case .install(let inSilence) = verdict.action else {
                    slot.stop()  // outdated; an IR build is outdated only by a new rate
                    if verdict.answersProps { answerControl(buildFailure: "the graph's rate changed while it was built: send it again") }
                    continue
                }
                install(slot, configuration: request.configuration, inSilence: inSilence)
                if request.purpose == .impulseResponse {
                    configuration.impulseSource = request.configuration.impulseSource
                    publishProps()
                    if verdict.answersProps { answerControl(buildFailure: nil) }
                }
            case .failure(let error):
                switch request.purpose {
                case .sampleRate:
                    PipeWireLog.error("\(configuration.nodeName): cannot rebuild for \(request.sampleRate) Hz: \(error)")
                case .impulseResponse:
                    PipeWireLog.error("\(configuration.nodeName): keeping the current IR: \(error)")
                    if verdict.answersProps { answerControl(buildFailure: "\(error)") }
                case .quantum:
                    PipeWireLog.warning("\(configuration.nodeName): keeping the plan for quantum \(newestSlot?.plannedBlockSize ?? 0): \(error)")
                }
            }
        }
        let rate = realtime.mismatchedRate.load(ordering: .relaxed)
        if rate > 0 && rate != requests.sampleRate {
            requestEngine(configuration, sampleRate: rate, purpose: .sampleRate)
        }
        replanForRunningQuantum()
    }

    /// Re-plans for the quantum the graph runs when `EngineRequests` says it is time. Main loop.
    private func replanForRunningQuantum() {
        guard
            requests.shouldReplan(
                observedQuantum: realtime.observedQuantum.load(ordering: .relaxed),
                plannedBlockSize: newestSlot?.plannedBlockSize, impulseFrames: newestSlot?.impulseFrames,
                silentInputFrames: realtime.silentInputFrames.load(ordering: .relaxed))
        else { return }
        requestEngine(configuration, sampleRate: requests.sampleRate, purpose: .quantum)
    }

    // MARK: - Props

    private func publishProps() {
        guard let transport else { return }
        withUnsafeTemporaryAllocation(byteCount: Self.podBytes, alignment: 8) { scratch in
            guard
                let pod = PropsParam.build(
                    controls, filename: configuration.filename,
                    sofa: configuration.isSOFA ? configuration.sofa : nil,
                    crossfadeSeconds: configuration.crossfadeSeconds,
                    graphControls: configuration.graph?.controlValues ?? [], into: scratch)
            else { return }
            transport.updateParam(pod)
        }
    }

    /// Reports the newest engine's latency as the node's ProcessLatency, which PipeWire adds to
    /// the latency of the output ports. Filter mode: in sink mode the streams' adapters own it.
    private func publishLatency() {
        guard let transport, transport.reportsProcessLatency, let frames = newestSlot?.latencyFrames,
            frames != publishedLatencyFrames
        else { return }
        withUnsafeTemporaryAllocation(byteCount: Self.podBytes, alignment: 8) { scratch in
            guard let pod = ProcessLatencyParam.build(frames: frames, into: scratch) else { return }
            publishedLatencyFrames = frames
            transport.updateParam(pod)
        }
    }

    private func propsChanged(_ pod: UnsafePointer<spa_pod>) {
        let change = PropsParam.parse(pod)
        let request = controlAnswers.received()
        var refusals = change.rejected
        if let gain = change.gain { controls.gain = gain }
        if let mix = change.mix { controls.mix = mix }
        if let bypass = change.bypass { controls.bypass = bypass }
        if let width = change.width {
            if configuration.outputCount == 2 {
                controls.width = width
            } else {
                refusals.append("width (the node has \(configuration.outputCount) outputs, not two)")
            }
        }
        if let crossfade = change.crossfade {
            configuration.crossfadeSeconds = crossfade
            realtime.setCrossfade(seconds: crossfade, equalPower: configuration.crossfadeEqualPower)
        }
        realtime.outputMix.setTargets(controls)
        configuration.gain = controls.gain
        configuration.mix = controls.mix
        configuration.bypass = controls.bypass
        configuration.width = controls.width
        // A new IR, or the source moved in the HRTF set: built off the main loop from the newest
        // requested configuration; installed (and shown in Props) when ready, or logged.
        var next = requests.pendingImpulseConfiguration ?? configuration
        var rebuild = false
        if change.filename != nil && next.graph != nil {
            refusals.append("filename (the node runs a filter.graph: set its controls, \"node:Port\")")
        } else if let filename = change.filename, let source = next.impulseSource.playing(file: filename) {
            next.impulseSource = source
            rebuild = true
        }
        if !change.sofa.isEmpty {
            if next.isSOFA {
                for (coordinate, value) in change.sofa { next.sofa.set(coordinate, value) }
                rebuild = true
            } else {
                refusals.append("\(change.sofa.map { "sofa.\($0.coordinate)" }.joined(separator: ", ")) (the IR is not an HRTF set, .sofa)")
            }
        }
        if !change.graphControls.isEmpty {
            if let graph = next.graph {
                let changed = graph.settingControls(change.graphControls, refusals: &refusals)
                // A plugin's controls reach its running instances at their next call; only the
                // compiled parts are built again (their plugins take the shared values too).
                var compiledPartChanged = false
                for index in changed.nodes.indices where changed.nodes[index] != graph.nodes[index] {
                    if changed.nodes[index].kind.hosted != nil, let hostedControls = factory.hostedControls {
                        for control in changed.nodes[index].controls { hostedControls.set(node: index, port: control.port, value: control.value) }
                    } else {
                        compiledPartChanged = true
                    }
                }
                if compiledPartChanged {
                    next.graph = changed
                    rebuild = true
                } else if changed != graph {
                    configuration.graph = changed
                }
            } else {
                refusals += change.graphControls.map { "unknown key '\($0.name)' (the live keys: \(PropsParam.liveKeys.joined(separator: ", ")))" }
            }
        }
        if rebuild { requestEngine(next, sampleRate: requests.sampleRate, purpose: .impulseResponse) }
        publishProps()
        if !refusals.isEmpty {
            PipeWireLog.warning("\(configuration.nodeName): Props request \(request) refused: \(refusals.joined(separator: "; "))")
        }
        if rebuild {
            controlAnswers.awaitBuild(request, refusals: refusals)
        } else {
            controlAnswers.answer(request, refusals: refusals)
        }
        publishControlAnswers()
    }

    /// The newest requested IR build ended: the request that started it is answered.
    private func answerControl(buildFailure: String?) {
        if controlAnswers.buildEnded(failure: buildFailure) { publishControlAnswers() }
    }

    /// At once, not with the next statistics: `pw-convolver set` waits for it. The engine it
    /// describes comes with it, so whoever reads "ok" reads the IR and plan that answer installed.
    private func publishControlAnswers() {
        guard let transport else { return }
        let answered = controlAnswers.properties + engineDescription
        for (key, value) in answered { lastPublished[key] = value }
        guard let properties = makeProperties(answered) else { return }
        transport.updateProperties(&properties.pointee.dict)
        pw_properties_free(properties)
    }

    // MARK: - Statistics

    /// The newest engine: its IR, rate and plan.
    private var engineDescription: [(String, String)] {
        [
            ("convolver.ir", configuration.filename ?? "impulses (\(configuration.impulses.count) entries)"),
            ("convolver.rate", "\(newestSlot?.sampleRate ?? 0)"),
            ("convolver.plan", newestSlot?.planDescription ?? ""),
            ("convolver.plan-quantum", "\(newestSlot?.plannedBlockSize ?? 0)"),
            ("convolver.latency-frames", "\(newestSlot?.latencyFrames ?? 0)"),
            ("convolver.autogain-db", newestSlot?.autogainDB.map { $0.map { String(cFormat: "%.2f", $0) }.joined(separator: ",") } ?? "off"),
        ]
    }

    /// Node properties with live statistics, once a second (main loop).
    func publishStatistics() {
        guard let transport else { return }
        replanForRunningQuantum()  // the silence it waits for may have come since the last wake-up
        let busy = realtime.statistics.drainBusy()
        let helpers = newestSlot?.schedulerStatistics()
        let marginP99 = helpers?.helpers.p99MarginNanos.map { String(cFormat: "%.1f", Double($0) / 1000) } ?? "none"
        let load = helperLoad.percent(busyNanos: helpers?.groupBusyNanos ?? 0, threads: helpers?.threadCount ?? 0, now: monotonicNanos())
        var values: [String: String] = [
            "convolver.calls": "\(realtime.statistics.calls.load(ordering: .relaxed))",
            "convolver.late-cycles": "\(realtime.statistics.lateCycles.load(ordering: .relaxed))",
            "convolver.late-cycles-started-late": "\(realtime.statistics.lateCyclesStartedLate.load(ordering: .relaxed))",
            "convolver.late-cycles-own": "\(realtime.statistics.lateCyclesOwn.load(ordering: .relaxed))",
            "convolver.late-cycles-stalled": "\(realtime.statistics.lateCyclesStalled.load(ordering: .relaxed))",
            "convolver.missed-cycles": "\(realtime.statistics.missedCycles.load(ordering: .relaxed))",
            "convolver.late-levels": "\(lateLevelsOfReplacedEngines + (helpers?.lateLevels ?? 0))",
            "convolver.helper-margin-p99-us": marginP99,
            "convolver.split-parts": "\(helpers?.split?.partCount ?? 1)",
            "convolver.late-splits": "\(lateSplitsOfReplacedEngines + (helpers?.split?.lateSplits ?? 0))",
            "convolver.helper-threads": "\(helpers?.threadCount ?? 0)",
            "convolver.helper-realtime": "\(helpers?.realtime ?? false)",
            "convolver.workgroup": helpers?.shared == true ? "process \(getpid())" : "node",
            "convolver.helper-load-percent": load.map { String(cFormat: "%.1f", $0) } ?? "0.0",
            "convolver.swaps": "\(realtime.swaps.load(ordering: .relaxed))",
            "convolver.crossfades": "\(realtime.crossfades.load(ordering: .relaxed))",
        ]
        for (key, value) in controlAnswers.properties + engineDescription { values[key] = value }
        if let busy {
            values["convolver.busy-p99-us"] = String(cFormat: "%.1f", Double(busy.p99) / 1000)
            values["convolver.busy-max-us"] = String(cFormat: "%.1f", Double(busy.max) / 1000)
        } else {
            values["convolver.busy-p99-us"] = lastPublished["convolver.busy-p99-us"] ?? "0"
            values["convolver.busy-max-us"] = lastPublished["convolver.busy-max-us"] ?? "0"
        }
        guard values != lastPublished else { return }
        lastPublished = values
        guard let properties = makeProperties(values.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }) else { return }
        transport.updateProperties(&properties.pointee.dict)
        pw_properties_free(properties)
    }
}
