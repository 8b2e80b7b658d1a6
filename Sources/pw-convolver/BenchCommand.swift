import Convolution
import ConvolverGraph
import ConvolverNode
import FixedMemory
import Glibc
import LevelScheduling
import Workgroup

/// `pw-convolver bench`: times the engine on synthetic stereo IRs, beside a uniformly partitioned
/// engine at the same block size (the ratio is the point: this machine is shared and noisy).
enum BenchCommand: Command {
    static let name = "bench"
    static let summary = "benchmark the engine against a uniformly partitioned one"
    static let usage = """
        Usage: pw-convolver bench [--json] [--ir-seconds 1,3,10] [--blocks 64,256,1024] [--seconds S] [--evict-mb M]
                                  [--plan 256,2048,16384]
                                  [--threads auto|levels|N] [--channels N] [--inline-levels N] [--inline-job-us N]
                                  [--split auto|on|off[,...]]

        Convolves stereo noise with synthetic stereo IRs (decaying noise) at 48 kHz, one call per block,
        and prints per case: CPU per second of audio (% of one core), p99 and worst time of one call (µs),
        the partition plan, and the same figures for a uniformly partitioned engine at that block size.
          --json            one JSON object per line and case
          --ir-seconds L    IR lengths in seconds, comma-separated (default 1,3,10)
          --blocks L        call sizes in frames, comma-separated (default 64,256,1024)
          --seconds S       seconds of audio per case (default 10; the uniform engine runs at most 3)
          --evict-mb M      before each call, sweep M MB of other memory (not counted): every call
                            starts with cold caches, as in a live graph, where other processes run
                            between two cycles (e.g. 64; default 0: back to back, caches warm)
          --plan B,B,...    the level block sizes to use instead of the planner's choice (head first,
                            each level as long as the planner's layout makes it), to price a layout
          --threads T       run the levels on the workgroup's helper threads (auto = cores - 1, levels =
                            one per level, or N), paced in real time like a driver from a SCHED_FIFO
                            thread, beside the inline engine in the same run: worst/p99 data-thread
                            time per call, CPU of all threads, late levels, helpers' deadline margin
          --channels N      channels (one IR each) with --threads (default 2)
          --inline-levels N run the N shortest levels on the data thread with --threads (default 0)
          --inline-job-us N with --threads: also run on the data thread the shortest levels whose
                            job the engine estimates at most N µs (and 2% of the call period), and plan
                            for it; 0: off (default: the node's, 50)
          --split M         with --threads: split the data thread's own share (the head's per-output
                            work) across the helpers within each call, fork-join: on, off (default)
                            or auto (when its estimated cost exceeds half the call period); several
                            modes, comma-separated, run one after the other against the same inline run
        """

    static let sampleRate = 48000.0

    static func run(_ arguments: [String]) throws {
        var options = try OptionParser(
            arguments, flags: ["--json"],
            valued: [
                "--ir-seconds", "--blocks", "--seconds", "--evict-mb", "--plan", "--threads", "--channels", "--inline-levels", "--inline-job-us",
                "--split",
            ])
        let json = options.flag("--json")
        let irSeconds = try options.doubles("--ir-seconds") ?? [1, 3, 10]
        let blocks = try options.integers("--blocks") ?? [64, 256, 1024]
        let seconds = try options.double("--seconds") ?? 10
        let evictMegabytes = try options.integer("--evict-mb", in: 0...4096) ?? 0
        let planBlocks = try options.integers("--plan")
        let threads = try options.string("--threads").map { value in
            guard let count = ThreadCount(argument: value) else {
                throw UsageError("--threads: '\(value)' is not 'auto', 'levels' or a positive integer")
            }
            return count
        }
        let channels = try options.integer("--channels") ?? 2
        let inlineLevels = try options.integer("--inline-levels", in: 0...16) ?? 0
        let inlineJobMicroseconds = try options.integer("--inline-job-us", in: 0...1_000_000)
        let splitModes = try (options.string("--split") ?? "off").split(separator: ",").map { value in
            guard let mode = SplitMode(argument: String(value)) else {
                throw UsageError("--split: '\(value)' is not 'auto', 'on' or 'off'")
            }
            return mode
        }
        try options.finish()
        // Figures from two machines compare only with the same kernel.
        if !json { print("Multiply-adds: \(SpectrumKernels.usesAVX ? "the AVX kernel" : "the portable kernel (this CPU has no AVX)").") }
        if let threads {
            if evictMegabytes > 0 || planBlocks != nil {
                throw UsageError("--evict-mb and --plan: only without --threads (the inline engine)")
            }
            return try RealtimePacer.runBench(
                irSeconds: irSeconds, blocks: blocks, seconds: seconds, sampleRate: sampleRate,
                threads: threads, channels: channels, minimumDataThreadLevelCount: inlineLevels,
                inlineJobMicroseconds: inlineJobMicroseconds,
                splitModes: splitModes, json: json,
                matrix: syntheticStereoMatrix)
        }

        let eviction = evictMegabytes > 0 ? try CacheEviction(megabytes: evictMegabytes) : nil
        if eviction != nil && !json { print("Caches evicted before every call (\(evictMegabytes) MB swept, not counted).") }
        for length in irSeconds {
            let matrix = syntheticStereoMatrix(seconds: length)
            let fixedPlan = try planBlocks.map { sizes in
                guard let head = sizes.first,
                    let levels = PartitionPlanner.layout(
                        length: matrix.impulseLength, headBlock: head,
                        tailSizes: Array(sizes.dropFirst()))
                else {
                    throw UsageError("--plan: \(sizes) leaves a level past the IR's end")
                }
                return PartitionPlan(levels: levels)
            }
            for block in blocks {
                let engine = try ConvolutionEngine(
                    matrix: matrix, configuration: .init(expectedBlockSize: block, fixedPlan: fixedPlan, costs: MeasuredMachineCosts.thisMachine))
                let partitioned = try measure(engine, block: block, seconds: seconds, eviction: eviction)
                let uniformEngine = try ConvolutionEngine(
                    matrix: matrix, configuration: .uniform(blockSize: block, impulseLength: matrix.impulseLength))
                let uniform = try measure(uniformEngine, block: block, seconds: min(seconds, 3), eviction: eviction)
                if json {
                    print(partitioned.json(engine: "partitioned", irSeconds: length, block: block, plan: engine.plan))
                    print(uniform.json(engine: "uniform", irSeconds: length, block: block, plan: uniformEngine.plan))
                } else {
                    print(
                        String(
                            cFormat:
                                "IR %4.1f s, block %5d: %6.2f%% of a core, call p99 %7.1f µs, max %8.1f µs | uniform %7.2f%%, p99 %8.1f µs, max %8.1f µs | %5.1fx cheaper",
                            length, block, partitioned.cpuPercent, partitioned.callP99Microseconds,
                            partitioned.callMaxMicroseconds, uniform.cpuPercent, uniform.callP99Microseconds,
                            uniform.callMaxMicroseconds, uniform.cpuPercent / partitioned.cpuPercent))
                    print("    plan: \(engine.plan)")
                }
            }
        }
    }

