// One instance of a hosted plugin: instantiated, connected to fixed buffers and activated off
// the real-time thread; `run` is the only call the data thread makes.
import CLADSPA

/// A plugin instance with its ports connected once, to buffers that outlive it.
final class PluginInstance {
    private let plugin: LADSPAPlugin
    private let handle: LADSPA_Handle
    private let runFunction: @convention(c) (LADSPA_Handle?, UInt) -> Void

    /// Instantiates `plugin` at `sampleRate` and connects each port (`buffer(port)`: where the
    /// port's data lives; audio ports take a call's frames, control ports one value), then activates it.
    init(
        _ plugin: LADSPAPlugin, sampleRate: Int, buffer: (HostedPort) -> UnsafeMutablePointer<Float>
    ) throws(HostedPluginError) {
        let descriptor = plugin.descriptor
        // SAFETY: LADSPALoader checked that instantiate, connect_port, run and cleanup exist.
        guard let handle = descriptor.pointee.instantiate!(descriptor, UInt(sampleRate)) else {
            throw .instantiateFailed(plugin: plugin.path, label: plugin.label, sampleRate: sampleRate)
        }
        self.plugin = plugin
        self.handle = handle
        runFunction = descriptor.pointee.run!
        for port in plugin.ports { descriptor.pointee.connect_port!(handle, UInt(port.index), buffer(port)) }
        descriptor.pointee.activate?(handle)
    }

    /// Processes `frameCount` frames from the connected inputs into the connected outputs.
    /// Real-time safe on our side: one call into the plugin (what it does is its own business).
    @inline(__always)
    func run(frameCount: Int) { runFunction(handle, UInt(frameCount)) }

    deinit {
        plugin.descriptor.pointee.deactivate?(handle)
        plugin.descriptor.pointee.cleanup!(handle)
    }
}
