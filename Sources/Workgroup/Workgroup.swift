import Glibc
import Synchronization

/// Why a workgroup call failed. Mirrors the errno values of `os_workgroup_join` & co.
public enum WorkgroupError: Error, Equatable, CustomStringConvertible {
    /// The calling thread is already a member of a workgroup (os_workgroup_join's EALREADY).
    case alreadyInWorkgroup(requested: String, current: String)
    /// The workgroup was cancelled (os_workgroup_join's EINVAL).
    case cancelled(workgroup: String)
    /// `leave` with a token that is not the calling thread's membership of this workgroup.
    case wrongToken(workgroup: String)
    /// An interval call from a thread that is not a member of this workgroup.
    case notAMember(workgroup: String)
    /// `startInterval` with a deadline that is not after the start.
    case deadlineNotAfterStart(workgroup: String, start: UInt64, deadline: UInt64)
    /// `finishInterval` without a started interval.
    case noIntervalStarted(workgroup: String)

    public var description: String {
        switch self {
        case let .alreadyInWorkgroup(requested, current):
            "cannot join workgroup '\(requested)': this thread is already in workgroup '\(current)'"
        case let .cancelled(workgroup):
            "workgroup '\(workgroup)' was cancelled"
        case let .wrongToken(workgroup):
            "cannot leave workgroup '\(workgroup)': the token is not this thread's membership"
        case let .notAMember(workgroup):
            "this thread is not a member of workgroup '\(workgroup)'"
        case let .deadlineNotAfterStart(workgroup, start, deadline):
            "workgroup '\(workgroup)': interval deadline \(deadline) ns is not after its start \(start) ns"
        case let .noIntervalStarted(workgroup):
            "workgroup '\(workgroup)': finishInterval without a started interval"
        }
    }
}

/// Proof of one thread's membership, returned by `join` and given back to `leave`.
public struct WorkgroupJoinToken: Sendable, Equatable {
    let workgroupIdentifier: UInt64
    let membershipIdentifier: UInt64
}

/// A group of threads that work for one real-time deadline chain: the Linux analog of Apple's
/// `os_workgroup_interval` (`AudioWorkIntervalCreate`).
///
/// Threads `join` it (one workgroup per thread at a time), wait for work with `waitForWork`, and
/// bracket each piece of work with `startInterval(start:deadline:)` / `finishInterval()`, which
/// record the margin to the deadline. `cancel()` wakes and releases every member. Statistics are
/// readable at any time without locks.
public final class Workgroup: @unchecked Sendable {
    public let name: String
    /// Every finished interval of every member.
    public let statistics = IntervalStatistics()

    private let identifier: UInt64
    private let cancelledFlag = Atomic<Bool>(false)
    private let memberCount = Atomic<Int>(0)
    private let workAvailable = Semaphore()

    private static let nextIdentifier = Atomic<UInt64>(1)

