import AllocationCounter
import Foundation
import Glibc
import Synchronization
import Workgroup
import XCTest

/// Pthreads in a domain of the test's own, so each test gets a fresh process group.
final class TestDomainFactory: ThreadFactory, @unchecked Sendable {
    let domain: UInt
    private let threads = PthreadThreadFactory()
    init(domain: UInt) { self.domain = domain }
    func createThread(name: String, body: @escaping @Sendable () -> Void) throws(ThreadError) -> SpawnedThread {
        try threads.createThread(name: name, body: body)
    }
    func acquireRealtime(_ thread: SpawnedThread, priority: Int32) -> Int32 { threads.acquireRealtime(thread, priority: priority) }
    func joinThread(_ thread: SpawnedThread) { threads.joinThread(thread) }
}

/// Records, across pools, the order in which jobs ran (pool, queue, sequence), into memory
/// allocated up front; job `gatedSequence` of queue 0 waits for `gate` before it returns.
final class OrderLog: @unchecked Sendable {
    let entries: UnsafeMutablePointer<Int>
    let count = Atomic<Int>(0)
    let capacity: Int
    init(capacity: Int) {
        self.capacity = capacity
        entries = .allocate(capacity: capacity)
    }
    deinit { entries.deallocate() }
    func append(_ entry: Int) {
        let index = count.wrappingAdd(1, ordering: .relaxed).oldValue
        if index < capacity { entries[index] = entry }
    }
    var all: [Int] { (0..<min(count.load(ordering: .acquiring), capacity)).map { entries[$0] } }
    static func entry(pool: Int, queue: Int, sequence: Int) -> Int { pool << 40 | queue << 32 | sequence }
}

final class OrderRunner: JobRunner, @unchecked Sendable {
    let pool: Int
    let log: OrderLog
    let gate = Semaphore()
    var gatedSequence = -1
    init(pool: Int, log: OrderLog) {
        self.pool = pool
        self.log = log
    }
    func runJob(queue: Int, sequence: Int) {
        if queue == 0 && sequence == gatedSequence { gate.wait() }
        log.append(OrderLog.entry(pool: pool, queue: queue, sequence: sequence))
    }
}

final class ProcessWorkgroupTests: XCTestCase {
    private static let nextDomain = Atomic<UInt>(0x7e57_0000)
    private var factory: TestDomainFactory!

