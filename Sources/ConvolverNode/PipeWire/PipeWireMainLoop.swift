// The main loop of the command-line clients (`pw-convolver run`, `pw-convolver top`): PipeWire's
// events, timers and SIGINT/SIGTERM, all on the calling thread.
import CConvolverShims
import CPipeWire
import ConvolverGraph
import Glibc

/// A `pw_main_loop` that SIGINT and SIGTERM quit. Create it before anything else of PipeWire's and
/// keep it alive (`withExtendedLifetime`) until every other object on its loop is gone: Swift may
/// release a local at its last use, and this one's deinit unloads PipeWire (`pw_deinit`).
public final class PipeWireMainLoop {
    public let loop: UnsafeMutablePointer<pw_loop>
    private let mainLoop: OpaquePointer
    private var signalSources: [UnsafeMutablePointer<spa_source>] = []
    /// Its timers, cancelled before the loop goes (their actions may hold PipeWire objects).
    private var timers: [LoopTimer] = []

    public init() throws(ConvolverNodeError) {
        // Block the stop signals before any thread exists, so every PipeWire thread inherits the
        // mask: they then reach only the signalfd sources below, on this thread, and never interrupt
        // a PipeWire thread or take the default action on whichever thread the kernel picks.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
        pw_init(nil, nil)
        guard let mainLoop = pw_main_loop_new(nil) else {
            pw_deinit()
            throw .pipeWire(call: "pw_main_loop_new", errno: errno)
        }
        guard let loop = pw_main_loop_get_loop(mainLoop) else {
            pw_main_loop_destroy(mainLoop)
            pw_deinit()
            throw .pipeWire(call: "pw_main_loop_get_loop", errno: EINVAL)
        }
        self.mainLoop = mainLoop
        self.loop = loop
        for signal in [SIGINT, SIGTERM] {
            if let source = cpw_loop_add_signal(loop, signal, PipeWireCallbacks.quitSignal, UnsafeMutableRawPointer(mainLoop)) {
                signalSources.append(source)
            }
        }
    }

    deinit {
        for timer in timers { timer.cancel() }
        for source in signalSources { cpw_loop_destroy_source(loop, source) }
        pw_main_loop_destroy(mainLoop)
        pw_deinit()
    }

    /// Runs the loop until `quit()`, SIGINT or SIGTERM.
    public func run() { pw_main_loop_run(mainLoop) }

    public func quit() { pw_main_loop_quit(mainLoop) }

    /// A timer on this loop: `action` runs after `seconds`, then every `interval` seconds if given,
    /// until `cancel()` or the loop's end.
    @discardableResult
    public func timer(
        after seconds: Double, every interval: Double? = nil,
        _ action: @escaping () -> Void
    ) -> LoopTimer {
        let timer = LoopTimer(loop: loop, after: seconds, every: interval, action)
        timers.append(timer)
        return timer
    }
}

/// See `PipeWireMainLoop.timer`.
public final class LoopTimer {
    private let loop: UnsafeMutablePointer<pw_loop>
    private var source: UnsafeMutablePointer<spa_source>?
    private var action: (() -> Void)?

    fileprivate init(
        loop: UnsafeMutablePointer<pw_loop>, after seconds: Double, every interval: Double?,
        _ action: @escaping () -> Void
    ) {
        self.loop = loop
        self.action = action
        source = cpw_loop_add_timer(loop, PipeWireCallbacks.loopTimer, Unmanaged.passUnretained(self).toOpaque())
        // A zero value disarms a timerfd: the first expiry is at least 1 ns away.
        var first = Self.timespec(max(seconds, 1e-9))
        if let interval {
            var every = Self.timespec(interval)
            _ = cpw_loop_update_timer(loop, source, &first, &every, false)
        } else {
            _ = cpw_loop_update_timer(loop, source, &first, nil, false)
        }
    }

    /// Its source's expiry (PipeWireCallbacks).
    func fire() { action?() }

    /// Stops it for good and lets go of its action (idempotent).
    public func cancel() {
        if let source { cpw_loop_destroy_source(loop, source) }
        source = nil
        action = nil
    }

    private static func timespec(_ seconds: Double) -> Glibc.timespec {
        let whole = seconds.rounded(.down)
        return Glibc.timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
    }
}
