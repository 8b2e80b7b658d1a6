import AllocationCounter
import Foundation
import Glibc
import Synchronization
import Workgroup
import XCTest

/// The pool's test hook: records which jobs ran, in what order, how many at once per queue, and
/// sleeps for chosen jobs (injected delays). Memory is allocated up front so recording allocates
/// nothing on helper threads.
final class RecordingRunner: JobRunner, @unchecked Sendable {
    let queueCount: Int
    let capacity: Int
    /// queueCount × capacity sequences, in the order they ran.
    let ranSequences: UnsafeMutablePointer<Int>
    let ranCounts: UnsafeMutablePointer<Atomic<Int>>
    let activeJobs: UnsafeMutablePointer<Atomic<Int>>
    /// SCHED_FIFO priority (or 0) of the helper that ran each queue's first job; -1 before.
    let priorityByQueue: UnsafeMutablePointer<Atomic<Int>>
    let overlaps = Atomic<Int>(0)
    /// Microseconds to sleep in job (queue, sequence); read-only once jobs run.
    var injectedDelays: [Int: UInt32] = [:]
    /// Control for the allocation test: jobs allocate, to show helper threads are watched.
    let allocateInJobs = Atomic<Bool>(false)
    /// Scheduling seen by the helper that ran the first job (policy, priority).
    let firstJobPolicy = Atomic<Int>(-1), firstJobPriority = Atomic<Int>(-1)

    init(queueCount: Int, capacity: Int) {
        self.queueCount = queueCount
        self.capacity = capacity
        ranSequences = .allocate(capacity: queueCount * capacity)
        ranCounts = .allocate(capacity: queueCount)
        activeJobs = .allocate(capacity: queueCount)
        priorityByQueue = .allocate(capacity: queueCount)
        for queue in 0..<queueCount {
            (ranCounts + queue).initialize(to: Atomic(0))
            (activeJobs + queue).initialize(to: Atomic(0))
            (priorityByQueue + queue).initialize(to: Atomic(-1))
        }
    }

    static func key(queue: Int, sequence: Int) -> Int { queue << 32 | sequence }

    func runJob(queue: Int, sequence: Int) {
        if activeJobs[queue].wrappingAdd(1, ordering: .sequentiallyConsistent).newValue > 1 {
            overlaps.wrappingAdd(1, ordering: .relaxed)
        }
        if priorityByQueue[queue].load(ordering: .relaxed) < 0 {
            priorityByQueue[queue].store(Int(currentThreadScheduling().priority), ordering: .relaxed)
        }
        if firstJobPolicy.load(ordering: .relaxed) < 0 {
            let scheduling = currentThreadScheduling()
            firstJobPriority.store(Int(scheduling.priority), ordering: .relaxed)
            firstJobPolicy.store(Int(scheduling.policy), ordering: .relaxed)
        }
        if !injectedDelays.isEmpty, let delay = injectedDelays[Self.key(queue: queue, sequence: sequence)] {
            usleep(delay)
        }
        if allocateInJobs.load(ordering: .relaxed) {
            let scratch = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
            scratch.deallocate()
        }
        let count = ranCounts[queue].load(ordering: .relaxed)
        ranSequences[queue * capacity + count % capacity] = sequence
        ranCounts[queue].store(count + 1, ordering: .relaxed)
        activeJobs[queue].wrappingSubtract(1, ordering: .sequentiallyConsistent)
    }

    func ran(queue: Int) -> [Int] {
        (0..<ranCounts[queue].load(ordering: .acquiring)).map { ranSequences[queue * capacity + $0] }
    }
}

final class JobPoolTests: XCTestCase {
    func makePool(
        queues: Int, runner: RecordingRunner, threads: Int = 2,
        warnings: ThreadSafeBox<[String]>? = nil, priority: Int32? = 10
    ) throws -> JobPool {
        var configuration = JobPoolConfiguration()
        configuration.threadCount = .fixed(threads)
        configuration.realtimePriority = priority
        if let warnings { configuration.warn = { message in warnings.update { ($0 ?? []) + [message] } } }
        return try JobPool(queueCount: queues, runner: runner, configuration: configuration)
    }

