import Glibc

/// Time on the monotonic clock (CLOCK_MONOTONIC), in nanoseconds: the time base of every
/// interval start and deadline in this target.
///
/// Real-time safe: `clock_gettime` is a vDSO call.
@inline(__always)
public func monotonicNanos() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID), in nanoseconds: what a call
/// spent working, without the time it was preempted or slept.
///
/// Real-time safe: one `clock_gettime` (a system call for this clock, no allocation, no lock).
@inline(__always)
public func threadCPUNanos() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// The CLOCK_REALTIME `timespec` that corresponds to the monotonic time `monotonicDeadline`.
/// glibc 2.36 (Debian 12) does not export `sem_clockwait` to Swift, and `sem_timedwait` only
/// takes CLOCK_REALTIME, so the wait limit is carried over by the offset between the two clocks.
///
/// Real-time safe: two vDSO calls.
@inline(__always)
func realtimeTimespec(forMonotonic monotonicDeadline: UInt64) -> timespec {
    var realNow = timespec()
    clock_gettime(CLOCK_REALTIME, &realNow)
    let monotonicNow = monotonicNanos()
    let remaining = monotonicDeadline > monotonicNow ? monotonicDeadline - monotonicNow : 0
    // Clamp to a day: `.max` means "wait for completion" and must not overflow time_t.
    let clamped = min(remaining, 86_400 * 1_000_000_000)
    let nanos = UInt64(realNow.tv_nsec) + clamped % 1_000_000_000
    return timespec(
        tv_sec: realNow.tv_sec + Int(clamped / 1_000_000_000) + Int(nanos / 1_000_000_000),
        tv_nsec: Int(nanos % 1_000_000_000))
}
