import Convolution
import ConvolverGraph
import ConvolverNode
import Glibc
import LevelScheduling

/// `pw-convolver inspect`: what an IR is (level, onset, decay) and what the node would make of it
/// (partition plan and estimated CPU), optionally drawn as an SVG.
enum InspectCommand: Command {
    static let name = "inspect"
    static let summary = "analyse an IR: level, decay times, pre-delay, partition plan, SVG plots"
    static let usage = """
        Usage: pw-convolver inspect --ir FILE|builtin:NAME [--rate R] [--pre-ringing cut|keep] [--quantum Q]
                                    [--channels N] [--svg OUT.svg]

        Prints the IR's channels, rate, length and peak; per channel its peak, pre-delay and decay times;
        and the partition plan the node would choose for it at quantum Q, with the planner's estimate of
        its CPU cost (measured FFT and multiply-add costs of this machine).
          --ir FILE|builtin:NAME  the impulse response (any format libsndfile reads; builtin: dirac, hall, hilbert)
          --rate R                analyse at R Hz, resampling the IR (libsoxr) as the node would at a
                                  graph rate of R (default: the file's own rate; 48000 for builtins)
          --pre-ringing cut|keep  the resampling filter's ringing before time 0, as the node's
                                  `resample.pre-ringing`: cut (default, no added latency) or kept
                                  (reported as the node's latency); either way its level is shown
          --quantum Q             the quantum (frames per cycle) to plan for, 16...8192 (default 256)
          --channels N            audio channels the node would run, 1...64 (default: the IR's channel
                                  count, 2 for a 4-channel true-stereo IR); the IR must fit them as in
                                  the node: 1 IR channel for all, one per channel, or 4 on 2
          --svg OUT.svg           also write one SVG with, per channel, the waveform, the magnitude
                                  response (1/6-octave smoothed, log frequency) and the energy decay
                                  curve with the RT60 fit line

        Definitions (ISO 3382-1): the energy decay curve (EDC) is Schroeder's backward integral of h²,
        in dB of the channel's energy. Pre-delay: time of the first sample within 20 dB of the channel's
        peak (the onset). EDT: slope of the EDC from 0 to -10 dB after the onset; T20: -5 to -25 dB;
        T30: -5 to -35 dB; each a least-squares line, given as the time for 60 dB. RT60 is T30, or T20
        where the EDC does not reach -35 dB. No noise-floor compensation: trim noisy tails first.
        """

    static func run(_ arguments: [String]) throws {
        var options = try OptionParser(arguments, flags: [], valued: ["--ir", "--rate", "--pre-ringing", "--quantum", "--channels", "--svg"])
        try options.finish()
        guard let irSpec = options.string("--ir") else { throw UsageError("--ir is required") }
        let quantum = try options.integer("--quantum", in: 16...8192) ?? 256
        let requestedChannels = try options.integer("--channels", in: 1...64)
        let rate: Double
        let hrtfSet = HRTFSet.isSOFA(irSpec) ? try HRTFSet(path: irSpec) : nil
        if let requested = try options.double("--rate") {
            rate = requested
        } else if irSpec.hasPrefix("builtin:") {
            rate = 48000
        } else if let hrtfSet {
            rate = hrtfSet.sampleRate
        } else {
            rate = try AudioFile.info(path: irSpec).sampleRate
        }

        var preRinging = PreRinging.cut
        if let name = options.string("--pre-ringing") {
            guard let chosen = PreRinging(rawValue: name) else { throw UsageError("--pre-ringing must be cut or keep, not '\(name)'") }
            preRinging = chosen
        }
        let loadOptions = ImpulseResponseOptions(preRinging: preRinging)
        let impulseResponse =
            try hrtfSet.map { try ImpulseResponse.load($0, direction: SourceDirection(), sampleRate: rate, options: loadOptions) }
            ?? ImpulseResponse.load(irSpec, sampleRate: rate, options: loadOptions)
        let analysis = DecayAnalysis(impulseResponse)
        let channelCount = requestedChannels ?? (impulseResponse.channelCount == 4 ? 2 : impulseResponse.channelCount)
        // An HRTF pair is one source to two ears.
        let matrix =
            hrtfSet != nil
            ? ConvolutionMatrix(
                inputCount: 1, outputCount: 2,
                entries: (0..<2).map {
                    ConvolutionMatrix.Entry(input: 0, output: $0, impulse: impulseResponse.channels[$0])
                })
            : try ConvolutionMatrix(impulseResponse: impulseResponse, channelCount: channelCount)
        let problem = planningProblem(matrix, quantum: quantum, sampleRate: rate)
        let plan = PartitionPlanner.plan(problem, costs: MeasuredMachineCosts.thisMachine)

        if let hrtfSet {
            print(
                String(
                    cFormat: "SOFA:      %d measurements, %d taps at %.0f Hz, elevation %.0f...%.0f deg, radius %.2f...%.2f m",
                    hrtfSet.measurementCount, hrtfSet.filterLength, hrtfSet.sampleRate, hrtfSet.elevationRange.lowerBound,
                    hrtfSet.elevationRange.upperBound, hrtfSet.radiusRange.lowerBound, hrtfSet.radiusRange.upperBound)
                    + "; channels 0 and 1 below are the left and right ear for a source straight ahead")
        }
        print(report(irSpec, impulseResponse, analysis))
        let autogain = try Autogain.gains(matrix, sampleRate: rate).map { String(cFormat: "%.2f", 20 * log10(Double($0))) }
        print("Autogain:  \(autogain.joined(separator: ", ")) dB per output (`autogain = true`: pink noise keeps its level)")
        print(planReport(plan, problem: problem))

        if let svgPath = options.string("--svg") {
            let responses = try impulseResponse.channels.map { try MagnitudeResponse(impulse: $0, sampleRate: rate) }
            let svg = SVGPlot.document(
                title: "\(irSpec): \(impulseResponse.channelCount) ch, \(Int(rate)) Hz, "
                    + "\(impulseResponse.frameCount) samples ("
                    + String(cFormat: "%.3f s)", Double(impulseResponse.frameCount) / rate),
                impulseResponse: impulseResponse, analysis: analysis, responses: responses)
            guard SystemFiles.writeTextAtomically(svg, to: svgPath) else {
                throw InspectError(description: "cannot write the SVG to \(svgPath): \(String(cString: strerror(errno)))")
            }
            print("SVG written to \(svgPath)")
        }
    }

