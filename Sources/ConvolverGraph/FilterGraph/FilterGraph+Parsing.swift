// `filter.graph` read as filter-chain reads it: the same keys, port names, defaults and refusals
// (module-filter-chain.c of 0.3.65, filter-graph.c and plugin_builtin.c of 1.4 and 1.6); each error
// names the node, its key or port.
import Convolution

extension FilterGraph {
    /// The builtins that are not linear, not hosted yet (BuiltinFunction hosts the rest), and why (for the refusal).
    static let refusedBuiltins: [String: String] = [
        "sine": "is a generator", "ramp": "is a generator", "ebur128": "measures loudness over time",
        "lufs2gain": "changes its gain over time", "noisegate": "changes its gain over time", "zeroramp": "changes its gain over time",
        "debug": "logs samples", "busy": "burns CPU on purpose", "null": "discards its input",
    ]
    static let keep = "keep this graph on filter-chain"

    /// Reads `filter.graph = { nodes = [...] links = [...] inputs = [...] outputs = [...] }`.
    /// Unknown keys and control ports are warnings (filter-chain ignores them too).
    static func parse(
        _ value: SPAJSONValue, pipeWire: PipeWireVersion, warnings: inout [String]
    ) throws(NodeConfigurationError) -> FilterGraph {
        let key = "filter.graph"
        var nodeValues: [SPAJSONValue]?, linkValues: [SPAJSONValue] = []
        var inputValues: [SPAJSONValue]?, outputValues: [SPAJSONValue]?
        for (name, member) in try NodeConfiguration.object(value, key) {
            switch name {
            case "nodes": nodeValues = try array(member, "\(key).nodes")
            case "links": linkValues = try array(member, "\(key).links")
            case "inputs": inputValues = try array(member, "\(key).inputs")
            case "outputs": outputValues = try array(member, "\(key).outputs")
            case "volumes", "capture.volumes", "playback.volumes":
                warnings.append("\(key).\(name): volume controls are not supported; ignored")
            default: warnings.append("unknown key '\(key).\(name)' ignored")
            }
        }
        guard let nodeValues, !nodeValues.isEmpty else {
            throw NodeConfigurationError(key: "\(key).nodes", message: "filter.graph needs a nodes array with at least one node")
        }
        var nodes: [Node] = []
        for (index, nodeValue) in nodeValues.enumerated() {
            let node = try parseNode(nodeValue, index: index, pipeWire: pipeWire, warnings: &warnings)
            if nodes.contains(where: { $0.name == node.name }) {
                throw NodeConfigurationError(key: "\(key).nodes[\(index)]", message: "a second node named '\(node.name)'; node names must be unique")
            }
            nodes.append(node)
        }
        var graph = FilterGraph(nodes: nodes, links: [], inputs: [], outputs: [], pipeWire: pipeWire)
        for (index, linkValue) in linkValues.enumerated() {
            let name = "\(key).links[\(index)]"
            var output: String?, input: String?
            for (subkey, subvalue) in try NodeConfiguration.object(linkValue, name) {
                switch subkey {
                case "output": output = try NodeConfiguration.text(subvalue, "\(name).output")
                case "input": input = try NodeConfiguration.text(subvalue, "\(name).input")
                default: warnings.append("unknown key '\(name).\(subkey)' ignored")
                }
            }
            guard let output, let input else {
                throw NodeConfigurationError(key: name, message: "a link needs both output = \"node:port\" and input = \"node:port\"")
            }
            // As filter-chain: a port without a node name is the first node's (outputs) or the last node's (inputs).
            let from = try graph.port(output, input: false, defaultNode: 0, key: "\(name).output")
            let to = try graph.port(input, input: true, defaultNode: nodes.count - 1, key: "\(name).input")
            if graph.links.contains(where: { $0.input == to }) {
                throw NodeConfigurationError(
                    key: "\(name).input", message: "'\(input)' already has a link; an input takes one link (use a mixer to sum)")
            }
            graph.links.append(Link(output: from, input: to))
        }
        graph.inputs = try graph.graphPorts(inputValues, input: true, key: "\(key).inputs")
        graph.outputs = try graph.graphPorts(outputValues, input: false, key: "\(key).outputs")
        guard !graph.inputs.isEmpty else { throw NodeConfigurationError(key: "\(key).inputs", message: "the graph has no inputs") }
        guard !graph.outputs.isEmpty else { throw NodeConfigurationError(key: "\(key).outputs", message: "the graph has no outputs") }
        _ = try graph.evaluationOrder()
        return graph
    }