    override func setUp() {
        factory = TestDomainFactory(domain: Self.nextDomain.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    private func join(_ runner: any JobRunner, queues: Int, threads: ThreadCount) throws -> JobPool {
        var configuration = JobPoolConfiguration()
        configuration.threadCount = threads
        configuration.realtimePriority = nil
        return try ProcessWorkgroup.join(queueCount: queues, runner: runner, configuration: configuration, factory: factory)
    }

    func testPoolsOfAProcessShareOneGroupSizedByTheLargestRequestUntilTheLastLeaves() throws {
        let idle = OrderRunner(pool: 0, log: OrderLog(capacity: 1))  // no job is posted here
        let first = try join(idle, queues: 2, threads: .fixed(2))
        XCTAssertEqual(ProcessWorkgroup.threadCount(domain: factory.domain), 2)
        let second = try join(idle, queues: 3, threads: .fixed(3))
        XCTAssertTrue(first.group === second.group, "one group per process")
        XCTAssertEqual(first.threadCount, 3, "the largest request")
        XCTAssertEqual(first.workgroup.members, 3)
        second.stop()
        XCTAssertEqual(first.threadCount, 2, "the request of the pool that left no longer counts")
        XCTAssertEqual(first.workgroup.members, 2)
        let automatic = try join(idle, queues: 1, threads: .auto)
        XCTAssertEqual(automatic.threadCount, max(sysconf(Int32(_SC_NPROCESSORS_ONLN)) - 1, 2))
        automatic.stop()
        first.stop()
        XCTAssertEqual(ProcessWorkgroup.threadCount(domain: factory.domain), 0, "the last pool to leave ends the group")
        XCTAssertEqual(first.workgroup.members, 0)
        XCTAssertTrue(first.workgroup.isCancelled)
        let again = try join(idle, queues: 1, threads: .fixed(1))
        defer { again.stop() }
        XCTAssertFalse(again.group === first.group, "a new first pool starts a new group")
        XCTAssertEqual(again.threadCount, 1)
    }

    func testTheHelperTakesTheJobDueFirstWhicheverPoolPostedIt() throws {
        let log = OrderLog(capacity: 16)
        let runnerA = OrderRunner(pool: 0, log: log), runnerB = OrderRunner(pool: 1, log: log)
        runnerA.gatedSequence = 0
        let poolA = try join(runnerA, queues: 2, threads: .fixed(1))
        defer { poolA.stop(); withExtendedLifetime(runnerA) {} }  // a pool does not retain its runner
        let poolB = try join(runnerB, queues: 2, threads: .fixed(1))
        defer { poolB.stop(); withExtendedLifetime(runnerB) {} }
        let now = monotonicNanos(), ms: UInt64 = 1_000_000
        poolA.post(queue: 0, sequence: 0, start: now, deadline: now + ms)  // due first: holds the one helper at its gate
        poolA.post(queue: 1, sequence: 0, start: now, deadline: now + 400 * ms)
        poolB.post(queue: 1, sequence: 0, start: now, deadline: now + 300 * ms)
        poolA.post(queue: 0, sequence: 1, start: now, deadline: now + 200 * ms)
        poolB.post(queue: 0, sequence: 0, start: now, deadline: now + 100 * ms)
        runnerA.gate.post()
        for (pool, queue, sequence) in [(poolA, 0, 1), (poolA, 1, 0), (poolB, 0, 0), (poolB, 1, 0)] {
            XCTAssertTrue(pool.awaitCompletion(queue: queue, sequence: sequence, until: .max))
        }
        XCTAssertEqual(
            log.all,
            [(0, 0, 0), (1, 0, 0), (0, 0, 1), (1, 1, 0), (0, 1, 0)].map { OrderLog.entry(pool: $0.0, queue: $0.1, sequence: $0.2) },
            "earliest deadline first across pools (pool, queue, sequence): \(log.all.map { ($0 >> 40, $0 >> 32 & 0xff, $0 & 0xffff_ffff) })")
    }

    /// The load a node publishes for a shared group is the group's busy time: every pool's jobs.
    func testTheGroupsBusyTimeIsEveryPoolsJobs() throws {
        let log = OrderLog(capacity: 64)
        let runnerA = OrderRunner(pool: 0, log: log), runnerB = OrderRunner(pool: 1, log: log)
        let poolA = try join(runnerA, queues: 1, threads: .fixed(1))
        defer { poolA.stop(); withExtendedLifetime(runnerA) {} }
        let poolB = try join(runnerB, queues: 2, threads: .fixed(1))
        defer { poolB.stop(); withExtendedLifetime(runnerB) {} }
        let now = monotonicNanos()
        for sequence in 0..<5 {
            poolA.post(queue: 0, sequence: sequence, start: now, deadline: now + 1_000_000_000)
            poolB.post(queue: 1, sequence: sequence, start: now, deadline: now + 1_000_000_000)
        }
        poolA.waitUntilIdle()
        poolB.waitUntilIdle()
        let a = poolA.statistics.snapshot(), b = poolB.statistics.snapshot()
        XCTAssertEqual(a.intervals + b.intervals, 10)
        XCTAssertGreaterThan(a.busyNanos, 0)
        XCTAssertGreaterThan(b.busyNanos, 0)
        XCTAssertEqual(poolA.group.busyNanos.load(ordering: .relaxed), a.busyNanos + b.busyNanos)
    }

    func testPoolsComingAndGoingLoseNoJobOfAnotherPool() throws {
        let jobs = 3000
        let steady = RecordingRunner(queueCount: 2, capacity: jobs)
        let pool = try join(steady, queues: 2, threads: .fixed(2))
        defer { pool.stop(); withExtendedLifetime(steady) {} }
        let stopChurn = Atomic<Bool>(false), churned = Atomic<Int>(0)
        let factory = self.factory!
        let churn = Thread {
            let log = OrderLog(capacity: 1 << 16)
            var configuration = JobPoolConfiguration()
            configuration.threadCount = .fixed(2)
            configuration.realtimePriority = nil
            while !stopChurn.load(ordering: .relaxed) {
                let runner = OrderRunner(pool: 9, log: log)  // the pool does not retain its runner
                guard
                    let visitor = try? ProcessWorkgroup.join(
                        queueCount: 3, runner: runner, configuration: configuration, factory: factory)
                else { continue }
                let start = monotonicNanos()
                for sequence in 0..<8 { visitor.post(queue: sequence % 3, sequence: sequence, start: start, deadline: start + 1_000_000) }
                if churned.load(ordering: .relaxed) % 2 == 0 { _ = visitor.awaitCompletion(queue: 2, sequence: 5, until: .max) }
                visitor.stop()  // half the time with jobs still pending
                withExtendedLifetime(runner) {}
                churned.wrappingAdd(1, ordering: .relaxed)
            }
        }
        churn.start()
        for sequence in 0..<jobs {
            let start = monotonicNanos()
            for queue in 0..<2 { XCTAssertTrue(pool.post(queue: queue, sequence: sequence, start: start, deadline: start + 2_000_000)) }
            if sequence % 4 == 3 { for queue in 0..<2 { XCTAssertTrue(pool.awaitCompletion(queue: queue, sequence: sequence, until: .max)) } }
        }
        for queue in 0..<2 { XCTAssertTrue(pool.awaitCompletion(queue: queue, sequence: jobs - 1, until: .max)) }
        stopChurn.store(true, ordering: .relaxed)
        while !churn.isFinished { usleep(1000) }
        XCTAssertGreaterThan(churned.load(ordering: .relaxed), 10, "other pools came and went meanwhile")
        for queue in 0..<2 { XCTAssertEqual(steady.ran(queue: queue), Array(0..<jobs), "queue \(queue): every job once, in order") }
        XCTAssertEqual(steady.overlaps.load(ordering: .relaxed), 0)
        XCTAssertEqual(pool.threadCount, 2)
    }

    func testNoAllocationsOrLocksOnPostingAndHelperThreadsWithTwoPoolsSharingTheGroup() throws {
        let runners = [RecordingRunner(queueCount: 2, capacity: 8), RecordingRunner(queueCount: 3, capacity: 8)]
        let pools = try [join(runners[0], queues: 2, threads: .fixed(2)), join(runners[1], queues: 3, threads: .fixed(2))]
        defer { for pool in pools { pool.stop() }; withExtendedLifetime(runners) {} }
        allocation_counter_watch_threads_named("swconv")
        allocation_counter_watch_current_thread(1)
        defer { allocation_counter_watch_current_thread(0) }
        func cycle(_ sequence: Int) {
            let start = monotonicNanos()
            for pool in pools {
                for queue in 0..<pool.queueCount {
                    pool.post(queue: queue, sequence: sequence, start: start, deadline: start + UInt64(queue + 1) * 5_000_000)
                }
            }
            for pool in pools {
                for queue in 0..<pool.queueCount { _ = pool.awaitCompletion(queue: queue, sequence: sequence, until: start + 1_000_000_000) }
            }
        }
        for sequence in 0..<200 { cycle(sequence) }  // warm-up
        allocation_counter_reset()
        allocation_counter_arm(1)
        for sequence in 200..<2200 { cycle(sequence) }
        allocation_counter_arm(0)
        XCTAssertEqual(allocation_counter_allocations(), 0)
        XCTAssertEqual(allocation_counter_mutex_locks(), 0)
        XCTAssertEqual(pools[1].queueStatistics[2].intervals.load(ordering: .relaxed), 2200)
        // Control: the counter does see the shared helpers (jobs that allocate are counted).
        runners[1].allocateInJobs.store(true, ordering: .relaxed)
        allocation_counter_arm(1)
        cycle(2200)
        allocation_counter_arm(0)
        XCTAssertEqual(allocation_counter_allocations(), 3)
    }
}
