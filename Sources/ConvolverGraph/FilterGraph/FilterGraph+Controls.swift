// A graph's controls as filter-chain's Props name them ("node:Port"), and changed live as its
// Props `params` change them.

extension FilterGraph {
    /// The graph with control values changed, as filter-chain's Props `params` change them:
    /// "node:Port", or "Port" of the first node. Each changed linear node is read again from its
    /// config with the new values, so a value is held to the same ranges and rules as in a config
    /// (a hosted node's value is only stored: its instances read it); a change that names no
    /// control port, or that its node refuses, is refused with its name and the others are made.
    public func settingControls(_ changes: [ControlChange], refusals: inout [String]) -> FilterGraph {
        var graph = self
        for change in changes {
            let name = change.name
            var index = 0, port = name
            if let colon = name.firstIndex(of: ":"), let named = graph.nodes.firstIndex(where: { $0.name == name[..<colon] }) {
                (index, port) = (named, String(name[name.index(after: colon)...]))
            }
            let node = graph.nodes[index]
            if let colon = name.firstIndex(of: ":"), !graph.nodes.contains(where: { $0.name == name[..<colon] }),
                !node.controls.contains(where: { $0.port == port })
            {
                refusals.append(
                    "unknown control '\(name)': no node is named '\(name[..<colon])' (the nodes: "
                        + graph.nodes.map { "'\($0.name)'" }.joined(separator: ", ") + ")")
                continue
            }
            guard node.controls.contains(where: { $0.port == port }) else {
                let ports = node.controls.map { "'\($0.port)'" }.joined(separator: ", ")
                refusals.append(
                    "unknown control '\(name)': node '\(node.name)' (\(node.label)) has "
                        + (ports.isEmpty ? "no controls" : "the controls \(ports)") + " (write \"node:Port\")")
                continue
            }
            guard let value = change.value else {
                refusals.append("\(name) = \(change.written) (expects a finite number)")
                continue
            }
            if node.kind.hosted != nil, let control = node.controls.firstIndex(where: { $0.port == port }) {
                // A hosted node's control is a value its instances read: the node stays as it is.
                graph.nodes[index].controls[control].value = Double(Float(value))
                graph.nodes[index].source = node.source.settingControl(port, to: value)
                continue
            }
            var warnings: [String] = []
            do {
                let changed = try Self.parseNode(
                    node.source.settingControl(port, to: value), index: index, pipeWire: pipeWire, warnings: &warnings)
                guard changed.kind.hosted == nil else {
                    refusals.append(
                        "\(name): node '\(node.name)' (builtin \(node.label)) was loaded without an offset and compiles into the "
                            + "convolution; an Add cannot be set live (give it in the config)")
                    continue
                }
                graph.nodes[index] = changed
            } catch {
                refusals.append("\(name): \(error.message)")
            }
        }
        return graph
    }

    /// Every control of every node, as filter-chain's Props name them.
    public var controlValues: [(name: String, value: Double)] {
        nodes.flatMap { node in node.controls.map { ("\(node.name):\($0.port)", $0.value) } }
    }
}

extension SPAJSONValue {
    /// A node's object with `port` in its `control` block set to `value` (the last value written wins).
    fileprivate func settingControl(_ port: String, to value: Double) -> SPAJSONValue {
        guard case var .object(members) = self else { return self }
        let member = SPAJSONMember(key: port, value: .word("\(value)"))
        if let index = members.lastIndex(where: { $0.key == "control" }), case let .object(controls) = members[index].value {
            members[index].value = .object(controls + [member])
        } else {
            members.append(SPAJSONMember(key: "control", value: .object([member])))
        }
        return .object(members)
    }
}
