import FixedMemory
import Glibc
import Synchronization

/// Runs one job of the pool. Implemented by the user of the pool (ConvolverNode maps it to the
/// engine's level jobs). Real-time safe: called on helper threads.
public protocol JobRunner: AnyObject {
    /// Runs job `sequence` of queue `queue`. Jobs of one queue come one at a time, in post order.
    func runJob(queue: Int, sequence: Int)
}

public struct JobPoolConfiguration: Sendable {
    /// Thread name prefix; threads are `<prefix>-<role><index>` (≤ 15 bytes). Keep `swconv` so `ps -L`,
    /// `top -H` and the tests' allocation counter recognise them.
    public var namePrefix = "swconv"
    /// What the threads do, for their names: `helper` (level jobs), `split` (fork-join parts).
    public var role = "helper"
    /// With `threadCount = .perLevel`: how much lower each next queue's helper's priority is.
    public var priorityStepPerQueue: Int32 = 1
    public var threadCount: ThreadCount = .auto
    /// SCHED_FIFO priority of the helpers; nil: leave them at normal priority.
    /// Default 87: one below PipeWire's data thread (module-rt's default rt.prio 88).
    /// With `threadCount = .perLevel`, the helper of queue `k` gets this minus `k` (at least 1).
    public var realtimePriority: Int32? = 87
    /// Pending jobs per queue before `post` refuses one (counted in `droppedJobs`).
    public var queueCapacity = 256
    /// Where the single warning goes when real-time scheduling is refused.
    public var warn: @Sendable (String) -> Void = { message in
        fputs("swift-convolver: warning: \(message)\n", stderr)
    }

    public init() {}
}

/// A user's K job queues (queue 0 = its shortest level's), served by the helpers of a
/// `HelperGroup`: its own (`init(queueCount:runner:configuration:factory:)`) or the process's
/// (`ProcessWorkgroup`), where helpers take the job due first across every pool.
///
/// The posting thread records a job (sequence, start, deadline) in the queue's ring and signals the
/// group. Jobs are never dropped while the ring has room; a helper that falls behind makes
/// results late, not lost. The owner must call `stop()`.
public final class JobPool: @unchecked Sendable {
    public let group: HelperGroup
    public var workgroup: Workgroup { group.workgroup }
    public let queueCount: Int
    public var threadCount: Int { group.threadCount }
    public var dedicatedHelpers: Bool { group.dedicatedHelpers }
    /// Per queue: intervals, late finishes, margins, busy time of its jobs.
    public let queueStatistics: [IntervalStatistics]
    /// Every job of this pool (in a shared group the workgroup's statistics count every pool's).
    public let statistics = IntervalStatistics()
    public var realtimeGranted: Bool { group.realtimeGranted }
    /// Whether the group is the process's, shared with other pools (`ProcessWorkgroup`).
    public var isShared: Bool { leave != nil }

    private let queues: [JobQueue]
    /// Ends a shared membership (nil: the group is this pool's own, stopped with it).
    private let leave: ((JobPool) -> Void)?
    private var stopped = false

    /// A pool with a group of its own. `runner`: see `init(queueCount:runner:group:leave:)`.
    public convenience init(
        queueCount: Int, runner: any JobRunner, configuration: JobPoolConfiguration = .init(),
        factory: any ThreadFactory = PthreadThreadFactory()
    ) throws {
        let group = try HelperGroup(
            slotCount: queueCount, threadCount: configuration.threadCount.resolved(levelCount: queueCount),
            configuration: configuration, factory: factory)
        do {
            try self.init(queueCount: queueCount, runner: runner, group: group, leave: nil)
        } catch {
            group.stop()
            throw error
        }
    }

    /// A pool of `queueCount` slots of `group`. `runner` runs its jobs; its owner keeps it alive
    /// until `stop()` (the pool does not retain it: the runner usually owns the pool). `leave` is
    /// called by `stop()` after the queues were taken back (nil: `stop()` stops the group).
    public init(queueCount: Int, runner: any JobRunner, group: HelperGroup, leave: ((JobPool) -> Void)?) throws {
        precondition(queueCount >= 1)
        guard let queues = group.register(count: queueCount, runner: runner, poolStatistics: statistics) else {
            throw HelperGroupError.noFreeQueues(requested: queueCount)
        }
        self.group = group
        self.queueCount = queueCount
        self.queues = queues
        self.leave = leave
        queueStatistics = queues.map(\.statistics)
    }

    /// A pool dropped without `stop()` must not leave its queues to helpers that would call a freed runner.
    deinit { stop() }

