// The node as a PipeWire module (libpipewire-module-swift-convolver): one instance per load.
import CConvolverShims
import CPipeWire
import ConvolverGraph
import Glibc

/// One loaded module: its core connection, its node, and the hooks that tie their lifetimes to
/// the module's. Teardown order follows PipeWire's C modules (module-filter-chain): on the
/// module's `destroy`, destroy the filter, then remove the core hooks, then disconnect the core
/// we connected. If the core goes away first, its `destroy` clears our pointer and schedules the
/// module's destruction.
public final class ConvolverModuleInstance {
    /// PW_TYPE_INTERFACE_Core (a macro Swift does not import).
    private static let coreInterfaceType = "PipeWire:Interface:Core"

    private let module: OpaquePointer
    private var core: OpaquePointer?
    private let ownsCore: Bool
    private var node: ConvolverNode?
    private let moduleListener = ListenerHook()
    private var coreListener: CoreListener?

    /// `pipewire__module_init`: 0, or a negative errno after logging why. `usage` is the module's
    /// `module.usage` text.
    public static func load(module: OpaquePointer?, arguments: UnsafePointer<CChar>?, usage: String) -> Int32 {
        guard let module else { return -EINVAL }
        let text = arguments.map { String(cString: $0) } ?? ""
        let configuration: NodeConfiguration
        do {
            let (parsed, warnings) = try NodeConfiguration.parse(pipeWire: .running, arguments: text)
            for warning in warnings { PipeWireLog.warning(warning) }
            configuration = parsed
        } catch {
            PipeWireLog.error("cannot load module: \(error)")
            return ConvolverNodeError.configuration(error).negativeErrno
        }
        do {
            let instance = try ConvolverModuleInstance(module: module, configuration: configuration, usage: usage)
            // Retained until the module's destroy event.
            _ = Unmanaged.passRetained(instance)
            return 0
        } catch {
            PipeWireLog.error("cannot load module: \(error)")
            return error.negativeErrno
        }
    }

    private init(module: OpaquePointer, configuration: NodeConfiguration, usage: String) throws(ConvolverNodeError) {
        self.module = module
        let context = pw_impl_module_get_context(module)
        // In the daemon and in `pipewire -c` processes alike: use the context's core if it has
        // one, else connect (as module-filter-chain does).
        if let existing = pw_context_get_object(context, Self.coreInterfaceType) {
            core = OpaquePointer(existing)
            ownsCore = false
        } else if let connected = pw_context_connect(context, nil, 0) {
            core = connected
            ownsCore = true
        } else {
            let error = errno
            throw .pipeWire(call: "pw_context_connect", errno: error)
        }
        if let core {
            // The connection ended: forget the core, then let PipeWire destroy the module (which
            // tears the node down from `moduleDestroyed`).
            coreListener = CoreListener(core: core) { [unowned self] _ in
                self.core = nil
                pw_impl_module_schedule_destroy(self.module)
            }
        }

        let properties = pw_context_get_properties(context)
        let rate = properties.flatMap { pw_properties_get($0, "default.clock.rate") }.flatMap { Int(String(cString: $0)) } ?? 48000
        let quantum = properties.flatMap { pw_properties_get($0, "default.clock.quantum") }.flatMap { Int(String(cString: $0)) } ?? 256
        do {
            guard let core else { throw ConvolverNodeError.pipeWire(call: "pw_context_connect", errno: EPIPE) }
            node = try ConvolverNode(
                core: core, context: context, loop: pw_context_get_main_loop(context), configuration: configuration,
                sampleRate: configuration.audioRate ?? rate, expectedBlockSize: quantum)
        } catch let error as ConvolverNodeError {
            teardown()
            throw error
        } catch {
            teardown()
            throw .engine("\(error)")
        }
        pw_impl_module_add_listener(module, moduleListener.pointer, PipeWireCallbacks.moduleEvents, Unmanaged.passUnretained(self).toOpaque())
        if let moduleProperties = makeProperties([
            (PW_KEY_MODULE_AUTHOR, "swift-convolver"),
            (PW_KEY_MODULE_DESCRIPTION, "Zero-latency partitioned convolver filter node"),
            (PW_KEY_MODULE_USAGE, usage), (PW_KEY_MODULE_VERSION, "0.1"),
        ]) {
            _ = pw_impl_module_update_properties(module, &moduleProperties.pointee.dict)
            pw_properties_free(moduleProperties)
        }
        PipeWireLog.info(
            "\(configuration.nodeName): loaded, \(configuration.channelCount) channels, IR \(configuration.filename ?? (configuration.graph != nil ? "filter.graph" : "impulses"))"
        )
    }

    /// Filter first, then core hooks, then our own core connection.
    private func teardown() {
        node?.destroy()
        node = nil
        coreListener?.remove()
        coreListener = nil
        if let core, ownsCore { pw_core_disconnect(core) }
        core = nil
    }

    /// The module's `destroy` event (PipeWireCallbacks).
    func moduleDestroyed() {
        spa_hook_remove(moduleListener.pointer)
        teardown()
        Unmanaged.passUnretained(self).release()  // balances load()'s passRetained
    }
}
