// filter-chain's `filter.graph` as its module reads it (module-filter-chain.c, `load_graph`): builtin
// nodes, links from an output port to an input port, and the ports that are the graph's inputs and
// outputs. Only linear, time-invariant builtins are kept (`FilterGraph.Kind`); anything else is
// refused by name, because this node runs the whole graph as one matrix of impulse responses.

/// A parsed `filter.graph`: its nodes with their settings, and how their audio ports are wired.
public struct FilterGraph: Sendable, Equatable {
    /// A convolver's IR, with filter-chain's convolver keys.
    public struct Impulse: Sendable, Equatable {
        /// `filename`: a path, "/dirac" or "/hilbert"; several paths = one IR at several rates.
        public var filenames: [String]
        /// nil: the instance's index (filter-chain's default), modulo the file's channels.
        public var channel: Int?
        public var gain = 1.0
        /// Whole numbers are samples (0.3.65 and 1.x alike), numbers with a fraction seconds (1.4+).
        public var delay = DelayAmount.samples(0)
        public var offset = 0
        public var length = 0
        public var resampleQuality = 4
        /// 1.6's `latency` (seconds): reported to the graph as the node's latency.
        public var latencySeconds: Double?
    }

    public enum DelayAmount: Sendable, Equatable {
        case samples(Int)
        case seconds(Double)
    }

    /// What a node does to its audio. Every case is linear and time-invariant.
    public enum Kind: Sendable, Equatable {
        /// `copy`: Out = In.
        case copy
        /// `mixer`: Out = sum of `Gain i` · `In i` (eight inputs).
        case mixer(gains: [Double])
        /// `delay`: Out = In, `Delay (s)` later (at most `max-delay`).
        case delay(seconds: Double, maxSeconds: Double)
        /// `linear` with `Add` = 0 (Out = Mult · In), and `invert` (Mult = -1).
        case scale(Double)
        /// `convolver`: Out = In convolved with one IR.
        case convolver(Impulse)
        /// `convolver2` (PipeWire 1.6 and later): `Out k` = In convolved with `impulses[k]`.
        case convolverBank([Impulse])
        /// `bq_lowpass` ... `bq_allpass`: Out = In through the biquad.
        case biquad(Biquad)
        /// `param_eq` and `dcblock`: `Out k` = `In k` through channel k's biquads, in order (eight channels).
        case equalizer([[Biquad]])
        /// `bq_raw`: coefficient sets by sample rate; the one closest to the graph's rate is used.
        case rawBiquad([Biquad.RateSet])
    }

    public struct Node: Sendable, Equatable {
        public var name: String
        public var label: String
        public var kind: Kind
        public var inputNames: [String] { Self.inputNames(kind) }
        public var outputNames: [String] { Self.outputNames(kind) }

        static func inputNames(_ kind: Kind) -> [String] {
            switch kind {
            case .mixer, .equalizer: return (1...8).map { "In \($0)" }
            default: return ["In"]
            }
        }

        static func outputNames(_ kind: Kind) -> [String] {
            switch kind {
            case .convolverBank, .equalizer: return (1...8).map { "Out \($0)" }
            default: return ["Out"]
            }
        }
    }

    /// An audio port: the node's index in `nodes`, and the port's among its inputs or outputs.
    public struct Port: Sendable, Hashable {
        public var node: Int
        public var index: Int
    }

    public struct Link: Sendable, Equatable {
        public var output: Port
        public var input: Port
    }

    public var nodes: [Node]
    public var links: [Link]
    /// The graph's inputs in channel order; nil for filter-chain's `null` (that channel is ignored).
    public var inputs: [Port?]
    /// The graph's outputs in channel order; nil for `null` (that channel is silent).
    public var outputs: [Port?]
}
