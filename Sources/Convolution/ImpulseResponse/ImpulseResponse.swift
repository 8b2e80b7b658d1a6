import Glibc

/// An impulse response at one sample rate: one array of samples per channel, all of one length.
public struct ImpulseResponse: Sendable, Equatable {
    public var sampleRate: Double
    public var channels: [[Float]]

    /// Frames the loader put before the source's time 0, besides the `delay` option: the
    /// resampling filter's ringing before an IR that starts (almost) at frame 0, kept with
    /// `preRinging = .keep` (a causal filter can only keep it late). 0 by default, when not
    /// resampled, or when the IR has silence in front.
    public var addedDelayFrames: Int
    /// The loudest of that ringing (kept or cut), in dB below the IR's peak; nil when not resampled.
    public var preRingingPeakDB: Float?

    public var channelCount: Int { channels.count }
    public var frameCount: Int { channels.first?.count ?? 0 }

    /// Shorter channels are padded with zeros to the longest one.
    public init(sampleRate: Double, channels: [[Float]], addedDelayFrames: Int = 0, preRingingPeakDB: Float? = nil) {
        let frameCount = channels.map(\.count).max() ?? 0
        self.sampleRate = sampleRate
        self.addedDelayFrames = addedDelayFrames
        self.preRingingPeakDB = preRingingPeakDB
        self.channels = channels.map { $0.count == frameCount ? $0 : $0 + [Float](repeating: 0, count: frameCount - $0.count) }
    }

    /// The names `load` accepts after "builtin:".
    public static let builtinNames = BuiltinImpulseResponse.allCases.map(\.rawValue)

    /// Loads an impulse response for a graph running at `targetRate`.
    ///
    /// `spec` is a file path (anything libsndfile reads) or `builtin:NAME` (see `builtinNames`;
    /// made at `targetRate`, then treated like a file at that rate; filter-chain's "/dirac" and
    /// "/hilbert" mean `builtin:dirac` and `builtin:hilbert`, whose length is `length`, default 1024). The steps, in the order of
    /// PipeWire filter-chain's convolver:
    /// 1. read, 2. pick `channel`, 3. cut `offset` and `length` (source rate),
    /// 4. resample to `targetRate` (libsoxr, `resampleQuality`; keeps the filter's gain and the
    ///    timing; the ringing before time 0 is cut, or kept late with `preRinging = .keep`),
    /// 5. trim trailing samples below `trimThresholdDB`, 6. prepend `delay` (target rate),
    /// 7. `normalize`, then `gain`, 8. check against `maxSeconds`.
    /// A selection longer than 4 × `maxSeconds` is refused before its samples are read, even if
    /// trimming would have made it short enough, so that a huge file cannot exhaust memory.
    /// File sample rates the loader accepts.
    public static let sourceRateRange: ClosedRange<Double> = 1_000...1_000_000

    public static func load(
        _ spec: String, sampleRate targetRate: Double,
        options: ImpulseResponseOptions = .init()
    ) throws(ImpulseResponseError) -> ImpulseResponse {
        guard targetRate.isFinite, targetRate >= 1 else {
            throw .invalidOption(name: "sampleRate", value: "\(targetRate)", reason: "must be a positive number of Hz")
        }
        try options.validate()
        if HRTFSet.isSOFA(spec) {
            return try load(HRTFSet(path: spec), direction: options.sourceDirection, sampleRate: targetRate, options: options)
        }

        var source: (sampleRate: Double, channels: [[Float]], firstFrame: Int)
        let builtinPrefix = "builtin:"
        if spec.hasPrefix(builtinPrefix) || BuiltinImpulseResponse(filterChainName: spec) != nil {
            let name = String(spec.dropFirst(spec.hasPrefix(builtinPrefix) ? builtinPrefix.count : 1))
            guard let builtin = BuiltinImpulseResponse(rawValue: name) else {
                throw .unknownBuiltin(name: name, known: builtinNames)
            }
            let all = builtin.make(sampleRate: targetRate, length: options.length.frames(atSampleRate: targetRate))
            let selection = try select(
                spec, channelCount: all.count, frameCount: all[0].count,
                sourceRate: targetRate, targetRate: targetRate, options: options)
            let picked = selection.channel.map { [all[$0]] } ?? all
            source = (targetRate, picked.map { Array($0[selection.frames]) }, selection.frames.lowerBound)
        } else {
            let file: SoundFileReader
            do { file = try SoundFileReader(path: spec) } catch { throw ImpulseResponseError(error) }
            let info = file.info
            // A header's rate field can say anything; libsoxr crashes (not errs) on ratios like
            // 2147483647 Hz → 48 kHz (found by the IR loader fuzz), so refuse absurd rates here.
            guard sourceRateRange.contains(info.sampleRate) else {
                throw .notAudio(
                    path: spec,
                    reason: "its sample rate \(Int(info.sampleRate)) Hz is outside "
                        + "\(Int(sourceRateRange.lowerBound))...\(Int(sourceRateRange.upperBound)) Hz")
            }
            let selection = try select(
                spec, channelCount: info.channelCount, frameCount: info.frameCount,
                sourceRate: info.sampleRate, targetRate: targetRate, options: options)
            do {
                let channels = try file.readChannels(frames: selection.frames, channel: selection.channel)
                source = (info.sampleRate, channels, selection.frames.lowerBound)
            } catch { throw ImpulseResponseError(error) }
        }

        try checkFinite(spec, source.channels, firstChannel: options.channel ?? 0, firstFrame: source.firstFrame)
        let channels = source.channels
        source.channels = []  // the only reference left: trimming then works in place
        return try finish(spec, channels, sourceRate: source.sampleRate, targetRate: targetRate, options: options)
    }

