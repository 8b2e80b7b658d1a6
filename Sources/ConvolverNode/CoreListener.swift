// Watching a pw_core connection: the module and the standalone client react to its end.
import CConvolverShims
import CPipeWire

/// Listens to a core proxy's `destroy` and the core's `error` events, as PipeWire's C modules do
/// (module-filter-chain). `onGone` runs once, on the main loop, when the connection ends (proxy
/// destroyed, or EPIPE on the core); the hooks are removed by then. Call `remove()` before
/// disconnecting the core yourself. PipeWire keeps pointers to the hooks: they live in this object.
public final class CoreListener {
    private let coreListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private let proxyListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
    private var listening = false
    private var onGone: ((String) -> Void)?

    public init(core: OpaquePointer, onGone: @escaping (String) -> Void) {
        coreListener.initialize(to: spa_hook())
        proxyListener.initialize(to: spa_hook())
        self.onGone = onGone
        let userData = Unmanaged.passUnretained(self).toOpaque()
        pw_proxy_add_listener(core, proxyListener, Self.proxyEvents, userData)
        _ = cpw_core_add_listener(core, coreListener, Self.coreEvents, userData)
        listening = true
    }

    deinit {
        remove()
        coreListener.deallocate()
        proxyListener.deallocate()
    }

    /// Removes the hooks (idempotent); `onGone` will not run after this.
    public func remove() {
        guard listening else { return }
        spa_hook_remove(coreListener)
        spa_hook_remove(proxyListener)
        listening = false
    }

    private func gone(_ reason: String) {
        remove()
        let callback = onGone
        onGone = nil
        callback?(reason)
    }

    private static let proxyEvents: UnsafeMutablePointer<pw_proxy_events> = {
        var events = pw_proxy_events()
        events.version = UInt32(PW_VERSION_PROXY_EVENTS)
        events.destroy = { data in
            guard let data else { return }
            Unmanaged<CoreListener>.fromOpaque(data).takeUnretainedValue().gone("the connection to PipeWire was closed")
        }
        return persistentEventTable(events)
    }()

    private static let coreEvents: UnsafeMutablePointer<pw_core_events> = {
        var events = pw_core_events()
        events.version = UInt32(PW_VERSION_CORE_EVENTS)
        events.error = { data, id, _, result, message in
            guard let data else { return }
            let text = message.map { String(cString: $0) } ?? ""
            PipeWireLog.error("core error on object \(id): \(result) \(text)")
            if id == PW_ID_CORE && result == -EPIPE {
                Unmanaged<CoreListener>.fromOpaque(data).takeUnretainedValue().gone("PipeWire went away (\(text))")
            }
        }
        return persistentEventTable(events)
    }()
}