    /// Decaying stereo noise (60 dB over the length), independent channels: a stand-in hall.
    static func syntheticStereoMatrix(seconds: Double, channels: Int = 2) -> ConvolutionMatrix {
        let length = Int(seconds * sampleRate)
        var generator = SystemRandomNumberGenerator()
        func impulse() -> [Float] {
            (0..<length).map { n in Float.random(in: -1...1, using: &generator) * Float(pow(10, -3 * Double(n) / Double(length))) }
        }
        return ConvolutionMatrix(
            inputCount: channels, outputCount: channels,
            entries: (0..<channels).map { .init(input: $0, output: $0, impulse: impulse()) })
    }

    struct Measurement {
        var cpuPercent: Double
        var callP99Microseconds: Double
        var callMaxMicroseconds: Double

        func json(engine: String, irSeconds: Double, block: Int, plan: PartitionPlan) -> String {
            #"{"engine":"\#(engine)","#
                + String(
                    cFormat: #""ir_seconds":%g,"block":%d,"threads":0,"cpu_percent":%.3f,"call_max_us":%.1f,"call_p99_us":%.1f,"late":0,"#,
                    irSeconds, block, cpuPercent, callMaxMicroseconds, callP99Microseconds)
                + #""plan":"\#(plan.description)"}"#
        }
    }

    /// Runs `seconds` of stereo noise through `engine` in calls of `block` frames, as fast as it goes
    /// (after evicting the caches before each call, with an `eviction`: its time is not counted).
    static func measure(_ engine: ConvolutionEngine, block: Int, seconds: Double, eviction: CacheEviction?) throws -> Measurement {
        let calls = max(1, Int(seconds * sampleRate) / block)
        let input = try AlignedFloats(count: block), left = try AlignedFloats(count: block), right = try AlignedFloats(count: block)
        for n in 0..<block { input.pointer[n] = Float.random(in: -1...1) }
        let inputs = try FixedBuffer<UnsafePointer<Float>?>(repeating: nil, count: 2)
        let outputs = try FixedBuffer<UnsafeMutablePointer<Float>?>(repeating: nil, count: 2)
        inputs[0] = UnsafePointer(input.pointer); inputs[1] = UnsafePointer(input.pointer)
        outputs[0] = left.pointer; outputs[1] = right.pointer
        var callTimes = [UInt64](repeating: 0, count: calls)
        var evictionCPU: UInt64 = 0
        let cpuStart = threadCPUNanoseconds()
        for call in 0..<calls {
            if let eviction {
                let evictionStart = threadCPUNanoseconds()
                eviction.sweep()
                evictionCPU += threadCPUNanoseconds() - evictionStart
            }
            let start = monotonicNanos()
            engine.process(inputs: inputs.pointer, outputs: outputs.pointer, frameCount: block)
            callTimes[call] = monotonicNanos() - start
        }
        let cpu = Double(threadCPUNanoseconds() - cpuStart - evictionCPU)
        callTimes.sort()
        let audioNanoseconds = Double(calls * block) / sampleRate * 1e9
        return Measurement(
            cpuPercent: 100 * cpu / audioNanoseconds,
            callP99Microseconds: Double(callTimes[min(calls - 1, calls * 99 / 100)]) / 1000,
            callMaxMicroseconds: Double(callTimes[calls - 1]) / 1000)
    }

    static func threadCPUNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

/// Memory that is not the engine's, written one byte per cache line: after a sweep larger than the
/// last-level cache, the engine's code and data must come back from memory, as after other
/// processes ran between two cycles of a live graph.
final class CacheEviction {
    private let bytes: FixedBuffer<UInt8>

    init(megabytes: Int) throws {
        bytes = try FixedBuffer(repeating: 0, count: megabytes << 20)
    }

    func sweep() {
        for offset in stride(from: 0, to: bytes.count, by: 64) { bytes[offset] &+= 1 }
    }
}
