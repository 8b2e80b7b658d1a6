// A PipeWire client that binds the daemon's Profiler object (module-profiler) and collects its
// cycles, as pw-top does. It runs on the caller's main loop: one thread, no locks.
import CPipeWire
import Convolution
import Glibc

public enum ProfilerClientError: Error, CustomStringConvertible {
    case cannotConnect(runtimeDirectory: String)
    case noProfiler
    case connectionLost(String)
    case pipewire(what: String, errno: Int32)

    public var description: String {
        switch self {
        case .cannotConnect(let directory):
            "cannot connect to PipeWire (XDG_RUNTIME_DIR=\(directory)): is a daemon running there?"
        case .noProfiler:
            "the PipeWire daemon has no Profiler object: add `{ name = libpipewire-module-profiler }` to its context.modules"
        case .connectionLost(let reason):
            reason
        case .pipewire(let what, let errno):
            "\(what) failed: \(String(cString: strerror(errno)))"
        }
    }
}

/// The profiler's interface type (`PW_TYPE_INTERFACE_Profiler`, a concatenated string macro Swift
/// does not import).
private let profilerInterfaceType = "PipeWire:Interface:Profiler"
/// `PW_VERSION_PROFILER` of the 0.3 headers.
private let profilerVersion: UInt32 = 3

public final class ProfilerClient {
    private let context: OpaquePointer
    private let core: OpaquePointer
    private let registry: OpaquePointer
    private var profiler: OpaquePointer?

    // PipeWire keeps pointers to the hooks: they live at fixed heap addresses until deinit.
    private let registryHook = ListenerHook()
    private let registryProxyHook = ListenerHook()
    private let profilerHook = ListenerHook()

    /// The cycles since the caller last emptied it, and since the start.
    public var interval = GraphStatistics()
    public var total = GraphStatistics()
    public private(set) var registryDone = false
    public private(set) var decodingError: ProfileDecodingError?
    /// Why the connection ended, if it did.
    public private(set) var connectionLost: String?
    private var syncSequence: Int32 = -1
    private var coreListener: CoreListener?
    /// Runs on the loop when the registry was enumerated, a decoding failed or the connection ended.
    public var onChange: () -> Void = {}

    /// Connects on `loop` (the caller runs it).
    public init(loop: UnsafeMutablePointer<pw_loop>) throws(ProfilerClientError) {
        guard let context = pw_context_new(loop, nil, 0) else {
            throw .pipewire(what: "pw_context_new", errno: errno)
        }
        self.context = context
        // Registers the client side of the Profiler protocol (as pw-top does).
        _ = pw_context_load_module(context, "libpipewire-module-profiler", nil, nil)
        guard let core = pw_context_connect(context, nil, 0) else {
            pw_context_destroy(context)
            throw .cannotConnect(runtimeDirectory: SystemFiles.environment("XDG_RUNTIME_DIR") ?? "(unset)")
        }
        self.core = core
        guard let registry = pw_core_get_registry(core, UInt32(PW_VERSION_REGISTRY), 0) else {
            throw .pipewire(what: "pw_core_get_registry", errno: errno)
        }
        self.registry = registry

        let userData = Unmanaged.passUnretained(self).toOpaque()
        // pw_registry_add_listener is a macro over the proxy's object listener: call that directly.
        let registryProxy = registry  // a pw_registry is a pw_proxy
        pw_proxy_add_object_listener(registryProxy, registryHook.pointer, UnsafeRawPointer(PipeWireCallbacks.registryEvents), userData)
        pw_proxy_add_listener(registryProxy, registryProxyHook.pointer, PipeWireCallbacks.registryProxyEvents, userData)
        // The reply to this sync arrives after every existing global was announced.
        syncSequence = pw_proxy_sync(registryProxy, 0)
        coreListener = CoreListener(core: core) { [unowned self] reason in
            connectionLost = reason
            onChange()
        }
    }

    deinit {
        if connectionLost == nil {
            if let profiler {
                spa_hook_remove(profilerHook.pointer)
                pw_proxy_destroy(profiler)
            }
            spa_hook_remove(registryHook.pointer)
            spa_hook_remove(registryProxyHook.pointer)
            pw_proxy_destroy(registry)
            coreListener?.remove()
            pw_core_disconnect(core)
        }
        pw_context_destroy(context)  // after a lost connection: also the core and its proxies
    }

    /// Runs `mainLoop` until the registry was enumerated, then: returns if the daemon has a
    /// Profiler object (now bound), else throws.
    public func waitForProfiler(on mainLoop: PipeWireMainLoop, timeout: Double) throws(ProfilerClientError) {
        onChange = { [unowned mainLoop] in mainLoop.quit() }
        let timeout = mainLoop.timer(after: timeout) { [unowned mainLoop] in mainLoop.quit() }
        mainLoop.run()
        timeout.cancel()
        onChange = {}
        if let connectionLost { throw .connectionLost(connectionLost) }
        if profiler != nil { return }
        if registryDone { throw .noProfiler }
        throw .cannotConnect(runtimeDirectory: SystemFiles.environment("XDG_RUNTIME_DIR") ?? "(unset)")
    }

    // MARK: - Events (from PipeWireCallbacks)

    func registryGlobal(id: UInt32, type: String, props: UnsafePointer<spa_dict>?) {
        if type == "PipeWire:Interface:Node" {
            var name = "\(id)"
            for key: String in [PW_KEY_NODE_NAME, PW_KEY_NODE_DESCRIPTION, PW_KEY_APP_NAME] {
                if let props, let value = spa_dict_lookup(props, key) { name = String(cString: value); break }
            }
            interval.addIdleNode(id: id, name: name)
            total.addIdleNode(id: id, name: name)
        } else if type == profilerInterfaceType, profiler == nil {
            guard let proxy = pw_registry_bind(registry, id, type, profilerVersion, 0) else { return }
            profiler = OpaquePointer(proxy)
            pw_proxy_add_object_listener(
                profiler, profilerHook.pointer, UnsafeRawPointer(PipeWireCallbacks.profilerEvents),
                Unmanaged.passUnretained(self).toOpaque())
        }
    }

    func registryGlobalRemoved(id: UInt32) {
        interval.removeNode(id: id)
        total.removeNode(id: id)
    }

    /// The reply to the first sync: every global that existed was announced.
    func registrySynced(sequence: Int32) {
        guard sequence == syncSequence else { return }
        registryDone = true
        onChange()
    }

    func profile(_ pod: UnsafePointer<spa_pod>) {
        do {
            for cycle in try decodeProfile(pod) {
                interval.add(cycle)
                total.add(cycle)
            }
        } catch {
            decodingError = error
            onChange()
        }
    }
}
