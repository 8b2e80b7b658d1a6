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
        // Block SIGINT/SIGTERM before any thread exists, so every PipeWire thread inherits the
        // mask and the loop's signalfd sources below receive them (instead of the default action
        // killing the process on whichever thread the kernel picks).
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
        pw_init(nil, nil)
        defer { pw_deinit() }
        guard let mainLoop = pw_main_loop_new(nil) else { throw .pipeWire(call: "pw_main_loop_new", errno: errno) }
        defer { pw_main_loop_destroy(mainLoop) }
        let loop = pw_main_loop_get_loop(mainLoop)!
        // client-rt.conf, as pw-play and pw-jack use: it loads module-rt, which gives the data thread
        // and the helpers (through the context's thread utils) real-time scheduling; the default
        // client.conf does not, and then both run at normal priority.
        guard let context = pw_context_new(loop, pw_properties_new_string("config.name=client-rt.conf"), 0) else {
            throw .pipeWire(call: "pw_context_new", errno: errno)
        }
        defer { pw_context_destroy(context) }
        guard let core = pw_context_connect(context, nil, 0) else {
            throw .pipeWire(call: "pw_context_connect (is PipeWire running for this XDG_RUNTIME_DIR?)", errno: errno)
        }

        // Signals arrive through the loop (signalfd): `data` is the main loop.
        let quit: spa_source_signal_func_t = { data, _ in
            guard let data else { return }
            pw_main_loop_quit(OpaquePointer(data))
        }
        let interrupt = cpw_loop_add_signal(loop, SIGINT, quit, UnsafeMutableRawPointer(mainLoop))
        let terminate = cpw_loop_add_signal(loop, SIGTERM, quit, UnsafeMutableRawPointer(mainLoop))
        defer {
            cpw_loop_destroy_source(loop, interrupt)
            cpw_loop_destroy_source(loop, terminate)
        }
        var serverGone: String?
        let coreListener = CoreListener(core: core) { reason in
            serverGone = reason
            pw_main_loop_quit(mainLoop)
        }

        let node: ConvolverFilterNode
        do {
            node = try ConvolverFilterNode(core: core, context: context, loop: loop, configuration: configuration,
                                           sampleRate: sampleRate, expectedBlockSize: 256)
        } catch {
            coreListener.remove()
            pw_core_disconnect(core)
            throw error
        }
        onRunning(runningLine(configuration) + "; SIGINT/SIGTERM to stop")
        pw_main_loop_run(mainLoop)

        node.destroy()
        if serverGone == nil {
            coreListener.remove()
            pw_core_disconnect(core)
        }
        if let serverGone { throw .disconnected(serverGone) }
    }

    /// What runs and which ports it has, for the line printed at start.
    static func runningLine(_ configuration: NodeConfiguration) -> String {
        let name = configuration.nodeName
        switch configuration.mode {
        case .filter:
            let ports = configuration.positions.map { "input_\($0)" } + configuration.outputChannelPositions.map { "output_\($0)" }
            return "node '\(name)' running, ports \(ports.joined(separator: " "))"
        case .sink:
            let inputs = configuration.positions.map { "\(name):playback_\($0)" }.joined(separator: " ")
            let outputs = configuration.outputChannelPositions.map { "output.\(name):output_\($0)" }.joined(separator: " ")
            return "sink '\(name)' running (inputs \(inputs)), its output stream 'output.\(name)' (ports \(outputs)) "
                + "goes to \(configuration.targetObject ?? "the default sink")"
        }
    }
}
