import Convolution
import LevelScheduling
import Workgroup

/// Everything that configures one convolver node: the module's arguments and `pw-convolver run`'s
/// options are both read into this type, with the same keys, defaults, limits and errors.
///
/// Keys follow filter-chain's convolver where they mean the same (`filename`, `channel`, `gain`,
/// `delay`, `offset`, `length`, `resample.quality`; lengths and delays in samples of the IR file).
public struct NodeConfiguration: Sendable, Equatable {
    /// One entry of the optional `impulses` matrix: IR `filename` channel `channel` convolves
    /// input `input` into output `output`.
    public struct Impulse: Sendable, Equatable {
        public var input: Int
        public var output: Int
        public var filename: String
        /// As `NodeConfiguration.rateAlternatives`, for this entry.
        public var rateAlternatives: [String] = []
        public var channel = 0
        public var gain = 1.0
        public var delay = 0
        public var offset = 0
        public var length = 0
        public init(input: Int, output: Int, filename: String) {
            self.input = input
            self.output = output
            self.filename = filename
        }
    }

    public var nodeName = "swift-convolver"
    public var nodeDescription = "Convolver"
    /// Channel positions; one input and one output port per position (`input_FL`, `output_FL` …).
    public var positions: [String] = ["FL", "FR"]
    /// The IR: a file path or `builtin:NAME`. Nil when `impulses` gives the matrix.
    public var filename: String?
    /// filter-chain's `filename` array: one IR in files of several rates, the one whose rate is
    /// closest to the graph's used (resampled only if it still differs). `filename` is the first;
    /// empty for a single file.
    public var rateAlternatives: [String] = []
    /// Linear gain of the wet signal's IR (as filter-chain's convolver `gain`).
    public var gain = 1.0
    /// Dry/wet: 0 = input only, 1 = convolved only.
    public var mix = 1.0
    public var bypass = false
    /// `StereoWidth` of the wet signal, 0...2 (1 = as it is); nodes with two outputs.
    public var width = 1.0
    /// Extra delay of the IR, in samples.
    public var delay = 0
    /// First sample of the IR file to use, and how many (0 = to the end).
    public var offset = 0
    public var length = 0
    /// Quality of the IR resampler when the file's rate differs from the graph's.
    public var resampleQuality = 4
    /// The resampling filter's ringing before time 0: cut (zero added latency) or kept, and then
    /// reported to the graph as the node's latency.
    public var resamplePreRinging: PreRinging = .cut
    /// `latency`: the delay the IR itself carries (a linear-phase correction FIR's half length),
    /// reported to the graph as the node's latency so that PipeWire compensates it; nil: none.
    public var latency: IRLatency?
    /// `autogain`: scale each output's wet signal so that pink noise keeps its level (`Autogain`).
    public var autogain = false
    /// Optional N×M matrix; empty = `filename` channel i on input i → output i.
    public var impulses: [Impulse] = []
    /// filter-chain's `filter.graph`, compiled into the matrix instead of `filename` or `impulses`.
    public var graph: FilterGraph?
    /// `audio.rate`: the rate the node runs at (the graph resamples around it); nil: the graph's.
    public var audioRate: Int?
    /// With a SOFA `filename` (an HRTF set): the direction of the source (one input), or the
    /// turn of the whole scene (several inputs, each at its speaker's direction: `SpeakerDirections`).
    /// `sofa = { azimuth elevation radius }`, live as Props `sofa.azimuth` … .
    public var sofa = SourceDirection()
    /// Where the IRs come from: what a live change (Props) replaces, the rest staying as it is.
    public struct ImpulseSource: Equatable {
        var filename: String?
        var rateAlternatives: [String]
        var impulses: [Impulse]
        var sofa: SourceDirection
        var graph: FilterGraph?

        /// This source playing `file` as its one IR file (no rate alternatives, no matrix); nil
        /// when it already does.
        package func playing(file: String) -> ImpulseSource? {
            guard file != filename || !rateAlternatives.isEmpty || !impulses.isEmpty else { return nil }
            var changed = self
            (changed.filename, changed.rateAlternatives, changed.impulses) = (file, [], [])
            return changed
        }
    }

    public var impulseSource: ImpulseSource {
        get { ImpulseSource(filename: filename, rateAlternatives: rateAlternatives, impulses: impulses, sofa: sofa, graph: graph) }
        set {
            (filename, rateAlternatives, impulses, sofa, graph) = (
                newValue.filename, newValue.rateAlternatives, newValue.impulses, newValue.sofa, newValue.graph
            )
        }
    }

