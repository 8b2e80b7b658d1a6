// An LV2 plugin found as filter-chain finds it (lv2_plugin.c of 1.4.2): by URI among the installed
// ones; ports by symbol, control defaults and ranges as lilv gives them. Off the real-time thread.
import CLilv

public final class LV2Plugin: HostedPlugin, @unchecked Sendable, Equatable {
    // @unchecked Sendable: the lilv plugin is the world's constant description; nothing here changes after init.
    public let uri: String
    public let ports: [HostedPort]
    let plugin: OpaquePointer
    /// Ports the graph does not see that the instance must connect (atom ports: to an empty sequence).
    let atomPorts: [Int]

    /// The installed plugin `uri`. Errors name what is installed that looks like it, or the
    /// features the plugin requires that no host here gives.
    public static func load(uri: String) throws(HostedPluginError) -> LV2Plugin {
        let world = LV2World.shared
        let plugins = lilv_world_get_all_plugins(world.world)
        guard let node = lilv_new_uri(world.world, uri) else {
            throw .lv2NotFound(uri: uri, installed: Int(lilv_plugins_size(plugins)), similar: [])
        }
        defer { lilv_node_free(node) }
        guard let plugin = lilv_plugins_get_by_uri(plugins, node) else {
            let installed = world.pluginURIs
            let tail = uri.split(whereSeparator: { "/#:".contains($0) }).last.map { $0.lowercased() } ?? ""
            let similar = tail.count < 3 ? [] : installed.filter { $0.lowercased().contains(tail) }.sorted().prefix(5)
            throw .lv2NotFound(uri: uri, installed: installed.count, similar: Array(similar))
        }
        return try LV2Plugin(plugin, uri: uri, world: world)
    }

    private init(_ plugin: OpaquePointer, uri: String, world: LV2World) throws(HostedPluginError) {
        let required = Self.uris(lilv_plugin_get_required_features(plugin))
        let missing = required.filter { !LV2World.supportedFeatures.contains($0) }
        guard missing.isEmpty else {
            throw .lv2Unsupported(
                uri: uri, reason: "it requires " + missing.map { "<\($0)>" }.joined(separator: ", ") + ", which this host does not give")
        }
        let count = Int(lilv_plugin_get_num_ports(plugin))
        var lowers = [Float](repeating: .nan, count: count), uppers = lowers, defaults = lowers
        lilv_plugin_get_port_ranges_float(plugin, &lowers, &uppers, &defaults)
        var ports: [HostedPort] = [], atomPorts: [Int] = []
        for index in 0..<count {
            let port = lilv_plugin_get_port_by_index(plugin, UInt32(index))
            func isA(_ kind: OpaquePointer) -> Bool { lilv_port_is_a(plugin, port, kind) }
            let isInput = isA(world.inputPort)
            let role: HostedPort.Role
            if isA(world.audioPort) {
                role = isInput ? .audioInput : .audioOutput
            } else if isA(world.controlPort) {
                role = isInput ? .controlInput : .controlOutput
            } else {
                if isA(world.atomPort) { atomPorts.append(index) }
                continue  // CV and other ports stay unconnected, as filter-chain leaves them
            }
            let symbol = String(cString: lilv_node_as_string(lilv_port_get_symbol(plugin, port)))
            let (lower, upper) = (lowers[index], uppers[index])
            // A control without a default starts at its minimum, else 0 (filter-chain would pass NaN on).
            let defaultValue = defaults[index].isFinite ? defaults[index] : lower.isFinite ? lower : 0
            ports.append(
                HostedPort(
                    index: index, name: symbol, role: role, defaultValue: defaultValue,
                    lower: lower.isFinite ? lower : nil, upper: upper.isFinite ? upper : nil))
        }
        guard ports.contains(where: { $0.role == .audioInput || $0.role == .audioOutput }) else {
            throw .lv2Unsupported(uri: uri, reason: "it has no audio input and no audio output")
        }
        self.uri = uri
        self.plugin = plugin
        self.ports = ports
        self.atomPorts = atomPorts
    }

    public var description: String { "LV2 plugin <\(uri)>" }

    public func instantiate(
        sampleRate: Int, buffer: (HostedPort) -> UnsafeMutablePointer<Float>?
    ) throws(HostedPluginError) -> any PluginInstance {
        try LV2Instance(self, sampleRate: sampleRate, buffer: buffer)
    }

    public static func == (left: LV2Plugin, right: LV2Plugin) -> Bool { left.uri == right.uri }

    /// The URIs in a lilv node list, which is freed.
    private static func uris(_ nodes: UnsafeMutableRawPointer?) -> [String] {
        guard let nodes else { return [] }
        defer { lilv_nodes_free(nodes) }
        var uris: [String] = []
        var iterator = lilv_nodes_begin(nodes)
        while !lilv_nodes_is_end(nodes, iterator) {
            if let node = lilv_nodes_get(nodes, iterator) { uris.append(String(cString: lilv_node_as_string(node))) }
            iterator = lilv_nodes_next(nodes, iterator)
        }
        return uris
    }
}
