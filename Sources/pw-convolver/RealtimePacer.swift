import Convolution
import ConvolverGraph
import ConvolverNode
import FixedMemory
import Glibc
import LevelScheduling
import Workgroup

/// What one real-time paced run measured.
struct PacedRunResult {
    var calls: Int
    var blockSize: Int
    var audioSeconds: Double
    /// Data-thread time per `process` call (including any wait for a helper), µs.
    var callWorstMicroseconds: Double
    var callP99Microseconds: Double
    var callMeanMicroseconds: Double
    /// CPU time of every thread of the process during the run, % of one core per second of audio.
    var processCPUPercent: Double
    /// CPU time of the pacing (data) thread alone, same unit.
    var dataThreadCPUPercent: Double
    /// Calls that ended after their period (the node deadline of a driver) ended.
    var overruns: Int
    /// Level results the data thread gave up on (workgroup only).
    var lateLevels: Int
    /// 99% of helper jobs finished at least this long before their deadline, µs (workgroup only).
    var helperMarginP99Microseconds: Double?
    var helperMarginMinMicroseconds: Double?
    /// Whether the pacing thread ran SCHED_FIFO.
    var pacerRealtime: Bool
    /// The scheduler's own report (helpers, per level), or "inline".
    var schedulerReport: String
    /// Helper threads that ran the levels (0: inline).
    var helperThreads: Int
    /// The split mode asked for (nil: inline run) and what came of it: parts per call (1: not
    /// split), late split parts, parts the data thread ran itself because their helper was busy.
    var splitMode: SplitMode? = nil
    var splitParts = 1
    var lateSplits = 0
    var busySplitParts = 0
    var takenBackSplitParts = 0

