// Engines for a new graph rate, a new IR or a new quantum, built on a worker thread.
import ConvolverGraph
import Dispatch
import Glibc
import Synchronization

/// Builds engines off the main loop: loading, resampling and FFT planning of a long IR take up to
/// seconds, and in the daemon the main loop serves every client. One build at a time, in request
/// order; results wait in a mailbox until the main loop, woken by `notify`, takes them. An IR
/// build still queued when a newer one is asked for is skipped: the newer one carries its change
/// (Props build on the pending IR), and a source moved every 100 ms must not queue up builds that
/// the node's teardown would then wait for.
final class EngineBuilder: @unchecked Sendable {
    enum Purpose {
        /// The graph runs at a new rate: same configuration.
        case sampleRate
        /// Props asked for another IR (`filename`).
        case impulseResponse
        /// The graph runs another quantum than the engine was planned for: same configuration,
        /// planned for it (taken in silence, see `RealtimeProcessor`).
        case quantum
    }

    struct Request {
        var configuration: NodeConfiguration
        var sampleRate: Int
        var expectedBlockSize: Int
        var purpose: Purpose
    }

    struct Completion {
        var request: Request
        var result: Result<EngineSlot, ConvolverNodeError>
    }

    private let queue = DispatchQueue(label: "swconv-engine-builder")
    private let group = DispatchGroup()
    /// Guards `completions` between the worker and the main loop (never the data thread).
    private let completions = Mutex<[Completion]>([])
    /// Set by `finish()`: builds still queued are skipped.
    private let finishing = Atomic<Bool>(false)
    /// The number of the newest `.impulseResponse` request (main loop writes, worker reads).
    private let newestImpulseRequest = Atomic<Int>(0)
    private var requestCount = 0
    /// Only the worker uses it. SAFETY: its pw_context outlives the builder: the node waits for
    /// the worker in `destroy()`, before its owner destroys the context.
    private let factory: EngineFactory
    private let notify: () -> Void

    /// `notify` runs on the worker after each build (it signals the main loop's event source).
    init(factory: EngineFactory, notify: @escaping () -> Void) {
        self.factory = factory
        self.notify = notify
    }

    /// Main loop: queues a build.
    func request(_ request: Request) {
        requestCount += 1
        let number = requestCount
        if request.purpose == .impulseResponse { newestImpulseRequest.store(number, ordering: .relaxed) }
        queue.async(group: group) { [self] in
            if finishing.load(ordering: .relaxed) { return }
            if request.purpose == .impulseResponse && number < newestImpulseRequest.load(ordering: .relaxed) { return }
            let result: Result<EngineSlot, ConvolverNodeError>
            do throws(ConvolverNodeError) {
                result = .success(
                    try factory.makeSlot(
                        request.configuration, sampleRate: request.sampleRate,
                        expectedBlockSize: request.expectedBlockSize))
            } catch {
                result = .failure(error)
            }
            factory.hrtfSets.buildEnded()
            completions.withLock { $0.append(Completion(request: request, result: result)) }
            notify()
        }
    }

    /// Main loop: the builds finished since the last call, oldest first.
    func takeCompletions() -> [Completion] {
        completions.withLock { taken in
            defer { taken = [] }
            return taken
        }
    }

    /// Waits for the build in progress (teardown; queued ones are skipped), then returns what was made.
    func finish() -> [Completion] {
        finishing.store(true, ordering: .relaxed)
        group.wait()
        return takeCompletions()
    }
}