    func testEveryJobRunsOnceInOrderAndOneAtATimePerQueue() throws {
        let queueCount = 4, jobsPerQueue = 300
        let runner = RecordingRunner(queueCount: queueCount, capacity: jobsPerQueue)
        let pool = try makePool(queues: queueCount, runner: runner, threads: 3)
        defer { pool.stop() }
        var generator = SystemRandomNumberGenerator()
        var nextSequence = [Int](repeating: 0, count: queueCount)
        // Interleaved posts, in bursts, awaiting only now and then: jobs pile up and helpers race.
        while nextSequence.contains(where: { $0 < jobsPerQueue }) {
            let queue = Int.random(in: 0..<queueCount, using: &generator)
            guard nextSequence[queue] < jobsPerQueue else { continue }
            let now = monotonicNanos()
            XCTAssertTrue(pool.post(queue: queue, sequence: nextSequence[queue], start: now, deadline: now + 1_000_000_000))
            if Int.random(in: 0..<8, using: &generator) == 0 {
                XCTAssertTrue(pool.awaitCompletion(queue: queue, sequence: nextSequence[queue], until: .max))
            }
            nextSequence[queue] += 1
        }
        for queue in 0..<queueCount {
            XCTAssertTrue(pool.awaitCompletion(queue: queue, sequence: jobsPerQueue - 1, until: .max))
            XCTAssertEqual(runner.ran(queue: queue), Array(0..<jobsPerQueue), "queue \(queue)")
            XCTAssertEqual(pool.pendingJobs(queue: queue), 0)
            XCTAssertEqual(pool.queueStatistics[queue].intervals.load(ordering: .relaxed), jobsPerQueue)
        }
        XCTAssertEqual(runner.overlaps.load(ordering: .relaxed), 0, "two jobs of one queue ran at once")
        XCTAssertEqual(pool.workgroup.statistics.intervals.load(ordering: .relaxed), queueCount * jobsPerQueue)
        XCTAssertEqual(pool.workgroup.members, 3)
        pool.stop()
        XCTAssertEqual(pool.workgroup.members, 0, "stop() releases every helper")
    }

    func testShortWaitLimitsUnderContentionStrandNoJob() throws {
        // Many tiny waits that often give up: every job still runs once, in order, and the pool
        // never stalls with work pending (a stranded job would leave pendingJobs > 0 forever).
        let queueCount = 3, jobsPerQueue = 4000
        let runner = RecordingRunner(queueCount: queueCount, capacity: jobsPerQueue)
        for queue in 0..<queueCount {  // every 7th job takes 100 µs: waits of 0-20 µs give up on it
            for sequence in stride(from: queue, to: jobsPerQueue, by: 7) {
                runner.injectedDelays[RecordingRunner.key(queue: queue, sequence: sequence)] = 100
            }
        }
        let pool = try makePool(queues: queueCount, runner: runner, threads: 2, priority: nil)
        defer { pool.stop() }
        var generator = SystemRandomNumberGenerator()
        var gaveUp = [Int](repeating: 0, count: queueCount)
        for sequence in 0..<jobsPerQueue {
            for queue in 0..<queueCount {
                let now = monotonicNanos()
                XCTAssertTrue(pool.post(queue: queue, sequence: sequence, start: now, deadline: now + 1_000_000))
                if !pool.awaitCompletion(
                    queue: queue, sequence: sequence,
                    until: now + UInt64.random(in: 0...20_000, using: &generator))
                {
                    gaveUp[queue] += 1
                }
            }
            if pool.pendingJobs(queue: 0) > 100 { pool.waitUntilIdle() }
        }
        let limit = monotonicNanos() + 20_000_000_000
        while (0..<queueCount).contains(where: { pool.pendingJobs(queue: $0) > 0 }) && monotonicNanos() < limit {
            usleep(1000)
        }
        for queue in 0..<queueCount {
            XCTAssertEqual(pool.pendingJobs(queue: queue), 0, "queue \(queue) stalled with work pending")
            XCTAssertEqual(runner.ran(queue: queue), Array(0..<jobsPerQueue), "queue \(queue)")
            XCTAssertEqual(pool.lateResults(queue: queue), gaveUp[queue])
            XCTAssertEqual(pool.droppedJobs(queue: queue), 0)
        }
        XCTAssertEqual(runner.overlaps.load(ordering: .relaxed), 0)
        XCTAssertGreaterThan(gaveUp.reduce(0, +), 0, "no wait gave up: the test did not exercise late results")
    }