    /// One line of `bench --threads --json`.
    func json(engine: String, irSeconds: Double, channels: Int, threads: Int) -> String {
        let split = splitMode.map { "\"\($0.rawValue)\"" } ?? "null"
        let margin = helperMarginP99Microseconds.map { String(cFormat: "%.0f", $0) } ?? "null"
        return #"{"engine":"\#(engine)","#
            + String(cFormat: #""ir_seconds":%g,"channels":%d,"block":%d,"threads":%d,"#, irSeconds, channels, blockSize, threads)
            + #""split":\#(split),"#
            + String(
                cFormat:
                    #""split_parts":%d,"cpu_percent":%.3f,"data_thread_cpu_percent":%.3f,"call_max_us":%.1f,"call_p99_us":%.1f,"late":%d,"late_splits":%d,"taken_back_split_parts":%d,"busy_split_parts":%d,"overruns":%d,"#,
                splitParts, processCPUPercent, dataThreadCPUPercent, callWorstMicroseconds, callP99Microseconds,
                lateLevels, lateSplits, takenBackSplitParts, busySplitParts, overruns)
            + #""helper_margin_p99_us":\#(margin)}"#
    }
}

/// Runs an engine like a driver would: one `process` call per block period, from a SCHED_FIFO
/// thread, so the helpers' deadlines are real deadlines. Used by `pw-convolver bench --threads`.
enum RealtimePacer {
    /// Paces `seconds` of noise through `engine` in calls of `blockSize` frames at `sampleRate`.
    /// With a `scheduler` (the engine's `WorkgroupLevelScheduler`), each call begins a cycle whose
    /// wait limit is the period end minus `safetyMarginFraction` of the period.
    /// `priority`: the pacing thread's SCHED_FIFO priority (PipeWire's data thread default, 88);
    /// helpers should sit below it (the scheduler's default is 87).
    static func runPaced(
        engine: ConvolutionEngine, scheduler: WorkgroupLevelScheduler?, blockSize: Int,
        seconds: Double, sampleRate: Double, priority: Int32 = 88,
        safetyMarginFraction: Double = 0.25
    ) throws -> PacedRunResult {
        let calls = max(1, Int(seconds * sampleRate) / blockSize)
        let periodNanos = UInt64(Double(blockSize) * 1e9 / sampleRate)
        let waitLimitOffset = periodNanos - UInt64(Double(periodNanos) * safetyMarginFraction)

        let loop = try PacedLoop(
            engine: engine, scheduler: scheduler, blockSize: blockSize, calls: calls,
            periodNanos: periodNanos, waitLimitOffset: waitLimitOffset, sampleRate: sampleRate)
        let factory = PthreadThreadFactory()
        let cpuBefore = processCPUNanoseconds()
        let started = Semaphore()
        var pacerRealtime = false
        do {
            // The thread waits for `started` so SCHED_FIFO is in place before the first call.
            let thread = try factory.createThread(name: "pwconv-pacer") {
                started.wait(); loop.run()
            }
            pacerRealtime = factory.acquireRealtime(thread, priority: priority) == 0
            if !pacerRealtime {
                fputs(
                    "pw-convolver bench: warning: SCHED_FIFO \(priority) refused for the pacing thread; "
                        + "deadlines are not real\n", stderr)
            }
            started.post()
            factory.joinThread(thread)
        } catch {
            fputs("pw-convolver bench: \(error)\n", stderr)
        }
        let cpu = Double(processCPUNanoseconds() - cpuBefore)

        let times = UnsafeBufferPointer(start: loop.callTimes.pointer, count: calls).sorted()
        let audioNanos = Double(calls * blockSize) / sampleRate * 1e9
        let statistics = scheduler?.statistics()
        var result = PacedRunResult(
            calls: calls, blockSize: blockSize, audioSeconds: audioNanos / 1e9,
            callWorstMicroseconds: Double(times[calls - 1]) / 1000,
            callP99Microseconds: Double(times[min(calls - 1, calls * 99 / 100)]) / 1000,
            callMeanMicroseconds: Double(times.reduce(0, +)) / Double(calls) / 1000,
            processCPUPercent: 100 * cpu / audioNanos,
            dataThreadCPUPercent: 100 * Double(loop.threadCPUNanos) / audioNanos,
            overruns: loop.overruns,
            lateLevels: statistics?.lateLevels ?? 0,
            helperMarginP99Microseconds: statistics?.helpers.p99MarginNanos.map { Double($0) / 1000 },
            helperMarginMinMicroseconds: statistics?.helpers.minMarginNanos.map { Double($0) / 1000 },
            pacerRealtime: pacerRealtime,
            schedulerReport: statistics?.description ?? "inline",
            helperThreads: statistics?.threadCount ?? 0)
        if let scheduler {
            result.splitMode = scheduler.configuration.split
            result.splitParts = engine.splitPartCount
            result.lateSplits = statistics?.lateSplits ?? 0
            result.busySplitParts = statistics?.split?.busyParts ?? 0
            result.takenBackSplitParts = statistics?.split?.takenBackParts ?? 0
        }
        return result
    }

    /// One case paced on a workgroup of `threads` helpers with the data thread's share split as
    /// `split` says.
    static func runWorkgroup(
        matrix: ConvolutionMatrix, configuration: EngineConfiguration, blockSize: Int,
        seconds: Double, sampleRate: Double, threads: ThreadCount, split: SplitMode = .off,
        minimumDataThreadLevelCount: Int = 0
    ) throws -> PacedRunResult {
        var schedulerConfiguration = WorkgroupSchedulerConfiguration()
        schedulerConfiguration.threadCount = threads
        schedulerConfiguration.sampleRate = sampleRate
        schedulerConfiguration.minimumDataThreadLevelCount = minimumDataThreadLevelCount
        schedulerConfiguration.split = split
        let scheduler = WorkgroupLevelScheduler(configuration: schedulerConfiguration)
        let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration, scheduler: scheduler)
        defer { scheduler.stop() }
        return try runPaced(
            engine: engine, scheduler: scheduler, blockSize: blockSize, seconds: seconds,
            sampleRate: sampleRate)
    }

