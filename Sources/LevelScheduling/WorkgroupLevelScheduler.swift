import Convolution
import Glibc
import Synchronization
import Workgroup

public struct WorkgroupSchedulerConfiguration: Sendable {
    /// Helper threads: `auto` = online cores − 1 (at least 1).
    public var threadCount: ThreadCount = .auto
    /// SCHED_FIFO priority of the helpers (`workgroup.rt.prio`); nil: normal priority.
    /// Default: one below PipeWire's data thread (module-rt's default 88).
    public var realtimePriority: Int32? = 87
    /// At least this many of the shortest levels run on the data thread itself (more when the
    /// engine's placement puts them there), each job spread over the calls before it is due. A
    /// short level's job costs little but wakes a helper every block: on small quanta the wake-ups
    /// and the cross-core cache traffic cost more CPU than the job (measured: see the bench).
    public var minimumDataThreadLevelCount = 0
    /// Whether the data thread's own share of a call (the head's per-output work) is split across
    /// split helpers, fork-join style, within the call: `auto` when the engine's estimate of its
    /// costliest call exceeds `splitThreshold` of the expected call period.
    public var split: SplitMode = .off
    /// With `split = .auto`: the fraction of the expected call period above which the share is
    /// split. Half: split only when the share alone threatens the call's budget, because on a small
    /// or virtual machine a helper's wake-up and a memory-bound delay line shared by two cores eat
    /// most of the gain (measured: `pw-convolver bench`, docs/facts.md).
    public var splitThreshold = 0.5
    /// Helpers for split parts, one per part after the data thread's own. `auto`: online cores − 1.
    /// Parts: at most one per output. On the shared workgroup a part is a job due at the call's
    /// wait limit, so a helper takes it before any level job; else dedicated split helpers at
    /// `realtimePriority`, the level helpers one priority lower, so a part preempts a level job.
    public var splitThreadCount: ThreadCount = .auto
    /// When the data thread has finished its own part and a helper has not yet started its part
    /// (still waking up), the data thread takes that part back and runs it itself instead of
    /// waiting for the wake-up. Off only in tests that need every part on a helper.
    public var splitTakeBack = true
    /// Level jobs and split parts run on the process's one workgroup (`ProcessWorkgroup`), shared
    /// with every other node in it, earliest deadline first; false: on helpers of this scheduler's
    /// own (the behaviour before it, kept for comparison). Never shared: `perLevel` helpers. A part
    /// no helper has started when the data thread wants it is taken back (`splitTakeBack`), so a
    /// part never waits behind a level job a helper is running.
    public var sharedWorkgroup = true
    /// The rate the split's call period is sized at (setup); cycles carry their own rate.
    public var sampleRate = 48000.0
    /// Where the single "real-time refused" warning goes.
    public var warn: @Sendable (String) -> Void = { message in
        fputs("swift-convolver: warning: \(message)\n", stderr)
    }

    public init() {}

    /// How many of the shortest `levels` run on the data thread: those the engine placed there
    /// (`LevelSchedule.runsOnDataThread`), at least `minimumDataThreadLevelCount`.
    public func dataThreadLevelCount(_ levels: [LevelSchedule]) -> Int {
        min(max(minimumDataThreadLevelCount, levels.prefix(while: \.runsOnDataThread).count), levels.count)
    }
}