    /// The graph's `inputs` or `outputs`: `null` leaves a channel out; a port serves once, and not
    /// beside a link (filter-chain's rules). Without the list: every input of the first node, or
    /// every output of the last.
    func graphPorts(_ values: [SPAJSONValue]?, input: Bool, key: String) throws(NodeConfigurationError) -> [Port?] {
        let defaultNode = input ? 0 : nodes.count - 1
        guard let values else {
            return (input ? nodes[0].inputNames : nodes[defaultNode].outputNames).indices.map { Port(node: defaultNode, index: $0) }
        }
        var ports: [Port?] = []
        for (index, entry) in values.enumerated() {
            let name = "\(key)[\(index)]"
            guard let text = entry.text, text != "null" else {
                ports.append(nil)
                continue
            }
            let port = try self.port(text, input: input, defaultNode: defaultNode, key: name)
            if ports.contains(port) {
                throw NodeConfigurationError(
                    key: name,
                    message: "'\(text)' is already a graph \(input ? "input (use a copy node to feed two ports)" : "output (use a copy node)")")
            }
            if links.contains(where: { (input ? $0.input : $0.output) == port }) {
                throw NodeConfigurationError(
                    key: name,
                    message: "'\(text)' \(input ? "already has a link (use a mixer to sum)" : "is already linked to another node (use a copy node)")")
            }
            ports.append(port)
        }
        return ports
    }

    /// filter-chain's port syntax: "node:port", or "port" on `defaultNode`; a port is its name or
    /// its index among the node's inputs (or outputs). If "node" is no node's name, the colon is
    /// part of the port's name.
    func port(_ text: String, input: Bool, defaultNode: Int, key: String) throws(NodeConfigurationError) -> Port {
        var node = defaultNode, portName = text
        if let colon = text.firstIndex(of: ":"), let named = nodes.firstIndex(where: { $0.name == text[..<colon] }) {
            node = named
            portName = String(text[text.index(after: colon)...])
        }
        let names = input ? nodes[node].inputNames : nodes[node].outputNames
        if let index = names.firstIndex(of: portName) ?? Int(portName).flatMap({ names.indices.contains($0) ? $0 : nil }) {
            return Port(node: node, index: index)
        }
        let hasColon = text.contains(":")
        throw NodeConfigurationError(
            key: key,
            message: hasColon && nodes.firstIndex(where: { text.hasPrefix($0.name + ":") }) == nil
                ? "'\(text)': no node is named '\(text.prefix { $0 != ":" })'"
                : "'\(text)': node '\(nodes[node].name)' (\(nodes[node].label)) has no \(input ? "input" : "output") port "
                    + "'\(portName)'; its \(input ? "inputs" : "outputs") are " + names.map { "'\($0)'" }.joined(separator: ", "))
    }

    private static func array(_ value: SPAJSONValue, _ key: String) throws(NodeConfigurationError) -> [SPAJSONValue] {
        guard case let .array(elements) = value else { throw NodeConfigurationError(key: key, message: "expected an array [ ... ]") }
        return elements
    }