    /// `bench --threads`: every case paced inline, then on the workgroup once per split mode, in
    /// one run; one result line (against the same inline run) and the scheduler's report each.
    /// `matrix(irSeconds, channels)` builds the case's IRs.
    static func runBench(
        irSeconds: [Double], blocks: [Int], seconds: Double, sampleRate: Double,
        threads: ThreadCount, channels: Int, minimumDataThreadLevelCount: Int = 0, inlineJobMicroseconds: Int? = nil,
        splitModes: [SplitMode] = [.off], json: Bool = false,
        matrix: (_ irSeconds: Double, _ channels: Int) -> ConvolutionMatrix
    ) throws {
        for length in irSeconds {
            let caseMatrix = matrix(length, channels)
            for block in blocks {
                // Planned and priced as the node plans (the inline engine gets the same plan).
                var configuration = EngineConfiguration(
                    expectedBlockSize: block, placement: .node, sampleRate: sampleRate, costs: MeasuredMachineCosts.thisMachine)
                if let inlineJobMicroseconds { configuration.placement?.dataThreadJobNanoseconds = Double(inlineJobMicroseconds) * 1000 }
                let inline = try runPaced(
                    engine: try ConvolutionEngine(matrix: caseMatrix, configuration: configuration),
                    scheduler: nil, blockSize: block, seconds: seconds, sampleRate: sampleRate)
                if json { print(inline.json(engine: "inline", irSeconds: length, channels: channels, threads: 0)) }
                for split in splitModes {
                    let workgroup = try runWorkgroup(
                        matrix: caseMatrix, configuration: configuration, blockSize: block,
                        seconds: seconds, sampleRate: sampleRate, threads: threads, split: split,
                        minimumDataThreadLevelCount: minimumDataThreadLevelCount)
                    if json {
                        print(
                            workgroup.json(
                                engine: "workgroup", irSeconds: length, channels: channels,
                                threads: workgroup.helperThreads))
                        continue
                    }
                    print(
                        format(
                            (inline, workgroup),
                            label: String(cFormat: "IR %4.1f s x%d, block %5d, split ", length, channels, block)
                                + "\(split.rawValue) (\(workgroup.splitParts) part\(workgroup.splitParts == 1 ? "" : "s"))"))
                    print("    " + workgroup.schedulerReport.replacing("\n", with: "\n    "))
                }
            }
        }
    }

    /// One text line per case for the bench: inline vs workgroup.
    static func format(_ result: (inline: PacedRunResult, workgroup: PacedRunResult), label: String) -> String {
        let inline = result.inline, workgroup = result.workgroup
        func micros(_ value: Double?) -> String { value.map { String(cFormat: "%.0f µs", $0) } ?? "-" }
        return label
            + String(
                cFormat: " paced: inline call max %8.1f µs p99 %7.1f µs cpu %5.2f%% overruns %d | "
                    + "workgroup call max %7.1f µs p99 %6.1f µs cpu %5.2f%% (data thread %5.2f%%) overruns %d "
                    + "late levels %d late splits %d helper margin p99 ",
                inline.callWorstMicroseconds, inline.callP99Microseconds, inline.processCPUPercent,
                inline.overruns, workgroup.callWorstMicroseconds, workgroup.callP99Microseconds,
                workgroup.processCPUPercent, workgroup.dataThreadCPUPercent, workgroup.overruns,
                workgroup.lateLevels, workgroup.lateSplits)
            + "\(micros(workgroup.helperMarginP99Microseconds)) min \(micros(workgroup.helperMarginMinMicroseconds)) | "
            + String(
                cFormat: "max %.1fx lower, cpu %.2fx", inline.callWorstMicroseconds / workgroup.callWorstMicroseconds,
                workgroup.processCPUPercent / inline.processCPUPercent)
    }