    /// Whether `filename` is an HRTF set: every input then goes to two ears through its filters.
    public var isSOFA: Bool { impulses.isEmpty && filename.map(HRTFSet.isSOFA) == true }
    /// Helper threads: `auto` (online cores − 1, at least 1), `levels` (one per level) or a count.
    public var workgroupThreads: ThreadCount = .auto
    /// SCHED_FIFO priority of the helpers; 0 = just below the data thread (module-rt's 88 − 1).
    public var workgroupPriority = 0
    /// Fork-join split of the data thread's own share (the head's per-output work) across split
    /// helpers within each call: `auto` (when its estimated cost exceeds half the quantum), `on`, `off`.
    public var workgroupSplit: SplitMode = .auto
    /// Level jobs on the process's one workgroup, shared with every node in it (true), or on
    /// helpers of this node's own (false: the behaviour before it, for comparison).
    public var workgroupShared = true
    /// Largest partition (level block) size, a power of two.
    public var maxPartitionSize = 16384
    /// Crossfade from the old engine to a new one (new IR or new rate), in seconds; 0 = hard switch.
    public var crossfadeSeconds = 0.05
    /// Crossfade curve: equal power (sin/cos, for uncorrelated outputs) or equal gain (linear).
    public var crossfadeEqualPower = true
    /// `target.object`, for session managers that route the node.
    public var targetObject: String?
    /// `filter` (DSP ports, routed by hand) or `sink` (a virtual sink apps can pick as output).
    public var mode: NodeMode = .filter
    /// `node.*`, `media.*`, `priority.*` keys other than the ones above, passed to the node as is;
    /// in sink mode also WirePlumber 0.5's smart-filter keys (`filter.smart`, `filter.smart.name`,
    /// `.target`, `.before`, `.after`, `.disabled`, `.targetable`), on the sink node.
    public var extraNodeProperties: [String: String] = [:]

    /// Sink mode: filter-chain's `capture.props` and `playback.props`, extra properties of the
    /// sink node and of its output stream (the keys the node reads itself taken out: see `parse`).
    public var captureProperties: [String: String] = [:]
    public var playbackProperties: [String: String] = [:]
    /// The sink's output stream: `playback.props`'s `node.name`, or `output.<node.name>`.
    public var playbackNodeName: String { playbackProperties["node.name"] ?? "output." + nodeName }

    /// Output positions when they differ from the inputs' (`output.position`, e.g. 8 inputs of a
    /// 7.1 sink → 2 binaural outputs through `impulses`); nil = one output per input position.
    public var outputPositions: [String]?

    /// Test only (`test.record-calls`): the node keeps every call's input and output and writes
    /// them to this file when it is destroyed (`CallRecorder`), for the live tests' judge.
    public var testRecordCallsPath: String?
    /// Test only (`test.fault`): a deliberately broken node, so tests can show their judges fail.
    public var testFault: TestFault?

    public var channelCount: Int { positions.count }
    public var outputChannelPositions: [String] { outputPositions ?? positions }
    public var outputCount: Int { outputChannelPositions.count }

    public init() {}

    /// Limits: values outside are errors naming the key.
    public static let channelLimit = 64
    public static let gainLimit = 100.0
    public static let sampleCountLimit = 1 << 24
    public static let threadLimit = 32
    public static let crossfadeLimit = 10.0
    /// Keys that describe the audio the way `filter.graph` does, so a config gives one or the other.
    static let ownKeysBesideAGraph: Set<String> = [
        "filename", "impulses", "gain", "mix", "bypass", "width", "delay", "offset", "length", "channel", "autogain",
        "latency", "sofa", "output.position", "resample.quality", "resample_quality", "resample.pre-ringing", "mode",
    ]

