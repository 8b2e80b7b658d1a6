import Convolution
import ConvolverGraph
import ConvolverNode
import Glibc
import LevelScheduling
import Workgroup

/// `pw-convolver render`: an audio file through the very engine the node runs, offline.
enum RenderCommand: Command {
    static let name = "render"
    static let summary = "render an audio file through the engine, offline"
    static let usage = """
        Usage: pw-convolver render --ir FILE|builtin:NAME [--set KEY=VALUE ...] [--block N] [--rate R]
                                   [--threads T] IN OUT.wav

        Convolves IN (any format libsndfile reads) with the IR and writes OUT as 32-bit float WAV,
        including the IR's tail: what the node computes for IN's channels, the same samples. IN is
        read and OUT written block by block: memory does not grow with the file's length.
          --ir FILE|builtin:NAME  the impulse response (builtin: dirac, hall, hilbert; or a SOFA HRTF
                                  set: two outputs, the ears); 1 channel for all, one per input
                                  channel, or 4 for true stereo (LL LR RL RR) [filename]
          --set KEY=VALUE         any module argument, as in the module's config (repeatable), e.g.
                                  --set sofa.azimuth=90 --set gain=0.5 --set 'audio.position=[ FL FR ]'
                                  (default: audio.channels = IN's channel count)
          --block N               feed the engine N frames per call, 1...8192, as PipeWire would at
                                  quantum N (default: \(throughputBlock), planned for throughput; any
                                  block gives the same output to float precision)
          --rate R                the rate to render at, as a check: IN must be at R Hz (default: IN's rate);
                                  the IR is resampled to it (libsoxr)
          --threads T             run the levels on helper threads (auto, levels, or N), as the node
                                  does; the output is the same bit for bit (default: inline, no threads)
        """

    /// Offline there is no deadline: large calls, so few and large partitions (the head's FFTs
    /// and per-call costs amortised over many frames).
    static let throughputBlock = 8192

    static func run(_ arguments: [String]) throws {
        var options = try OptionParser(
            arguments, flags: [], valued: ["--ir", "--block", "--rate", "--threads"],
            repeatable: ["--set"])
        try options.finish(positionalCount: 2)
        guard let irSpec = options.string("--ir") else { throw UsageError("--ir is required") }
        let block = try options.integer("--block", in: 1...8192) ?? throughputBlock
        let (inputPath, outputPath) = (options.positional[0], options.positional[1])

        let input = try SoundFileReader(path: inputPath)
        let rate = try options.double("--rate") ?? input.info.sampleRate
        guard rate == input.info.sampleRate else {
            throw UsageError(
                "\(inputPath) is at \(Int(input.info.sampleRate)) Hz, not the --rate \(Int(rate)) Hz; "
                    + "convert it first (e.g. sox IN -r \(Int(rate)) IN-\(Int(rate)).wav)")
        }
        // nil: every level job runs in the engine's own call.
        var scheduler: WorkgroupLevelScheduler?
        if let threads = options.string("--threads") {
            guard let count = ThreadCount(argument: threads) else {
                throw UsageError("--threads: '\(threads)' is not 'auto', 'levels' or a positive whole number")
            }
            var configuration = WorkgroupSchedulerConfiguration()
            configuration.threadCount = count
            scheduler = WorkgroupLevelScheduler(configuration: configuration)  // no cycles: awaits wait for completion
        }
        var members = [
            SPAJSONMember(key: "filename", value: .string(irSpec)),
            SPAJSONMember(key: "audio.channels", value: .word("\(input.info.channelCount)")),
        ]
        let configuration: NodeConfiguration
        do throws(NodeConfigurationError) {
            for setting in options.strings("--set") { members.append(try SPAJSONMember.setting(setting)) }
            let (parsed, warnings) = try NodeConfiguration.parse(pipeWire: .running, .object(members))
            for warning in warnings { printToStandardError("pw-convolver render: warning: \(warning)") }
            configuration = parsed
        } catch {
            throw UsageError(error.description)
        }
        guard configuration.channelCount == input.info.channelCount else {
            throw UsageError("\(inputPath) has \(input.info.channelCount) channels, the node \(configuration.channelCount) inputs")
        }
        let (engine, tailFrames) = try makeEngine(
            configuration, rate: rate, block: block,
            throughput: options.string("--block") == nil, scheduler: scheduler)
        defer { scheduler?.stop() }
        let output = try SoundFileWriter(path: outputPath, sampleRate: rate, channelCount: engine.outputCount)

        let cpuStart = clock()
        // The output is the input's length plus the IR's tail (length - 1), fed out with silence.
        let frameCount = try stream(
            input, through: engine, scheduler: scheduler, amounts: configuration.wetAndDryAmounts,
            width: Float(configuration.width), into: output,
            blockSize: block, tailFrames: tailFrames)
        try output.close()
        let cpuSeconds = Double(clock() - cpuStart) / Double(CLOCKS_PER_SEC)
        printToStandardError(
            String(
                cFormat: "rendered %.2f s of %d-channel audio in %.3f s of CPU",
                Double(frameCount) / rate, input.info.channelCount, cpuSeconds)
                + " (plan \(engine.plan.description)) to \(outputPath)"
                + (peakMemoryKilobytes().map { String(cFormat: ", peak memory %.1f MB", Double($0) / 1024) } ?? ""))
    }

