/// `width`: the wet signal's stereo image scaled in mid/side, side × width (0 = mono, 1 = as it
/// is, 2 = twice as wide), for nodes with two outputs. The node glides it like gain and mix;
/// `pw-convolver render` applies the same formula.
public enum StereoWidth {
    public static let range: ClosedRange<Double> = 0...2

    /// In place over `frameCount` frames, from `width` gliding to `target` (one-pole, `coefficient`
    /// per frame; 1 = at once). Returns the width reached. Real-time safe.
    @inline(__always)
    public static func apply(
        left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frameCount: Int,
        width: Float, target: Float, coefficient: Float
    ) -> Float {
        var current = width
        for frame in 0..<frameCount {
            current += (target - current) * coefficient
            let mid = 0.5 * (left[frame] + right[frame])
            let side = 0.5 * (left[frame] - right[frame]) * current
            left[frame] = mid + side
            right[frame] = mid - side
        }
        // Land on the target once inaudibly close (or stalled in Float's rounding), as the amounts do.
        return abs(current - target) < 1e-6 || (frameCount > 0 && current == width) ? target : current
    }
}
