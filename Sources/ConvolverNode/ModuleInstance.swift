// The node as a PipeWire module (libpipewire-module-swift-convolver): one instance per load.
import CConvolverShims
import CPipeWire
import Foundation

/// One loaded module: its core connection, its node, and the hooks that tie their lifetimes to
/// the module's. Teardown order follows PipeWire's C modules (module-filter-chain): on the
/// module's `destroy`, destroy the filter, then remove the core hooks, then disconnect the core
/// we connected. If the core goes away first, its `destroy` clears our pointer and schedules the
/// module's destruction.
public final class ConvolverModuleInstance {
    public static let usage = """
        node.name=<name> node.description=<text> audio.channels=<n> audio.position=[ FL FR ] \
        filename=<path|builtin:NAME> gain=<linear> mix=<0..1> delay=<samples> offset=<samples> \
        length=<samples> resample.quality=<0..14> impulses=[ { input output filename channel gain } ] \
        workgroup={ threads=<auto|n> rt.prio=<n> } partition={ max=<samples> }
        """

    /// PW_TYPE_INTERFACE_Core (a macro Swift does not import).
    private static let coreInterfaceType = "PipeWire:Interface:Core"

    private let module: OpaquePointer
    private var core: OpaquePointer?
    private let ownsCore: Bool
    private var node: ConvolverFilterNode?
    private let moduleListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let coreListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let coreProxyListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private var coreHooksAdded = false

    /// `pipewire__module_init`: 0, or a negative errno after logging why.
    public static func load(module: OpaquePointer?, arguments: UnsafePointer<CChar>?) -> Int32 {
        guard let module else { return -EINVAL }
        let text = arguments.map { String(cString: $0) } ?? ""
        let configuration: NodeConfiguration
        do {
            let (parsed, warnings) = try NodeConfiguration.parse(arguments: text)
            for warning in warnings { PipeWireLog.warning(warning) }
            configuration = parsed
        } catch {
            PipeWireLog.error("cannot load module: \(error)")
            return ConvolverNodeError.configuration(error).negativeErrno
        }
        do {
            let instance = try ConvolverModuleInstance(module: module, configuration: configuration)
            // Retained until the module's destroy event.
            _ = Unmanaged.passRetained(instance)
            return 0
        } catch {
            PipeWireLog.error("cannot load module: \(error)")
            return error.negativeErrno
        }
    }

    private init(module: OpaquePointer, configuration: NodeConfiguration) throws(ConvolverNodeError) {
        self.module = module
        for hook in [moduleListener, coreListener, coreProxyListener] { hook.initialize(to: spa_hook()) }
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
            Self.deallocateHooks([moduleListener, coreListener, coreProxyListener])
            throw .pipeWire(call: "pw_context_connect", errno: error)
        }
        let userData = Unmanaged.passUnretained(self).toOpaque()
        pw_proxy_add_listener(core, coreProxyListener, Self.coreProxyEvents, userData)
        _ = cpw_core_add_listener(core, coreListener, Self.coreEvents, userData)
        coreHooksAdded = true

        let properties = pw_context_get_properties(context)
        let rate = properties.flatMap { pw_properties_get($0, "default.clock.rate") }.flatMap { Int(String(cString: $0)) } ?? 48000
        let quantum = properties.flatMap { pw_properties_get($0, "default.clock.quantum") }.flatMap { Int(String(cString: $0)) } ?? 256
        do {
            guard let core else { throw ConvolverNodeError.pipeWire(call: "pw_context_connect", errno: EPIPE) }
            node = try ConvolverFilterNode(core: core, context: context, loop: pw_context_get_main_loop(context), configuration: configuration,
                                           sampleRate: rate, expectedBlockSize: quantum)
        } catch let error as ConvolverNodeError {
            teardown()
            Self.deallocateHooks([moduleListener, coreListener, coreProxyListener])
            throw error
        } catch {
            teardown()
            Self.deallocateHooks([moduleListener, coreListener, coreProxyListener])
            throw .engine("\(error)")
        }
        pw_impl_module_add_listener(module, moduleListener, Self.moduleEvents, userData)
        let moduleProperties = makeProperties([
            (PW_KEY_MODULE_AUTHOR, "swift-convolver"),
            (PW_KEY_MODULE_DESCRIPTION, "Zero-latency partitioned convolver filter node"),
            (PW_KEY_MODULE_USAGE, Self.usage), (PW_KEY_MODULE_VERSION, "0.1"),
        ])
        _ = pw_impl_module_update_properties(module, &moduleProperties.pointee.dict)
        pw_properties_free(moduleProperties)
        PipeWireLog.info("\(configuration.nodeName): loaded, \(configuration.channelCount) channels, IR \(configuration.filename ?? "impulses")")
    }

    private static func deallocateHooks(_ hooks: [UnsafeMutablePointer<spa_hook>]) {
        for hook in hooks { hook.deallocate() }
    }

    /// Filter first, then core hooks, then our own core connection.
    private func teardown() {
        node?.destroy()
        node = nil
        if coreHooksAdded {
            spa_hook_remove(coreListener)
            spa_hook_remove(coreProxyListener)
            coreHooksAdded = false
        }
        if let core, ownsCore { pw_core_disconnect(core) }
        core = nil
    }

    private func moduleDestroyed() {
        spa_hook_remove(moduleListener)
        teardown()
        Self.deallocateHooks([moduleListener, coreListener, coreProxyListener])
        Unmanaged.passUnretained(self).release()   // balances load()'s passRetained
    }

    private static let moduleEvents: UnsafeMutablePointer<pw_impl_module_events> = {
        var events = pw_impl_module_events()
        events.version = UInt32(PW_VERSION_IMPL_MODULE_EVENTS)
        events.destroy = { data in
            guard let data else { return }
            Unmanaged<ConvolverModuleInstance>.fromOpaque(data).takeUnretainedValue().moduleDestroyed()
        }
        let pointer = UnsafeMutablePointer<pw_impl_module_events>.allocate(capacity: 1)
        pointer.initialize(to: events)
        return pointer
    }()

    private static let coreProxyEvents: UnsafeMutablePointer<pw_proxy_events> = {
        var events = pw_proxy_events()
        events.version = UInt32(PW_VERSION_PROXY_EVENTS)
        events.destroy = { data in
            guard let data else { return }
            let instance = Unmanaged<ConvolverModuleInstance>.fromOpaque(data).takeUnretainedValue()
            if instance.coreHooksAdded {
                spa_hook_remove(instance.coreListener)
                spa_hook_remove(instance.coreProxyListener)
                instance.coreHooksAdded = false
            }
            instance.core = nil
            pw_impl_module_schedule_destroy(instance.module)
        }
        let pointer = UnsafeMutablePointer<pw_proxy_events>.allocate(capacity: 1)
        pointer.initialize(to: events)
        return pointer
    }()

    private static let coreEvents: UnsafeMutablePointer<pw_core_events> = {
        var events = pw_core_events()
        events.version = UInt32(PW_VERSION_CORE_EVENTS)
        events.error = { data, id, _, result, message in
            guard let data else { return }
            let instance = Unmanaged<ConvolverModuleInstance>.fromOpaque(data).takeUnretainedValue()
            PipeWireLog.error("core error on object \(id): \(result) \(message.map { String(cString: $0) } ?? "")")
            if id == PW_ID_CORE && result == -EPIPE { pw_impl_module_schedule_destroy(instance.module) }
        }
        let pointer = UnsafeMutablePointer<pw_core_events>.allocate(capacity: 1)
        pointer.initialize(to: events)
        return pointer
    }()
}
