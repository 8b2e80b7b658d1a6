// The module's arguments read key by key into a NodeConfiguration: one clear error per key.
import Convolution
import LevelScheduling
import Workgroup

extension NodeConfiguration {
    /// Reads module arguments (SPA-JSON text). Unknown keys are returned as warnings.
    /// `pipeWire`: the filter-chain whose rules a `filter.graph` follows.
    public static func parse(
        pipeWire: PipeWireVersion, arguments: String
    ) throws(NodeConfigurationError) -> (NodeConfiguration, warnings: [String]) {
        let value: SPAJSONValue
        do {
            value = try SPAJSONValue.parse(arguments)
        } catch {
            throw NodeConfigurationError(key: "args", message: error.description)
        }
        return try parse(pipeWire: pipeWire, value)
    }

    /// Reads a parsed SPA-JSON object of module arguments.
    public static func parse(
        pipeWire: PipeWireVersion, _ arguments: SPAJSONValue
    ) throws(NodeConfigurationError) -> (NodeConfiguration, warnings: [String]) {
        guard case let .object(members) = arguments else {
            throw NodeConfigurationError(key: "args", message: "expected an object { key = value ... }")
        }
        var configuration = NodeConfiguration()
        var warnings: [String] = []
        var channelCount: Int?
        var positions: [String]?
        var modeGiven = false, nameGiven = false, descriptionGiven = false, crossfadeShapeGiven = false
        var streamProperties: [String: [String: SPAJSONValue]] = [:]
        var graphValue: SPAJSONValue?
        var streamChannels: [String: Int] = [:]
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
            case "audio.rate": configuration.audioRate = try integer(value, key, 8000...768_000)
            case "filter.graph": graphValue = value
            case "audio.position": positions = try channelPositions(value, key)
            case "output.position": configuration.outputPositions = try channelPositions(value, key)
            case "filename": (configuration.filename, configuration.rateAlternatives) = try filenames(value, key)
            case "gain": configuration.gain = try gain(value, key, 0...gainLimit)
            case "mix": configuration.mix = try number(value, key, 0...1)
            case "bypass": configuration.bypass = try boolean(value, key)
            case "width": configuration.width = try number(value, key, StereoWidth.range)
            case "delay": configuration.delay = try integer(value, key, 0...sampleCountLimit)
            case "offset": configuration.offset = try integer(value, key, 0...sampleCountLimit)
            case "length": configuration.length = try integer(value, key, 0...sampleCountLimit)
            case "resample.quality", "resample_quality":  // ours, filter-chain's convolver's
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
                            throw NodeConfigurationError(
                                key: "workgroup.threads",
                                message: "'\(subvalue.text ?? "(not a value)")' is not auto, levels or a thread count")
                        }
                        if case let .fixed(threads) = count, threads > threadLimit {
                            throw NodeConfigurationError(key: "workgroup.threads", message: "\(threads) is outside 1...\(threadLimit)")
                        }
                        configuration.workgroupThreads = count
                    case "rt.prio": configuration.workgroupPriority = try integer(subvalue, "workgroup.rt.prio", 0...99)
                    case "split":
                        guard let text = subvalue.text, let mode = SplitMode(argument: text) else {
                            throw NodeConfigurationError(
                                key: "workgroup.split",
                                message: "'\(subvalue.text ?? "(not a value)")' is not auto, on or off")
                        }
                        configuration.workgroupSplit = mode
                    case "shared": configuration.workgroupShared = try boolean(subvalue, "workgroup.shared")
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
            case "test.record-calls": configuration.testRecordCallsPath = expandingHome(try text(value, key))
            case "test.fault":
                let name = try text(value, key)
                guard let fault = TestFault(rawValue: name) else {
                    throw NodeConfigurationError(
                        key: key,
                        message: "'\(name)' is not one of "
                            + TestFault.allCases.map(\.rawValue).joined(separator: ", "))
                }
                configuration.testFault = fault
            case "mode":
                guard let mode = NodeMode(rawValue: try text(value, key)) else {
                    throw NodeConfigurationError(
                        key: key, message: "'\(value.text ?? "")' is not " + NodeMode.allCases.map(\.rawValue).joined(separator: ", "))
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
        let topLevelPositions = positions, topLevelChannels = channelCount
        for (key, properties) in streamProperties.sorted(by: { $0.key < $1.key }) {
            var rest: [String: String] = [:]
            for (subkey, subvalue) in properties {
                let name = "\(key).\(subkey)"
                switch (key, subkey) {
                case ("capture.props", "media.class"):
                    let mediaClass = try text(subvalue, name)
                    if mediaClass == "Audio/Sink" {
                        if !modeGiven { configuration.mode = .sink }
                    } else if mediaClass != "Stream/Input/Audio" {
                        throw NodeConfigurationError(
                            key: name, message: "'\(mediaClass)' is not Audio/Sink or Stream/Input/Audio (what a capture side can be)")
                    }
                case ("playback.props", "media.class"):
                    let mediaClass = try text(subvalue, name)
                    if mediaClass == "Audio/Source" {
                        if !modeGiven { configuration.mode = configuration.mode == .sink ? .sink : .source }
                    } else if mediaClass != "Stream/Output/Audio" {
                        throw NodeConfigurationError(
                            key: name, message: "'\(mediaClass)' is not Audio/Source or Stream/Output/Audio (what a playback side can be)")
                    }
                case ("capture.props", "node.name"): if !nameGiven { configuration.nodeName = try text(subvalue, name) }
                case ("capture.props", "node.description"):
                    if !descriptionGiven { configuration.nodeDescription = try text(subvalue, name) }
                case ("capture.props", "audio.position"): if positions == nil { positions = try channelPositions(subvalue, name) }
                case ("playback.props", "audio.position"):
                    if configuration.outputPositions == nil { configuration.outputPositions = try channelPositions(subvalue, name) }
                case (_, "audio.channels"): streamChannels[key] = try integer(subvalue, name, 1...channelLimit)
                default: rest[subkey] = subvalue.text ?? subvalue.json
                }
            }
            if key == "capture.props" { configuration.captureProperties = rest } else { configuration.playbackProperties = rest }
        }
        if let graphValue {
            if let key = members.map(\.key).first(where: { ownKeysBesideAGraph.contains($0) }) {
                throw NodeConfigurationError(
                    key: key,
                    message: "is this node's own key, and filter.graph describes the audio filter-chain's way: use one or the other")
            }
            configuration.graph = try FilterGraph.parse(graphValue, pipeWire: pipeWire, warnings: &warnings)
            if configuration.graph!.declaredLatencyFrames(sampleRate: 48000) != nil {
                warnings.append(
                    "filter.graph: the convolvers' latency is reported to the graph by a filter-mode node only; "
                        + "this node's streams report their own")
            }
            // As filter-chain: the streams are two (a stream filter unless a media.class makes a sink or a source).
            if !modeGiven && configuration.mode == .filter { configuration.mode = .stream }
            // Each stream's channels: its own props', else the top level's (filter-chain copies them), else the graph's ports.
            let graph = configuration.graph!
            if positions == nil {
                let count = streamChannels["capture.props"] ?? topLevelChannels ?? graph.inputs.count
                positions = defaultPositions(channelCount: count)
            }
            if configuration.outputPositions == nil {
                configuration.outputPositions =
                    streamChannels["playback.props"].map { defaultPositions(channelCount: $0) } ?? topLevelPositions
                    ?? defaultPositions(channelCount: topLevelChannels ?? graph.outputs.count)
            }
            for (key, count) in streamChannels {
                let given = key == "capture.props" ? positions!.count : configuration.outputPositions!.count
                if count != given {
                    throw NodeConfigurationError(key: "\(key).audio.channels", message: "is \(count) but audio.position has \(given) positions")
                }
            }
            if topLevelPositions == nil { channelCount = nil }
        }
        if let key = streamProperties.keys.sorted().first, configuration.mode == .filter {
            throw NodeConfigurationError(
                key: key,
                message: "needs mode = sink, source or stream (or media.class = Audio/Sink in capture.props); "
                    + "a filter is one node: set its keys at the top level")
        }
        if let positions {
            if let channelCount, channelCount != positions.count {
                throw NodeConfigurationError(
                    key: "audio.position",
                    message: "has \(positions.count) positions but audio.channels is \(channelCount)")
            }
            configuration.positions = positions
        } else if let channelCount {
            configuration.positions = defaultPositions(channelCount: channelCount)
        } else if configuration.isSOFA {
            configuration.positions = ["MONO"]  // one source, placed by `sofa`
        }
        if configuration.isSOFA && configuration.outputPositions == nil {
            configuration.outputPositions = ["FL", "FR"]  // the two ears
        }
        if configuration.isSOFA && !crossfadeShapeGiven {
            configuration.crossfadeEqualPower = false  // an HRTF and its neighbour's: alike, so equal gain
        }
        try configuration.validate()
        return (configuration, warnings)
    }
}