    func testInjectedDelaysAreCountedLateExactlyAndTheWaitIsBounded() throws {
        let jobCount = 12
        let delayed: Set<Int> = [3, 8]
        let delayMicros: UInt32 = 600_000
        let waitNanos: UInt64 = 100_000_000, deadlineNanos: UInt64 = 300_000_000
        let runner = RecordingRunner(queueCount: 2, capacity: jobCount)
        for sequence in delayed { runner.injectedDelays[RecordingRunner.key(queue: 1, sequence: sequence)] = delayMicros }
        let pool = try makePool(queues: 2, runner: runner, threads: 1)
        defer { pool.stop() }
        var lateSeen: [Int] = []
        for sequence in 0..<jobCount {
            let start = monotonicNanos()
            pool.post(queue: 1, sequence: sequence, start: start, deadline: start + deadlineNanos)
            let ready = pool.awaitCompletion(queue: 1, sequence: sequence, until: start + waitNanos)
            let waited = monotonicNanos() - start
            if !ready {
                lateSeen.append(sequence)
                // Bounded by the limit: generous slack, and well before the delayed job finishes.
                XCTAssertGreaterThanOrEqual(waited, waitNanos)
                XCTAssertLessThan(waited, waitNanos + 250_000_000, "the wait overran its limit")
                // Let the late job finish so the next one starts on time (no cascade by the test).
                XCTAssertTrue(pool.awaitCompletion(queue: 1, sequence: sequence, until: .max))
            }
        }
        XCTAssertEqual(lateSeen, delayed.sorted())
        XCTAssertEqual(pool.lateResults(queue: 1), delayed.count)
        XCTAssertEqual(pool.lateResults(queue: 0), 0)
        // The helpers' own view: exactly the delayed jobs finished after their deadlines.
        let jobs = pool.queueStatistics[1].snapshot()
        XCTAssertEqual(jobs.intervals, jobCount)
        XCTAssertEqual(jobs.lateIntervals, delayed.count)
        XCTAssertLessThanOrEqual(jobs.minMarginNanos!, Int64(deadlineNanos) - Int64(delayMicros) * 1000)
        XCTAssertEqual(pool.workgroup.statistics.lateIntervals.load(ordering: .relaxed), delayed.count)
        XCTAssertEqual(runner.ran(queue: 1), Array(0..<jobCount))
    }

    func testALateJobDoesNotCascade() throws {
        // One 300 ms job at the head of a queue; later jobs queue behind it (never dropped), are late
        // while it runs, and are on time again once the backlog has drained.
        let runner = RecordingRunner(queueCount: 1, capacity: 64)
        runner.injectedDelays[RecordingRunner.key(queue: 0, sequence: 0)] = 300_000
        let pool = try makePool(queues: 1, runner: runner, threads: 1)
        defer { pool.stop() }
        var results: [Bool] = []
        for sequence in 0..<40 {
            let start = monotonicNanos()
            pool.post(queue: 0, sequence: sequence, start: start, deadline: start + 20_000_000)
            results.append(pool.awaitCompletion(queue: 0, sequence: sequence, until: start + 10_000_000))
        }
        XCTAssertFalse(results[0])
        XCTAssertEqual(results.suffix(5), [true, true, true, true, true], "lateness must not persist: \(results)")
        XCTAssertEqual(pool.droppedJobs(queue: 0), 0)
        XCTAssertTrue(pool.awaitCompletion(queue: 0, sequence: 39, until: .max))
        XCTAssertEqual(runner.ran(queue: 0), Array(0..<40))
    }

