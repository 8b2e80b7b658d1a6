// The module's arguments read key by key into a NodeConfiguration: one clear error per key.
import Convolution
import LevelScheduling
import Workgroup

extension NodeConfiguration {
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
                    throw NodeConfigurationError(
                        key: key,
                        message: "'\(name)' is not one of "
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
                        throw NodeConfigurationError(
                            key: name, message: "'\(subvalue.text ?? "")' is not Audio/Sink (the only kind of sink this node makes)")
                    }
                    if !modeGiven { configuration.mode = .sink }
                case ("capture.props", "node.name"): if !nameGiven { configuration.nodeName = try text(subvalue, name) }
                case ("capture.props", "node.description"):
                    if !descriptionGiven { configuration.nodeDescription = try text(subvalue, name) }
                case ("capture.props", "audio.position"): if positions == nil { positions = try channelPositions(subvalue, name) }
                case ("playback.props", "audio.position"):
                    if configuration.outputPositions == nil { configuration.outputPositions = try channelPositions(subvalue, name) }
                case (_, "audio.channels"): _ = try integer(subvalue, name, 1...channelLimit)  // the positions count
                default: rest[subkey] = subvalue.text ?? subvalue.json
                }
            }
            if key == "capture.props" { configuration.captureProperties = rest } else { configuration.playbackProperties = rest }
        }
        if let key = streamProperties.keys.sorted().first, configuration.mode != .sink {
            throw NodeConfigurationError(
                key: key,
                message: "needs mode = sink (or media.class = Audio/Sink in capture.props); "
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