    static func parseNode(
        _ value: SPAJSONValue, index: Int, pipeWire: PipeWireVersion, warnings: inout [String]
    ) throws(NodeConfigurationError) -> Node {
        let key = "filter.graph.nodes[\(index)]"
        var type = "", name = "", label = "", plugin = ""
        var config: [(String, SPAJSONValue)] = [], control: [(String, SPAJSONValue)] = []
        for (subkey, subvalue) in try NodeConfiguration.object(value, key) {
            switch subkey {
            case "type": type = subvalue.text ?? ""
            case "name": name = subvalue.text ?? ""
            case "label": label = subvalue.text ?? ""
            case "plugin": plugin = subvalue.text ?? ""
            case "config": config = try NodeConfiguration.object(subvalue, "\(key).config")
            case "control": control = try NodeConfiguration.object(subvalue, "\(key).control")
            default: warnings.append("unknown key '\(key).\(subkey)' ignored")
            }
        }
        let what = "node '\(name)'"
        if type == "ladspa" || type == "lv2" {
            return try hostedNode(value, key: key, type: type, name: name, plugin: plugin, label: label, control: control, warnings: &warnings)
        }
        guard type == "builtin" || (type == "sofa" && label == "spatializer") else {
            let kind =
                type.isEmpty ? "a node without a type" : "a '\(type)' node"
            throw NodeConfigurationError(
                key: key,
                message: "\(what) is \(kind) (\(plugin.isEmpty ? label : "\(plugin) \(label)")): only builtin nodes and "
                    + "LADSPA and LV2 plugins run here; \(keep)")
        }
        let node = "filter.graph node '\(name)'"
        var controls: [Control] = []
        func controlValue(_ port: String, default value: Double, range: ClosedRange<Double>) throws(NodeConfigurationError) -> Double {
            var number = value
            if let written = control.last(where: { $0.0 == port })?.1 {
                guard let given = written.number, given.isFinite else {
                    throw NodeConfigurationError(
                        key: "\(node) control \"\(port)\"", message: "'\(written.text ?? written.json)' is not a finite number")
                }
                guard range.contains(given) else {
                    throw NodeConfigurationError(
                        key: "\(node) control \"\(port)\"", message: "\(given) is outside \(range.lowerBound)...\(range.upperBound)")
                }
                number = given
            }
            controls.append(Control(port: port, value: number))
            return number
        }
        let kind: Kind
        var controlPorts: [String] = []
        switch label {
        case "copy": kind = .copy
        case "mixer":
            controlPorts = (1...8).map { "Gain \($0)" }
            var gains: [Double] = []
            for port in controlPorts { gains.append(try controlValue(port, default: 1, range: -1000...1000)) }
            kind = .mixer(gains: gains)
        case "delay":
            controlPorts = ["Delay (s)"]
            var maxSeconds = 1.0
            for (configKey, configValue) in config {
                switch configKey {
                case "max-delay": maxSeconds = try NodeConfiguration.number(configValue, "\(node) config max-delay", -1e9...3600)
                case "latency": warnings.append("\(node) config latency: a delay node's reported latency is not supported; ignored")
                default: warnings.append("unknown key '\(node) config \(configKey)' ignored")
                }
            }
            if maxSeconds <= 0 { maxSeconds = 1 }  // as filter-chain
            let seconds = try controlValue("Delay (s)", default: 0, range: 0...100)
            guard seconds <= maxSeconds else {
                throw NodeConfigurationError(
                    key: "\(node) control \"Delay (s)\"", message: "\(seconds) s is beyond its max-delay of \(maxSeconds) s")
            }
            kind = .delay(seconds: seconds, maxSeconds: maxSeconds)
        case "linear" where control.last(where: { $0.0 == "Add" })?.1.number ?? 0 == 0:
            // Add 0 scales (compiled); an offset is a function, hosted below.
            controlPorts = ["Mult", "Add"]
            _ = try controlValue("Add", default: 0, range: -1000...1000)
            kind = .scale(try controlValue("Mult", default: 1, range: -1000...1000))
        case "invert": kind = .scale(-1)
        case "param_eq": kind = .equalizer(try Equalizer.channelBands(config, node: node, warnings: &warnings))
        case "dcblock":
            // Out k = In k − its last sample + R · Out k's last (plugin_builtin.c, eight channels).
            controlPorts = ["R"]
            let r = Double(Float(try controlValue("R", default: 0.995, range: 0...1)))
            kind = .equalizer([[Biquad]](repeating: [.raw([1, -1, 0, 1, -r, 0])], count: Equalizer.channels))
        case "bq_raw":
            controlPorts = ["Freq", "Q", "Gain", "b0", "b1", "b2", "a0", "a1", "a2"]
            for port in ["b0", "b1", "b2", "a0", "a1", "a2"] where control.contains(where: { $0.0 == port }) {
                warnings.append("\(node) control \"\(port)\": a bq_raw starts with its config's coefficients; ignored")
            }
            kind = .rawBiquad(try rawCoefficients(config, key: "\(node) config", warnings: &warnings))
        case "spatializer" where type == "sofa":
            // The sofa plugin's (1.4 and later): its filename, 1.6's gain and latency; its filters
            // are taken as its mysofa_open reads the set (resampled, loudness-normalized).
            controlPorts = ["Azimuth", "Elevation", "Radius"]
            var filename: String?, gain = 1.0, latency: Double?
            for (configKey, configValue) in config {
                let valueKey = "\(node) config \(configKey)"
                switch configKey {
                case "filename": filename = NodeConfiguration.expandingHome(try NodeConfiguration.text(configValue, valueKey))
                case "gain" where pipeWire.isAtLeast(1, 6):
                    gain = try NodeConfiguration.gain(configValue, valueKey, -NodeConfiguration.gainLimit...NodeConfiguration.gainLimit)
                case "gain":
                    warnings.append("\(valueKey): filter-chain reads it from PipeWire 1.6 on; ignored on \(pipeWire), as there")
                case "latency": latency = try NodeConfiguration.number(configValue, valueKey, 0...3600)
                case "normalize": _ = try NodeConfiguration.boolean(configValue, valueKey)  // the set is normalized already (mysofa_open)
                case "blocksize", "tailsize": warnings.append("\(valueKey): partitions are planned by this node; ignored")
                default: warnings.append("unknown key '\(valueKey)' ignored")
                }
            }
            guard let filename, !filename.isEmpty else {
                throw NodeConfigurationError(key: "\(node) config filename", message: "a spatializer needs the filename of a SOFA file")
            }
            let direction = SourceDirection(
                azimuth: try controlValue("Azimuth", default: 0, range: 0...360),
                elevation: try controlValue("Elevation", default: 0, range: -90...90),
                radius: try controlValue("Radius", default: 1, range: 0...100))
            kind = .spatializer(Spatializer(filename: filename, direction: direction, gain: gain, latencySeconds: latency))
        case "convolver":
            kind = .convolver(try impulse(config, defaultChannel: nil, key: "\(node) config", warnings: &warnings, bank: false))
        case "convolver2":
            var impulses: [Impulse] = []
            for (configKey, configValue) in config {
                switch configKey {
                case "impulses":
                    for (irIndex, irValue) in try array(configValue, "\(node) config impulses").enumerated() {
                        let irKey = "\(node) config impulses[\(irIndex)]"
                        impulses.append(
                            try impulse(
                                try NodeConfiguration.object(irValue, irKey), defaultChannel: irIndex, key: irKey, warnings: &warnings, bank: true))
                    }
                case "blocksize", "tailsize": warnings.append("\(node) config \(configKey): partitions are planned by this node; ignored")
                case "latency": _ = try NodeConfiguration.number(configValue, "\(node) config latency", 0...3600)
                default: warnings.append("unknown key '\(node) config \(configKey)' ignored")
                }
            }
            guard (1...8).contains(impulses.count) else {
                throw NodeConfigurationError(key: "\(node) config impulses", message: "convolver2 takes 1 to 8 impulses, not \(impulses.count)")
            }
            if let latency = config.last(where: { $0.0 == "latency" })?.1.number {
                for index in impulses.indices { impulses[index].latencySeconds = latency }
            }
            kind = .convolverBank(impulses)
        case _ where label.hasPrefix("bq_") && Biquad.Shape(rawValue: String(label.dropFirst(3))) != nil:
            // filter-chain's port ranges: Freq 0...Nyquist (its hint), Q 0...10, Gain -120...20 dB.
            controlPorts = ["Freq", "Q", "Gain"]
            var biquad = Biquad(shape: Biquad.Shape(rawValue: String(label.dropFirst(3))) ?? .lowpass)
            biquad.frequency = try controlValue("Freq", default: 0, range: 0...384_000)
            biquad.q = try controlValue("Q", default: 0, range: 0...10)
            biquad.gain = try controlValue("Gain", default: 0, range: -120...20)
            kind = .biquad(biquad)
        default:
            if let function = BuiltinFunction(label: label) {
                guard !name.isEmpty else { throw NodeConfigurationError(key: key, message: "a \(label) node without a name") }
                return try hostedNode(
                    value, name: name, label: label, plugin: function, kind: .function(function), control: control, warnings: &warnings)
            }
            if let reason = refusedBuiltins[label] {
                throw NodeConfigurationError(
                    key: key,
                    message: "node '\(name)' is the builtin \(label), which \(reason): only linear builtin nodes compile into a "
                        + "convolution; \(keep)")
            }
            throw NodeConfigurationError(key: key, message: "node '\(name)' has an unknown builtin label '\(label)'")
        }
        if name.isEmpty { throw NodeConfigurationError(key: key, message: "a \(label) node without a name") }
        for (port, _) in control where !controlPorts.contains(port) {
            warnings.append("\(node): no control port '\(port)' on a \(label) node; ignored")
        }
        if !config.isEmpty, ["copy", "mixer", "linear", "invert", "dcblock"].contains(label) || (label.hasPrefix("bq_") && label != "bq_raw") {
            warnings.append("\(node) config: a \(label) node has no config; ignored")
        }
        controls.sort { controlPorts.firstIndex(of: $0.port) ?? 0 < controlPorts.firstIndex(of: $1.port) ?? 0 }
        return Node(name: name, label: label, kind: kind, controls: controls, source: value)
    }

