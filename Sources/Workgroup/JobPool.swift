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

/// Helper threads in one `Workgroup` serving K job queues (queue 0 = most urgent).
///
/// The posting thread records a job (sequence, start, deadline) in the queue's ring and signals the
/// workgroup. A woken helper claims the most urgent queue with pending work (an atomic flag, so one
/// queue's jobs run one at a time, in order), runs one job inside a workgroup interval with that
/// job's deadline, publishes it as completed (release) and posts the queue's done semaphore, then
/// looks again from the most urgent queue. Jobs are never dropped while the ring has room; a helper
/// that falls behind makes results late, not lost.
///
/// With `ThreadCount.perLevel`, helper `k` serves only queue `k`, woken by that queue's own
/// semaphore, at a priority falling with `k`.
///
/// Helpers keep the pool alive until `stop()`, which the owner must call.
public final class JobPool: @unchecked Sendable {
    public let workgroup: Workgroup
    public let queueCount: Int
    public let threadCount: Int
    /// One helper per queue (`ThreadCount.perLevel`).
    public let dedicatedHelpers: Bool
    /// Per queue: intervals, late finishes, margins, busy time of its jobs.
    public let queueStatistics: [IntervalStatistics]
    /// Whether every helper got SCHED_FIFO (false also when not requested).
    public private(set) var realtimeGranted = false

    private let queues: [JobQueue]
    // SAFETY: the runner owns the pool (a strong reference back would be a cycle) and stops it
    // (`stop()` joins every helper) before it is freed, so helpers never see a dangling runner.
    private unowned(unsafe) let runner: any JobRunner
    private let factory: any ThreadFactory
    private var threads: [SpawnedThread] = []

    public init(
        queueCount: Int, runner: any JobRunner, configuration: JobPoolConfiguration = .init(),
        factory: any ThreadFactory = PthreadThreadFactory()
    ) throws {
        precondition(queueCount >= 1 && configuration.queueCapacity >= 1)
        self.queueCount = queueCount
        self.runner = runner
        self.factory = factory
        threadCount = configuration.threadCount.resolved(levelCount: queueCount)
        dedicatedHelpers = configuration.threadCount == .perLevel
        workgroup = Workgroup(name: configuration.namePrefix)
        queues = try (0..<queueCount).map { _ in try JobQueue(capacity: configuration.queueCapacity) }
        queueStatistics = queues.map(\.statistics)
        do {
            try startThreads(configuration)
        } catch {
            stop()  // release the helpers already started; they hold the pool
            throw error
        }
    }

    private func startThreads(_ configuration: JobPoolConfiguration) throws(ThreadError) {
        let started = Semaphore()
        var refusal: Int32 = 0
        for index in 0..<threadCount {
            let name = String("\(configuration.namePrefix)-\(configuration.role)\(index)".utf8.prefix(15))!
            let thread = try factory.createThread(name: name) { [self] in
                nameCurrentThread(name)
                let token = try? workgroup.join()
                started.post()
                if dedicatedHelpers { dedicatedHelperLoop(queue: index) } else { helperLoop() }
                if let token { try? workgroup.leave(token) }
            }
            threads.append(thread)
            started.wait()
        }
        if let priority = configuration.realtimePriority {
            for (index, thread) in threads.enumerated() {
                let step = configuration.priorityStepPerQueue
                let result = factory.acquireRealtime(thread, priority: dedicatedHelpers ? max(priority - step * Int32(index), 1) : priority)
                if result != 0 { refusal = result }
            }
            realtimeGranted = refusal == 0
            if refusal != 0 {
                configuration.warn(
                    "real-time scheduling (SCHED_FIFO priority \(priority)) refused for "
                        + "helper threads '\(configuration.namePrefix)-\(configuration.role)*': \(String(cString: strerror(refusal))); "
                        + "they run at normal priority, late levels are more likely")
            }
        }
    }

    /// Helper thread: wait for work, drain the most urgent claimable queue job by job.
    private func helperLoop() {
        while workgroup.waitForWork() {
            runPendingJobs()
        }
    }

