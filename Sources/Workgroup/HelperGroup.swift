import Glibc
import Synchronization

/// Helper threads in one `Workgroup` serving fixed slots of job queues, which `JobPool`s hold
/// while registered: one pool (a private group) or every pool of the process (`ProcessWorkgroup`).
///
/// A woken helper claims, among the registered queues with pending work, the one whose next job
/// is due first (earliest deadline first, whichever pool posted it), runs that one job inside a
/// workgroup interval with its deadline, publishes it as completed (release), posts the queue's
/// done semaphore, and looks again. A queue's jobs run one at a time, in order (its claim).
///
/// With `ThreadCount.perLevel`, helper `k` serves only slot `k`, woken by that queue's own
/// semaphore, at a priority falling with `k`.
public final class HelperGroup: @unchecked Sendable {
    public let workgroup: Workgroup
    /// One helper per slot (`ThreadCount.perLevel`).
    public let dedicatedHelpers: Bool
    let slots: [JobQueue]
    /// Time the helpers spent running jobs, every pool's, ns (a load is its growth over threads × time).
    public let busyNanos = Atomic<Int64>(0)

    private let configuration: JobPoolConfiguration
    private let factory: any ThreadFactory
    /// Slots `0..<scanLimit` may be registered: a helper's scan ends there.
    private let scanLimit = Atomic<Int>(0)
    /// Helpers with an index at or above this leave (the group shrinks).
    private let threadLimit = Atomic<Int>(0)
    private let exitedHelpers = Atomic<Int>(0)
    private let realtimeRefused = Atomic<Bool>(false)
    /// Which slots a pool holds, and the helpers (registration and resizing: any non-real-time thread).
    private let state = Mutex<(taken: [Bool], threads: [SpawnedThread])>(([], []))

    /// `slotCount` queues of `configuration.queueCapacity` jobs; `threadCount` helpers (a
    /// `perLevel` group has one per slot).
    public init(
        slotCount: Int, threadCount: Int, configuration: JobPoolConfiguration, factory: any ThreadFactory
    ) throws {
        precondition(slotCount >= 1 && configuration.queueCapacity >= 1)
        self.configuration = configuration
        self.factory = factory
        dedicatedHelpers = configuration.threadCount == .perLevel
        workgroup = Workgroup(name: configuration.namePrefix)
        slots = try (0..<slotCount).map { _ in try JobQueue(capacity: configuration.queueCapacity) }
        state.withLock { $0.taken = Array(repeating: false, count: slotCount) }
        do {
            try resize(threadCount: dedicatedHelpers ? slotCount : threadCount)
        } catch {
            stop()  // release the helpers already started
            throw error
        }
    }

    /// Helper threads now.
    public var threadCount: Int { threadLimit.load(ordering: .relaxed) }
    /// Whether every helper got SCHED_FIFO (false also when not requested).
    public var realtimeGranted: Bool { configuration.realtimePriority != nil && !realtimeRefused.load(ordering: .relaxed) }

    /// Gives `count` free slots to a pool whose `runner` runs their jobs; nil when fewer are free.
    func register(count: Int, runner: any JobRunner, poolStatistics: IntervalStatistics) -> [JobQueue]? {
        state.withLock { state -> [JobQueue]? in
            let free = state.taken.indices.filter { !state.taken[$0] }.prefix(count)
            guard free.count == count else { return nil }
            for (queue, slot) in free.enumerated() {
                state.taken[slot] = true
                if slot >= scanLimit.load(ordering: .relaxed) { scanLimit.store(slot + 1, ordering: .sequentiallyConsistent) }
                slots[slot].register(runner: runner, queue: queue, poolStatistics: poolStatistics)
            }
            return free.map { slots[$0] }
        }
    }

    /// Takes `queues` back from their pool; after return none of their jobs runs.
    func unregister(_ queues: [JobQueue]) {
        for queue in queues { queue.unregister() }
        state.withLock { state in
            for queue in queues {
                if let slot = slots.firstIndex(where: { $0 === queue }) { state.taken[slot] = false }
            }
        }
    }

    /// Starts or ends helpers until there are `threadCount` (at least 1). A helper ends after its
    /// job in progress.
    public func resize(threadCount wanted: Int) throws(ThreadError) {
        let wanted = max(wanted, 1)
        try state.withLock { state throws(ThreadError) in
            let current = state.threads.count
            if wanted < current {
                threadLimit.store(wanted, ordering: .sequentiallyConsistent)
                let target = exitedHelpers.load(ordering: .sequentiallyConsistent) + current - wanted
                while exitedHelpers.load(ordering: .sequentiallyConsistent) < target { usleep(1000) }
                for thread in state.threads[wanted...] { factory.joinThread(thread) }
                state.threads.removeLast(current - wanted)
                workgroup.signalWork()  // a post the leavers took may have been for work
            } else if wanted > current {
                threadLimit.store(wanted, ordering: .sequentiallyConsistent)
                for index in current..<wanted { state.threads.append(try startHelper(index)) }
            }
        }
    }