    public init(name: String) {
        self.name = name
        identifier = Self.nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    public var isCancelled: Bool { cancelledFlag.load(ordering: .sequentiallyConsistent) }
    public var members: Int { memberCount.load(ordering: .relaxed) }

    /// Makes the calling thread a member. Fails when the thread is already in a workgroup (this
    /// or another) or when this workgroup was cancelled. Not real-time safe (allocates once).
    public func join() throws(WorkgroupError) -> WorkgroupJoinToken {
        if let current = Membership.current {
            throw .alreadyInWorkgroup(requested: name, current: current.workgroup.name)
        }
        // Count first, then check: `cancel` sets the flag, then reads the count, so either this
        // join sees the flag or `cancel` sees this member (sequentially consistent).
        memberCount.wrappingAdd(1, ordering: .sequentiallyConsistent)
        if cancelledFlag.load(ordering: .sequentiallyConsistent) {
            memberCount.wrappingSubtract(1, ordering: .sequentiallyConsistent)
            throw .cancelled(workgroup: name)
        }
        let membershipIdentifier = Self.nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
        Membership.current = Membership(workgroup: self, identifier: membershipIdentifier)
        return WorkgroupJoinToken(workgroupIdentifier: identifier, membershipIdentifier: membershipIdentifier)
    }

    /// Ends the calling thread's membership. Works after `cancel()` too (that is how members are
    /// released). Fails with `.wrongToken` unless `token` is this thread's membership of this workgroup.
    public func leave(_ token: WorkgroupJoinToken) throws(WorkgroupError) {
        guard let current = Membership.current, current.workgroup === self,
            token.workgroupIdentifier == identifier,
            token.membershipIdentifier == current.identifier
        else { throw .wrongToken(workgroup: name) }
        Membership.current = nil
        memberCount.wrappingSubtract(1, ordering: .sequentiallyConsistent)
    }

    /// Wakes one member waiting in `waitForWork`. Real-time safe: one `sem_post`.
    @inline(__always)
    public func signalWork() {
        workAvailable.post()
    }

    /// Blocks the calling member until `signalWork()` or `cancel()`. Returns false once the
    /// workgroup is cancelled (the member should then `leave`). Helpers' idle point.
    public func waitForWork() -> Bool {
        if cancelledFlag.load(ordering: .sequentiallyConsistent) { return false }
        workAvailable.wait()
        return !cancelledFlag.load(ordering: .sequentiallyConsistent)
    }

    /// Marks the workgroup cancelled: every member waiting in `waitForWork` wakes and gets false,
    /// later `join`s and intervals fail with `.cancelled`. Members still `leave` afterwards.
    /// As `waitForWork()`, but waits at most until `limit` (CLOCK_MONOTONIC ns): false also when
    /// the wait timed out.
    public func waitForWork(untilMonotonic limit: UInt64) -> Bool {
        if cancelledFlag.load(ordering: .sequentiallyConsistent) { return false }
        let woken = workAvailable.wait(untilMonotonic: limit)
        return woken && !cancelledFlag.load(ordering: .sequentiallyConsistent)
    }

    public func cancel() {
        if cancelledFlag.exchange(true, ordering: .sequentiallyConsistent) { return }
        // One wake per member: each member waits at most once more before it sees the flag.
        for _ in 0..<max(memberCount.load(ordering: .sequentiallyConsistent), 0) {
            workAvailable.post()
        }
    }

    /// Starts a work interval on the calling member: work became available at `start` and must be
    /// finished by `deadline` (both CLOCK_MONOTONIC ns, see `monotonicNanos()`).
    ///
    /// Real-time safe: one `clock_gettime`, a thread-specific read, no allocation.
    public func startInterval(start: UInt64, deadline: UInt64) throws(WorkgroupError) {
        guard deadline > start else {
            throw .deadlineNotAfterStart(workgroup: name, start: start, deadline: deadline)
        }
        guard let member = Membership.current, member.workgroup === self else {
            throw .notAMember(workgroup: name)
        }
        if cancelledFlag.load(ordering: .relaxed) { throw .cancelled(workgroup: name) }
        member.intervalStart = start
        member.intervalDeadline = deadline
        member.workBegan = monotonicNanos()
        member.inInterval = true
    }

    /// Finishes the calling member's interval; records margin = deadline − now (late if negative)
    /// and busy time (work begin to now). Returns the margin in ns.
    ///
    /// Real-time safe: one `clock_gettime`, relaxed atomics, no allocation.
    @discardableResult
    public func finishInterval() throws(WorkgroupError) -> Int64 {
        guard let member = Membership.current, member.workgroup === self else {
            throw .notAMember(workgroup: name)
        }
        guard member.inInterval else { throw .noIntervalStarted(workgroup: name) }
        member.inInterval = false
        let finished = monotonicNanos()
        let margin = Int64(bitPattern: member.intervalDeadline &- finished)
        let busy = Int64(bitPattern: finished &- member.workBegan)
        statistics.record(marginNanos: margin, busyNanos: busy)
        return margin
    }
}

/// The calling thread's membership, kept in a pthread thread-specific slot (Swift has no
/// thread-local storage on Linux). Fields are only touched by the member thread itself.
final class Membership {
    unowned let workgroup: Workgroup
    let identifier: UInt64
    var intervalStart: UInt64 = 0
    var intervalDeadline: UInt64 = 0
    var workBegan: UInt64 = 0
    var inInterval = false

    init(workgroup: Workgroup, identifier: UInt64) {
        self.workgroup = workgroup
        self.identifier = identifier
    }

    /// The slot; its destructor drops the membership of a thread that exits without leaving.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { value in
            if let value { Unmanaged<Membership>.fromOpaque(value).release() }
        }
        return key
    }()

    /// Real-time safe to read: `pthread_getspecific` and no retain beyond the caller's use.
    static var current: Membership? {
        get {
            guard let value = pthread_getspecific(key) else { return nil }
            return Unmanaged<Membership>.fromOpaque(value).takeUnretainedValue()
        }
        set {
            if let old = pthread_getspecific(key) { Unmanaged<Membership>.fromOpaque(old).release() }
            pthread_setspecific(key, newValue.map { Unmanaged.passRetained($0).toOpaque() })
        }
    }
}
