import CConvolverShims
import CPipeWire
import Glibc
import Workgroup

/// Helper threads made through PipeWire's thread utilities (`pw_thread_utils_create` /
/// `pw_thread_utils_acquire_rt`), so PipeWire's real-time policy applies: module-rt gives
/// SCHED_FIFO directly or through RTKit / the realtime portal, within its `rt.prio` limits.
///
/// Use it when a `pw_context` exists (module-rt installs its thread utils into the context's
/// global at load); without a context use `PthreadThreadFactory`.
/// The C macros are static inline `spa_thread_utils_*` calls on `pw_thread_utils_get()`.
public final class PipeWireThreadFactory: ThreadFactory, @unchecked Sendable {
    public init() {}

    public func createThread(name: String, body: @escaping @Sendable () -> Void) throws(ThreadError) -> SpawnedThread {
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        let thread = spa_thread_utils_create(pw_thread_utils_get(), nil, { argument in
            // SAFETY: `argument` is the retained ThreadBody passed below; released here, once.
            let body = Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue()
            body.run()
            return nil
        }, box)
        guard let thread else {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            throw .createFailed(name: name, errno: errno)
        }
        // PipeWire's `struct spa_thread *` is the pthread_t itself (pipewire/thread.c).
        return SpawnedThread(rawValue: UInt(bitPattern: Int(bitPattern: thread)))
    }

    /// Returns 0 or an errno value (PipeWire returns negative errno).
    public func acquireRealtime(_ thread: SpawnedThread, priority: Int32) -> Int32 {
        let result = spa_thread_utils_acquire_rt(pw_thread_utils_get(), spaThread(thread), priority)
        return result < 0 ? -result : 0
    }

    public func joinThread(_ thread: SpawnedThread) {
        _ = spa_thread_utils_join(pw_thread_utils_get(), spaThread(thread), nil)
    }

    private func spaThread(_ thread: SpawnedThread) -> OpaquePointer {
        OpaquePointer(bitPattern: thread.rawValue)!
    }
}

/// SCHED_DEADLINE for helper threads through the C shim (`sched_setattr` has no glibc 2.36 wrapper).
/// `period` is the shortest level's block period; the helper may use `runtimeFraction` of it.
public func helperDeadlineScheduling(periodNanos: UInt64, runtimeFraction: Double) -> DeadlineScheduling {
    let runtime = UInt64(Double(periodNanos) * min(max(runtimeFraction, 0.01), 0.95))
    return DeadlineScheduling(runtimeNanos: runtime, deadlineNanos: periodNanos, periodNanos: periodNanos,
                              apply: { runtime, deadline, period in
                                  swconv_set_deadline_scheduling(runtime, deadline, period)
                              })
}