    /// Dedicated helper of one queue: wait on the queue's own semaphore, run its jobs in order.
    private func dedicatedHelperLoop(queue index: Int) {
        let queue = queues[index]
        while true {
            queue.work.wait()
            if workgroup.isCancelled { return }
            // The only helper of this queue: the claim never fails; kept for the shared code path.
            while queue.hasPending && queue.claim() {
                _ = runNextJob(of: queue, index: index)
                queue.release()
            }
        }
    }

    /// Real-time safe (helper threads): atomics, clock reads, the runner, sem_post.
    private func runPendingJobs() {
        scan: while true {
            for index in 0..<queueCount {
                let queue = queues[index]
                guard queue.hasPending, queue.claim() else { continue }
                let ran = runNextJob(of: queue, index: index)
                // Release, then rescan: a post that arrived while we held the claim is seen by
                // this rescan or by the helper its signal wakes (claim and counts are seq-cst).
                queue.release()
                if ran { continue scan }
            }
            return
        }
    }

    private func runNextJob(of queue: JobQueue, index: Int) -> Bool {
        let completed = queue.completed.load(ordering: .relaxed)
        guard completed < queue.posted.load(ordering: .sequentiallyConsistent) else { return false }
        let slot = completed % queue.capacity
        let start = queue.starts[slot], deadline = queue.deadlines[slot]
        let began = monotonicNanos()
        let inInterval = (try? workgroup.startInterval(start: start, deadline: deadline)) != nil
        runner.runJob(queue: index, sequence: queue.sequences[slot])
        if inInterval { _ = try? workgroup.finishInterval() }
        let finished = monotonicNanos()
        queue.statistics.record(
            marginNanos: Int64(bitPattern: deadline &- finished),
            busyNanos: Int64(bitPattern: finished &- began))
        queue.completed.store(completed + 1, ordering: .releasing)
        queue.done.post()
        return true
    }

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
        if dedicatedHelpers { queue.work.post() } else { workgroup.signalWork() }
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
        runner.runJob(queue: index, sequence: queue.sequences[slot])
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

    /// Cancels the workgroup and joins every helper: after return no job runs. Pending jobs are
    /// not run. Not real-time safe. Idempotent.
    public func stop() {
        workgroup.cancel()
        if dedicatedHelpers { for queue in queues { queue.work.post() } }
        for thread in threads { factory.joinThread(thread) }
        threads.removeAll()
    }
}

/// One queue's ring of jobs and its counters.
final class JobQueue: @unchecked Sendable {
    let capacity: Int
    /// Jobs posted (written by the posting thread only).
    let posted = Atomic<Int>(0)
    /// Jobs completed (written by the helper holding `claimed`).
    let completed = Atomic<Int>(0)
    let claimed = Atomic<Bool>(false)
    let lateResults = Atomic<Int>(0)
    let droppedJobs = Atomic<Int>(0)
    let takenBack = Atomic<Int>(0)
    let done = Semaphore()
    /// Wakes this queue's dedicated helper (`ThreadCount.perLevel` only).
    let work = Semaphore()
    let statistics = IntervalStatistics()
    // SAFETY: slot `i % capacity` is written by the posting thread before `posted` is published
    // past `i` (seq-cst store) and read by a helper after loading `posted`; `post` never reuses a
    // slot before `completed` passed it.
    let sequences: FixedBuffer<Int>
    let starts: FixedBuffer<UInt64>
    let deadlines: FixedBuffer<UInt64>

    init(capacity: Int) throws {
        self.capacity = capacity
        sequences = try FixedBuffer(repeating: 0, count: capacity)
        starts = try FixedBuffer(repeating: 0, count: capacity)
        deadlines = try FixedBuffer(repeating: 0, count: capacity)
    }

    var hasPending: Bool {
        posted.load(ordering: .sequentiallyConsistent) > completed.load(ordering: .relaxed)
    }

    func claim() -> Bool {
        claimed.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
    }

    func release() {
        claimed.store(false, ordering: .sequentiallyConsistent)
    }

    /// Post index of the newest job with `sequence` still in the ring (posting thread only).
    func postIndex(of sequence: Int) -> Int? {
        let posted = posted.load(ordering: .relaxed)
        var index = posted - 1
        while index >= 0 && index >= posted - capacity {
            if sequences[index % capacity] == sequence { return index }
            index -= 1
        }
        return nil
    }
}