    /// CPU time of every thread of this process (user + system), ns.
    static func processCPUNanoseconds() -> UInt64 {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        let user = UInt64(usage.ru_utime.tv_sec) * 1_000_000_000 + UInt64(usage.ru_utime.tv_usec) * 1000
        let system = UInt64(usage.ru_stime.tv_sec) * 1_000_000_000 + UInt64(usage.ru_stime.tv_usec) * 1000
        return user + system
    }
}

/// The paced loop and everything it touches, allocated before it runs.
/// @unchecked Sendable: only the pacing thread uses it while it runs; the creator reads the
/// results after joining that thread.
private final class PacedLoop: @unchecked Sendable {
    let engine: ConvolutionEngine
    let scheduler: WorkgroupLevelScheduler?
    let blockSize: Int, calls: Int
    let periodNanos: UInt64, waitLimitOffset: UInt64
    let sampleRate: Double
    let noiseLength: Int
    let noise: [AlignedFloats]
    let outputStorage: [AlignedFloats]
    let inputs: FixedBuffer<UnsafePointer<Float>?>
    let outputs: FixedBuffer<UnsafeMutablePointer<Float>?>
    /// Data-thread time of each call, ns.
    let callTimes: FixedBuffer<UInt64>
    var overruns = 0
    /// CPU time of the pacing thread over the loop, ns.
    var threadCPUNanos: UInt64 = 0

    init(
        engine: ConvolutionEngine, scheduler: WorkgroupLevelScheduler?, blockSize: Int, calls: Int,
        periodNanos: UInt64, waitLimitOffset: UInt64, sampleRate: Double
    ) throws {
        self.engine = engine
        self.scheduler = scheduler
        self.blockSize = blockSize
        self.calls = calls
        self.periodNanos = periodNanos
        self.waitLimitOffset = waitLimitOffset
        self.sampleRate = sampleRate
        // One second of noise per input, read at a moving offset.
        noiseLength = Int(sampleRate) + blockSize
        noise = try (0..<engine.inputCount).map { _ in try AlignedFloats(count: Int(sampleRate) + blockSize) }
        for channel in noise { for n in 0..<noiseLength { channel.pointer[n] = Float.random(in: -1...1) } }
        outputStorage = try (0..<engine.outputCount).map { _ in try AlignedFloats(count: blockSize) }
        inputs = try FixedBuffer(repeating: nil, count: engine.inputCount)
        outputs = try FixedBuffer(repeating: nil, count: engine.outputCount)
        for channel in 0..<engine.outputCount { outputs[channel] = outputStorage[channel].pointer }
        callTimes = try FixedBuffer(repeating: 0, count: calls)
    }

    /// The pacing thread: sleep to the period start, begin the cycle, process, time it.
    /// Real-time safe (allocation-free) apart from the engine's own contract.
    func run() {
        nameCurrentThread("pwconv-pacer")
        var next = monotonicNanos() + 20_000_000
        let cpuStart = Self.threadCPUNanoseconds()
        defer { threadCPUNanos = Self.threadCPUNanoseconds() - cpuStart }
        for call in 0..<calls {
            var wake = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nil) == EINTR {}
            let start = monotonicNanos()
            let offset = (call * blockSize) % (noiseLength - blockSize)
            for channel in 0..<engine.inputCount { inputs[channel] = UnsafePointer(noise[channel].pointer + offset) }
            scheduler?.beginCycle(startNanos: next, waitLimitNanos: next + waitLimitOffset, sampleRate: sampleRate)
            engine.process(inputs: inputs.pointer, outputs: outputs.pointer, frameCount: blockSize, scheduler: scheduler)
            let end = monotonicNanos()
            callTimes[call] = end - start
            if end > next + periodNanos { overruns += 1 }
            next += periodNanos
            if next < end { next = end }  // fell behind: resume pacing from now, like a driver after an xrun
        }
    }

    static func threadCPUNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
