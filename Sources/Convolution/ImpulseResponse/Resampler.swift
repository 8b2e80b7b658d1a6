import Glibc
import CSoxr

/// Resampling of whole impulse responses with libsoxr. The C calls to libsoxr live here.
enum Resampler {
    struct Failure: Error {
        var reason: String
    }

    /// Resamples every channel from `sourceRate` to `targetRate`.
    ///
    /// - The filter's gain is kept, not the samples' amplitude: samples are scaled by
    ///   sourceRate/targetRate, so a unit impulse stays a unity-gain filter at the new rate.
    /// - Nothing of the band-limited response is cut: libsoxr's filter is linear-phase, so an
    ///   impulse at source frame 0 rings *before* time 0 at the new rate. The source is padded in
    ///   front, and of the frames before time 0 only those quieter than `leadingThresholdDB`
    ///   (relative to the peak of all channels) are dropped. An IR with enough silence in front
    ///   keeps its timing exactly (frame k lands at k·targetRate/sourceRate); one that starts at
    ///   frame 0 is delayed by the ringing kept (about 100 frames = 2 ms for 44.1 -> 48 kHz at HQ).
    ///   That delay is returned as `addedDelayFrames`, the same for all channels.
    static func resample(_ channels: [[Float]], from sourceRate: Double, to targetRate: Double, recipe: UInt,
                         leadingThresholdDB: Float) throws(Failure) -> (channels: [[Float]], addedDelayFrames: Int) {
        // Longer than the filter's ringing before an impulse (measured at most ~250 output frames
        // at VHQ for 22.05 -> 48 kHz), in source frames, and a whole number of frames at both
        // rates so that time 0 lands exactly on an output frame.
        let minimumPadding = Int((512 * max(1, sourceRate / targetRate)).rounded(.up))
        let (padding, zeroFrame) = alignedPadding(atLeast: minimumPadding, sourceRate: sourceRate, targetRate: targetRate)
        let silence = [Float](repeating: 0, count: padding)
        let resampled = try channels.map { channel throws(Failure) in
            try resampleChannel(silence + channel, from: sourceRate, to: targetRate, recipe: recipe)
        }

        let peak = resampled.map { $0.reduce(0) { max($0, abs($1)) } }.max() ?? 0
        let threshold = peak * powf(10, leadingThresholdDB / 20)
        let firstAudible = resampled.map { $0.firstIndex { abs($0) >= threshold && $0 != 0 } ?? zeroFrame }.min() ?? zeroFrame
        let start = min(firstAudible, zeroFrame)
        return (resampled.map { Array($0[start...]) }, zeroFrame - start)
    }

    /// The smallest padding >= `atLeast` source frames that is a whole number of target frames,
    /// with that number. For rates that are not whole numbers of Hz, `atLeast` and its rounded
    /// position (a sub-frame shift).
    private static func alignedPadding(atLeast: Int, sourceRate: Double, targetRate: Double) -> (source: Int, target: Int) {
        guard sourceRate == sourceRate.rounded(), targetRate == targetRate.rounded(),
              sourceRate <= Double(Int.max), targetRate <= Double(Int.max) else {
            return (atLeast, Int((Double(atLeast) * targetRate / sourceRate).rounded()))
        }
        let source = Int(sourceRate), target = Int(targetRate)
        var (a, b) = (source, target)
        while b != 0 { (a, b) = (b, a % b) }
        let sourceStep = source / a, targetStep = target / a   // 147 and 160 for 44.1 -> 48 kHz
        let steps = (atLeast + sourceStep - 1) / sourceStep
        return (steps * sourceStep, steps * targetStep)
    }

    /// One channel with `soxr_oneshot`. libsoxr compensates its filter's delay: source frame k
    /// lands at k·targetRate/sourceRate. Output length: ceil(frames · targetRate / sourceRate).
    private static func resampleChannel(_ samples: [Float], from sourceRate: Double, to targetRate: Double,
                                        recipe: UInt) throws(Failure) -> [Float] {
        let outputCount = Int((Double(samples.count) * targetRate / sourceRate).rounded(.up))
        var output = [Float](repeating: 0, count: outputCount)
        guard !samples.isEmpty, outputCount > 0 else { return output }

        var ioSpec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        ioSpec.scale = sourceRate / targetRate
        var qualitySpec = soxr_quality_spec(recipe, 0)
        var producedCount = 0
        // Sound: one channel, so the interleaved buffers are plain arrays; libsoxr reads exactly
        // samples.count floats and writes at most outputCount floats, the sizes we pass.
        let error = samples.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                soxr_oneshot(sourceRate, targetRate, 1,
                             input.baseAddress, input.count, nil,
                             out.baseAddress, out.count, &producedCount,
                             &ioSpec, &qualitySpec, nil)
            }
        }
        if let error { throw Failure(reason: String(cString: error)) }
        // libsoxr may stop a frame short of the rounded-up count; the rest stays zero.
        return output
    }
}
