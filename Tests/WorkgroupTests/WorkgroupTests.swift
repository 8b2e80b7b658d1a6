import Foundation
import Glibc
import XCTest

@testable import Workgroup

/// Runs `body` on a fresh thread and waits for it (workgroup membership is per thread).
func onNewThread(_ body: @escaping @Sendable () throws -> Void) {
    let finished = Semaphore()
    let thread = Thread {
        do { try body() } catch { XCTFail("unexpected error: \(error)") }
        finished.post()
    }
    thread.start()
    finished.wait()
}

final class WorkgroupSemanticsTests: XCTestCase {
    func testJoinTwiceFailsWithAlreadyInWorkgroup() {
        onNewThread {
            let first = Workgroup(name: "first")
            let second = Workgroup(name: "second")
            guard let token = try? first.join() else { return XCTFail("first join failed") }
            XCTAssertThrowsError(try first.join()) { error in
                XCTAssertEqual(error as? WorkgroupError, .alreadyInWorkgroup(requested: "first", current: "first"))
            }
            XCTAssertThrowsError(try second.join()) { error in
                XCTAssertEqual(error as? WorkgroupError, .alreadyInWorkgroup(requested: "second", current: "first"))
                XCTAssertTrue("\(error)".contains("'second'") && "\(error)".contains("'first'"))
            }
            XCTAssertEqual(first.members, 1)
            XCTAssertEqual(second.members, 0)
            XCTAssertNoThrow(try first.leave(token))
            XCTAssertEqual(first.members, 0)
            // After leaving, the thread may join another workgroup.
            guard let secondToken = try? second.join() else { return XCTFail("join after leave failed") }
            XCTAssertNoThrow(try second.leave(secondToken))
        }
    }

    func testJoinAfterCancelFailsWithCancelled() {
        onNewThread {
            let workgroup = Workgroup(name: "cancelled-group")
            workgroup.cancel()
            XCTAssertTrue(workgroup.isCancelled)
            XCTAssertThrowsError(try workgroup.join()) { error in
                XCTAssertEqual(error as? WorkgroupError, .cancelled(workgroup: "cancelled-group"))
            }
            XCTAssertEqual(workgroup.members, 0)
        }
    }

    func testDeadlineNotAfterStartIsRejected() {
        onNewThread {
            let workgroup = Workgroup(name: "intervals")
            guard let token = try? workgroup.join() else { return XCTFail("join failed") }
            for (start, deadline) in [(UInt64(1000), UInt64(1000)), (2000, 1000)] {
                XCTAssertThrowsError(try workgroup.startInterval(start: start, deadline: deadline)) { error in
                    XCTAssertEqual(
                        error as? WorkgroupError,
                        .deadlineNotAfterStart(workgroup: "intervals", start: start, deadline: deadline))
                }
            }
            // Nothing was started, so nothing can be finished, and nothing was recorded.
            XCTAssertThrowsError(try workgroup.finishInterval()) { error in
                XCTAssertEqual(error as? WorkgroupError, .noIntervalStarted(workgroup: "intervals"))
            }
            XCTAssertEqual(workgroup.statistics.intervals.load(ordering: .relaxed), 0)
            try? workgroup.leave(token)
        }
    }

    func testIntervalsOfNonMembersAreRejected() {
        let workgroup = Workgroup(name: "members-only")
        XCTAssertThrowsError(try workgroup.startInterval(start: 1, deadline: 2)) { error in
            XCTAssertEqual(error as? WorkgroupError, .notAMember(workgroup: "members-only"))
        }
    }

    func testLeaveWithWrongTokenFails() {
        let other = Workgroup(name: "other")
        let otherToken = ThreadSafeBox<WorkgroupJoinToken>()
        onNewThread { otherToken.value = try? other.join() }
        onNewThread {
            let workgroup = Workgroup(name: "mine")
            guard let token = try? workgroup.join() else { return XCTFail("join failed") }
            // Another workgroup's token, and another thread's token of a different group.
            XCTAssertThrowsError(try workgroup.leave(otherToken.value!)) { error in
                XCTAssertEqual(error as? WorkgroupError, .wrongToken(workgroup: "mine"))
            }
            XCTAssertThrowsError(try other.leave(token)) { error in
                XCTAssertEqual(error as? WorkgroupError, .wrongToken(workgroup: "other"))
            }
            XCTAssertEqual(workgroup.members, 1)
            XCTAssertNoThrow(try workgroup.leave(token))
            // The same token twice: the membership is gone.
            XCTAssertThrowsError(try workgroup.leave(token)) { error in
                XCTAssertEqual(error as? WorkgroupError, .wrongToken(workgroup: "mine"))
            }
        }
        // A token of a thread that is still a member, used from another thread.
        onNewThread {
            XCTAssertThrowsError(try other.leave(otherToken.value!)) { error in
                XCTAssertEqual(error as? WorkgroupError, .wrongToken(workgroup: "other"))
            }
        }
        XCTAssertEqual(other.members, 1)
    }

