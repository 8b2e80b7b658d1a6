import Convolution
import Glibc
import Workgroup

public struct WorkgroupSchedulerConfiguration: Sendable {
    /// Helper threads: `auto` = online cores − 1 (at least 1).
    public var threadCount: ThreadCount = .auto
    /// SCHED_FIFO priority of the helpers (`workgroup.rt.prio`); nil: normal priority.
    /// Default: one below PipeWire's data thread (module-rt's default 88).
    public var realtimePriority: Int32? = 87
    /// Try SCHED_DEADLINE first (period = the shortest level's block period at `sampleRate`,
    /// runtime = `deadlineRuntimeFraction` of it), falling back to SCHED_FIFO.
    /// Off by default: Linux runs SCHED_DEADLINE tasks before every SCHED_FIFO task, so a helper
    /// under it preempts the data thread on a shared core (measured: data-thread p99 went from
    /// ~55 µs to ~2.1 ms at 256-frame calls, 2 cores) — the opposite of "below the data thread".
    public var deadlineScheduling = false
    public var deadlineRuntimeFraction = 0.5
    /// How many of the shortest levels run on the data thread itself, inside `post` (as the
    /// inline scheduler does). A short level's job costs little but wakes a helper every block:
    /// on small quanta the wake-ups and the cross-core cache traffic cost more CPU than the job
    /// (measured: see the bench). 0: every level on the helpers.
    public var inlineLevelCount = 0
    /// Levels whose result is due sooner than this after their input block (seconds at
    /// `sampleRate`) also run on the data thread: a helper's wake-up can take milliseconds on a
    /// loaded or virtual machine, and a short level missing its deadline every so often costs
    /// more (late levels, and the data thread waiting) than running it inline. 0: off.
    public var minimumHelperSlack = 0.0
    /// Sizes the SCHED_DEADLINE period and `minimumHelperSlack` at setup; cycles carry their own rate.
    public var sampleRate = 48000.0
    /// Where the single "real-time refused" warning goes.
    public var warn: @Sendable (String) -> Void = { message in
        fputs("swift-convolver: warning: \(message)\n", stderr)
    }

    public init() {}
}

/// Runs the engine's level jobs (levels ≥ 1) on a `JobPool` of real-time helper threads in one
/// `Workgroup`: the engine posts a job when its input block is complete, with the deadline
/// "start of the current call + dueInSamples", and awaits the result when due. A result that is
/// not ready by the current call's wait limit (the node deadline minus a safety margin) counts as
/// a late level and the engine outputs without it; the job still runs, so nothing cascades.
///
/// Call `beginCycle` before each `engine.process` from the data thread. Without it (offline
/// render, tests) every post starts "now" and awaits wait for completion.
/// One scheduler per engine: the engine's `deinit` stops its scheduler. `prepare` and `stop`
/// must not run concurrently with `process`.
public final class WorkgroupLevelScheduler: LevelJobScheduler, JobRunner, @unchecked Sendable {
    public let configuration: WorkgroupSchedulerConfiguration
    private let threadFactory: any ThreadFactory
    private var pool: JobPool?
    /// The pool whose statistics are reported: the running one, or the last one after `stop()`.
    private var reportedPool: JobPool?
    private var levels: [LevelSchedule] = []
    /// Levels below this run inline in `post`; level `k` above it is pool queue `k - inlineLevelCount`.
    private var inlineLevelCount = 0
    // SAFETY: as in InlineScheduler: the engine calls `stop()` (deinit) before it is freed, and
    // `stop()` joins every helper first.
    private unowned(unsafe) var runner: (any LevelJobRunner)?

    // The current cycle; written and read by the data thread only.
    private var cycleStarted = false
    private var cycleStart: UInt64 = 0
    private var waitLimit: UInt64 = .max
    private var nanosecondsPerSample = 1e9 / 48000

    public init(configuration: WorkgroupSchedulerConfiguration = .init(),
                threadFactory: any ThreadFactory = PthreadThreadFactory()) {
        self.configuration = configuration
        self.threadFactory = threadFactory
    }

    deinit { pool?.stop() }

    /// Starts a data-thread cycle: the call began at `startNanos` (CLOCK_MONOTONIC ns, see
    /// `monotonicNanos()`); awaits may wait until `waitLimitNanos` (`.max`: until completion).
    /// Real-time safe.
    public func beginCycle(startNanos: UInt64, waitLimitNanos: UInt64, sampleRate: Double) {
        cycleStarted = true
        cycleStart = startNanos
        waitLimit = waitLimitNanos
        nanosecondsPerSample = 1e9 / sampleRate
    }

