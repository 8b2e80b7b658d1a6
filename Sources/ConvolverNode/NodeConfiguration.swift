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
    /// With a SOFA `filename` (an HRTF set): the direction of the source (one input), or the
    /// turn of the whole scene (several inputs, each at its speaker's direction: `SpeakerDirections`).
    /// `sofa = { azimuth elevation radius }`, live as Props `sofa.azimuth` … .
    public var sofa = SourceDirection()
    /// Whether `filename` is an HRTF set: every input then goes to two ears through its filters.
    public var isSOFA: Bool { impulses.isEmpty && filename.map(HRTFSet.isSOFA) == true }
    /// Helper threads: `auto` (online cores − 1, at least 1), `levels` (one per level) or a count.
    public var workgroupThreads: ThreadCount = .auto
    /// SCHED_FIFO priority of the helpers; 0 = just below the data thread (module-rt's 88 − 1).
    public var workgroupPriority = 0
    /// Fork-join split of the data thread's own share (the head's per-output work) across split
    /// helpers within each call: `auto` (when its estimated cost exceeds half the quantum), `on`, `off`.
    public var workgroupSplit: SplitMode = .auto
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

    /// Reads module arguments (SPA-JSON text). Unknown keys are returned as warnings.
    public static func parse(arguments: String) throws(NodeConfigurationError) -> (NodeConfiguration, warnings: [String]) {
        let value: SPAJSONValue
        do {
            value = try SPAJSONValue.parse(arguments)
        } catch {
            throw NodeConfigurationError(key: "args", message: error.description)
        }
        return try parse(value)
    }

    /// Reads a parsed SPA-JSON object of module arguments.
    public static func parse(_ arguments: SPAJSONValue) throws(NodeConfigurationError) -> (NodeConfiguration, warnings: [String]) {
        guard case let .object(members) = arguments else {
            throw NodeConfigurationError(key: "args", message: "expected an object { key = value ... }")
        }
        var configuration = NodeConfiguration()
        var warnings: [String] = []
        var channelCount: Int?
        var positions: [String]?
        var modeGiven = false, nameGiven = false, descriptionGiven = false, crossfadeShapeGiven = false
        var streamProperties: [String: [String: SPAJSONValue]] = [:]
        for member in members {
            let key = member.key
            let value = member.value
            switch key {
            case "node.name":
                configuration.nodeName = try text(value, key)
                nameGiven = true
            case "node.description":
                configuration.nodeDescription = try text(value, key)
                descriptionGiven = true
            case "audio.channels": channelCount = try integer(value, key, 1...channelLimit)
            case "audio.position": positions = try channelPositions(value, key)
            case "output.position": configuration.outputPositions = try channelPositions(value, key)
            case "filename": (configuration.filename, configuration.rateAlternatives) = try filenames(value, key)
            case "gain": configuration.gain = try number(value, key, 0...gainLimit)
            case "mix": configuration.mix = try number(value, key, 0...1)
            case "bypass": configuration.bypass = try boolean(value, key)
            case "width": configuration.width = try number(value, key, StereoWidth.range)
            case "delay": configuration.delay = try integer(value, key, 0...sampleCountLimit)
            case "offset": configuration.offset = try integer(value, key, 0...sampleCountLimit)
            case "length": configuration.length = try integer(value, key, 0...sampleCountLimit)
            case "resample.quality", "resample_quality":   // ours, filter-chain's convolver's
                configuration.resampleQuality = try integer(value, key, 0...14)
            case "resample.pre-ringing":
                let name = try text(value, key)
                guard let preRinging = PreRinging(rawValue: name) else {
                    throw NodeConfigurationError(key: key, message: "'\(name)' is not cut or keep")
                }
                configuration.resamplePreRinging = preRinging
            case "autogain": configuration.autogain = try boolean(value, key)
            case "latency":
                if value.text == "auto" {
                    configuration.latency = .auto
                } else {
                    configuration.latency = .samples(try integer(value, key, 0...sampleCountLimit))
                }
            case "impulses": configuration.impulses = try impulses(value, key, &warnings)
            case "sofa":
                for (subkey, subvalue) in try object(value, key) {
                    try configuration.sofa.set(subkey, subvalue, &warnings)
                }
            case "workgroup":
                for (subkey, subvalue) in try object(value, key) {
                    switch subkey {
                    case "threads":
                        guard let text = subvalue.text, let count = ThreadCount(argument: text) else {
                            throw NodeConfigurationError(key: "workgroup.threads",
                                message: "'\(subvalue.text ?? "(not a value)")' is not auto, levels or a thread count")
                        }
                        if case let .fixed(threads) = count, threads > threadLimit {
                            throw NodeConfigurationError(key: "workgroup.threads", message: "\(threads) is outside 1...\(threadLimit)")
                        }
                        configuration.workgroupThreads = count
                    case "rt.prio": configuration.workgroupPriority = try integer(subvalue, "workgroup.rt.prio", 0...99)
                    case "split":
                        guard let text = subvalue.text, let mode = SplitMode(argument: text) else {
                            throw NodeConfigurationError(key: "workgroup.split",
                                message: "'\(subvalue.text ?? "(not a value)")' is not auto, on or off")
                        }
                        configuration.workgroupSplit = mode
                    default: warnings.append("unknown key 'workgroup.\(subkey)' ignored")
                    }
                }
            case "partition":
                for (subkey, subvalue) in try object(value, key) {
                    switch subkey {
                    case "max":
                        let size = try integer(subvalue, "partition.max", 256...65536)
                        guard size & (size - 1) == 0 else {
                            throw NodeConfigurationError(key: "partition.max", message: "\(size) is not a power of two")
                        }
                        configuration.maxPartitionSize = size
                    default: warnings.append("unknown key 'partition.\(subkey)' ignored")
                    }
                }
            case "crossfade": configuration.crossfadeSeconds = try duration(value, key, 0...crossfadeLimit)
            case "crossfade.shape":
                crossfadeShapeGiven = true
                switch try text(value, key) {
                case "equal-power": configuration.crossfadeEqualPower = true
                case "linear", "equal-gain": configuration.crossfadeEqualPower = false
                case let other:
                    throw NodeConfigurationError(key: key, message: "'\(other)' is not equal-power or linear")
                }
            case "target.object": configuration.targetObject = try text(value, key)
            case "test.record-calls": configuration.testRecordCallsPath = try text(value, key)
            case "test.fault":
                let name = try text(value, key)
                guard let fault = TestFault(rawValue: name) else {
                    throw NodeConfigurationError(key: key, message: "'\(name)' is not one of "
                        + TestFault.allCases.map(\.rawValue).joined(separator: ", "))
                }
                configuration.testFault = fault
            case "mode":
                guard let mode = NodeMode(rawValue: try text(value, key)) else {
                    throw NodeConfigurationError(key: key, message: "'\(value.text ?? "")' is not filter or sink")
                }
                configuration.mode = mode
                modeGiven = true
            case "capture.props", "playback.props":
                for (subkey, subvalue) in try object(value, key) { streamProperties[key, default: [:]][subkey] = subvalue }
            case "filter.smart", "filter.smart.disabled", "filter.smart.targetable":
                configuration.extraNodeProperties[key] = try boolean(value, key) ? "true" : "false"
            case "filter.smart.name": configuration.extraNodeProperties[key] = try text(value, key)
            case "filter.smart.target", "filter.smart.before", "filter.smart.after":
                // WirePlumber reads these as JSON: a match object, lists of smart filter names.
                configuration.extraNodeProperties[key] = value.json
            default:
                if key.hasPrefix("node.") || key.hasPrefix("media.") || key.hasPrefix("priority.") {
                    configuration.extraNodeProperties[key] = value.text ?? ""
                } else {
                    warnings.append("unknown key '\(key)' ignored")
                }
            }
        }
        // filter-chain's two streams: `capture.props` (the sink: `media.class = Audio/Sink`) and
        // `playback.props` (its output). Their name, description and positions are the node's own,
        // unless given at the top level; the rest goes to the streams as is.
        for (key, properties) in streamProperties.sorted(by: { $0.key < $1.key }) {
            var rest: [String: String] = [:]
            for (subkey, subvalue) in properties {
                let name = "\(key).\(subkey)"
                switch (key, subkey) {
                case ("capture.props", "media.class"):
                    guard try text(subvalue, name) == "Audio/Sink" else {
                        throw NodeConfigurationError(key: name, message: "'\(subvalue.text ?? "")' is not Audio/Sink (the only kind of sink this node makes)")
                    }
                    if !modeGiven { configuration.mode = .sink }
                case ("capture.props", "node.name"): if !nameGiven { configuration.nodeName = try text(subvalue, name) }
                case ("capture.props", "node.description"):
                    if !descriptionGiven { configuration.nodeDescription = try text(subvalue, name) }
                case ("capture.props", "audio.position"): if positions == nil { positions = try channelPositions(subvalue, name) }
                case ("playback.props", "audio.position"):
                    if configuration.outputPositions == nil { configuration.outputPositions = try channelPositions(subvalue, name) }
                case (_, "audio.channels"): _ = try integer(subvalue, name, 1...channelLimit)   // the positions count
                default: rest[subkey] = subvalue.text ?? subvalue.json
                }
            }
            if key == "capture.props" { configuration.captureProperties = rest } else { configuration.playbackProperties = rest }
        }
        if let key = streamProperties.keys.sorted().first, configuration.mode != .sink {
            throw NodeConfigurationError(key: key, message: "needs mode = sink (or media.class = Audio/Sink in capture.props); "
                                         + "a filter is one node: set its keys at the top level")
        }
        if let positions {
            if let channelCount, channelCount != positions.count {
                throw NodeConfigurationError(key: "audio.position",
                    message: "has \(positions.count) positions but audio.channels is \(channelCount)")
            }
            configuration.positions = positions
        } else if let channelCount {
            configuration.positions = defaultPositions(channelCount: channelCount)
        } else if configuration.isSOFA {
            configuration.positions = ["MONO"]   // one source, placed by `sofa`
        }
        if configuration.isSOFA && configuration.outputPositions == nil {
            configuration.outputPositions = ["FL", "FR"]   // the two ears
        }
        if configuration.isSOFA && !crossfadeShapeGiven {
            configuration.crossfadeEqualPower = false   // an HRTF and its neighbour's: alike, so equal gain
        }
        try configuration.validate()
        return (configuration, warnings)
    }

    /// Checks what single keys cannot: an IR is given, matrix indices fit the channels.
    public func validate() throws(NodeConfigurationError) {
        if mode != .sink, let key = extraNodeProperties.keys.sorted().first(where: { $0.hasPrefix("filter.smart") }) {
            throw NodeConfigurationError(key: key, message: "needs mode = sink (WirePlumber's smart filters are sinks)")
        }

        if filename == nil && impulses.isEmpty {
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
                throw NodeConfigurationError(key: "audio.position",
                    message: "\(position) has no standard speaker direction to place it at with an HRTF set; use "
                             + SpeakerDirections.known.joined(separator: " ") + " or LFE")
            }
        } else if outputCount != channelCount && impulses.isEmpty {
            throw NodeConfigurationError(key: "output.position",
                message: "\(outputCount) outputs for \(channelCount) inputs need an impulses matrix")
        }
        for (index, impulse) in impulses.enumerated() {
            if impulse.input >= channelCount {
                throw NodeConfigurationError(key: "impulses[\(index)].input",
                    message: "\(impulse.input) is out of range for \(channelCount) channels")
            }
            if impulse.output >= outputCount {
                throw NodeConfigurationError(key: "impulses[\(index)].output",
                    message: "\(impulse.output) is out of range for \(outputCount) output channels")
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

    // MARK: - Value readers: each error names the key.

    static func text(_ value: SPAJSONValue, _ key: String) throws(NodeConfigurationError) -> String {
        guard let text = value.text, !text.isEmpty else {
            throw NodeConfigurationError(key: key, message: "expected a non-empty string")
        }
        return text
    }

    static func number(_ value: SPAJSONValue, _ key: String, _ range: ClosedRange<Double>) throws(NodeConfigurationError) -> Double {
        guard let number = value.number else {
            throw NodeConfigurationError(key: key, message: "'\(value.text ?? "(not a value)")' is not a number")
        }
        guard range.contains(number) else {
            throw NodeConfigurationError(key: key, message: "\(number) is outside \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }

    /// Seconds as a number (`0.05`) or text with a unit (`"50ms"`, `"0.05s"`).
    static func duration(_ value: SPAJSONValue, _ key: String, _ range: ClosedRange<Double>) throws(NodeConfigurationError) -> Double {
        let text = value.text ?? ""
        let seconds: Double?
        if text.hasSuffix("ms") { seconds = Double(text.dropLast(2)).map { $0 / 1000 } }
        else if text.hasSuffix("s") { seconds = Double(text.dropLast(1)) }
        else { seconds = Double(text) }
        guard let seconds, seconds.isFinite, range.contains(seconds) else {
            throw NodeConfigurationError(key: key, message: "'\(text)' is not a duration in \(range.lowerBound)...\(range.upperBound) s (e.g. 0.05 or \"50ms\")")
        }
        return seconds
    }

    static func integer(_ value: SPAJSONValue, _ key: String, _ range: ClosedRange<Int>) throws(NodeConfigurationError) -> Int {
        guard let number = value.number, number == number.rounded(), abs(number) < 1e15 else {
            throw NodeConfigurationError(key: key, message: "'\(value.text ?? "(not a value)")' is not an integer")
        }
        guard range.contains(Int(number)) else {
            throw NodeConfigurationError(key: key, message: "\(Int(number)) is outside \(range.lowerBound)...\(range.upperBound)")
        }
        return Int(number)
    }

    static func boolean(_ value: SPAJSONValue, _ key: String) throws(NodeConfigurationError) -> Bool {
        guard let bool = value.bool else {
            throw NodeConfigurationError(key: key, message: "'\(value.text ?? "(not a value)")' is not true or false")
        }
        return bool
    }

    static func object(_ value: SPAJSONValue, _ key: String) throws(NodeConfigurationError) -> [(String, SPAJSONValue)] {
        guard case let .object(members) = value else {
            throw NodeConfigurationError(key: key, message: "expected an object { ... }")
        }
        return members.map { ($0.key, $0.value) }
    }

    /// `[ FL FR ]`, or a string `"FL,FR"` / `"[ FL, FR ]"` as PipeWire's own parser accepts.
    static func channelPositions(_ value: SPAJSONValue, _ key: String) throws(NodeConfigurationError) -> [String] {
        let names: [String]
        switch value {
        case let .array(elements):
            var collected: [String] = []
            for element in elements { collected.append(try text(element, key)) }
            names = collected
        case let .string(text), let .word(text):
            names = text.split(whereSeparator: { " ,[]\t".contains($0) }).map(String.init)
        case .object:
            throw NodeConfigurationError(key: key, message: "expected a list of positions like [ FL FR ]")
        }
        guard !names.isEmpty, names.count <= channelLimit else {
            throw NodeConfigurationError(key: key, message: "needs 1...\(channelLimit) positions, got \(names.count)")
        }
        for name in names where !name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
            throw NodeConfigurationError(key: key, message: "'\(name)' is not a channel position name")
        }
        guard Set(names).count == names.count else {
            throw NodeConfigurationError(key: key, message: "positions repeat: \(names.joined(separator: " "))")
        }
        return names
    }

    /// A file name, or filter-chain's array of one IR's files at several rates (the first, and all).
    static func filenames(_ value: SPAJSONValue, _ key: String) throws(NodeConfigurationError) -> (String, [String]) {
        guard case let .array(elements) = value else { return (try text(value, key), []) }
        var names: [String] = []
        for (index, element) in elements.enumerated() { names.append(try text(element, "\(key)[\(index)]")) }
        guard let first = names.first else { throw NodeConfigurationError(key: key, message: "an empty list of files") }
        return (first, names.count > 1 ? names : [])
    }

    static func impulses(_ value: SPAJSONValue, _ key: String, _ warnings: inout [String]) throws(NodeConfigurationError) -> [Impulse] {
        guard case let .array(elements) = value else {
            throw NodeConfigurationError(key: key, message: "expected a list [ { input = 0 output = 0 filename = ... } ... ]")
        }
        var impulses: [Impulse] = []
        for (index, element) in elements.enumerated() {
            let prefix = "\(key)[\(index)]"
            var input: Int?, output: Int?, filename: String?, rateAlternatives: [String] = []
            var channel = 0, gain = 1.0, delay = 0, offset = 0, length = 0
            for (subkey, subvalue) in try object(element, prefix) {
                let name = "\(prefix).\(subkey)"
                switch subkey {
                case "input": input = try integer(subvalue, name, 0...(channelLimit - 1))
                case "output": output = try integer(subvalue, name, 0...(channelLimit - 1))
                case "filename": (filename, rateAlternatives) = try filenames(subvalue, name)
                case "channel": channel = try integer(subvalue, name, 0...(channelLimit - 1))
                case "gain": gain = try number(subvalue, name, -gainLimit...gainLimit)
                case "delay": delay = try integer(subvalue, name, 0...sampleCountLimit)
                case "offset": offset = try integer(subvalue, name, 0...sampleCountLimit)
                case "length": length = try integer(subvalue, name, 0...sampleCountLimit)
                default: warnings.append("unknown key '\(name)' ignored")
                }
            }
            guard let input else { throw NodeConfigurationError(key: "\(prefix).input", message: "missing") }
            guard let output else { throw NodeConfigurationError(key: "\(prefix).output", message: "missing") }
            guard let filename else { throw NodeConfigurationError(key: "\(prefix).filename", message: "missing") }
            var impulse = Impulse(input: input, output: output, filename: filename)
            impulse.rateAlternatives = rateAlternatives
            impulse.channel = channel
            impulse.gain = gain
            impulse.delay = delay
            impulse.offset = offset
            impulse.length = length
            impulses.append(impulse)
        }
        return impulses
    }
}

/// The module key `latency`: the delay an IR carries, in samples at the graph rate, or `auto`: the
/// frame of the IR's loudest sample (for linear-phase FIRs, whose peak is their delay).
public enum IRLatency: Sendable, Equatable {
    case samples(Int)
    case auto
}

/// How the node shows itself to the graph (module key `mode`).
public enum NodeMode: String, Sendable, Equatable {
    /// A filter: `input_<POS>`/`output_<POS>` DSP ports, no media.class; routed with pw-link/qpwgraph.
    case filter
    /// A virtual sink (`media.class = Audio/Sink`, inputs `playback_<POS>` like a device sink)
    /// whose outputs `output_<POS>` go on to `target.object` or the default sink.
    case sink
}

/// The deliberate faults of `test.fault`: each breaks the node in one way its tests must catch.
public enum TestFault: String, Sendable, Equatable, CaseIterable {
    /// `process` allocates on every call (the real-time safety test's counter must see it).
    case allocateInProcess = "allocate-in-process"
    /// The longest tail level leaves out one output block (the one holding stream time 3 s).
    case dropTailBlock = "drop-tail-block"
    /// The first two output ports carry each other's channel.
    case swapOutputs = "swap-outputs"
    /// The output comes one sample late.
    case delayOneSample = "delay-one-sample"
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
    static let ranges: [String: ClosedRange<Double>] = ["azimuth": -360...360, "elevation": -90...90, "radius": 0.05...100]

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
    mutating func set(_ name: String, _ value: Double) {
        switch name {
        case "azimuth": azimuth = value
        case "elevation": elevation = value
        default: radius = value
        }
    }
}
