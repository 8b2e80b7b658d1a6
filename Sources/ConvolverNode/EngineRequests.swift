import ConvolverGraph

// Which engines a node has asked its builder for, and whether a finished build is still wanted.
// Pure state (no PipeWire, no threads): the node applies its verdicts on the main loop.

/// The engine requests of one node: for a new graph rate, a new IR (Props), or the quantum the
/// graph runs (a re-plan, taken in silence). Main loop only.
struct EngineRequests {
    /// The rate the newest requested engine is for (requested or built).
    private(set) var sampleRate: Int
    /// The call size new engines are planned for: the graph's quantum once the data thread saw it.
    private(set) var expectedBlockSize: Int
    /// The newest IR or HRTF direction Props asked for while its build runs (later Props build on it).
    private(set) var pendingImpulseConfiguration: NodeConfiguration?
    /// A re-plan for the graph's quantum is being built.
    private var quantumBuildPending = false
    /// A quantum whose re-plan failed: not asked again.
    private var unplannableQuantum = 0

    init(sampleRate: Int, expectedBlockSize: Int) {
        self.sampleRate = sampleRate
        self.expectedBlockSize = expectedBlockSize
    }

    /// What a finished build means for the node.
    struct Verdict: Equatable {
        enum Action: Equatable {
            /// Hand the engine to the data thread (with `inSilence`: once the engine in use holds only zeros).
            case install(inSilence: Bool)
            /// Outdated: the rate, the quantum or the IR changed again while it was built. Free it.
            case discard
            /// The build failed: keep the engine in use (a quantum it failed for is not asked again).
            case keep
        }
        var action: Action
        /// The build was the newest IR change Props asked for: the request that started it is answered.
        var answersProps: Bool
    }

    /// Asks for an engine for `sampleRate` with `configuration`: the request to give the builder.
    mutating func request(
        _ configuration: NodeConfiguration, sampleRate: Int, purpose: EngineBuilder.Purpose
    ) -> EngineBuilder.Request {
        self.sampleRate = sampleRate
        if purpose == .impulseResponse { pendingImpulseConfiguration = configuration }
        return .init(configuration: configuration, sampleRate: sampleRate, expectedBlockSize: expectedBlockSize, purpose: purpose)
    }

    /// A build of `request` ended (`succeeded` or not) while the node plays `impulseSource`.
    mutating func completed(
        _ request: EngineBuilder.Request, succeeded: Bool, impulseSource: NodeConfiguration.ImpulseSource
    ) -> Verdict {
        if request.purpose == .quantum { quantumBuildPending = false }
        let answersProps = request.purpose == .impulseResponse && request.configuration == pendingImpulseConfiguration
        if answersProps { pendingImpulseConfiguration = nil }
        guard succeeded else {
            if request.purpose == .quantum { unplannableQuantum = request.expectedBlockSize }
            return Verdict(action: .keep, answersProps: answersProps)
        }
        let outdated =
            request.sampleRate != sampleRate
            || (request.purpose == .quantum
                && (request.expectedBlockSize != expectedBlockSize || request.configuration.impulseSource != impulseSource))
        if outdated { return Verdict(action: .discard, answersProps: answersProps) }
        return Verdict(action: .install(inSilence: request.purpose == .quantum), answersProps: answersProps)
    }

    /// Any quantum works with any plan, but the one planned for is cheapest: re-plan for the
    /// quantum the graph runs (`observedQuantum`), also after an IR or rate build planned for an
    /// old one. Only while the input has been silent for `silentInputFrames` ≥ the IR's length
    /// (or never had sound): a build takes CPU the playing graph needs, and the data thread takes
    /// the new engine only in silence anyway. True: request a `.quantum` build now.
    mutating func shouldReplan(
        observedQuantum quantum: Int, plannedBlockSize: Int?, impulseFrames: Int?, silentInputFrames: Int
    ) -> Bool {
        guard (16...8192).contains(quantum), quantum != expectedBlockSize || plannedBlockSize != quantum,
            !quantumBuildPending, quantum != unplannableQuantum, silentInputFrames >= impulseFrames ?? 0
        else { return false }
        expectedBlockSize = quantum
        quantumBuildPending = true
        return true
    }
}
