// One instance of a LADSPA plugin: instantiated, connected to fixed buffers and activated off
// the real-time thread; `run` is the only call the data thread makes.
import CLADSPA

final class LADSPAInstance: PluginInstance {
    private let plugin: LADSPAPlugin
    private let handle: LADSPA_Handle
    private let runFunction: @convention(c) (LADSPA_Handle?, UInt) -> Void

    init(_ plugin: LADSPAPlugin, sampleRate: Int, buffer: (HostedPort) -> UnsafeMutablePointer<Float>?) throws(HostedPluginError) {
        let descriptor = plugin.descriptor
        // SAFETY: LADSPAPlugin checked that instantiate, connect_port, run and cleanup exist.
        guard let handle = descriptor.pointee.instantiate!(descriptor, UInt(sampleRate)) else {
            throw .instantiateFailed(plugin: plugin.description, sampleRate: sampleRate)
        }
        self.plugin = plugin
        self.handle = handle
        runFunction = descriptor.pointee.run!
        for port in plugin.ports { descriptor.pointee.connect_port!(handle, UInt(port.index), buffer(port)) }
        descriptor.pointee.activate?(handle)
    }

    @inline(__always)
    func run(frameCount: Int) { runFunction(handle, UInt(frameCount)) }

    deinit {
        plugin.descriptor.pointee.deactivate?(handle)
        plugin.descriptor.pointee.cleanup!(handle)
    }
}
