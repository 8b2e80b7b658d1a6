// The node's output: the engine's (wet) signal, its stereo width set, mixed with the dry input,
// every amount gliding to the targets the main loop sets, so that control changes never click.
import ConvolverGraph
import Synchronization

/// Live gain, mix, bypass and width. The main loop sets targets (`setTargets`); the data thread
/// mixes each call (`mix`). Targets travel as atomics (Float bit patterns: Atomic has no Float);
/// the smoothed amounts are the data thread's.
final class OutputMix {
    private let gainBits: Atomic<UInt32>
    private let mixBits: Atomic<UInt32>
    private let bypassFlag: Atomic<Bool>
    private let widthBits: Atomic<UInt32>
    /// Smoothed amounts of the convolved (wet) and input (dry) signal, and the wet's stereo width.
    private var wetAmount: Float
    private var dryAmount: Float
    private var widthAmount: Float

    init(_ controls: LiveControls) {
        gainBits = Atomic(Float(controls.gain).bitPattern)
        mixBits = Atomic(Float(controls.mix).bitPattern)
        bypassFlag = Atomic(controls.bypass)
        widthBits = Atomic(Float(controls.width).bitPattern)
        widthAmount = Float(controls.width)
        (wetAmount, dryAmount) = Self.targetAmounts(gain: Float(controls.gain), mix: Float(controls.mix), bypass: controls.bypass)
    }

    /// Bypass passes the input through; otherwise output = gain·mix·wet + (1 − mix)·dry.
    @inline(__always)
    static func targetAmounts(gain: Float, mix: Float, bypass: Bool) -> (wet: Float, dry: Float) {
        bypass ? (0, 1) : (gain * mix, 1 - mix)
    }

    /// Main loop: new targets; the data thread glides to them.
    func setTargets(_ controls: LiveControls) {
        gainBits.store(Float(controls.gain).bitPattern, ordering: .relaxed)
        mixBits.store(Float(controls.mix).bitPattern, ordering: .relaxed)
        bypassFlag.store(controls.bypass, ordering: .relaxed)
        widthBits.store(Float(controls.width).bitPattern, ordering: .relaxed)
    }

    /// outputs = wet·(engineOutputs, stereo width set in place) + dry·inputs of the same index, the
    /// amounts gliding per sample to their targets (one-pole, `coefficient` per frame, ~5 ms).
    /// `engineOutputs` may be `outputs` themselves. Real-time safe.
    func mix(
        _ engineOutputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>,
        inputs: UnsafeMutablePointer<UnsafePointer<Float>?>, inputCount: Int,
        into outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>, outputCount: Int,
        frameCount: Int, coefficient: Float
    ) {
        let (wetTarget, dryTarget) = Self.targetAmounts(
            gain: Float(bitPattern: gainBits.load(ordering: .relaxed)),
            mix: Float(bitPattern: mixBits.load(ordering: .relaxed)),
            bypass: bypassFlag.load(ordering: .relaxed))
        let widthTarget = Float(bitPattern: widthBits.load(ordering: .relaxed))
        if outputCount == 2, widthAmount != 1 || widthTarget != 1, let left = engineOutputs[0], let right = engineOutputs[1] {
            widthAmount = StereoWidth.apply(
                left: left, right: right, frameCount: frameCount, width: widthAmount,
                target: widthTarget, coefficient: coefficient)
        }
        let steady = wetAmount == wetTarget && dryAmount == dryTarget
        for channel in 0..<outputCount {
            guard let output = outputs[channel], let engineOutput = engineOutputs[channel] else { continue }
            // Dry signal: the input of the same index (none for outputs beyond the inputs).
            let input = channel < inputCount ? inputs[channel] : nil
            if steady {
                if wetAmount == 1 && dryAmount == 0 {
                    if engineOutput != output { output.update(from: engineOutput, count: frameCount) }
                } else if let input {
                    for frame in 0..<frameCount { output[frame] = wetAmount * engineOutput[frame] + dryAmount * input[frame] }
                } else {
                    for frame in 0..<frameCount { output[frame] = wetAmount * engineOutput[frame] }
                }
            } else {
                // Each channel replays the same glide from the same start values.
                var wet = wetAmount, dry = dryAmount
                for frame in 0..<frameCount {
                    wet += (wetTarget - wet) * coefficient
                    dry += (dryTarget - dry) * coefficient
                    output[frame] = wet * engineOutput[frame] + dry * (input?[frame] ?? 0)
                }
            }
        }
        if !steady {
            let wetBefore = wetAmount, dryBefore = dryAmount
            for _ in 0..<frameCount {
                wetAmount += (wetTarget - wetAmount) * coefficient
                dryAmount += (dryTarget - dryAmount) * coefficient
            }
            // Land exactly on the target once inaudibly close, so the steady path takes over. In
            // Float the glide stalls where (target − amount)·coefficient rounds away (a few 1e-6
            // from the target, above any fixed threshold): a whole call without change also lands.
            if abs(wetAmount - wetTarget) < 1e-6 || (frameCount > 0 && wetAmount == wetBefore) { wetAmount = wetTarget }
            if abs(dryAmount - dryTarget) < 1e-6 || (frameCount > 0 && dryAmount == dryBefore) { dryAmount = dryTarget }
        }
    }
}