extension LevelPlacement {
    /// The node's placement (its engines plan with it, and its scheduler follows), measured live
    /// on this kind of VM (2 vCPUs; bench-live, 3 s and 10 s IRs):
    /// - levels due within 10 ms run inline: a helper's wake-up can take milliseconds here, and a
    ///   short level missing its deadline every so often costs more (late levels, and the data
    ///   thread waiting) than running it inline;
    /// - levels whose job is at most 50 µs and 2% of the call period run inline: handing such a job
    ///   to a helper cost about as much CPU as the job (`pw-convolver bench --threads auto
    ///   --inline-levels 1`: 3 s IR, 256-frame calls, its 1024-frame level inline cut the CPU of
    ///   all threads by about a tenth, 47 jobs a second); the fraction bounds what the job adds to
    ///   the call it lands in;
    /// - a helper job costs 150-350 µs of CPU beyond its hot-loop estimate (the node's CPU, plans
    ///   forced one at a time, 20 s runs: at 3 s / 1024, 1024x16 | 8192x16 with 6 helper jobs a
    ///   second took 1.24-1.28% against 1.50-1.58% for 1024x4 | 2048x14 | 16384x7 with 26, which
    ///   the planner had priced the same; a 2048-frame level inline instead of on a helper, 12 jobs
    ///   a second, 1.73% against 2.15%). Priced at the low end.
    public static let node = LevelPlacement(
        dataThreadJobNanoseconds: 50_000, dataThreadJobFraction: 0.02,
        minimumHelperSlackSeconds: 0.010, helperJobOverheadNanoseconds: 150_000)
}

/// `split` of `WorkgroupSchedulerConfiguration` (`bench --split`, the module's `workgroup.split`).
public enum SplitMode: String, Sendable, CaseIterable {
    case auto, on, off

    /// Parses `auto`, `on` or `off` (also `true`/`false`).
    public init?(argument: String) {
        switch argument {
        case "true": self = .on
        case "false": self = .off
        default: self.init(rawValue: argument)
        }
    }
}

/// Runs the engine's level jobs (levels ≥ 1) on a `JobPool` of real-time helper threads in one
/// `Workgroup`: the engine posts a job when its input block is complete, with the deadline
/// "start of the current call + dueInSamples", and awaits the result when due. A result that is
/// not ready by the current call's wait limit (the node deadline minus a safety margin) counts as
/// a late level and the engine outputs without it; the job still runs, so nothing cascades.
///
/// Fork-join split (`configuration.split`): the engine's head work of each call is cut into parts
/// by output; the data thread posts parts 1... to helpers (semaphore out; the process's workgroup,
/// or split helpers of its own), runs part 0, takes back a part no helper has started, and awaits
/// the others (semaphore back) until the same wait limit; a part not back by then is
/// a late split (the engine outputs without it). A part whose helper still runs a late piece is not
/// posted again: the engine computes it on the data thread (counted in `busySplitParts`).
///
/// Call `beginCycle` before each `engine.process` from the data thread. Without it (offline
/// render, tests) every post starts "now" and awaits wait for completion.
/// One scheduler per engine, which it keeps until `stop()` (or the scheduler's deinit). `prepare`
/// and `stop` must not run concurrently with `process`.
public final class WorkgroupLevelScheduler: LevelJobScheduler, JobRunner, @unchecked Sendable {
    public let configuration: WorkgroupSchedulerConfiguration
    private let threadFactory: any ThreadFactory
    private var pool: JobPool?
    /// The pool whose statistics are reported: the running one, or the last one after `stop()`.
    private var reportedPool: JobPool?
    /// Levels 1, 2 ... in order.
    private var levels: [LevelSchedule] = []
    /// Levels 1 ... this run on the data thread, their jobs spread over calls (`SpreadJob`); the
    /// others on the pool, one queue each (`queue(ofLevel:)`).
    public private(set) var dataThreadLevelCount = 0
    /// The engine whose jobs run here, kept from `prepare` until `stop()` has joined the helpers.
    private var runnerOwner: (any LevelJobRunner)?
    // SAFETY: the same object as `runnerOwner`, which keeps it alive while any helper may call it;
    // unowned(unsafe) so the real-time calls touch no reference count.
    private unowned(unsafe) var runner: (any LevelJobRunner)?

    /// The split helpers (nil: no split); queue `p - 1` runs part `p`.
    private var splitPool: JobPool?
    private var reportedSplitPool: JobPool?
    private let splitRunner = SplitPartRunner()
    private let busySplitParts = Atomic<Int>(0)
    /// The engine's estimate of its costliest call, ns (for the statistics; nan if not asked).
    private var splitShareEstimateNanos = Double.nan

