import Convolution
import ConvolverNode
import Foundation
import Workgroup

/// `pw-convolver render`: an audio file through the very engine the node runs, offline.
enum RenderCommand: Command {
    static let name = "render"
    static let summary = "render an audio file through the engine, offline"
    static let usage = """
    Usage: pw-convolver render --ir FILE|builtin:NAME [--block N] [--rate R] [--threads T] IN OUT.wav

    Convolves IN (any format libsndfile reads) with the IR and writes OUT as 32-bit float WAV,
    including the IR's tail. The engine is fed --block frames per call, as PipeWire would.
      --ir FILE|builtin:NAME  the impulse response (builtin: dirac, hall, hilbert); 1 channel for all,
                              one per input channel, or 4 for true stereo (LL LR RL RR)
      --block N               frames per call, 1...8192 (default 256)
      --rate R                the rate to render at, as a check: IN must be at R Hz (default: IN's rate);
                              the IR is resampled to it (libsoxr)
      --threads T             run the levels on helper threads (auto, levels, or N), as the node
                              does; the output is the same bit for bit (default: inline, no threads)
    """

    static func run(_ arguments: [String]) throws {
        var options = try OptionParser(arguments, flags: [], valued: ["--ir", "--block", "--rate", "--threads"])
        try options.finish(positionalCount: 2)
        guard let irSpec = options.string("--ir") else { throw UsageError("--ir is required") }
        let block = try options.integer("--block", in: 1...8192) ?? 256
        let (inputPath, outputPath) = (options.positional[0], options.positional[1])

        let input = try AudioFile.read(path: inputPath)
        let rate = try options.double("--rate") ?? input.sampleRate
        guard rate == input.sampleRate else {
            throw UsageError("\(inputPath) is at \(Int(input.sampleRate)) Hz, not the --rate \(Int(rate)) Hz; "
                             + "convert it first (e.g. sox IN -r \(Int(rate)) IN-\(Int(rate)).wav)")
        }
        let channels = input.channels
        let impulseResponse = try ImpulseResponse.load(irSpec, sampleRate: rate)
        let matrix = try ConvolutionMatrix(impulseResponse: impulseResponse, channelCount: channels.count)
        let scheduler: any LevelJobScheduler
        if let threads = options.string("--threads") {
            guard let count = ThreadCount(argument: threads) else {
                throw UsageError("--threads: '\(threads)' is not 'auto', 'levels' or a positive whole number")
            }
            var configuration = WorkgroupSchedulerConfiguration()
            configuration.threadCount = count
            scheduler = WorkgroupLevelScheduler(configuration: configuration)  // no cycles: awaits wait for completion
        } else {
            scheduler = InlineScheduler()
        }
        let engine = try ConvolutionEngine(matrix: matrix, configuration: .init(expectedBlockSize: block),
                                           scheduler: scheduler)
        defer { engine.stop() }

        // Feed the tail out with silence: the output is input length + IR length - 1.
        let tail = max(0, impulseResponse.frameCount - 1)
        let padded = channels.map { $0 + [Float](repeating: 0, count: tail) }
        let cpuStart = clock()
        let rendered = engine.process(padded, blockSize: block)
        let cpuSeconds = Double(clock() - cpuStart) / Double(CLOCKS_PER_SEC)
        try AudioFile.write(path: outputPath, sampleRate: rate, channels: rendered, format: .float32Wav)
        let seconds = Double(padded[0].count) / rate
        FileHandle.standardError.write(Data(String(
            format: "rendered %.2f s of %d-channel audio in %.3f s of CPU (plan %@) to %@\n",
            seconds, channels.count, cpuSeconds, engine.plan.description, outputPath).utf8))
    }
}
