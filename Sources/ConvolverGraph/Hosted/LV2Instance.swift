// One instance of an LV2 plugin, given what filter-chain gives (lv2_plugin.c of 1.4.2): urid:map
// and unmap, buf-size's promises, options (block lengths 1 to 8192, nominal 1024, the sequence
// size, the sample rate); atom ports connected to an empty sequence. No worker: plugins that
// only may use one (LSP's) run without it; one that requires it is refused when loaded.
import CLilv

final class LV2Instance: PluginInstance {
    private let instance: UnsafeMutablePointer<LilvInstance>
    private let handle: LV2_Handle
    private let runFunction: @convention(c) (LV2_Handle?, UInt32) -> Void
    /// What the plugin was given and may keep pointers into: the feature list, the options and
    /// their values, the empty atom sequences. Freed after the instance.
    private let features: UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>
    private let optionsFeature: UnsafeMutablePointer<LV2_Feature>
    private let options: UnsafeMutablePointer<LV2_Options_Option>
    private let values: UnsafeMutableRawPointer
    private let atoms: UnsafeMutableRawPointer

    private static let optionCount = 5
    /// Bytes of zeroes each atom port is connected to: an empty LV2_Atom_Sequence (header and body).
    private static let atomBytes = 64

    init(_ plugin: LV2Plugin, sampleRate: Int, buffer: (HostedPort) -> UnsafeMutablePointer<Float>?) throws(HostedPluginError) {
        let world = LV2World.shared
        values = .allocate(byteCount: 4 * Self.optionCount, alignment: 4)
        options = .allocate(capacity: Self.optionCount + 1)
        optionsFeature = .allocate(capacity: 1)
        features = .allocate(capacity: world.sharedFeatures.count + 2)
        atoms = .allocate(byteCount: max(1, plugin.atomPorts.count) * Self.atomBytes, alignment: 8)
        atoms.initializeMemory(as: UInt8.self, repeating: 0, count: max(1, plugin.atomPorts.count) * Self.atomBytes)

        let (int, float) = (world.map("http://lv2plug.in/ns/ext/atom#Int"), world.map("http://lv2plug.in/ns/ext/atom#Float"))
        let settings: [(String, LV2_URID, Int32?, Float?)] = [
            ("http://lv2plug.in/ns/ext/buf-size#minBlockLength", int, 1, nil),
            ("http://lv2plug.in/ns/ext/buf-size#maxBlockLength", int, 8192, nil),
            ("http://lv2plug.in/ns/ext/buf-size#sequenceSize", int, Int32(Self.atomBytes), nil),
            ("http://lv2plug.in/ns/ext/buf-size#nominalBlockLength", int, 1024, nil),
            ("http://lv2plug.in/ns/ext/parameters#sampleRate", float, nil, Float(sampleRate)),
        ]
        for (index, (key, type, integer, real)) in settings.enumerated() {
            let value = values + 4 * index
            if let integer { value.storeBytes(of: integer, as: Int32.self) } else { value.storeBytes(of: real ?? 0, as: Float.self) }
            (options + index).initialize(
                to: LV2_Options_Option(
                    context: LV2_OPTIONS_INSTANCE, subject: 0, key: world.map(key), size: 4, type: type, value: UnsafeRawPointer(value)))
        }
        (options + Self.optionCount).initialize(
            to: LV2_Options_Option(context: LV2_OPTIONS_INSTANCE, subject: 0, key: 0, size: 0, type: 0, value: nil))
        optionsFeature.initialize(to: LV2_Feature(URI: world.optionsURI, data: UnsafeMutableRawPointer(options)))
        for (index, feature) in world.sharedFeatures.enumerated() { (features + index).initialize(to: feature) }
        (features + world.sharedFeatures.count).initialize(to: UnsafePointer(optionsFeature))
        (features + world.sharedFeatures.count + 1).initialize(to: nil)

        guard let instance = lilv_plugin_instantiate(plugin.plugin, Double(sampleRate), features),
            let run = instance.pointee.lv2_descriptor.pointee.run
        else {
            Self.free(values: values, options: options, optionsFeature: optionsFeature, features: features, atoms: atoms)
            throw .instantiateFailed(plugin: plugin.description, sampleRate: sampleRate)
        }
        self.instance = instance
        handle = instance.pointee.lv2_handle
        runFunction = run
        for port in plugin.ports { lilv_instance_connect_port(instance, UInt32(port.index), buffer(port)) }
        for (slot, port) in plugin.atomPorts.enumerated() {
            lilv_instance_connect_port(instance, UInt32(port), atoms + slot * Self.atomBytes)
        }
        lilv_instance_activate(instance)
    }

    @inline(__always)
    func run(frameCount: Int) { runFunction(handle, UInt32(frameCount)) }

    deinit {
        lilv_instance_deactivate(instance)
        lilv_instance_free(instance)
        Self.free(values: values, options: options, optionsFeature: optionsFeature, features: features, atoms: atoms)
    }

    private static func free(
        values: UnsafeMutableRawPointer, options: UnsafeMutablePointer<LV2_Options_Option>,
        optionsFeature: UnsafeMutablePointer<LV2_Feature>, features: UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>,
        atoms: UnsafeMutableRawPointer
    ) {
        values.deallocate()
        options.deallocate()
        optionsFeature.deallocate()
        features.deallocate()
        atoms.deallocate()
    }
}