    /// `bq_raw`'s `coefficients = [ { rate = 48000 b0 = ... a2 = ... } ... ]` (each b0, a0 default 1,
    /// the others 0), as plugin_builtin.c reads them; the config is required.
    private static func rawCoefficients(
        _ config: [(String, SPAJSONValue)], key: String, warnings: inout [String]
    ) throws(NodeConfigurationError) -> [Biquad.RateSet] {
        guard !config.isEmpty else {
            throw NodeConfigurationError(key: key, message: "a bq_raw needs config = { coefficients = [ { rate = ... b0 = ... } ... ] }")
        }
        var sets: [Biquad.RateSet] = []
        for (name, value) in config {
            guard name == "coefficients" else {
                warnings.append("unknown key '\(key) \(name)' ignored")
                continue
            }
            for (index, element) in try array(value, "\(key) coefficients").enumerated() {
                let setKey = "\(key) coefficients[\(index)]"
                var set = Biquad.RateSet(rate: 0, given: [1, 0, 0, 1, 0, 0])
                for (field, fieldValue) in try NodeConfiguration.object(element, setKey) {
                    if field == "rate" {
                        set.rate = try NodeConfiguration.integer(fieldValue, "\(setKey).rate", 0...768_000)
                    } else if let position = ["b0", "b1", "b2", "a0", "a1", "a2"].firstIndex(of: field) {
                        set.given[position] = try NodeConfiguration.number(fieldValue, "\(setKey).\(field)", -1e6...1e6)
                    } else {
                        warnings.append("unknown key '\(setKey).\(field)' ignored")
                    }
                }
                sets.append(set)
            }
        }
        return sets
    }

