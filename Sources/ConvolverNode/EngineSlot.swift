// An engine built for one sample rate, and how it is built from a NodeConfiguration.
// Built off the real-time thread; handed to the data thread through RealtimeProcessor's atomics.
import Convolution
import Foundation

/// One ready-to-run engine with what the data thread needs beside it.
final class EngineSlot {
    let engine: ConvolutionEngine
    let sampleRate: Int
    /// Per-sample coefficient of the one-pole smoother for gain/mix/bypass at this rate (~5 ms).
    let smoothingCoefficient: Float
    /// For the node's `convolver.plan` property.
    let planDescription: String

    init(engine: ConvolutionEngine, sampleRate: Int, planDescription: String) {
        self.engine = engine
        self.sampleRate = sampleRate
        self.smoothingCoefficient = Float(1 - exp(-1 / (0.005 * Double(sampleRate))))
        self.planDescription = planDescription
    }

    /// Stops the engine's scheduler; call off the real-time thread before the last release.
    func stop() { engine.stop() }
}

enum EngineFactory {
    /// Loads the IR(s) of `configuration` at `sampleRate`, builds the matrix and plans the engine.
    /// Slow (file I/O, resampling, FFT planning): never on the data thread.
    static func makeSlot(_ configuration: NodeConfiguration, sampleRate: Int,
                         expectedBlockSize: Int) throws(ConvolverNodeError) -> EngineSlot {
        let matrix = try makeMatrix(configuration, sampleRate: sampleRate)
        let engineConfiguration = EngineConfiguration(expectedBlockSize: expectedBlockSize,
                                                      maxPartitionSize: configuration.maxPartitionSize)
        let engine: ConvolutionEngine
        do {
            engine = try ConvolutionEngine(matrix: matrix, configuration: engineConfiguration, scheduler: InlineScheduler())
        } catch {
            throw .engine("\(error)")
        }
        return EngineSlot(engine: engine, sampleRate: sampleRate, planDescription: "\(engine.plan)")
    }

    static func makeMatrix(_ configuration: NodeConfiguration, sampleRate: Int) throws(ConvolverNodeError) -> ConvolutionMatrix {
        let channelCount = configuration.channelCount
        if configuration.impulses.isEmpty, let filename = configuration.filename {
            let channels = try loadChannels(filename, key: "filename", sampleRate: sampleRate,
                                            delay: configuration.delay, offset: configuration.offset,
                                            length: configuration.length, quality: configuration.resampleQuality)
            let entries = (0..<channelCount).map { index in
                ConvolutionMatrix.Entry(input: index, output: index, impulse: channels[index % channels.count])
            }
            return ConvolutionMatrix(inputCount: channelCount, outputCount: channelCount, entries: entries)
        }
        var entries: [ConvolutionMatrix.Entry] = []
        for (index, impulse) in configuration.impulses.enumerated() {
            let key = "impulses[\(index)].filename"
            let channels = try loadChannels(impulse.filename, key: key, sampleRate: sampleRate, delay: impulse.delay,
                                            offset: impulse.offset, length: impulse.length,
                                            quality: configuration.resampleQuality)
            guard impulse.channel < channels.count else {
                throw .impulseResponse(key: "impulses[\(index)].channel",
                                       message: "\(impulse.channel) is out of range: \(impulse.filename) has \(channels.count) channels",
                                       errno: EINVAL)
            }
            let scaled = channels[impulse.channel].map { $0 * Float(impulse.gain) }
            entries.append(.init(input: impulse.input, output: impulse.output, impulse: scaled))
        }
        return ConvolutionMatrix(inputCount: channelCount, outputCount: channelCount, entries: entries)
    }

    /// TEMPORARY until ImpulseResponse.load lands on main: builtin:dirac only.
    static func loadChannels(_ spec: String, key: String, sampleRate: Int, delay: Int, offset: Int,
                             length: Int, quality: Int) throws(ConvolverNodeError) -> [[Float]] {
        guard spec == "builtin:dirac" else {
            throw .impulseResponse(key: key, message: "cannot load '\(spec)'", errno: ENOENT)
        }
        return [[Float](repeating: 0, count: delay) + [1]]
    }
}