    // The current cycle; written and read by the data thread only.
    private var cycleStarted = false
    private var cycleStart: UInt64 = 0
    /// Wall time the data thread spent in this cycle waiting for helper results (data thread only).
    public private(set) var cycleWaitNanos: UInt64 = 0
    /// Wall time of this cycle's data-thread jobs, and the part of it that was a stall of the
    /// machine (`StallGauge`, one per data-thread level). Data thread only.
    public private(set) var cycleJobNanos: UInt64 = 0
    public private(set) var cycleStalledNanos: UInt64 = 0
    /// By level (0, the head's, unused). Mutated in place on the data thread only: uniquely
    /// referenced, never copied.
    private var dataThreadJobGauges: [StallGauge] = []
    /// By data-thread level, its job in progress (0, the head's, never starts). Mutated in place
    /// on the data thread only.
    private var spreadJobs: [SpreadJob] = []
    /// The call size the engine was planned for (0: unknown, a data-thread job runs whole).
    private var expectedCallFrames = 0
    private var waitLimit: UInt64 = .max
    private var nanosecondsPerSample = 1e9 / 48000

    public init(
        configuration: WorkgroupSchedulerConfiguration = .init(),
        threadFactory: any ThreadFactory = PthreadThreadFactory()
    ) {
        self.configuration = configuration
        self.threadFactory = threadFactory
    }

    deinit {
        pool?.stop()
        splitPool?.stop()
    }

    /// Starts a data-thread cycle: the call began at `startNanos` (CLOCK_MONOTONIC ns, see
    /// `monotonicNanos()`); awaits may wait until `waitLimitNanos` (`.max`: until completion).
    /// Real-time safe.
    public func beginCycle(startNanos: UInt64, waitLimitNanos: UInt64, sampleRate: Double) {
        cycleStarted = true
        cycleStart = startNanos
        cycleWaitNanos = 0
        cycleJobNanos = 0
        cycleStalledNanos = 0
        waitLimit = waitLimitNanos
        nanosecondsPerSample = 1e9 / sampleRate
        for level in spreadJobs.indices where spreadJobs[level].isRunning { runShare(ofDataThreadJob: level) }
    }

    public func prepare(runner: any LevelJobRunner, levels: [LevelSchedule]) throws {
        try prepareLevels(runner: runner, levels: levels, splitting: false)
        expectedCallFrames = 0
    }

    /// Setup with the engine's split offer: decides the part count (see `configuration.split`),
    /// starts the level helpers, then the split helpers. Returns the part count (1: no split).
    public func prepare(runner: any LevelJobRunner, levels: [LevelSchedule], split: SplitShare) throws -> Int {
        splitShareEstimateNanos = .nan
        var parts = 1
        if configuration.split != .off && split.unitCount > 1 {
            let helpers: Int
            switch configuration.splitThreadCount {
            case .fixed(let count): helpers = max(count, 1)
            case .auto, .perLevel: helpers = ThreadCount.auto.resolved(levelCount: 1)
            }
            parts = min(split.unitCount, helpers + 1)
            if configuration.split == .auto {
                splitShareEstimateNanos = runner.estimatedSplitShareNanoseconds()
                let periodNanos = Double(split.expectedCallFrames) * 1e9 / configuration.sampleRate
                if !(splitShareEstimateNanos > configuration.splitThreshold * periodNanos) { parts = 1 }
            }
        }
        try prepareLevels(runner: runner, levels: levels, splitting: parts > 1)
        expectedCallFrames = split.expectedCallFrames
        guard parts > 1 else { return 1 }
        splitRunner.runner = runner
        var splitConfiguration = JobPoolConfiguration()
        splitConfiguration.role = "split"
        splitConfiguration.realtimePriority = configuration.realtimePriority
        splitConfiguration.warn = configuration.warn
        if sharesWorkgroup {
            splitConfiguration.threadCount = .fixed(parts - 1)  // every part at once
            splitPool = try ProcessWorkgroup.join(
                queueCount: parts - 1, runner: splitRunner, configuration: splitConfiguration, factory: threadFactory)
        } else {
            splitConfiguration.threadCount = .perLevel  // one dedicated helper per part: no queueing behind another part
            splitConfiguration.priorityStepPerQueue = 0
            splitConfiguration.queueCapacity = 4  // a part is posted only when idle
            splitPool = try JobPool(
                queueCount: parts - 1, runner: splitRunner, configuration: splitConfiguration, factory: threadFactory)
        }
        reportedSplitPool = splitPool
        busySplitParts.store(0, ordering: .relaxed)
        return parts
    }

