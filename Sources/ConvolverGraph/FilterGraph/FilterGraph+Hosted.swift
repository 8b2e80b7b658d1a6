// A `type = ladspa` or `type = lv2` node read as filter-chain reads it: the plugin found and opened
// to learn its ports, its controls given or at their defaults.

extension FilterGraph {
    /// A `type = ladspa` node (`plugin` a name or path, `label` the plugin in it) or a `type = lv2`
    /// node (`plugin` the URI; filter-chain ignores its label): the plugin opened (as filter-chain
    /// opens it) to learn its ports; every control input is a control, given or at its default.
    /// filter-chain neither checks nor clamps a control against its hints: a value outside them is
    /// passed on too, with a warning.
    static func hostedNode(
        _ value: SPAJSONValue, key: String, type: String, name: String, plugin: String, label: String,
        control: [(String, SPAJSONValue)], warnings: inout [String]
    ) throws(NodeConfigurationError) -> Node {
        guard !name.isEmpty else { throw NodeConfigurationError(key: key, message: "a \(type) node without a name") }
        let node = "filter.graph node '\(name)'"
        guard !plugin.isEmpty, type == "lv2" || !label.isEmpty else {
            let needs = type == "lv2" ? "plugin = \"URI\"" : "plugin = \"NAME or /path\" and label = \"LABEL\""
            throw NodeConfigurationError(key: key, message: "node '\(name)' (\(type)) needs \(needs)")
        }
        let loaded: (any HostedPlugin, Kind)
        do throws(HostedPluginError) {
            if type == "lv2" {
                let found = try LV2Plugin.load(uri: plugin)
                loaded = (found, .lv2(found))
            } else {
                let found = try LADSPAPlugin.load(plugin: plugin, label: label)
                loaded = (found, .ladspa(found))
            }
        } catch {
            throw NodeConfigurationError(key: "\(node) plugin", message: error.description)
        }
        return try hostedNode(
            value, name: name, label: type == "lv2" ? plugin : label, plugin: loaded.0, kind: loaded.1, control: control, warnings: &warnings)
    }

    /// A node of a hosted kind (`plugin`, a plugin opened or a builtin function): every control
    /// input is a control, given or at its default. An LV2 node is labelled by its URI.
    static func hostedNode(
        _ value: SPAJSONValue, name: String, label: String, plugin loaded: any HostedPlugin, kind: Kind,
        control: [(String, SPAJSONValue)], warnings: inout [String]
    ) throws(NodeConfigurationError) -> Node {
        let node = "filter.graph node '\(name)'"
        let controlPorts = loaded.ports.filter { $0.role == .controlInput }
        var controls: [Control] = []
        for port in controlPorts {
            var number = Double(port.defaultValue)
            if let written = control.last(where: { $0.0 == port.name })?.1 {
                guard let given = written.number, given.isFinite else {
                    throw NodeConfigurationError(
                        key: "\(node) control \"\(port.name)\"", message: "'\(written.text ?? written.json)' is not a finite number")
                }
                if let lower = port.lower, given < Double(lower) {
                    warnings.append("\(node) control \"\(port.name)\": \(given) is below its hinted minimum \(lower); passed on as filter-chain does")
                }
                if let upper = port.upper, given > Double(upper) {
                    warnings.append("\(node) control \"\(port.name)\": \(given) is above its hinted maximum \(upper); passed on as filter-chain does")
                }
                number = Double(Float(given))
            }
            controls.append(Control(port: port.name, value: number))
        }
        for (port, _) in control where !controlPorts.contains(where: { $0.name == port }) {
            warnings.append(
                "\(node): no control port '\(port)' on \(loaded.description); its controls are "
                    + controlPorts.map { "'\($0.name)'" }.joined(separator: ", ") + "; ignored")
        }
        return Node(name: name, label: label, kind: kind, controls: controls, source: value)
    }
}
