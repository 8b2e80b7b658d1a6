// Watching a pw_core connection: the module and the standalone client react to its end, and the
// client starts at the rate the daemon says its graph runs at.
import CConvolverShims
import CPipeWire

/// Listens to a core proxy's `destroy` and the core's `error` events, as PipeWire's C modules do
/// (module-filter-chain). `onGone` runs once, on the main loop, when the connection ends (proxy
/// destroyed, or EPIPE on the core); the hooks are removed by then. Call `remove()` before
/// disconnecting the core yourself. PipeWire keeps pointers to the hooks: they live in this object.
public final class CoreListener {
    private let coreListener = ListenerHook()
    private let proxyListener = ListenerHook()
    private var listening = false
    private var onGone: ((String) -> Void)?
    /// The daemon's `default.clock.rate`, from the core's info (sent once connected).
    public private(set) var defaultClockRate: Int?
    /// Runs when the core's info arrived.
    public var onInfo: () -> Void = {}

    public init(core: OpaquePointer, onGone: @escaping (String) -> Void) {
        self.onGone = onGone
        let userData = Unmanaged.passUnretained(self).toOpaque()
        pw_proxy_add_listener(core, proxyListener.pointer, PipeWireCallbacks.coreProxyEvents, userData)
        _ = cpw_core_add_listener(core, coreListener.pointer, PipeWireCallbacks.coreEvents, userData)
        listening = true
    }

    deinit {
        remove()
    }

    /// Removes the hooks (idempotent); `onGone` will not run after this.
    public func remove() {
        guard listening else { return }
        spa_hook_remove(coreListener.pointer)
        spa_hook_remove(proxyListener.pointer)
        listening = false
    }

    private func gone(_ reason: String) {
        remove()
        let callback = onGone
        onGone = nil
        callback?(reason)
    }

    // MARK: - Events (from PipeWireCallbacks)

    func proxyDestroyed() { gone("the connection to PipeWire was closed") }

    func coreInfo(_ info: UnsafePointer<pw_core_info>) {
        if let properties = info.pointee.props, let rate = spa_dict_lookup(properties, "default.clock.rate") {
            defaultClockRate = Int(String(cString: rate))
        }
        onInfo()
    }

    func coreError(id: UInt32, result: Int32, message: UnsafePointer<CChar>?) {
        let text = message.map { String(cString: $0) } ?? ""
        PipeWireLog.error("core error on object \(id): \(result) \(text)")
        if id == PW_ID_CORE && result == -EPIPE { gone("PipeWire went away (\(text))") }
    }
}