    /// The node's engine for `configuration` at `rate`, and the IR's tail (its length - 1). The
    /// IR's samples are gone when this returns: the engine holds the IR as spectra.
    static func makeEngine(
        _ configuration: NodeConfiguration, rate: Double, block: Int, throughput: Bool,
        scheduler: (any LevelJobScheduler)?
    ) throws -> (ConvolutionEngine, tailFrames: Int) {
        let matrix = try configuration.engineMatrix(sampleRate: Int(rate))
        // Throughput: one uniform partition of the block (no planner, so none of its machine
        // measurements, which take time and 32 MB); a given --block is planned as the node would.
        let configuration =
            throughput
            ? EngineConfiguration.uniform(blockSize: block, impulseLength: matrix.impulseLength)
            : EngineConfiguration(expectedBlockSize: block, sampleRate: rate, costs: MeasuredMachineCosts.thisMachine)
        let engine = try ConvolutionEngine(matrix: matrix, configuration: configuration, scheduler: scheduler)
        return (engine, max(0, matrix.impulseLength - 1))
    }

    /// This process's peak resident memory (VmHWM of /proc/self/status): its own pages only, not
    /// the pre-exec peak that getrusage reports for a process its parent forked big.
    static func peakMemoryKilobytes() -> Int? {
        guard let status = SystemFiles.readText("/proc/self/status"),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }

    /// Reads `input` block by block (then `tailFrames` of silence), convolves, writes; returns
    /// the frames written.
    static func stream(
        _ input: SoundFileReader, through engine: ConvolutionEngine, scheduler: (any LevelJobScheduler)?,
        amounts: (wet: Float, dry: Float),
        width: Float = 1, into output: SoundFileWriter, blockSize: Int, tailFrames: Int
    ) throws -> Int {
        let (inputCount, outputCount) = (input.info.channelCount, output.channelCount)
        var interleavedIn = [Float](repeating: 0, count: blockSize * inputCount)
        var interleavedOut = [Float](repeating: 0, count: blockSize * outputCount)
        let inputs = try (0..<inputCount).map { _ in try AlignedFloats(count: blockSize) }
        let outputs = try (0..<outputCount).map { _ in try AlignedFloats(count: blockSize) }
        let inputPointers = inputs.map { UnsafePointer<Float>?(UnsafePointer($0.pointer)) }
        let outputPointers = outputs.map { Optional($0.pointer) }
        let total = input.info.frameCount + tailFrames
        var done = 0
        while done < total {
            let count = min(blockSize, total - done)
            let wanted = max(0, min(count, input.info.frameCount - done))
            let read = wanted > 0 ? try interleavedIn.withUnsafeMutableBufferPointer { try input.readInterleaved(into: $0, frames: wanted) } : 0
            guard read == wanted else {
                throw AudioFileError.truncated(
                    path: input.path,
                    detail: "the header promises \(input.info.frameCount) frames "
                        + "but reading stopped after \(done + read)")
            }
            for channel in 0..<inputCount {
                let planar = inputs[channel].pointer
                for frame in 0..<read { planar[frame] = interleavedIn[frame * inputCount + channel] }
                (planar + read).update(repeating: 0, count: count - read)
            }
            engine.process(inputs: inputPointers, outputs: outputPointers, frameCount: count, scheduler: scheduler)
            if outputCount == 2 && width != 1 {
                _ = StereoWidth.apply(
                    left: outputs[0].pointer, right: outputs[1].pointer, frameCount: count, width: width,
                    target: width, coefficient: 1)
            }
            for channel in 0..<outputCount {
                let planar = outputs[channel].pointer
                if amounts == (1, 0) {
                    for frame in 0..<count { interleavedOut[frame * outputCount + channel] = planar[frame] }
                } else {
                    let dry = channel < inputCount ? inputs[channel].pointer : nil
                    for frame in 0..<count {
                        interleavedOut[frame * outputCount + channel] = amounts.wet * planar[frame] + amounts.dry * (dry?[frame] ?? 0)
                    }
                }
            }
            try interleavedOut.withUnsafeBufferPointer { try output.write(interleaved: $0, frames: count) }
            done += count
        }
        return done
    }
}