    /// Take-back (fork-join): a job no helper has claimed yet runs on the calling thread, once,
    /// exactly as a helper would run it; a job a helper already runs is not taken; the helper
    /// later finds nothing left to run.
    func testUnclaimedJobIsTakenBackByTheCallingThreadAndRunsOnce() throws {
        let runner = RecordingRunner(queueCount: 2, capacity: 8)
        runner.injectedDelays[RecordingRunner.key(queue: 1, sequence: 0)] = 200_000
        let pool = try makePool(queues: 2, runner: runner, threads: 1, priority: nil)
        defer { pool.stop() }
        // The only helper is busy with queue 1's slow job: queue 0's job stays unclaimed.
        pool.post(queue: 1, sequence: 0, start: monotonicNanos(), deadline: monotonicNanos() + 1_000_000_000)
        let waitStart = monotonicNanos()
        while runner.activeJobs[1].load(ordering: .sequentiallyConsistent) == 0 {
            XCTAssertLessThan(monotonicNanos() - waitStart, 5_000_000_000, "the helper never started")
            usleep(100)
        }
        XCTAssertFalse(pool.runUnclaimedJobOnCallingThread(queue: 1), "a job a helper runs must not be taken")
        pool.post(queue: 0, sequence: 7, start: monotonicNanos(), deadline: monotonicNanos() + 1_000_000_000)
        XCTAssertTrue(pool.runUnclaimedJobOnCallingThread(queue: 0))
        XCTAssertTrue(pool.isCompleted(queue: 0, sequence: 7))
        XCTAssertEqual(runner.ran(queue: 0), [7])
        XCTAssertFalse(pool.runUnclaimedJobOnCallingThread(queue: 0), "nothing left to take")
        XCTAssertTrue(pool.awaitCompletion(queue: 0, sequence: 7, until: .max))
        XCTAssertTrue(pool.awaitCompletion(queue: 1, sequence: 0, until: .max))
        pool.waitUntilIdle()
        usleep(20_000)  // let the helper rescan: queue 0's job must not run again
        XCTAssertEqual(runner.ran(queue: 0), [7])
        XCTAssertEqual(pool.takenBackJobs(queue: 0), 1)
        XCTAssertEqual(pool.takenBackJobs(queue: 1), 0)
        XCTAssertEqual(runner.overlaps.load(ordering: .relaxed), 0)
    }

    func testHelpersAreNamedAndGetSchedFifoBelowTheGivenPriority() throws {
        let runner = RecordingRunner(queueCount: 1, capacity: 4)
        let warnings = ThreadSafeBox<[String]>([])
        let pool = try makePool(queues: 1, runner: runner, threads: 2, warnings: warnings, priority: 12)
        defer { pool.stop() }
        let names = try threadNames()
        XCTAssertTrue(names.contains("swconv-helper0") && names.contains("swconv-helper1"), "threads: \(names)")
        let start = monotonicNanos()
        pool.post(queue: 0, sequence: 0, start: start, deadline: start + 1_000_000_000)
        XCTAssertTrue(pool.awaitCompletion(queue: 0, sequence: 0, until: .max))
        if getuid() == 0 {  // root (CAP_SYS_NICE) here; elsewhere the refusal path below applies
            XCTAssertTrue(pool.realtimeGranted)
            XCTAssertEqual(runner.firstJobPolicy.load(ordering: .relaxed), Int(SCHED_FIFO))
            XCTAssertEqual(runner.firstJobPriority.load(ordering: .relaxed), 12)
            XCTAssertEqual(warnings.value, [])
        }
    }

    func testPerLevelHelpersServeOneQueueEachAtFallingPriorities() throws {
        let queueCount = 3, jobsPerQueue = 200
        let runner = RecordingRunner(queueCount: queueCount, capacity: jobsPerQueue)
        runner.injectedDelays[RecordingRunner.key(queue: 2, sequence: 0)] = 300_000  // a slow long level
        var configuration = JobPoolConfiguration()
        configuration.threadCount = .perLevel
        configuration.realtimePriority = 12
        let pool = try JobPool(queueCount: queueCount, runner: runner, configuration: configuration)
        defer { pool.stop() }
        XCTAssertEqual(pool.threadCount, queueCount)
        XCTAssertTrue(pool.dedicatedHelpers)
        let start = monotonicNanos()
        pool.post(queue: 2, sequence: 0, start: start, deadline: start + 1_000_000_000)
        // While queue 2's helper sleeps in its job, queues 0 and 1 are served by their own helpers.
        for sequence in 0..<jobsPerQueue {
            for queue in 0..<2 {
                let now = monotonicNanos()
                pool.post(queue: queue, sequence: sequence, start: now, deadline: now + 1_000_000_000)
                XCTAssertTrue(pool.awaitCompletion(queue: queue, sequence: sequence, until: now + 5_000_000_000))
            }
        }
        XCTAssertEqual(pool.pendingJobs(queue: 2), 1, "queue 2's slow job should still be running")
        for sequence in 1..<jobsPerQueue {
            let now = monotonicNanos()
            pool.post(queue: 2, sequence: sequence, start: now, deadline: now + 1_000_000_000)
        }
        XCTAssertTrue(pool.awaitCompletion(queue: 2, sequence: jobsPerQueue - 1, until: .max))
        for queue in 0..<queueCount { XCTAssertEqual(runner.ran(queue: queue), Array(0..<jobsPerQueue)) }
        let names = try threadNames()
        XCTAssertTrue(["swconv-helper0", "swconv-helper1", "swconv-helper2"].allSatisfy(names.contains), "\(names)")
        if getuid() == 0 {
            XCTAssertTrue(pool.realtimeGranted)
            XCTAssertEqual((0..<queueCount).map { runner.priorityByQueue[$0].load(ordering: .relaxed) }, [12, 11, 10])
        }
        pool.stop()
        XCTAssertEqual(pool.workgroup.members, 0, "stop() releases dedicated helpers too")
    }

