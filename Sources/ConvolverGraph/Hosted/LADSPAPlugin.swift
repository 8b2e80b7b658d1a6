// A LADSPA plugin found and opened as filter-chain finds it (plugin_ladspa.c, ladspa_plugin.c of
// 0.3.65): a path, or a name looked up as NAME.so in LADSPA_PATH or filter-chain's directories;
// then the descriptor with the label. Off the real-time thread.
import CLADSPA
import Glibc

/// An opened LADSPA library and the descriptor of one of its plugins. The library stays open
/// while this lives (every instance holds it).
public final class LADSPAPlugin: HostedPlugin, @unchecked Sendable, Equatable {
    // @unchecked Sendable: the descriptor is constant data of the library; nothing here changes after init.
    public let path: String
    public let label: String
    public let ports: [HostedPort]
    let descriptor: UnsafePointer<LADSPA_Descriptor>
    private let library: UnsafeMutableRawPointer

    /// filter-chain's search when `plugin` is not a path (LIBDIR is Debian's multiarch directory).
    static let defaultDirectories = "/usr/lib64/ladspa:/usr/lib/ladspa:/usr/lib/x86_64-linux-gnu/ladspa"

    /// The files `plugin` may be, in the order filter-chain tries them (NAME.so in each directory);
    /// a name that already ends in .so is also tried as it is.
    static func candidates(_ plugin: String) -> [String] {
        if plugin.hasPrefix("/") { return [plugin] }
        let directories = (getenv("LADSPA_PATH").map { String(cString: $0) } ?? defaultDirectories)
            .split(separator: ":").map(String.init)
        return directories.flatMap { directory in
            ["\(directory)/\(plugin).so"] + (plugin.hasSuffix(".so") ? ["\(directory)/\(plugin)"] : [])
        }
    }

    /// Opens `plugin` and finds `label` in it. Errors name the files searched, or the labels there are.
    public static func load(plugin: String, label: String) throws(HostedPluginError) -> LADSPAPlugin {
        let candidates = candidates(plugin)
        var openErrors: [String] = []
        for path in candidates where access(path, F_OK) == 0 {
            guard let library = dlopen(path, RTLD_NOW) else {
                openErrors.append(dlerror().map { String(cString: $0) } ?? path)
                continue
            }
            do {
                return try LADSPAPlugin(library: library, path: path, label: label)
            } catch {
                dlclose(library)
                throw error
            }
        }
        if !openErrors.isEmpty { throw .unloadable(plugin: plugin, reason: openErrors.joined(separator: "; ")) }
        throw .notFound(plugin: plugin, searched: candidates)
    }

    private init(library: UnsafeMutableRawPointer, path: String, label: String) throws(HostedPluginError) {
        guard let symbol = dlsym(library, "ladspa_descriptor") else {
            throw .unloadable(plugin: path, reason: "it has no ladspa_descriptor function (not a LADSPA plugin)")
        }
        typealias DescriptorFunction = @convention(c) (UInt) -> UnsafePointer<LADSPA_Descriptor>?
        // SAFETY: LADSPA defines `ladspa_descriptor` with exactly this signature.
        let descriptorAt = unsafeBitCast(symbol, to: DescriptorFunction.self)
        var labels: [String] = []
        var found: UnsafePointer<LADSPA_Descriptor>?
        var index: UInt = 0
        while let descriptor = descriptorAt(index) {
            let name = descriptor.pointee.Label.map { String(cString: $0) } ?? ""
            if name == label {
                found = descriptor
                break
            }
            labels.append(name)
            index += 1
        }
        guard let found else { throw .noSuchLabel(plugin: path, label: label, labels: labels) }
        guard found.pointee.instantiate != nil, found.pointee.connect_port != nil, found.pointee.run != nil,
            found.pointee.cleanup != nil
        else {
            throw .unloadable(plugin: path, reason: "its descriptor '\(label)' lacks instantiate, connect_port, run or cleanup")
        }
        self.library = library
        self.path = path
        self.label = label
        self.descriptor = found
        ports = (0..<Int(found.pointee.PortCount)).map { Self.port(found.pointee, $0) }
        guard ports.contains(where: { $0.role == .audioInput || $0.role == .audioOutput }) else {
            throw .unloadable(plugin: path, reason: "'\(label)' has no audio input and no audio output")
        }
    }

    deinit { dlclose(library) }

    public var description: String { "LADSPA plugin \(path) '\(label)'" }

    public func instantiate(
        sampleRate: Int, buffer: (HostedPort) -> UnsafeMutablePointer<Float>?
    ) throws(HostedPluginError) -> any PluginInstance {
        try LADSPAInstance(self, sampleRate: sampleRate, buffer: buffer)
    }

    public static func == (left: LADSPAPlugin, right: LADSPAPlugin) -> Bool { left.path == right.path && left.label == right.label }

    private static func port(_ descriptor: LADSPA_Descriptor, _ index: Int) -> HostedPort {
        let kind = descriptor.PortDescriptors[index]
        let isInput = kind & LADSPA_PORT_INPUT != 0
        let role: HostedPort.Role =
            kind & LADSPA_PORT_AUDIO != 0 ? (isInput ? .audioInput : .audioOutput) : (isInput ? .controlInput : .controlOutput)
        let hint = descriptor.PortRangeHints[index]
        let name = descriptor.PortNames[index].map { String(cString: $0) } ?? "\(index)"
        let bounded = hint.HintDescriptor & (LADSPA_HINT_BOUNDED_BELOW | LADSPA_HINT_BOUNDED_ABOVE)
        return HostedPort(
            index: index, name: name, role: role,
            defaultValue: defaultValue(hint.HintDescriptor, lower: hint.LowerBound, upper: hint.UpperBound),
            lower: bounded & LADSPA_HINT_BOUNDED_BELOW != 0 ? hint.LowerBound : nil,
            upper: bounded & LADSPA_HINT_BOUNDED_ABOVE != 0 ? hint.UpperBound : nil)
    }

    /// A control's default from its hints, as filter-chain computes it (single precision, its
    /// fallback half the upper bound clamped to the range).
    static func defaultValue(_ hint: LADSPA_PortRangeHintDescriptor, lower: Float, upper: Float) -> Float {
        let logarithmic = hint & LADSPA_HINT_LOGARITHMIC != 0
        func between(_ lowShare: Float) -> Float {
            logarithmic ? expf(logf(lower) * lowShare + logf(upper) * (1 - lowShare)) : lower * lowShare + upper * (1 - lowShare)
        }
        var value: Float
        switch hint & LADSPA_HINT_DEFAULT_MASK {
        case LADSPA_HINT_DEFAULT_MINIMUM: value = lower
        case LADSPA_HINT_DEFAULT_MAXIMUM: value = upper
        case LADSPA_HINT_DEFAULT_LOW: value = between(0.75)
        case LADSPA_HINT_DEFAULT_MIDDLE: value = between(0.5)
        case LADSPA_HINT_DEFAULT_HIGH: value = between(0.25)
        case LADSPA_HINT_DEFAULT_0: value = 0
        case LADSPA_HINT_DEFAULT_1: value = 1
        case LADSPA_HINT_DEFAULT_100: value = 100
        case LADSPA_HINT_DEFAULT_440: value = 440
        default: value = upper == lower ? upper : min(max(0.5 * upper, lower), upper)
        }
        return hint & LADSPA_HINT_INTEGER != 0 ? roundf(value) : value
    }
}
