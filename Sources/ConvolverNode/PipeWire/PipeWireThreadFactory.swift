import CConvolverShims
import CPipeWire
import Glibc
import Workgroup

/// Helper threads made through PipeWire's thread utilities (`pw_thread_utils_create` /
/// `pw_thread_utils_acquire_rt`), so PipeWire's real-time policy applies: module-rt gives
/// SCHED_FIFO directly or through RTKit / the realtime portal, within its `rt.prio` limits.
///
/// Use it when a `pw_context` exists; without a context use `PthreadThreadFactory`.
/// module-rt installs its thread utils as the context's `ThreadUtils` object
/// (`pw_context_set_object`), not as the global `pw_thread_utils_get()` (which has no
/// `acquire_rt` in 0.3.65: ENOTSUP), so the context's object is used when there is one.
/// The C macros `pw_thread_utils_*` are static inline `spa_thread_utils_*` calls on a utils pointer.
public final class PipeWireThreadFactory: ThreadFactory, @unchecked Sendable {
    // SAFETY: owned by the context (or PipeWire's globals), which outlives the helper threads:
    // the node stops its scheduler before it destroys the context.
    private let utils: UnsafeMutablePointer<spa_thread_utils>

    /// `context`: the node's `pw_context` (its module-rt policy applies); nil: PipeWire's global utils.
    public init(context: OpaquePointer?) {
        let fromContext = context.flatMap { pw_context_get_object($0, "Spa:Pointer:Interface:ThreadUtils") }
        utils = fromContext.map { $0.assumingMemoryBound(to: spa_thread_utils.self) } ?? pw_thread_utils_get()
    }

    public func createThread(name: String, body: @escaping @Sendable () -> Void) throws(ThreadError) -> SpawnedThread {
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        let thread = spa_thread_utils_create(utils, nil, PipeWireCallbacks.threadStart, box)
        guard let thread else {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            throw .createFailed(name: name, errno: errno)
        }
        // PipeWire's `struct spa_thread *` is the pthread_t itself (pipewire/thread.c).
        return SpawnedThread(rawValue: UInt(bitPattern: Int(bitPattern: thread)))
    }

    /// The thread utils: a process has one context, hence one domain and one shared workgroup.
    public var domain: UInt { UInt(bitPattern: utils) }

    /// Returns 0 or an errno value (PipeWire returns negative errno).
    public func acquireRealtime(_ thread: SpawnedThread, priority: Int32) -> Int32 {
        let result = spa_thread_utils_acquire_rt(utils, spaThread(thread), priority)
        return result < 0 ? -result : 0
    }

    public func joinThread(_ thread: SpawnedThread) {
        _ = spa_thread_utils_join(utils, spaThread(thread), nil)
    }

    private func spaThread(_ thread: SpawnedThread) -> OpaquePointer {
        OpaquePointer(bitPattern: thread.rawValue)!
    }
}