    /// The left and right ear's filters (channels 0 and 1) of an HRTF set for a source at
    /// `direction`, through the same steps as a file's channels (resampling, trimming, delay, gain).
    public static func load(
        _ set: HRTFSet, direction: SourceDirection, sampleRate targetRate: Double,
        options: ImpulseResponseOptions = .init()
    ) throws(ImpulseResponseError) -> ImpulseResponse {
        guard targetRate.isFinite, targetRate >= 1 else {
            throw .invalidOption(name: "sampleRate", value: "\(targetRate)", reason: "must be a positive number of Hz")
        }
        let (left, right) = set.filters(for: direction)
        let length = max(left.count, right.count)
        let ears = [left + [Float](repeating: 0, count: length - left.count), right + [Float](repeating: 0, count: length - right.count)]
        let selection = try select(
            set.path, channelCount: 2, frameCount: length, sourceRate: set.sampleRate,
            targetRate: targetRate, options: options)
        let channels = (selection.channel.map { [ears[$0]] } ?? ears).map { Array($0[selection.frames]) }
        try checkFinite(set.path, channels, firstChannel: selection.channel ?? 0, firstFrame: selection.frames.lowerBound)
        return try finish(set.path, channels, sourceRate: set.sampleRate, targetRate: targetRate, options: options)
    }

    /// Steps 4 to 8 of `load`, on the selected channels at their source rate.
    private static func finish(
        _ spec: String, _ selected: [[Float]], sourceRate: Double, targetRate: Double,
        options: ImpulseResponseOptions
    ) throws(ImpulseResponseError) -> ImpulseResponse {
        var channels = selected
        var addedDelayFrames = 0
        var preRingingPeakDB: Float?
        if sourceRate != targetRate {
            do {
                let resampled = try Resampler.resample(
                    channels, from: sourceRate, to: targetRate, recipe: options.soxrRecipe.recipe,
                    preRinging: options.preRinging, leadingThresholdDB: options.trimThresholdDB ?? -120)
                (channels, addedDelayFrames, preRingingPeakDB) = (
                    resampled.channels, resampled.addedDelayFrames,
                    resampled.preRingingPeakDB
                )
            } catch { throw .resamplingFailed(source: spec, reason: error.reason) }
        }

        if let thresholdDB = options.trimThresholdDB {
            trimTrailingSilence(&channels, thresholdDB: thresholdDB)
        }

        let delayFrames = options.delay.frames(atSampleRate: targetRate)
        if delayFrames > 0 {
            // Refuse before allocating a delay that alone exceeds the limit many times over.
            try checkLength(
                spec, frameCount: channels[0].count + delayFrames, channelCount: channels.count,
                targetRate: targetRate, limitSeconds: options.maxSeconds)
            let silence = [Float](repeating: 0, count: delayFrames)
            channels = channels.map { silence + $0 }
        }

        var scale = options.gain
        if options.normalize {
            let largestEnergy = channels.map { $0.reduce(0.0) { $0 + Double($1) * Double($1) } }.max() ?? 0
            guard largestEnergy > 0 else { throw .silent(source: spec) }
            scale *= Float(1 / largestEnergy.squareRoot())
        }
        if scale != 1 {
            channels = channels.map { $0.map { $0 * scale } }
        }

        try checkLength(
            spec, frameCount: channels[0].count, channelCount: channels.count,
            targetRate: targetRate, limitSeconds: options.maxSeconds)
        return ImpulseResponse(
            sampleRate: targetRate, channels: channels, addedDelayFrames: addedDelayFrames,
            preRingingPeakDB: preRingingPeakDB)
    }