    /// Checks what single keys cannot: an IR is given, matrix indices fit the channels.
    public func validate() throws(NodeConfigurationError) {
        if mode != .sink, let key = extraNodeProperties.keys.sorted().first(where: { $0.hasPrefix("filter.smart") }) {
            throw NodeConfigurationError(key: key, message: "needs mode = sink (WirePlumber's smart filters are sinks)")
        }

        for (key, count) in [("audio.channels", channelCount), ("output channels", outputCount)]
        where !(1...Self.channelLimit).contains(count) {
            throw NodeConfigurationError(key: key, message: "\(count) channels: 1...\(Self.channelLimit) are supported")
        }
        if latency != nil && mode != .filter {
            throw NodeConfigurationError(
                key: "latency",
                message: "is reported to the graph by a filter-mode node only (mode = filter); the streams of a \(mode.rawValue) "
                    + "report their own latency")
        }
        if filename == nil && impulses.isEmpty && graph == nil {
            throw NodeConfigurationError(key: "filename", message: "no impulse response: set filename (a path or builtin:NAME) or impulses")
        }
        if width != 1 && outputCount != 2 {
            throw NodeConfigurationError(key: "width", message: "needs a node with two outputs (stereo), not \(outputCount)")
        }
        if isSOFA {
            guard outputCount == 2 else {
                throw NodeConfigurationError(key: "output.position", message: "an HRTF set (SOFA) has two outputs, the ears, not \(outputCount)")
            }
            if channelCount > 1, let position = positions.first(where: { SpeakerDirections.direction(of: $0) == nil && $0 != "LFE" }) {
                throw NodeConfigurationError(
                    key: "audio.position",
                    message: "\(position) has no standard speaker direction to place it at with an HRTF set; use "
                        + SpeakerDirections.known.joined(separator: " ") + " or LFE")
            }
        } else if outputCount != channelCount && impulses.isEmpty && graph == nil {
            throw NodeConfigurationError(
                key: "output.position",
                message: "\(outputCount) outputs for \(channelCount) inputs need an impulses matrix")
        }
        for (index, impulse) in impulses.enumerated() {
            if impulse.input >= channelCount {
                throw NodeConfigurationError(
                    key: "impulses[\(index)].input",
                    message: "\(impulse.input) is out of range for \(channelCount) input channels (counted from 0: 0...\(channelCount - 1))")
            }
            if impulse.output >= outputCount {
                throw NodeConfigurationError(
                    key: "impulses[\(index)].output",
                    message: "\(impulse.output) is out of range for \(outputCount) output channels (counted from 0: 0...\(outputCount - 1))")
            }
        }
    }

    /// MONO for 1 channel, FL FR for 2, AUX0… otherwise (as PipeWire's defaults).
    public static func defaultPositions(channelCount: Int) -> [String] {
        switch channelCount {
        case 1: return ["MONO"]
        case 2: return ["FL", "FR"]
        default: return (0..<channelCount).map { "AUX\($0)" }
        }
    }

}

/// The module key `latency`: the delay an IR carries, in samples at the graph rate, or `auto`: the
/// frame of the IR's loudest sample (for linear-phase FIRs, whose peak is their delay).
public enum IRLatency: Sendable, Equatable {
    case samples(Int)
    case auto
}

/// How the node shows itself to the graph (module key `mode`).
public enum NodeMode: String, Sendable, Equatable, CaseIterable {
    /// A filter: `input_<POS>`/`output_<POS>` DSP ports, no media.class; routed with pw-link/qpwgraph.
    case filter
    /// A virtual sink (`media.class = Audio/Sink`, inputs `playback_<POS>` like a device sink)
    /// whose outputs `output_<POS>` go on to `target.object` or the default sink.
    case sink
    /// A virtual source (`media.class = Audio/Source` on the output side, as filter-chain's
    /// `playback.props`): an input stream takes a device's audio, apps record the convolved one.
    case source
    /// filter-chain's stream filter: an input and an output stream (neither a sink nor a source)
    /// that a session manager links between devices.
    case stream
}

/// A configuration mistake, naming the key (or `args` for syntax errors).
public struct NodeConfigurationError: Error, Equatable, CustomStringConvertible {
    public var key: String
    public var message: String
    public init(key: String, message: String) {
        self.key = key
        self.message = message
    }
    public var description: String { "\(key): \(message)" }
}

extension SourceDirection {
    /// The ranges of `sofa.azimuth`, `sofa.elevation` (degrees) and `sofa.radius` (metres), for
    /// module arguments and Props alike.
    package static let ranges: [String: ClosedRange<Double>] = ["azimuth": -360...360, "elevation": -90...90, "radius": 0.05...100]

    /// Sets the coordinate `name` (`azimuth`, `elevation`, `radius`) from a module argument.
    mutating func set(_ name: String, _ value: SPAJSONValue, _ warnings: inout [String]) throws(NodeConfigurationError) {
        guard let range = Self.ranges[name] else {
            warnings.append("unknown key 'sofa.\(name)' ignored")
            return
        }
        let number = try NodeConfiguration.number(value, "sofa.\(name)", range)
        set(name, number)
    }

    /// Sets the coordinate `name` to `value` (in its range).
    package mutating func set(_ name: String, _ value: Double) {
        switch name {
        case "azimuth": azimuth = value
        case "elevation": elevation = value
        default: radius = value
        }
    }
}