    private func prepareLevels(runner: any LevelJobRunner, levels: [LevelSchedule], splitting: Bool) throws {
        stop()
        reportedSplitPool = nil
        runnerOwner = runner
        self.runner = runner
        self.levels = levels
        dataThreadLevelCount = configuration.dataThreadLevelCount(levels)
        dataThreadJobGauges = Array(repeating: StallGauge(), count: dataThreadLevelCount + 1)
        spreadJobs = (0...dataThreadLevelCount).map { SpreadJob(stepCount: $0 == 0 ? 0 : runner.levelJobStepCount(level: $0)) }
        let pooledLevels = levels.dropFirst(dataThreadLevelCount)
        guard !pooledLevels.isEmpty else { return }
        var poolConfiguration = JobPoolConfiguration()
        poolConfiguration.threadCount = configuration.threadCount
        // Below dedicated split helpers: a part due within this call preempts a level job.
        let belowSplitHelpers = splitting && !sharesWorkgroup
        poolConfiguration.realtimePriority = configuration.realtimePriority.map { belowSplitHelpers ? max($0 - 1, 1) : $0 }
        poolConfiguration.warn = configuration.warn
        if sharesWorkgroup {
            pool = try ProcessWorkgroup.join(
                queueCount: pooledLevels.count, runner: self, configuration: poolConfiguration, factory: threadFactory)
        } else {
            pool = try JobPool(
                queueCount: pooledLevels.count, runner: self, configuration: poolConfiguration, factory: threadFactory)
        }
        reportedPool = pool
    }

    /// Whether levels and split parts join the process's workgroup (`configuration.sharedWorkgroup`).
    private var sharesWorkgroup: Bool { configuration.sharedWorkgroup && configuration.threadCount != .perLevel }

    /// Real-time safe: records the job and posts a semaphore; never blocks. A data-thread level's
    /// job starts here and is spread over the calls until it is due (`SpreadJob`).
    public func post(level: Int, block: Int, dueInSamples: Int) {
        if level <= dataThreadLevelCount {
            finish(dataThreadJob: level)  // the level's jobs run in order
            spreadJobs[level].start(block: block, shares: shareCount(level: level, dueInSamples: dueInSamples))
            runShare(ofDataThreadJob: level)
            return
        }
        guard let pool else { return }
        let start = cycleStarted ? cycleStart : monotonicNanos()
        let deadline = start &+ UInt64(Double(max(dueInSamples, 1)) * nanosecondsPerSample)
        pool.post(queue: queue(ofLevel: level), sequence: block, start: start, deadline: deadline)
    }

    /// Real-time safe: returns at once when the job is done, else waits on the level's semaphore
    /// at most until the cycle's wait limit; false counts a late level.
    public func awaitResult(level: Int, block: Int) -> Bool {
        guard level > dataThreadLevelCount else {
            if spreadJobs[level].block == block { finish(dataThreadJob: level) }
            return true
        }
        guard let pool else { return false }
        let waitStart = monotonicNanos()
        defer { cycleWaitNanos &+= monotonicNanos() &- waitStart }
        return pool.awaitCompletion(queue: queue(ofLevel: level), sequence: block, until: cycleStarted ? waitLimit : .max)
    }

