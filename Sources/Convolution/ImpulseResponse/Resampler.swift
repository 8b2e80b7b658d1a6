import CSoxr
import Glibc

/// Resampling of whole impulse responses with libsoxr. The C calls to libsoxr live here.
enum Resampler {
    struct Failure: Error {
        var reason: String
    }

    /// What `resample` made.
    struct Resampled {
        var channels: [[Float]]
        /// Frames of the filter's ringing kept before time 0 (0 when cut), the same for all channels.
        var addedDelayFrames: Int
        /// The loudest ringing before time 0, in dB relative to the peak of all channels (-infinity: none).
        var preRingingPeakDB: Float
    }

    /// Resamples every channel from `sourceRate` to `targetRate`.
    ///
    /// - The filter's gain is kept, not the samples' amplitude: samples are scaled by
    ///   sourceRate/targetRate, so a unit impulse stays a unity-gain filter at the new rate.
    /// - The timing is kept: source frame k lands at k·targetRate/sourceRate. libsoxr's filter is
    ///   linear-phase, so an IR that starts at frame 0 (a cabinet, a correction FIR) rings *before*
    ///   time 0 at the new rate. `.cut` drops that ringing (zero added latency, as scipy's
    ///   `resample_poly`); `.keep` keeps what is louder than `leadingThresholdDB` below the peak and
    ///   so delays the IR by `addedDelayFrames` (about 57 frames for 44.1 -> 48 kHz at HQ).
    static func resample(
        _ channels: [[Float]], from sourceRate: Double, to targetRate: Double, recipe: UInt,
        preRinging: PreRinging, leadingThresholdDB: Float
    ) throws(Failure) -> Resampled {
        // Longer than the filter's ringing before an impulse (measured at most ~250 output frames
        // at VHQ for 22.05 -> 48 kHz), in source frames, and a whole number of frames at both
        // rates so that time 0 lands exactly on an output frame.
        let minimumPadding = Int((512 * max(1, sourceRate / targetRate)).rounded(.up))
        let (padding, zeroFrame) = alignedPadding(atLeast: minimumPadding, sourceRate: sourceRate, targetRate: targetRate)
        let silence = [Float](repeating: 0, count: padding)
        let resampled = try channels.map { channel throws(Failure) in
            try resampleChannel(silence + channel, from: sourceRate, to: targetRate, recipe: recipe)
        }

        let peak = resampled.map(largestMagnitude).max() ?? 0
        let ringingPeak = resampled.map { largestMagnitude($0[..<min(zeroFrame, $0.count)]) }.max() ?? 0
        let ringingPeakDB = peak > 0 && ringingPeak > 0 ? 20 * log10f(ringingPeak / peak) : -Float.infinity
        var start = zeroFrame
        if preRinging == .keep {
            let threshold = peak * powf(10, leadingThresholdDB / 20)
            let firstAudible = resampled.map { $0.firstIndex { abs($0) >= threshold && $0 != 0 } ?? zeroFrame }.min() ?? zeroFrame
            start = min(firstAudible, zeroFrame)
        }
        return Resampled(
            channels: resampled.map { Array($0[min(start, $0.count)...]) },
            addedDelayFrames: zeroFrame - start, preRingingPeakDB: ringingPeakDB)
    }

    private static func largestMagnitude(_ samples: some Collection<Float>) -> Float {
        samples.reduce(0) { max($0, abs($1)) }
    }

    /// The smallest padding >= `atLeast` source frames that is a whole number of target frames,
    /// with that number. For rates that are not whole numbers of Hz, `atLeast` and its rounded
    /// position (a sub-frame shift).
    private static func alignedPadding(atLeast: Int, sourceRate: Double, targetRate: Double) -> (source: Int, target: Int) {
        guard sourceRate == sourceRate.rounded(), targetRate == targetRate.rounded(),
            sourceRate <= Double(Int.max), targetRate <= Double(Int.max)
        else {
            return (atLeast, Int((Double(atLeast) * targetRate / sourceRate).rounded()))
        }
        let source = Int(sourceRate), target = Int(targetRate)
        var (a, b) = (source, target)
        while b != 0 { (a, b) = (b, a % b) }
        let sourceStep = source / a, targetStep = target / a  // 147 and 160 for 44.1 -> 48 kHz
        let steps = (atLeast + sourceStep - 1) / sourceStep
        return (steps * sourceStep, steps * targetStep)
    }

    /// One channel with `soxr_oneshot`. libsoxr compensates its filter's delay: source frame k
    /// lands at k·targetRate/sourceRate. Output length: ceil(frames · targetRate / sourceRate).
    private static func resampleChannel(
        _ samples: [Float], from sourceRate: Double, to targetRate: Double,
        recipe: UInt
    ) throws(Failure) -> [Float] {
        let outputCount = Int((Double(samples.count) * targetRate / sourceRate).rounded(.up))
        var output = [Float](repeating: 0, count: outputCount)
        guard !samples.isEmpty, outputCount > 0 else { return output }

        var ioSpec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        ioSpec.scale = sourceRate / targetRate
        var qualitySpec = soxr_quality_spec(recipe, 0)
        var producedCount = 0
        // SAFETY: one channel, so the interleaved buffers are plain arrays; libsoxr reads exactly
        // samples.count floats and writes at most outputCount floats, the sizes we pass.
        let error = samples.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                soxr_oneshot(
                    sourceRate, targetRate, 1,
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