    /// One IR's keys: a `convolver`'s config, or one entry of a `convolver2`'s `impulses`.
    private static func impulse(
        _ members: [(String, SPAJSONValue)], defaultChannel: Int?, key: String, warnings: inout [String], bank: Bool
    ) throws(NodeConfigurationError) -> Impulse {
        var impulse = Impulse(filenames: [], channel: defaultChannel)
        let limit = NodeConfiguration.sampleCountLimit
        for (name, value) in members {
            let valueKey = "\(key).\(name)"
            switch name {
            case "filename":
                let (first, all) = try NodeConfiguration.filenames(value, valueKey)
                impulse.filenames = all.isEmpty ? [first] : all
            case "channel": impulse.channel = try NodeConfiguration.integer(value, valueKey, 0...1023)
            case "gain": impulse.gain = try NodeConfiguration.gain(value, valueKey, -NodeConfiguration.gainLimit...NodeConfiguration.gainLimit)
            case "delay":
                let written = value.text ?? ""
                if written.contains(".") || written.lowercased().contains("e") {
                    impulse.delay = .seconds(try NodeConfiguration.number(value, valueKey, 0...100))
                } else {
                    impulse.delay = .samples(try NodeConfiguration.integer(value, valueKey, 0...limit))
                }
            case "offset": impulse.offset = try NodeConfiguration.integer(value, valueKey, 0...limit)
            case "length": impulse.length = try NodeConfiguration.integer(value, valueKey, 0...limit)
            case "resample_quality": impulse.resampleQuality = try NodeConfiguration.integer(value, valueKey, 0...14)
            case "latency" where !bank: impulse.latencySeconds = try NodeConfiguration.number(value, valueKey, 0...3600)
            case "blocksize", "tailsize":
                if !bank { warnings.append("\(valueKey): partitions are planned by this node; ignored") }
            default: warnings.append("unknown key '\(valueKey)' ignored")
            }
        }
        guard !impulse.filenames.isEmpty else {
            throw NodeConfigurationError(key: "\(key).filename", message: "a convolver needs a filename (a path, \"/dirac\" or \"/hilbert\")")
        }
        return impulse
    }
}