    private func startHelper(_ index: Int) throws(ThreadError) -> SpawnedThread {
        let name = String("\(configuration.namePrefix)-\(configuration.role)\(index)".utf8.prefix(15))!
        let started = Semaphore()
        let thread = try factory.createThread(name: name) { [self] in
            nameCurrentThread(name)
            let token = try? workgroup.join()
            started.post()
            if dedicatedHelpers { dedicatedHelperLoop(slot: index) } else { helperLoop(index: index) }
            if let token { try? workgroup.leave(token) }
            exitedHelpers.wrappingAdd(1, ordering: .sequentiallyConsistent)
        }
        started.wait()
        if let priority = configuration.realtimePriority {
            let step = configuration.priorityStepPerQueue
            let result = factory.acquireRealtime(thread, priority: dedicatedHelpers ? max(priority - step * Int32(index), 1) : priority)
            if result != 0 && !realtimeRefused.exchange(true, ordering: .relaxed) {
                configuration.warn(
                    "real-time scheduling (SCHED_FIFO priority \(priority)) refused for "
                        + "helper threads '\(configuration.namePrefix)-\(configuration.role)*': \(String(cString: strerror(result))); "
                        + "they run at normal priority, late levels are more likely")
            }
        }
        return thread
    }

    /// Helper thread: wait for work, run the job due first until none is pending. The wait is
    /// bounded so that a helper the group no longer wants sees it: which waiter a post wakes is
    /// the kernel's choice (the highest priority), so posts alone could keep waking another.
    private func helperLoop(index: Int) {
        while !workgroup.isCancelled {
            let woken = workgroup.waitForWork(untilMonotonic: monotonicNanos() &+ 100_000_000)
            if index >= threadLimit.load(ordering: .sequentiallyConsistent) { return }
            if woken { runPendingJobs() }
        }
    }

    /// Dedicated helper of one slot: wait on the queue's own semaphore, run its jobs in order.
    private func dedicatedHelperLoop(slot: Int) {
        let queue = slots[slot]
        while true {
            queue.work.wait()
            if workgroup.isCancelled { return }
            while queue.hasPending && queue.claim() {
                if queue.registered.load(ordering: .sequentiallyConsistent) { _ = runNextJob(of: queue) }
                queue.release()
            }
        }
    }

    /// Real-time safe (helper threads): atomics, clock reads, the runners, sem_post.
    private func runPendingJobs() {
        while let queue = claimEarliestDue() {
            // Re-checked under the claim: an unregistering pool may have just cleared it.
            if queue.registered.load(ordering: .sequentiallyConsistent) { _ = runNextJob(of: queue) }
            // Release, then look again: a post that arrived while we held the claim is seen by
            // the next scan or by the helper its signal wakes (claim and counts are seq-cst).
            queue.release()
        }
    }

    /// Claims the registered, unclaimed queue whose next job is due first; nil when none is pending.
    private func claimEarliestDue() -> JobQueue? {
        while true {
            var earliest = -1
            var earliestDeadline = UInt64.max
            for slot in 0..<scanLimit.load(ordering: .sequentiallyConsistent) {
                let queue = slots[slot]
                guard queue.registered.load(ordering: .relaxed), queue.hasPending,
                    !queue.claimed.load(ordering: .relaxed)
                else { continue }
                let deadline = queue.nextDeadline
                if earliest < 0 || deadline < earliestDeadline {
                    earliest = slot
                    earliestDeadline = deadline
                }
            }
            guard earliest >= 0 else { return nil }
            if slots[earliest].claim() { return slots[earliest] }
            // Another helper took it between the scan and the claim: scan again.
        }
    }

    private func runNextJob(of queue: JobQueue) -> Bool {
        let completed = queue.completed.load(ordering: .relaxed)
        guard completed < queue.posted.load(ordering: .sequentiallyConsistent) else { return false }
        let slot = completed % queue.capacity
        let start = queue.starts[slot], deadline = queue.deadlines[slot]
        let began = monotonicNanos()
        let inInterval = (try? workgroup.startInterval(start: start, deadline: deadline)) != nil
        queue.runner?.runJob(queue: queue.runnerQueue, sequence: queue.sequences[slot])
        if inInterval { _ = try? workgroup.finishInterval() }
        let finished = monotonicNanos()
        let margin = Int64(bitPattern: deadline &- finished), busy = Int64(bitPattern: finished &- began)
        queue.statistics.record(marginNanos: margin, busyNanos: busy)
        queue.poolStatistics.record(marginNanos: margin, busyNanos: busy)
        busyNanos.wrappingAdd(busy, ordering: .relaxed)
        queue.completed.store(completed + 1, ordering: .releasing)
        queue.done.post()
        return true
    }

    /// Wakes the helper that serves `queue`. Real-time safe: one `sem_post`.
    @inline(__always)
    func signal(_ queue: JobQueue) {
        if dedicatedHelpers { queue.work.post() } else { workgroup.signalWork() }
    }

    /// Cancels the workgroup and joins every helper: after return no job runs. Pending jobs are
    /// not run. Not real-time safe. Idempotent.
    public func stop() {
        workgroup.cancel()
        if dedicatedHelpers { for queue in slots { queue.work.post() } }
        let threads = state.withLock { state in
            defer { state.threads.removeAll() }
            return state.threads
        }
        for thread in threads { factory.joinThread(thread) }
    }
}
