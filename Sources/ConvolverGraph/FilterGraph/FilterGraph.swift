// filter-chain's `filter.graph` as its module reads it (module-filter-chain.c, `load_graph`): builtin
// nodes, the sofa plugin's spatializer and LADSPA plugins, links from an output port to an input
// port, and the ports that are the graph's inputs and outputs. The linear, time-invariant nodes
// compile into matrices of impulse responses; plugins are hosted between them (FilterGraph+Stages);
// anything else is refused by name.
import Convolution

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

    /// A `spatializer` (type `sofa`): one source placed by an HRTF set, both ears' filters.
    public struct Spatializer: Sendable, Equatable {
        /// The SOFA file.
        public var filename: String
        /// The `Azimuth`, `Elevation` and `Radius` controls (degrees, degrees, metres).
        public var direction = SourceDirection(azimuth: 0, elevation: 0, radius: 1)
        /// 1.6's `gain`.
        public var gain = 1.0
        /// 1.6's `latency` (seconds): reported to the graph as the node's latency.
        public var latencySeconds: Double?
    }

    public enum DelayAmount: Sendable, Equatable {
        case samples(Int)
        case seconds(Double)
    }

    /// What a node does to its audio. Every case but the hosted plugins is linear and time-invariant.
    public enum Kind: Sendable, Equatable {
        /// `type = ladspa`: the plugin itself, run every cycle between the compiled parts.
        case ladspa(LADSPAPlugin)
        /// `type = lv2`: the same, an LV2 plugin.
        case lv2(LV2Plugin)
        /// `clamp`, `linear` with `Add`, `recip`, `exp`, `log`, `abs`, `sqrt`, `mult`, `max`: run
        /// sample by sample like a plugin.
        case function(BuiltinFunction)
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
        /// `spatializer`: `Out L` and `Out R` = In through the HRTF set's filters for its direction.
        case spatializer(Spatializer)

        /// The hosted plugin of a `ladspa` or `lv2` node (nil: the node is linear).
        public var hosted: (any HostedPlugin)? {
            switch self {
            case .ladspa(let plugin): return plugin
            case .lv2(let plugin): return plugin
            case .function(let function): return function
            default: return nil
            }
        }
    }

    /// A control input port and its value (filter-chain's Props lists them as "node:Port").
    public struct Control: Sendable, Equatable {
        public var port: String
        public var value: Double
    }

    /// A live change of a control: its name ("node:Port"), its value (nil if not a finite
    /// number) and the value as written (for messages).
    public struct ControlChange {
        public var name: String
        public var value: Double?
        public var written: String

        public init(name: String, value: Double?, written: String) {
            (self.name, self.value, self.written) = (name, value, written)
        }
    }

    public struct Node: Sendable, Equatable {
        public var name: String
        public var label: String
        public var kind: Kind
        /// The control ports a live change may set, with their values, in filter-chain's port order.
        public var controls: [Control] = []
        /// The node as the config wrote it: compiled again with new control values.
        var source: SPAJSONValue = .object([])
        public var inputNames: [String] { Self.inputNames(kind) }
        public var outputNames: [String] { Self.outputNames(kind) }

        static func inputNames(_ kind: Kind) -> [String] {
            if let plugin = kind.hosted { return plugin.ports.filter { $0.role == .audioInput }.map(\.name) }
            switch kind {
            case .mixer, .equalizer: return (1...8).map { "In \($0)" }
            default: return ["In"]
            }
        }

        static func outputNames(_ kind: Kind) -> [String] {
            if let plugin = kind.hosted { return plugin.ports.filter { $0.role == .audioOutput }.map(\.name) }
            switch kind {
            case .convolverBank, .equalizer: return (1...8).map { "Out \($0)" }
            case .spatializer: return ["Out L", "Out R"]
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
    /// The filter-chain it was read for, whose rules it is computed by.
    public var pipeWire: PipeWireVersion
}