    func testRefusedRealtimeGivesOneWarningAndStillWorks() throws {
        // Priority 200 is outside SCHED_FIFO's 1...99: the kernel refuses it (EINVAL) for every helper.
        let runner = RecordingRunner(queueCount: 2, capacity: 16)
        let warnings = ThreadSafeBox<[String]>([])
        let pool = try makePool(queues: 2, runner: runner, threads: 3, warnings: warnings, priority: 200)
        defer { pool.stop() }
        XCTAssertFalse(pool.realtimeGranted)
        XCTAssertEqual(warnings.value?.count, 1, "exactly one warning: \(warnings.value ?? [])")
        XCTAssertTrue(warnings.value?.first?.contains("SCHED_FIFO priority 200") ?? false)
        for sequence in 0..<16 {
            let start = monotonicNanos()
            pool.post(queue: sequence % 2, sequence: sequence / 2, start: start, deadline: start + 1_000_000_000)
        }
        XCTAssertTrue(pool.awaitCompletion(queue: 0, sequence: 7, until: .max))
        XCTAssertTrue(pool.awaitCompletion(queue: 1, sequence: 7, until: .max))
        XCTAssertEqual(runner.ran(queue: 0), Array(0..<8))
        XCTAssertEqual(runner.firstJobPolicy.load(ordering: .relaxed), Int(SCHED_OTHER))
    }

    func testNoAllocationsOrLocksOnPostingAndHelperThreadsAfterWarmUp() throws {
        let queueCount = 3
        let runner = RecordingRunner(queueCount: queueCount, capacity: 8)
        let pool = try makePool(queues: queueCount, runner: runner, threads: 2)
        defer { pool.stop() }
        allocation_counter_watch_threads_named("swconv")
        allocation_counter_watch_current_thread(1)
        defer { allocation_counter_watch_current_thread(0) }
        func cycle(_ sequence: Int) {
            let start = monotonicNanos()
            for queue in 0..<queueCount {
                pool.post(queue: queue, sequence: sequence, start: start, deadline: start + 50_000_000)
            }
            for queue in 0..<queueCount {
                _ = pool.awaitCompletion(queue: queue, sequence: sequence, until: start + 1_000_000_000)
            }
        }
        for sequence in 0..<200 { cycle(sequence) }  // warm-up
        allocation_counter_reset()
        allocation_counter_arm(1)
        for sequence in 200..<2200 { cycle(sequence) }
        allocation_counter_arm(0)
        XCTAssertEqual(allocation_counter_allocations(), 0)
        XCTAssertEqual(allocation_counter_mutex_locks(), 0)
        XCTAssertEqual(pool.queueStatistics[0].intervals.load(ordering: .relaxed), 2200)
        // Control: the counter does see the helpers (jobs that allocate are counted).
        runner.allocateInJobs.store(true, ordering: .relaxed)
        allocation_counter_arm(1)
        cycle(2200)
        allocation_counter_arm(0)
        XCTAssertEqual(allocation_counter_allocations(), Int64(queueCount))
    }
}

func threadNames() throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap {
        try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)
    }.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}