    /// Semaphore out for split part `part` (≥ 1): posts it to its helper with the cycle's wait limit
    /// as deadline; false (counted in `busySplitParts`) when that helper still runs an earlier piece.
    /// Real-time safe: atomics and one `sem_post`; never blocks.
    public func postSplitPart(part: Int, sequence: Int) -> Bool {
        guard let splitPool else { return false }
        let queue = part - 1
        if splitPool.pendingJobs(queue: queue) > 0 {
            busySplitParts.wrappingAdd(1, ordering: .relaxed)
            return false
        }
        let start = cycleStarted ? cycleStart : monotonicNanos()
        let deadline = cycleStarted && waitLimit != .max ? waitLimit : start &+ 1_000_000_000
        return splitPool.post(queue: queue, sequence: sequence, start: start, deadline: deadline)
    }

    /// Semaphore back: if the part's helper has not started it yet (still waking up), the data
    /// thread takes the part back and runs it itself; else waits for it at most until the cycle's
    /// wait limit; false counts a late split. Real-time safe: atomics, the engine's part,
    /// sem_trywait / sem_timedwait.
    public func awaitSplitPart(part: Int, sequence: Int) -> Bool {
        guard let splitPool else { return false }
        if configuration.splitTakeBack && splitPool.runUnclaimedJobOnCallingThread(queue: part - 1) { return true }
        let waitStart = monotonicNanos()
        defer { cycleWaitNanos &+= monotonicNanos() &- waitStart }
        return splitPool.awaitCompletion(queue: part - 1, sequence: sequence, until: cycleStarted ? waitLimit : .max)
    }

    /// Over how many calls a data-thread job posted `dueInSamples` after its call's start is
    /// spread: the calls that start before it is due, at most those before its level's next post.
    /// Without cycles (offline render, tests) or a known call size: one, the whole job at once.
    private func shareCount(level: Int, dueInSamples: Int) -> Int {
        guard cycleStarted, expectedCallFrames > 0 else { return 1 }
        let beforeDue = dueInSamples / expectedCallFrames
        let beforeNextPost = schedule(ofLevel: level).blockSize / expectedCallFrames
        return max(1, min(beforeDue, beforeNextPost))
    }

    /// Runs this call's share of data-thread level `level`'s job in progress, timed into the
    /// cycle's job time. Real-time safe.
    private func runShare(ofDataThreadJob level: Int) {
        let jobStart = monotonicNanos()
        let steps = spreadJobs[level].takeShare()
        runner?.runLevelJob(level: level, block: spreadJobs[level].block, steps: steps)
        let jobNanos = monotonicNanos() &- jobStart
        cycleJobNanos &+= jobNanos
        cycleStalledNanos &+= dataThreadJobGauges[level].stalledNanos(ofRun: jobNanos)
    }

    /// Runs the rest of data-thread level `level`'s job in progress, if any. Real-time safe.
    private func finish(dataThreadJob level: Int) {
        guard spreadJobs[level].isRunning else { return }
        spreadJobs[level].sharesLeft = 1
        runShare(ofDataThreadJob: level)
    }

    /// Waits until every posted job (levels and split parts) has run (offline render end, tests).
    /// Not real-time safe.
    public func waitUntilIdle() {
        pool?.waitUntilIdle()
        splitPool?.waitUntilIdle()
    }

    public func stop() {
        spreadJobs = []
        pool?.stop()
        pool = nil
        splitPool?.stop()
        splitPool = nil
        splitRunner.runner = nil
        runner = nil
        runnerOwner = nil
    }

    /// Helper threads: runs the engine's job. Real-time safe (the engine's job is).
    public func runJob(queue: Int, sequence: Int) {
        runner?.runLevelJob(level: level(ofQueue: queue), block: sequence)
    }

    /// The pool's queues are the helper levels', shortest first.
    private func queue(ofLevel level: Int) -> Int { level - 1 - dataThreadLevelCount }
    private func level(ofQueue queue: Int) -> Int { queue + 1 + dataThreadLevelCount }
    private func schedule(ofLevel level: Int) -> LevelSchedule { levels[level - 1] }

