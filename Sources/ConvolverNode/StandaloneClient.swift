// The node as an ordinary PipeWire client (`pw-convolver run`): its own main loop and context.
import CConvolverShims
import CPipeWire
import Foundation

public enum StandaloneClient {
    /// Connects to PipeWire (`PIPEWIRE_REMOTE` / `XDG_RUNTIME_DIR`), runs the node until SIGINT or
    /// SIGTERM or until the server goes away, and tears everything down. `onRunning` gets a line
    /// saying the node is up.
    public static func run(_ configuration: NodeConfiguration, sampleRate: Int = 48000,
                           onRunning: (String) -> Void = { _ in }) throws(ConvolverNodeError) {
        pw_init(nil, nil)
        defer { pw_deinit() }
        // SIGINT/SIGTERM reach us through the main loop's signalfd. Blocked here, before any
        // PipeWire thread exists, so every thread inherits the block; otherwise the kernel may
        // deliver the signal to the data thread, whose default action kills the process.
        var stopSignals = sigset_t(), previousSignals = sigset_t()
        sigemptyset(&stopSignals); sigaddset(&stopSignals, SIGINT); sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &stopSignals, &previousSignals)
        defer { pthread_sigmask(SIG_SETMASK, &previousSignals, nil) }
        guard let mainLoop = pw_main_loop_new(nil) else { throw .pipeWire(call: "pw_main_loop_new", errno: errno) }
        defer { pw_main_loop_destroy(mainLoop) }
        let loop = pw_main_loop_get_loop(mainLoop)!
        guard let context = pw_context_new(loop, nil, 0) else { throw .pipeWire(call: "pw_context_new", errno: errno) }
        defer { pw_context_destroy(context) }
        guard let core = pw_context_connect(context, nil, 0) else {
            throw .pipeWire(call: "pw_context_connect (is PipeWire running for this XDG_RUNTIME_DIR?)", errno: errno)
        }

        let session = Session(mainLoop: mainLoop)
        let userData = Unmanaged.passUnretained(session).toOpaque()
        let quit: spa_source_signal_func_t = { data, _ in
            guard let data else { return }
            let session = Unmanaged<Session>.fromOpaque(data).takeUnretainedValue()
            pw_main_loop_quit(session.mainLoop)
        }
        let interrupt = cpw_loop_add_signal(loop, SIGINT, quit, userData)
        let terminate = cpw_loop_add_signal(loop, SIGTERM, quit, userData)
        pw_proxy_add_listener(core, session.coreProxyListener, Session.coreProxyEvents, userData)
        _ = cpw_core_add_listener(core, session.coreListener, Session.coreEvents, userData)

        let node: ConvolverFilterNode
        do {
            node = try ConvolverFilterNode(core: core, context: context, loop: loop, configuration: configuration,
                                           sampleRate: sampleRate, expectedBlockSize: 256)
        } catch {
            session.removeCoreHooks()
            pw_core_disconnect(core)
            cpw_loop_destroy_source(loop, interrupt)
            cpw_loop_destroy_source(loop, terminate)
            throw error
        }
        let ports = configuration.positions.map { "input_\($0)/output_\($0)" }.joined(separator: " ")
        onRunning("node '\(configuration.nodeName)' running, ports \(ports); SIGINT/SIGTERM to stop")
        pw_main_loop_run(mainLoop)

        node.destroy()
        if session.coreAlive {
            session.removeCoreHooks()
            pw_core_disconnect(core)
        }
        cpw_loop_destroy_source(loop, interrupt)
        cpw_loop_destroy_source(loop, terminate)
        if let message = session.serverGone { throw .pipeWire(call: message, errno: EPIPE) }
    }

    /// Hooks and state of one run (PipeWire keeps pointers to the hooks).
    private final class Session {
        let mainLoop: OpaquePointer
        let coreListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
        let coreProxyListener = UnsafeMutablePointer<spa_hook>.allocate(capacity: 1)
        var coreAlive = true
        var serverGone: String?

        init(mainLoop: OpaquePointer) {
            self.mainLoop = mainLoop
            coreListener.initialize(to: spa_hook())
            coreProxyListener.initialize(to: spa_hook())
        }

        deinit {
            coreListener.deallocate()
            coreProxyListener.deallocate()
        }

        func removeCoreHooks() {
            guard coreAlive else { return }
            spa_hook_remove(coreListener)
            spa_hook_remove(coreProxyListener)
            coreAlive = false
        }

        static let coreProxyEvents: UnsafeMutablePointer<pw_proxy_events> = {
            var events = pw_proxy_events()
            events.version = UInt32(PW_VERSION_PROXY_EVENTS)
            events.destroy = { data in
                guard let data else { return }
                let session = Unmanaged<Session>.fromOpaque(data).takeUnretainedValue()
                session.removeCoreHooks()
                session.serverGone = session.serverGone ?? "connection to PipeWire"
                pw_main_loop_quit(session.mainLoop)
            }
            let pointer = UnsafeMutablePointer<pw_proxy_events>.allocate(capacity: 1)
            pointer.initialize(to: events)
            return pointer
        }()

        static let coreEvents: UnsafeMutablePointer<pw_core_events> = {
            var events = pw_core_events()
            events.version = UInt32(PW_VERSION_CORE_EVENTS)
            events.error = { data, id, _, result, message in
                guard let data else { return }
                let session = Unmanaged<Session>.fromOpaque(data).takeUnretainedValue()
                let text = message.map { String(cString: $0) } ?? ""
                PipeWireLog.error("core error on object \(id): \(result) \(text)")
                if id == PW_ID_CORE && result == -EPIPE {
                    session.serverGone = "connection to PipeWire (server gone: \(text))"
                    pw_main_loop_quit(session.mainLoop)
                }
            }
            let pointer = UnsafeMutablePointer<pw_core_events>.allocate(capacity: 1)
            pointer.initialize(to: events)
            return pointer
        }()
    }
}