    public func prepare(runner: any LevelJobRunner, levels: [LevelSchedule]) throws {
        stop()
        self.runner = runner
        self.levels = levels
        let tooSoonForHelpers = levels.prefix {
            Double($0.dueAfterSamples) / configuration.sampleRate < configuration.minimumHelperSlack
        }.count
        inlineLevelCount = min(max(configuration.inlineLevelCount, tooSoonForHelpers, 0), levels.count)
        let pooledLevels = levels.dropFirst(inlineLevelCount)
        guard !pooledLevels.isEmpty else { return }
        var poolConfiguration = JobPoolConfiguration()
        poolConfiguration.threadCount = configuration.threadCount
        poolConfiguration.realtimePriority = configuration.realtimePriority
        poolConfiguration.warn = configuration.warn
        if configuration.deadlineScheduling, let shortest = pooledLevels.map(\.blockSize).min() {
            poolConfiguration.deadlineScheduling = helperDeadlineScheduling(
                periodNanos: UInt64(Double(shortest) * 1e9 / configuration.sampleRate),
                runtimeFraction: configuration.deadlineRuntimeFraction)
        }
        pool = try JobPool(queueCount: pooledLevels.count, runner: self, configuration: poolConfiguration,
                           factory: threadFactory)
        reportedPool = pool
    }

    /// Real-time safe: records the job and posts a semaphore; never blocks. Inline levels run here.
    public func post(level: Int, block: Int, dueInSamples: Int) {
        if level < inlineLevelCount {
            runner?.runLevelJob(level: level, block: block)
            return
        }
        guard let pool else { return }
        let start = cycleStarted ? cycleStart : monotonicNanos()
        let deadline = start &+ UInt64(Double(max(dueInSamples, 1)) * nanosecondsPerSample)
        pool.post(queue: level - inlineLevelCount, sequence: block, start: start, deadline: deadline)
    }

    /// Real-time safe: returns at once when the job is done, else waits on the level's semaphore
    /// at most until the cycle's wait limit; false counts a late level.
    public func awaitResult(level: Int, block: Int) -> Bool {
        if level < inlineLevelCount { return true }  // ran in `post`
        guard let pool else { return false }
        return pool.awaitCompletion(queue: level - inlineLevelCount, sequence: block, until: cycleStarted ? waitLimit : .max)
    }

    /// Waits until every posted job has run (offline render end, tests). Not real-time safe.
    public func waitUntilIdle() {
        pool?.waitUntilIdle()
    }

    public func stop() {
        pool?.stop()
        pool = nil
        runner = nil
    }

    /// Helper threads: runs the engine's job. Real-time safe (the engine's job is).
    public func runJob(queue: Int, sequence: Int) {
        runner?.runLevelJob(level: queue + inlineLevelCount, block: sequence)
    }

    /// Statistics so far (of the last pool after `stop()`). Not real-time safe (allocates);
    /// lock-free reads, so any thread, any time.
    public func statistics() -> WorkgroupSchedulerStatistics {
        guard let pool = reportedPool else {
            return WorkgroupSchedulerStatistics(threadCount: 0, realtime: false, deadlineScheduling: false,
                                                helpers: IntervalStatistics().snapshot(),
                                                inlineLevelCount: inlineLevelCount, levels: [])
        }
        return WorkgroupSchedulerStatistics(
            threadCount: pool.threadCount, realtime: pool.realtimeGranted, deadlineScheduling: pool.deadlineGranted,
            helpers: pool.workgroup.statistics.snapshot(),
            inlineLevelCount: inlineLevelCount,
            levels: (0..<pool.queueCount).map { queue in
                .init(blockSize: levels[queue + inlineLevelCount].blockSize, jobs: pool.queueStatistics[queue].snapshot(),
                      lateResults: pool.lateResults(queue: queue), droppedJobs: pool.droppedJobs(queue: queue))
            })
    }
}

public struct WorkgroupSchedulerStatistics: Sendable, CustomStringConvertible {
    public struct Level: Sendable {
        public var blockSize: Int
        /// The level's jobs on the helpers: margins to their deadlines, busy time.
        public var jobs: IntervalStatisticsSnapshot
        /// Results the data thread gave up on (output without them).
        public var lateResults: Int
        public var droppedJobs: Int
    }

    public var threadCount: Int
    public var realtime: Bool
    public var deadlineScheduling: Bool
    /// Every interval of every helper.
    public var helpers: IntervalStatisticsSnapshot
    /// The shortest levels, run on the data thread (not in `levels`).
    public var inlineLevelCount: Int
    /// The levels run on the helpers, shortest first (engine level `inlineLevelCount + index + 1`).
    public var levels: [Level]

    /// Late levels: results the data thread gave up on, all levels.
    public var lateLevels: Int { levels.reduce(0) { $0 + $1.lateResults } }

    public var description: String {
        var lines = ["helpers \(threadCount) (\(deadlineScheduling ? "SCHED_DEADLINE" : realtime ? "SCHED_FIFO" : "normal priority")), "
                     + "late levels \(lateLevels), \(helpers)"
                     + (inlineLevelCount > 0 ? ", \(inlineLevelCount) level(s) inline" : "")]
        for (index, level) in levels.enumerated() {
            lines.append("  level \(inlineLevelCount + index + 1) (block \(level.blockSize)): late results \(level.lateResults), "
                         + "dropped \(level.droppedJobs), \(level.jobs)")
        }
        return lines.joined(separator: "\n")
    }
}