    /// Statistics so far (of the last pool after `stop()`). Not real-time safe (allocates);
    /// lock-free reads, so any thread, any time.
    public func statistics() -> WorkgroupSchedulerStatistics {
        let split = reportedSplitPool.map { splitPool in
            WorkgroupSchedulerStatistics.Split(
                partCount: splitPool.queueCount + 1, realtime: splitPool.realtimeGranted,
                jobs: splitPool.statistics.snapshot(),
                lateSplits: (0..<splitPool.queueCount).reduce(0) { $0 + splitPool.lateResults(queue: $1) },
                busyParts: busySplitParts.load(ordering: .relaxed),
                takenBackParts: (0..<splitPool.queueCount).reduce(0) { $0 + splitPool.takenBackJobs(queue: $1) })
        }
        let jobEstimates = levels.map(\.estimatedJobNanoseconds)
        guard let pool = reportedPool else {
            // No level on helpers: the process's group still counts when the parts run on it.
            let group = reportedSplitPool.flatMap { $0.isShared ? $0.group : nil }
            return WorkgroupSchedulerStatistics(
                threadCount: group?.threadCount ?? 0, realtime: group?.realtimeGranted ?? false, shared: group != nil,
                helpers: IntervalStatistics().snapshot(), groupBusyNanos: group?.busyNanos.load(ordering: .relaxed) ?? 0,
                dataThreadLevelCount: dataThreadLevelCount, levels: [], split: split,
                splitEstimateNanos: splitShareEstimateNanos, jobEstimatesNanos: jobEstimates)
        }
        return WorkgroupSchedulerStatistics(
            threadCount: pool.threadCount, realtime: pool.realtimeGranted, shared: pool.isShared,
            helpers: pool.statistics.snapshot(), groupBusyNanos: pool.group.busyNanos.load(ordering: .relaxed),
            dataThreadLevelCount: dataThreadLevelCount,
            levels: (0..<pool.queueCount).map { queue in
                .init(
                    level: level(ofQueue: queue), blockSize: schedule(ofLevel: level(ofQueue: queue)).blockSize,
                    jobs: pool.queueStatistics[queue].snapshot(),
                    lateResults: pool.lateResults(queue: queue), droppedJobs: pool.droppedJobs(queue: queue))
            }, split: split, splitEstimateNanos: splitShareEstimateNanos, jobEstimatesNanos: jobEstimates)
    }
}

/// The split helpers' job runner: queue `q` is the engine's split part `q + 1`.
final class SplitPartRunner: JobRunner, @unchecked Sendable {
    // SAFETY: as the scheduler's runner: set in `prepare`, cleared in `stop()` after the split
    // helpers were joined; the scheduler's `runnerOwner` keeps the engine alive until then.
    unowned(unsafe) var runner: (any LevelJobRunner)?

    /// Split helpers. Real-time safe (the engine's part is).
    func runJob(queue: Int, sequence: Int) {
        runner?.runSplitPart(part: queue + 1, sequence: sequence)
    }
}

public struct WorkgroupSchedulerStatistics: Sendable, CustomStringConvertible {
    public struct Level: Sendable {
        /// The level's number in the engine's plan.
        public var level: Int
        public var blockSize: Int
        /// The level's jobs on the helpers: margins to their deadlines, busy time.
        public var jobs: IntervalStatisticsSnapshot
        /// Results the data thread gave up on (output without them).
        public var lateResults: Int
        public var droppedJobs: Int
    }

    public var threadCount: Int
    public var realtime: Bool
    /// Whether the helpers are the process's workgroup, shared with other nodes (`threadCount` is its size).
    public var shared: Bool
    /// This scheduler's level jobs on the helpers (in a shared group, not the other nodes').
    public var helpers: IntervalStatisticsSnapshot
    /// Every job's busy time on the helpers so far, ns: in a shared group every node's.
    public var groupBusyNanos: Int64
    /// The shortest levels, run on the data thread (not in `levels`).
    public var dataThreadLevelCount: Int
    /// The levels run on the helpers, shortest first.
    public var levels: [Level]