    /// Records job `sequence` of `queue`, available since `start`, due at `deadline` (CLOCK_MONOTONIC
    /// ns), and wakes a helper. Returns false (and counts it in `droppedJobs`) only if the queue
    /// already holds `queueCapacity` unfinished jobs. One posting thread per pool.
    ///
    /// Real-time safe: atomics and one `sem_post`; never blocks.
    @discardableResult
    public func post(queue index: Int, sequence: Int, start: UInt64, deadline: UInt64) -> Bool {
        let queue = queues[index]
        let posted = queue.posted.load(ordering: .relaxed)
        if posted - queue.completed.load(ordering: .acquiring) >= queue.capacity {
            queue.droppedJobs.wrappingAdd(1, ordering: .relaxed)
            return false
        }
        let slot = posted % queue.capacity
        queue.sequences[slot] = sequence
        queue.starts[slot] = start
        queue.deadlines[slot] = max(deadline, start &+ 1)
        queue.posted.store(posted + 1, ordering: .sequentiallyConsistent)
        group.signal(queue)
        return true
    }

    /// Fork-join "take back": if no helper has claimed `queue` yet, the calling (posting) thread
    /// claims it and runs its next pending job itself, exactly as a helper would (outside any
    /// workgroup interval). Returns true when it ran one. A helper woken later finds nothing to do.
    /// For fork-join within a call: the poster waits for a helper only once that helper has
    /// actually started, never for its wake-up.
    ///
    /// Real-time safe: atomics and the runner (whose jobs are real-time safe).
    public func runUnclaimedJobOnCallingThread(queue index: Int) -> Bool {
        let queue = queues[index]
        guard queue.hasPending, queue.claim() else { return false }
        defer { queue.release() }
        let completed = queue.completed.load(ordering: .relaxed)
        guard completed < queue.posted.load(ordering: .sequentiallyConsistent) else { return false }
        let slot = completed % queue.capacity
        queue.runner?.runJob(queue: index, sequence: queue.sequences[slot])
        queue.completed.store(completed + 1, ordering: .releasing)
        queue.takenBack.wrappingAdd(1, ordering: .relaxed)
        return true
    }

    /// Jobs the posting thread ran itself (`runUnclaimedJobOnCallingThread`), per queue.
    public func takenBackJobs(queue index: Int) -> Int { queues[index].takenBack.load(ordering: .relaxed) }

    /// True when job `sequence` of `queue` has completed. Real-time safe, never blocks.
    public func isCompleted(queue index: Int, sequence: Int) -> Bool {
        let queue = queues[index]
        guard let postIndex = queue.postIndex(of: sequence) else { return false }
        return queue.completed.load(ordering: .acquiring) > postIndex
    }

    /// Waits until job `sequence` of `queue` completed or `limit` (CLOCK_MONOTONIC ns; `.max`: no
    /// limit) passed. Returns true when completed; false counts a late result for that queue (the
    /// job still runs later). Called from the posting thread.
    ///
    /// Real-time safe: atomics, sem_trywait / sem_timedwait, clock_gettime; bounded by `limit`.
    public func awaitCompletion(queue index: Int, sequence: Int, until limit: UInt64) -> Bool {
        let queue = queues[index]
        guard let postIndex = queue.postIndex(of: sequence) else {
            queue.lateResults.wrappingAdd(1, ordering: .relaxed)
            return false
        }
        while true {
            if queue.completed.load(ordering: .acquiring) > postIndex {
                // Drop wake-ups of completions already seen, so the count stays bounded; a later
                // completion posts again after our next check.
                while queue.done.tryWait() {}
                return true
            }
            if !queue.done.wait(untilMonotonic: limit) {
                if queue.completed.load(ordering: .acquiring) > postIndex { return true }
                queue.lateResults.wrappingAdd(1, ordering: .relaxed)
                return false
            }
        }
    }

    /// Results the posting thread gave up on, per queue.
    public func lateResults(queue index: Int) -> Int { queues[index].lateResults.load(ordering: .relaxed) }
    /// Jobs refused because the queue was full, per queue.
    public func droppedJobs(queue index: Int) -> Int { queues[index].droppedJobs.load(ordering: .relaxed) }
    /// Jobs posted and not yet completed, per queue.
    public func pendingJobs(queue index: Int) -> Int {
        queues[index].posted.load(ordering: .sequentiallyConsistent) - queues[index].completed.load(ordering: .acquiring)
    }

    /// Waits until every posted job has completed (offline drains, tests). Not real-time safe:
    /// polls every 100 µs.
    public func waitUntilIdle() {
        while (0..<queueCount).contains(where: { pendingJobs(queue: $0) > 0 }) { usleep(100) }
    }

    /// Takes the queues back (a job in progress is waited for; pending ones do not run), then
    /// stops its own group or leaves the shared one. Not real-time safe. Idempotent.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        group.unregister(queues)
        if let leave { leave(self) } else { group.stop() }
    }
}

public enum HelperGroupError: Error, CustomStringConvertible {
    case noFreeQueues(requested: Int)

    public var description: String {
        switch self {
        case .noFreeQueues(let requested): "the helper group has fewer than \(requested) free job queues"
        }
    }
}
