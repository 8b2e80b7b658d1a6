import FixedMemory
import Glibc
import Synchronization

/// One queue of jobs: a ring the posting thread fills and one helper at a time drains, in order.
/// A `HelperGroup` keeps its queues in fixed slots; a `JobPool` holds some of them while it is
/// registered. A slot not held by a pool stays claimed by its group, so no helper runs it.
final class JobQueue: @unchecked Sendable {
    let capacity: Int
    /// Jobs posted (written by the posting thread only).
    let posted = Atomic<Int>(0)
    /// Jobs completed (written by the helper holding `claimed`).
    let completed = Atomic<Int>(0)
    let claimed = Atomic<Bool>(true)
    /// Whether a pool holds this queue: helpers run its jobs only while set (checked after claiming).
    let registered = Atomic<Bool>(false)
    let lateResults = Atomic<Int>(0)
    let droppedJobs = Atomic<Int>(0)
    let takenBack = Atomic<Int>(0)
    let done = Semaphore()
    /// Wakes this queue's dedicated helper (`ThreadCount.perLevel` only).
    let work = Semaphore()
    // SAFETY (the four below): written by the group while it holds the claim of an unregistered
    // slot, read by whoever holds the claim after that (claim and release are seq-cst), and by
    // the pool that registered them, which got them from the group.
    private(set) var statistics = IntervalStatistics()
    /// Every job of the pool holding this queue.
    private(set) var poolStatistics = IntervalStatistics()
    /// The pool's runner, and the queue's number in that pool. unowned(unsafe): the pool's owner
    /// keeps the runner alive until the pool is stopped, which unregisters this queue first.
    private(set) unowned(unsafe) var runner: (any JobRunner)?
    private(set) var runnerQueue = 0
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

    /// Hands the queue, empty, to a pool. The caller holds the claim; the queue is unregistered.
    func register(runner: any JobRunner, queue: Int, poolStatistics: IntervalStatistics) {
        posted.store(0, ordering: .relaxed)
        completed.store(0, ordering: .relaxed)
        lateResults.store(0, ordering: .relaxed)
        droppedJobs.store(0, ordering: .relaxed)
        takenBack.store(0, ordering: .relaxed)
        statistics = IntervalStatistics()
        self.poolStatistics = poolStatistics
        self.runner = runner
        runnerQueue = queue
        registered.store(true, ordering: .sequentiallyConsistent)
        release()
    }

    /// Takes the queue back from its pool: after return no helper runs or will run its jobs (a
    /// job in progress is waited for). Not real-time safe: polls every 20 µs.
    func unregister() {
        registered.store(false, ordering: .sequentiallyConsistent)
        while !claim() { usleep(20) }
        runner = nil
    }

    var hasPending: Bool {
        posted.load(ordering: .sequentiallyConsistent) > completed.load(ordering: .relaxed)
    }

    /// The deadline of the next job to run (meaningful when `hasPending`).
    var nextDeadline: UInt64 { deadlines[completed.load(ordering: .relaxed) % capacity] }

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
