// The node as an ordinary PipeWire client (`pw-convolver run`): its own main loop and context.
import CConvolverShims
import CPipeWire
import ConvolverGraph
import Glibc

public enum StandaloneClient {
    /// Connects to PipeWire (`PIPEWIRE_REMOTE` / `XDG_RUNTIME_DIR`), runs the node until SIGINT or
    /// SIGTERM or until the server goes away, and tears everything down. `sampleRate` nil: the
    /// daemon's default clock rate (a sink at another rate would be resampled both ways). `onRunning`
    /// gets a line saying the node is up.
    public static func run(
        _ configuration: NodeConfiguration, sampleRate: Int? = nil,
        onRunning: (String) -> Void = { _ in }
    ) throws(ConvolverNodeError) {
        let mainLoop = try PipeWireMainLoop()
        try withExtendedLifetime(mainLoop) { () throws(ConvolverNodeError) in
            try run(configuration, sampleRate: sampleRate, on: mainLoop, onRunning: onRunning)
        }
    }

    /// Everything on the loop lives only in here: it is gone before the main loop.
    private static func run(
        _ configuration: NodeConfiguration, sampleRate: Int?, on mainLoop: PipeWireMainLoop,
        onRunning: (String) -> Void
    ) throws(ConvolverNodeError) {
        let loop = mainLoop.loop
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

        var serverGone: String?
        let coreListener = CoreListener(core: core) { reason in
            serverGone = reason
            mainLoop.quit()
        }

        if sampleRate == nil && coreListener.defaultClockRate == nil && serverGone == nil {
            // The core's info is the daemon's first message: a round trip at most.
            coreListener.onInfo = { mainLoop.quit() }
            let timeout = mainLoop.timer(after: 5) { mainLoop.quit() }
            mainLoop.run()
            timeout.cancel()
            coreListener.onInfo = {}
        }
        if let serverGone { throw .disconnected(serverGone) }
        let node: ConvolverNode
        do {
            node = try ConvolverNode(
                core: core, context: context, loop: loop, configuration: configuration,
                sampleRate: sampleRate ?? coreListener.defaultClockRate ?? 48000, expectedBlockSize: 256)
        } catch {
            coreListener.remove()
            pw_core_disconnect(core)
            throw error
        }
        onRunning(runningLine(configuration) + "; SIGINT/SIGTERM to stop")
        mainLoop.run()

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
        case .source, .stream:
            let what = configuration.mode == .source ? "source '\(configuration.playbackNodeName)'" : "stream filter"
            return "\(what) running: input stream '\(name)', output stream '\(configuration.playbackNodeName)'"
        }
    }
}