    /// The fork-join split of the data thread's share (nil: not split).
    public struct Split: Sendable {
        /// Parts per call, the data thread's own included.
        public var partCount: Int
        public var realtime: Bool
        /// The split helpers' parts: margins to the wait limit, busy time.
        public var jobs: IntervalStatisticsSnapshot
        /// Parts the data thread gave up on at its wait limit (output without them).
        public var lateSplits: Int
        /// Parts the data thread computed itself because their helper still ran a late one.
        public var busyParts: Int
        /// Parts the data thread took back and ran itself because their helper had not started
        /// them by the time the data thread finished its own part (helper wake-up latency).
        public var takenBackParts: Int
    }
    public var split: Split?
    /// With `split = auto`: the engine's estimate of its costliest call, ns (nan: not asked).
    public var splitEstimateNanos: Double = .nan
    /// The engine's estimate of one job per level, inline ones first, ns.
    public var jobEstimatesNanos: [Double] = []

    /// Late levels: results the data thread gave up on, all levels.
    public var lateLevels: Int { levels.reduce(0) { $0 + $1.lateResults } }
    public var lateSplits: Int { split?.lateSplits ?? 0 }

    public var description: String {
        var first =
            "helpers \(threadCount) (\(realtime ? "SCHED_FIFO" : "normal priority")\(shared ? ", the process's workgroup" : "")), late levels \(lateLevels), \(helpers)"
        if dataThreadLevelCount > 0 { first += ", \(dataThreadLevelCount) level(s) on the data thread" }
        if !splitEstimateNanos.isNaN { first += ", split estimate \(Int(splitEstimateNanos / 1000)) µs per block-start call" }
        if jobEstimatesNanos.contains(where: { !$0.isNaN }) {
            let estimates: [String] = jobEstimatesNanos.map { $0.isNaN ? "?" : "\(Int($0 / 1000))" }
            first += ", job estimates " + estimates.joined(separator: "/") + " µs"
        }
        var lines = [first]
        if let split {
            lines.append(
                "  split: \(split.partCount) parts (\(split.partCount - 1) helper(s), \(split.realtime ? "SCHED_FIFO" : "normal priority")), "
                    + "late splits \(split.lateSplits), taken back before their helper started \(split.takenBackParts), "
                    + "run on the data thread while their helper was busy \(split.busyParts), helper \(split.jobs)")
        }
        for level in levels {
            lines.append(
                "  level \(level.level) (block \(level.blockSize)): late results \(level.lateResults), "
                    + "dropped \(level.droppedJobs), \(level.jobs)")
        }
        return lines.joined(separator: "\n")
    }
}

/// A data-thread level's job spread over the calls before it is due, so that no one call carries
/// it whole: its steps (`LevelJobRunner.levelJobStepCount`) in equal shares, one share per call.
/// Why: run whole, the job made the call that completes its block the data thread's longest
/// (docs/facts.md, "Data-thread jobs spread over calls").
struct SpreadJob {
    let stepCount: Int
    /// The job's output block (-1: none yet).
    private(set) var block = -1
    private(set) var nextStep = 0
    /// Calls left to share the remaining steps (the current one included).
    var sharesLeft = 0

    init(stepCount: Int) { self.stepCount = stepCount }

    var isRunning: Bool { block >= 0 && nextStep < stepCount }

    mutating func start(block: Int, shares: Int) {
        self.block = block
        nextStep = 0
        sharesLeft = shares
    }

    /// The steps for this call: the remaining ones divided by the calls left, rounded up.
    mutating func takeShare() -> Range<Int> {
        let remaining = stepCount - nextStep
        let count = (remaining + max(sharesLeft, 1) - 1) / max(sharesLeft, 1)
        let share = nextStep..<(nextStep + count)
        nextStep += count
        sharesLeft = max(sharesLeft - 1, 0)
        return share
    }
}
