// What the graph needs of a hosted plugin, LADSPA or LV2: its audio and control ports, and
// instances connected to buffers that outlive them. Everything but `run` happens off the data thread.

/// One port of a hosted plugin, as the graph sees it (ports of other kinds, LV2's atom ports, are
/// the plugin host's own business).
public struct HostedPort: Sendable, Equatable {
    public enum Role: Sendable, Equatable {
        case audioInput, audioOutput, controlInput, controlOutput
    }
    /// The plugin's own port number (`connect_port`'s).
    public var index: Int
    /// LADSPA's port name, LV2's port symbol: what filter-chain's configs call the port.
    public var name: String
    public var role: Role
    /// A control input's default, as filter-chain computes it.
    public var defaultValue: Float
    /// The hinted range, where the plugin gives one.
    public var lower: Float?
    public var upper: Float?
}

/// A plugin opened and described, ready to make instances (one per graph instance).
public protocol HostedPlugin: AnyObject, Sendable {
    /// The plugin as a user's config names it, for messages ("LADSPA plugin /usr/lib/ladspa/amp.so 'amp_mono'").
    var description: String { get }
    var ports: [HostedPort] { get }
    /// Whether an audio input nothing feeds is given no buffer (filter-chain's
    /// SUPPORTS_NULL_DATA builtins), rather than a silent one.
    var acceptsUnconnectedInputs: Bool { get }
    /// An instance at `sampleRate`, each port connected to `buffer(port)` (audio ports take a
    /// call's frames, control ports one value; nil only for an input nothing feeds, where the
    /// plugin accepts that), activated.
    func instantiate(sampleRate: Int, buffer: (HostedPort) -> UnsafeMutablePointer<Float>?) throws(HostedPluginError) -> any PluginInstance
}

extension HostedPlugin {
    public var acceptsUnconnectedInputs: Bool { false }
}

/// One running instance. `run` is the only call the data thread makes; releasing the instance
/// (off the data thread) deactivates and frees it.
public protocol PluginInstance: AnyObject {
    /// Processes `frameCount` frames (at most 8192) from the connected inputs into the connected
    /// outputs. Real-time safe on our side: one call into the plugin (what it does is its own business).
    func run(frameCount: Int)
}

/// Why a hosted plugin could not be used; each names the plugin and what was looked for.
public enum HostedPluginError: Error, Equatable, CustomStringConvertible {
    case notFound(plugin: String, searched: [String])
    case unloadable(plugin: String, reason: String)
    case noSuchLabel(plugin: String, label: String, labels: [String])
    case lv2NotFound(uri: String, installed: Int, similar: [String])
    case lv2Unsupported(uri: String, reason: String)
    /// `plugin`: the plugin's description.
    case instantiateFailed(plugin: String, sampleRate: Int)

    public var description: String {
        switch self {
        case let .notFound(plugin, searched):
            return "LADSPA plugin '\(plugin)' not found; searched " + searched.joined(separator: ", ")
                + (plugin.hasPrefix("/") ? "" : " (LADSPA_PATH sets the directories)")
        case let .unloadable(plugin, reason): return "LADSPA plugin '\(plugin)' cannot be used: \(reason)"
        case let .noSuchLabel(plugin, label, labels):
            return "LADSPA plugin \(plugin) has no label '\(label)'; its labels are "
                + (labels.isEmpty ? "none" : labels.map { "'\($0)'" }.joined(separator: ", "))
        case let .lv2NotFound(uri, installed, similar):
            return "LV2 plugin <\(uri)> is not installed (\(installed) LV2 plugins are; LV2_PATH sets the directories)"
                + (similar.isEmpty ? "" : "; similar: " + similar.map { "<\($0)>" }.joined(separator: ", "))
        case let .lv2Unsupported(uri, reason): return "LV2 plugin <\(uri)> cannot be used: \(reason)"
        case let .instantiateFailed(plugin, sampleRate): return "\(plugin) refused to instantiate at \(sampleRate) Hz"
        }
    }
}
