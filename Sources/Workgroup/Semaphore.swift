import Glibc

/// A POSIX unnamed semaphore (`sem_t`) between threads of this process.
///
/// The `sem_t` is heap allocated once, at init, so its address never moves (a `sem_t` must not be
/// copied or moved while in use, which a Swift stored property would not guarantee).
public final class Semaphore: @unchecked Sendable {
    // SAFETY: allocated and initialised in init, destroyed in deinit; sem_* calls are thread-safe.
    private let semaphore: UnsafeMutablePointer<sem_t>

    public init(value: UInt32 = 0) {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, value)
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// Real-time safe: `sem_post` (a futex wake only when a thread waits).
    @inline(__always)
    public func post() {
        sem_post(semaphore)
    }

    /// Blocks until the count is positive, then decrements it. Not for the data thread.
    public func wait() {
        while sem_wait(semaphore) != 0 && errno == EINTR {}
    }

    /// Real-time safe: decrements the count if positive; never blocks.
    @inline(__always)
    public func tryWait() -> Bool {
        sem_trywait(semaphore) == 0
    }

    /// Waits at most until `monotonicDeadline` (CLOCK_MONOTONIC ns). Returns false on timeout.
    /// `UInt64.max` waits (in practice) without limit.
    ///
    /// Real-time safe: `sem_trywait`, `sem_timedwait` and `clock_gettime` only; the wait is bounded.
    public func wait(untilMonotonic monotonicDeadline: UInt64) -> Bool {
        if sem_trywait(semaphore) == 0 { return true }
        var limit = realtimeTimespec(forMonotonic: monotonicDeadline)
        while true {
            if sem_timedwait(semaphore, &limit) == 0 { return true }
            if errno != EINTR { return false }
        }
    }
}