    struct InspectError: Error, CustomStringConvertible { var description: String }

    /// What the node's engine plans for this matrix (as EngineFactory and ConvolutionEngine.init,
    /// without allocating the engine), at the graph rate.
    static func planningProblem(_ matrix: ConvolutionMatrix, quantum: Int, sampleRate: Double) -> PartitionPlanner.Problem {
        PartitionPlanner.Problem(
            matrix,
            EngineConfiguration(
                expectedBlockSize: quantum, placement: .node,
                sampleRate: sampleRate))
    }

    static func report(_ spec: String, _ impulseResponse: ImpulseResponse, _ analysis: DecayAnalysis) -> String {
        let rate = impulseResponse.sampleRate
        // Right-aligned to the header's columns; "-" where the curve does not span the fit's range.
        func seconds(_ fit: DecayFit?) -> String {
            let text = fit.map { String(cFormat: "%.3f", $0.decayTimeSeconds) } ?? "-"
            return String(repeating: " ", count: max(0, 7 - text.count)) + text
        }
        var lines = [
            "IR:        \(spec)",
            "Channels:  \(impulseResponse.channelCount)",
            "Rate:      \(Int(rate)) Hz",
            String(cFormat: "Length:    %d samples (%.3f s)", impulseResponse.frameCount, Double(impulseResponse.frameCount) / rate),
            String(cFormat: "Peak:      %.2f dBFS", analysis.peakDBFS),
        ]
        if let ringingDB = impulseResponse.preRingingPeakDB {
            let level = ringingDB.isFinite ? String(cFormat: "peak %.1f dB below the IR's", -ringingDB) : "none"
            if impulseResponse.addedDelayFrames > 0 {
                lines.append(
                    "Resampling: the filter's ringing before time 0 kept (\(level)): latency "
                        + "\(impulseResponse.addedDelayFrames) frames, in the pre-delay below")
            } else {
                lines.append("Resampling: the filter's ringing before time 0 cut (\(level)): no added latency")
            }
        }
        lines.append("")
        lines.append("channel  peak dBFS  pre-delay ms    EDT s    T20 s    T30 s   RT60 s")
        for (index, channel) in analysis.channels.enumerated() {
            let rt60 = channel.reverberation.map { seconds($0.fit) + " (\($0.name))" } ?? seconds(nil)
            lines.append(
                String(cFormat: "%7d  %9.2f  %12.2f", index, channel.peakDBFS, 1000 * analysis.seconds(channel.onsetFrame))
                    + "  \(seconds(channel.earlyDecay))  \(seconds(channel.t20))  \(seconds(channel.t30))  \(rt60)")
        }
        return lines.joined(separator: "\n")
    }

    /// `plan` for `problem` (its counts, quantum and graph rate).
    static func planReport(_ plan: PartitionPlan, problem: PartitionPlanner.Problem) -> String {
        let quantum = problem.expectedBlockSize, sampleRate = problem.sampleRate
        // Where the node runs each level, and its job estimate: as the engine hands them to its scheduler.
        let tails = PartitionPlanner.tailSchedules(plan.levels, problem, MeasuredMachineCosts.thisMachine)
        var lines = [
            "",
            "Partition plan at quantum \(quantum) (\(problem.inputCount) in, \(problem.outputCount) out, \(problem.entryCount) IRs):",
            "  \(plan)",
        ]
        for (index, level) in plan.levels.enumerated() {
            let thread = index == 0 || tails[index - 1].runsOnDataThread ? "data thread" : "helper"
            let job = index == 0 ? "" : String(cFormat: ", job %.0f µs", tails[index - 1].estimatedJobNanoseconds / 1000)
            let shape =
                level.isDirect
                ? "direct, \(level.blockSize) taps" : String(cFormat: "block %5d x %4d segments", level.blockSize, level.segmentCount)
            lines.append(
                "  level \(index) (\(thread)): " + shape + job
                    + String(
                        cFormat: ", IR %.1f-%.1f ms", 1000 * Double(level.offset) / sampleRate,
                        1000 * Double(level.end) / sampleRate))
        }
        lines.append(
            String(
                cFormat: "Estimated CPU: %.2f%% of one core (data thread %.2f%%, helper threads %.2f%%, "
                    + "with their hand-over)", 100 * plan.estimatedCoreFraction, 100 * plan.estimatedDataThreadCoreFraction,
                100 * (plan.estimatedCoreFraction - plan.estimatedDataThreadCoreFraction)))
        return lines.joined(separator: "\n")
    }
}