    func testCancelWakesAndReleasesEveryWaitingMember() {
        let workgroup = Workgroup(name: "waiters")
        let memberCount = 4
        let joined = Semaphore(), left = Semaphore()
        let wakeUps = ThreadSafeBox<Int>(0)
        for _ in 0..<memberCount {
            Thread {
                guard let token = try? workgroup.join() else { return XCTFail("join failed") }
                joined.post()
                var workSeen = 0
                while workgroup.waitForWork() { workSeen += 1 }
                wakeUps.update { $0! + workSeen }
                let leftCleanly = (try? workgroup.leave(token)) != nil
                XCTAssertTrue(leftCleanly)
                left.post()
            }.start()
        }
        for _ in 0..<memberCount { joined.wait() }
        XCTAssertEqual(workgroup.members, memberCount)
        // Two pieces of work first: waiting members take them and wait again.
        workgroup.signalWork()
        workgroup.signalWork()
        usleep(50_000)
        workgroup.cancel()
        let limit = monotonicNanos() + 10_000_000_000
        for _ in 0..<memberCount {
            XCTAssertTrue(left.wait(untilMonotonic: limit), "a member still waits after cancel()")
        }
        XCTAssertEqual(workgroup.members, 0)
        XCTAssertEqual(wakeUps.value, 2)
        XCTAssertFalse(workgroup.waitForWork(), "waitForWork after cancel must return at once")
    }

    func testIntervalMarginsAndLateCountsAreRecorded() {
        onNewThread {
            let workgroup = Workgroup(name: "margins")
            guard let token = try? workgroup.join() else { return XCTFail("join failed") }
            // 3 intervals with 1 s of room: on time; 2 whose deadline passes during a 2 ms sleep: late.
            for _ in 0..<3 {
                let now = monotonicNanos()
                XCTAssertNoThrow(try workgroup.startInterval(start: now, deadline: now + 1_000_000_000))
                XCTAssertGreaterThan((try? workgroup.finishInterval()) ?? -1, 0)
            }
            for _ in 0..<2 {
                let now = monotonicNanos()
                XCTAssertNoThrow(try workgroup.startInterval(start: now, deadline: now + 1_000))
                usleep(2_000)
                XCTAssertLessThan((try? workgroup.finishInterval()) ?? 1, 0)
            }
            let statistics = workgroup.statistics.snapshot()
            XCTAssertEqual(statistics.intervals, 5)
            XCTAssertEqual(statistics.lateIntervals, 2)
            XCTAssertLessThanOrEqual(statistics.minMarginNanos!, -1_000_000)  // slept ≥ 2 ms past a 1 µs deadline
            XCTAssertGreaterThan(statistics.p50MarginNanos!, 500_000_000)  // the median is an on-time one
            XCTAssertLessThan(statistics.p99MarginNanos!, 0)  // the worst 1% are late
            XCTAssertGreaterThanOrEqual(statistics.busyNanos, 4_000_000)
            try? workgroup.leave(token)
        }
    }

    func testMarginQuantilesFollowAKnownDistribution() {
        let statistics = IntervalStatistics()
        // 1000 margins: 1 µs ... 1000 µs on time, then 20 late ones at −5 ms (2% late).
        for micros in 1...1000 { statistics.record(marginNanos: Int64(micros) * 1000, busyNanos: 10) }
        for _ in 0..<20 { statistics.record(marginNanos: -5_000_000, busyNanos: 10) }
        let snapshot = statistics.snapshot()
        XCTAssertEqual(snapshot.intervals, 1020)
        XCTAssertEqual(snapshot.lateIntervals, 20)
        XCTAssertEqual(snapshot.minMarginNanos, -5_000_000)
        XCTAssertEqual(snapshot.maxBusyNanos, 10)
        // p50 is element 510 from the latest (20 late, then 1 µs ...): 491 µs; buckets are ≤ 6.25%
        // wide and rounded down.
        let median = Double(snapshot.p50MarginNanos!) / 1000
        XCTAssertTrue((491 * 0.9375)...491 ~= median, "p50 \(median) µs")
        // The worst 1% (10 of 1020) are late ones, all at −5 ms: the bucket edge is clamped to the
        // smallest margin seen, so exactly −5 ms.
        XCTAssertEqual(snapshot.p99MarginNanos, -5_000_000)
        // A single value: every quantile is that value (not a bucket edge below it).
        let single = IntervalStatistics()
        single.record(marginNanos: 14_757_000, busyNanos: 1)
        XCTAssertEqual(single.marginQuantile(0.01), 14_757_000)
        // Bucket edges are consistent: every magnitude falls in the bucket whose lower edge is ≤ it.
        for magnitude: UInt64 in [0, 1, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 100, 1000, 123_456, 1 << 39] {
            let bucket = IntervalStatistics.bucket(forMagnitude: magnitude)
            XCTAssertLessThanOrEqual(IntervalStatistics.lowerMagnitude(ofBucket: bucket), magnitude)
            XCTAssertGreaterThan(IntervalStatistics.lowerMagnitude(ofBucket: bucket + 1), magnitude)
        }
    }

    func testThreadCountAutoIsOnlineCoresMinusOne() {
        let cores = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        XCTAssertEqual(ThreadCount.auto.resolved(levelCount: 5), max(cores - 1, 1))
        XCTAssertEqual(ThreadCount.perLevel.resolved(levelCount: 5), 5)
        XCTAssertEqual(ThreadCount.fixed(3).resolved(levelCount: 5), 3)
        XCTAssertEqual(ThreadCount(argument: "auto"), .auto)
        XCTAssertEqual(ThreadCount(argument: "levels"), .perLevel)
        XCTAssertEqual(ThreadCount(argument: "3"), .fixed(3))
        XCTAssertNil(ThreadCount(argument: "0"))
        XCTAssertNil(ThreadCount(argument: "many"))
    }
}

/// A value shared between test threads, under a lock (test code only, not real-time).
final class ThreadSafeBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value?
    init(_ value: Value? = nil) { stored = value }
    var value: Value? {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
    func update(_ change: (Value?) -> Value) { lock.lock(); stored = change(stored); lock.unlock() }
}