    /// Of one IR's files at several rates (filter-chain's `filename` array), the one whose rate
    /// is closest to `rate` (the first of equals); `first` when `alternatives` is empty or none
    /// can be read (loading it then names the problem). Built-ins are at every rate.
    public static func closestInRate(_ first: String, _ alternatives: [String], to rate: Double) -> String {
        var best: (spec: String, distance: Double)?
        for spec in alternatives {
            let specRate: Double?
            if spec.hasPrefix("builtin:") || BuiltinImpulseResponse(filterChainName: spec) != nil {
                specRate = rate
            } else {
                specRate = try? SoundFileReader(path: spec).info.sampleRate
            }
            guard let specRate else { continue }
            if best == nil || abs(specRate - rate) < best!.distance { best = (spec, abs(specRate - rate)) }
        }
        return best?.spec ?? first
    }

    /// Validates `channel`, `offset` and `length` against the source; returns what to read.
    private static func select(
        _ spec: String, channelCount: Int, frameCount: Int, sourceRate: Double,
        targetRate: Double, options: ImpulseResponseOptions
    )
        throws(ImpulseResponseError) -> (channel: Int?, frames: Range<Int>)
    {
        guard frameCount > 0, channelCount > 0 else {
            throw .empty(source: spec, detail: "it has no audio frames")
        }
        if let channel = options.channel, channel >= channelCount {
            throw .channelOutOfRange(source: spec, channel: channel, channelCount: channelCount)
        }
        let offsetFrames = options.offset.frames(atSampleRate: sourceRate)
        guard offsetFrames < frameCount else {
            let offset = options.offset == .samples(offsetFrames) ? "\(offsetFrames) frames" : "\(options.offset) (\(offsetFrames) frames)"
            throw .empty(source: spec, detail: "offset \(offset) is at or past its end (\(frameCount) frames)")
        }
        let lengthFrames = options.length.frames(atSampleRate: sourceRate)
        let endFrame = options.length.isZero ? frameCount : min(frameCount, offsetFrames + lengthFrames)
        guard endFrame > offsetFrames else {
            throw .empty(source: spec, detail: "length \(options.length) is less than one frame at \(sourceRate) Hz")
        }

        // Memory guard before reading; the real limit is checked at the end (after trimming).
        let selectedSeconds = Double(endFrame - offsetFrames) / sourceRate
        let selectedChannels = options.channel == nil ? channelCount : 1
        if !(selectedSeconds <= 4 * options.maxSeconds) {
            // Clamped: a header may declare more frames than Int holds at the target rate (fuzzed FLAC).
            let frames = Int(min((selectedSeconds * targetRate).rounded(.up), Double(Int.max / 4)))
            try checkLength(
                spec, frameCount: frames, channelCount: selectedChannels,
                targetRate: targetRate, limitSeconds: options.maxSeconds)
        }
        return (options.channel, offsetFrames..<endFrame)
    }

    private static func checkFinite(
        _ spec: String, _ channels: [[Float]], firstChannel: Int,
        firstFrame: Int
    ) throws(ImpulseResponseError) {
        for (index, samples) in channels.enumerated() {
            guard let frame = samples.firstIndex(where: { !$0.isFinite }) else { continue }
            let value = samples[frame].isNaN ? "NaN" : (samples[frame] > 0 ? "+Inf" : "-Inf")
            throw .nonFiniteSample(source: spec, channel: firstChannel + index, frame: firstFrame + frame, value: value)
        }
    }

    /// Cuts every channel after the last frame where any channel reaches `thresholdDB` below the
    /// peak of all channels. Keeps at least one frame.
    static func trimTrailingSilence(_ channels: inout [[Float]], thresholdDB: Float) {
        let peak = channels.map { $0.reduce(0) { max($0, abs($1)) } }.max() ?? 0
        let threshold = peak * powf(10, thresholdDB / 20)
        let lastAudible = peak > 0 ? channels.map { $0.lastIndex(where: { abs($0) >= threshold }) ?? 0 }.max() ?? 0 : 0
        // In place: a long IR is not copied to drop its tail.
        for index in channels.indices where channels[index].count > lastAudible + 1 {
            channels[index].removeSubrange((lastAudible + 1)...)
        }
    }

    private static func checkLength(
        _ spec: String, frameCount: Int, channelCount: Int, targetRate: Double,
        limitSeconds: Double
    ) throws(ImpulseResponseError) {
        let seconds = Double(frameCount) / targetRate
        guard seconds <= limitSeconds else {
            let (bytes, overflow) = frameCount.multipliedReportingOverflow(by: channelCount * MemoryLayout<Float>.size)
            throw .tooLong(source: spec, seconds: seconds, limitSeconds: limitSeconds, bytes: overflow ? Int.max : bytes)
        }
    }
}
