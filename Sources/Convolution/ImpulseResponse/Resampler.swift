import CSoxr

/// Resampling of whole impulse responses with libsoxr. The C calls to libsoxr live here.
enum Resampler {
    /// Resamples one channel from `sourceRate` to `targetRate` with `soxr_oneshot`.
    ///
    /// - Timing is kept: libsoxr's linear-phase filter is compensated, so frame k of the source
    ///   lands at frame k·targetRate/sourceRate (whatever rings before frame 0 is dropped).
    /// - The filter's gain is kept, not the samples' amplitude: samples are scaled by
    ///   sourceRate/targetRate, so a unit impulse stays a unity-gain filter at the new rate.
    /// - Output length: ceil(frames · targetRate / sourceRate).
    static func resample(_ samples: [Float], from sourceRate: Double, to targetRate: Double,
                         recipe: UInt) throws(ResamplingFailure) -> [Float] {
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
        if let error { throw ResamplingFailure(reason: String(cString: error)) }
        // libsoxr may stop a frame short of the rounded-up count; the rest stays zero.
        return output
    }

    struct ResamplingFailure: Error {
        var reason: String
    }
}
