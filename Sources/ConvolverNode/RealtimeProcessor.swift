// The data-thread side of the node: port buffers → engine → dry/wet mix, with statistics.
// Everything here is allocated at setup; `process` is the only code PipeWire's data thread runs.
import CConvolverShims
import CPipeWire
import Convolution
import ConvolverGraph
import FixedMemory
import Glibc
import Synchronization
import Workgroup

/// State shared between the main loop (which builds engines and sets controls) and the data thread
/// (which runs `process`). The data thread never waits on the main loop: engines travel through
/// `engines` (an `EngineExchange`), controls through atomics.
///
/// Crossfade: the replaced engine is not retired at once. For `crossfadeSeconds` both engines run
/// side by side (the old one into `fade`, allocated here for up to `bufferedCallCapacity` frames)
/// and the output glides old → new per sample; then the old engine is retired. A new offered
/// engine waits until the fade in progress has finished.
///
/// Re-plan for the running quantum: an engine offered for silence is taken only when the engine in
/// use holds nothing but zeros, i.e. after silent input for the IR's length; it then replaces it
/// without a fade, and the output does not change.
final class RealtimeProcessor {
    /// Input and output channels (equal unless `output.position` gives a matrix's outputs).
    let inputCount: Int
    let outputCount: Int
    /// This call's buffers (nil: port not linked), filled by the transport before `process`.
    let inputBuffers: FixedBuffer<UnsafePointer<Float>?>
    let outputBuffers: FixedBuffer<UnsafeMutablePointer<Float>?>

    /// The hand-over of engines from the main loop and back.
    let engines = EngineExchange()
    /// The engine in use. Owned by the data thread while the transport is connected; by the main
    /// loop before the first connect and after the transport is destroyed.
    var activeEngine: Unmanaged<EngineSlot>?
    /// The engine being faded out (data thread only while connected, like `activeEngine`).
    var fadingEngine: Unmanaged<EngineSlot>?
    /// Frames of the fade done (negative: of the warm-up still to go) and in total (data thread only).
    private var fadePosition = 0
    private var fadeLength = 0
    /// Fade time and curve; set by the main loop, read by the data thread at the next swap.
    private let crossfadeSecondsBits: Atomic<UInt64>
    private let crossfadeEqualPower: Atomic<Bool>
    /// Largest call the staging and the crossfade cover (PipeWire's max quantum); a longer call
    /// is computed in the port buffers and ends a fade.
    static let bufferedCallCapacity = 8192
    /// The old engine's output during a fade: `outputCount` buffers of `bufferedCallCapacity` frames.
    private let fade: CallBuffers
    /// The engine's output, staged here and written to the port buffers in one last pass: after a
    /// stall PipeWire 0.3.65 can run the node twice at one clock position while the next node
    /// already reads the port buffer of the first run, and a block computed in place would reach
    /// it half written (traced: the head and the shorter levels without the longest).
    private let staged: CallBuffers
    /// The call's input, copied here first: the engine, the dry mix and the silence count then
    /// read one unchanging copy. PipeWire 1.x can hand a DSP port the buffer of an asynchronous
    /// producer (pw-play) that the producer rewrites while the call runs (traced at quantum
    /// changes: the engine's output no longer the convolution of the input it was given).
    private let inputCopies: CallBuffers
    /// What this call reads: the copies (nil for a missing buffer), or for a call longer than the
    /// copies the port buffers themselves.
    private let callInputs: FixedBuffer<UnsafePointer<Float>?>
    /// Swaps done and swaps that were crossfaded (main loop reads them for statistics).
    let swaps = Atomic<Int>(0)
    let crossfades = Atomic<Int>(0)

    /// Gain, mix, bypass and width, live.
    let outputMix: OutputMix

    /// The graph rate the data thread saw last, when it differs from the engine's.
    let mismatchedRate = Atomic<Int>(0)
    /// The call size the data thread saw last (the main loop re-plans when it is not the engine's).
    let observedQuantum = Atomic<Int>(0)
    /// Silent input frames in a row up to this call; huge while the engine in use has never had
    /// sound. Written by the data thread; the main loop reads it too (it builds re-plans only in
    /// silence: a build takes CPU the graph needs while it plays).
    let silentInputFrames = Atomic<Int>(Int.max / 2)
    /// Set by the data thread when it has asked the main loop for something (new rate, an engine
    /// to free); cleared by the main loop when it looked. Keeps the data thread to one wake-up.
    let mainLoopWoken = Atomic<Bool>(false)
    /// Where to wake the main loop: an eventfd source (`cpw_loop_signal_event` is RT safe).
    var wakeLoop: UnsafeMutablePointer<pw_loop>?
    var wakeSource: UnsafeMutablePointer<spa_source>?

    let statistics: ProcessStatistics
    /// Share of the call's period the data thread may spend waiting for helper results; the rest
    /// is the safety margin for the rest of the graph.
    static let waitFraction = 0.75

    /// Test only: every call's input and output (`CallRecorder`, module key `test.record-calls`).
    let callRecorder: CallRecorder?
    /// Test only: the deliberate fault of `test.fault` (nil in every real use).
    private let faults: FaultInjector?

    init(
        inputCount: Int, outputCount: Int, controls: LiveControls, crossfadeSeconds: Double = 0.05,
        crossfadeEqualPower: Bool = true, testRecordCallsPath: String? = nil, testFault: TestFault? = nil
    ) throws(ResourceError) {
        self.inputCount = inputCount
        self.outputCount = outputCount
        callRecorder = try testRecordCallsPath.map { path throws(ResourceError) in
            try CallRecorder(path: path, inputCount: inputCount, outputCount: outputCount)
        }
        faults = testFault.map { FaultInjector(fault: $0, outputCount: outputCount) }
        crossfadeSecondsBits = Atomic(crossfadeSeconds.bitPattern)
        self.crossfadeEqualPower = Atomic(crossfadeEqualPower)
        fade = try CallBuffers(channels: outputCount)
        staged = try CallBuffers(channels: outputCount)
        inputCopies = try CallBuffers(channels: inputCount)
        callInputs = try FixedBuffer(repeating: nil, count: inputCount)
        inputBuffers = try FixedBuffer(repeating: nil, count: inputCount)
        outputBuffers = try FixedBuffer(repeating: nil, count: outputCount)
        statistics = try ProcessStatistics()
        outputMix = OutputMix(controls)
    }

    /// Data thread: the offered engine, if it may be taken now, and whether it replaces in silence.
    private func takeOfferedEngine() -> (slot: Unmanaged<EngineSlot>, inSilence: Bool)? {
        guard let offer = engines.peekOffer() else { return nil }
        if offer.inSilence, let activeEngine {
            // SAFETY: the data thread holds the slot (see `activeEngine`).
            let impulseFrames = activeEngine._withUnsafeGuaranteedRef { $0.impulseFrames }
            guard silentInputFrames.load(ordering: .relaxed) >= impulseFrames else { return nil }
        }
        return engines.claim(offer).map { ($0, offer.inSilence) }
    }

    /// Main loop: the crossfade for the next swaps.
    func setCrossfade(seconds: Double, equalPower: Bool) {
        crossfadeSecondsBits.store(seconds.bitPattern, ordering: .relaxed)
        crossfadeEqualPower.store(equalPower, ordering: .relaxed)
    }

    /// One graph cycle on the buffers already in `inputBuffers` / `outputBuffers` (`frameCount`
    /// frames at `sampleRate`; `deadline` in CLOCK_MONOTONIC ns, 0 = unknown). Real-time safe: no
    /// allocation, no locks, no logging; the only syscalls are clock_gettime and, rarely, one
    /// eventfd write to wake the main loop.
    func process(frameCount: Int, sampleRate graphRate: Int, deadline: UInt64, startNanos: UInt64) {
        let startCPUNanos = threadCPUNanos()
        faults?.beforeCall(outputs: outputBuffers.pointer)
        for channel in 0..<inputCount {
            callInputs[channel] = inputBuffers[channel]
            guard frameCount <= Self.bufferedCallCapacity, let input = inputBuffers[channel], let copy = inputCopies.channels[channel] else {
                continue
            }
            copy.update(from: input, count: frameCount)
            callInputs[channel] = UnsafePointer(copy)
        }
        callRecorder?.recordInputs(UnsafePointer(callInputs.pointer), frameCount: frameCount)
        if fadingEngine == nil, !engines.hasRetired, let (next, inSilence) = takeOfferedEngine() {
            swaps.add(1, ordering: .relaxed)
            callRecorder?.recordSwap()
            if !inSilence { silentInputFrames.store(Int.max / 2, ordering: .relaxed) }  // the new engine holds only zeros
            if let previous = activeEngine {
                // SAFETY: claimed, the slot is this thread's until it retires it.
                let (rate, impulseFrames) = next._withUnsafeGuaranteedRef {
                    ($0.sampleRate, $0.impulseFrames)
                }
                let seconds = Double(bitPattern: crossfadeSecondsBits.load(ordering: .relaxed))
                fadeLength = inSilence ? 0 : Int(seconds * Double(rate))
                // The new engine starts with no input history: it runs unheard for up to the fade's
                // length (its whole IR, if that short) before it fades in, so that it comes in warm.
                fadePosition = -min(impulseFrames, fadeLength)
                if fadeLength > 0 {
                    fadingEngine = previous
                    crossfades.add(1, ordering: .relaxed)
                } else {
                    engines.retire(previous)
                    wakeMainLoop()
                }
            }
            activeEngine = next
        }

        let rate = Double(max(graphRate, 1))
        let periodNanos = Double(frameCount) * 1e9 / rate
        // Helpers' results may be awaited until 75% of this call's period has passed.
        let waitLimitNanos = startNanos &+ UInt64(periodNanos * Self.waitFraction)
        if let activeEngine {
            // SAFETY: the slot stays retained until the main loop releases it after this thread
            // retired it (EngineExchange).
            activeEngine._withUnsafeGuaranteedRef { slot in
                if graphRate > 0 && graphRate != slot.sampleRate && mismatchedRate.load(ordering: .relaxed) != graphRate {
                    mismatchedRate.store(graphRate, ordering: .relaxed)
                    wakeMainLoop()
                }
                if frameCount != observedQuantum.load(ordering: .relaxed) {
                    observedQuantum.store(frameCount, ordering: .relaxed)
                    if frameCount != slot.plannedBlockSize { wakeMainLoop() }
                }
                let engineOutputs = frameCount <= Self.bufferedCallCapacity ? staged.channels.pointer : outputBuffers.pointer
                slot.process(
                    inputs: UnsafePointer(callInputs.pointer), outputs: UnsafePointer(engineOutputs), frameCount: frameCount,
                    startNanos: startNanos, waitLimitNanos: waitLimitNanos, graphRate: rate)
                if fadingEngine != nil {
                    crossfade(
                        into: engineOutputs, frameCount: frameCount, startNanos: startNanos, waitLimitNanos: waitLimitNanos,
                        sampleRate: rate)
                }
                outputMix.mix(
                    engineOutputs, inputs: callInputs.pointer, inputCount: inputCount, into: outputBuffers.pointer, outputCount: outputCount,
                    frameCount: frameCount, coefficient: slot.smoothingCoefficient)
            }
        } else {
            for channel in 0..<outputCount { outputBuffers[channel]?.update(repeating: 0, count: frameCount) }
        }

        countSilentInput(frameCount: frameCount)
        faults?.beforeRecord(outputs: outputBuffers.pointer, frameCount: frameCount)
        callRecorder?.recordOutputs(UnsafePointer(outputBuffers.pointer), frameCount: frameCount, startNanos: startNanos)
        faults?.afterRecord(outputs: outputBuffers.pointer)

        let endNanos = monotonicNanos()
        var times = schedulerTimes()
        times.busy = endNanos &- startNanos
        times.cpu = threadCPUNanos() &- startCPUNanos
        statistics.record(times, frameCount: frameCount, periodNanos: UInt64(periodNanos), late: deadline > 0 && endNanos > deadline)
    }

    /// This call's waits for helper results and data-thread jobs, of the engine in use and the one
    /// fading out.
    private func schedulerTimes() -> CallTimes {
        var times = CallTimes()
        // SAFETY: both slots stay retained until this thread retires them, which it has not done
        // for any it still holds. (No array of the two: that would allocate.)
        func add(_ engine: Unmanaged<EngineSlot>?) {
            engine?._withUnsafeGuaranteedRef { slot in
                let cycle = slot.cycleTimes
                times.wait &+= cycle.wait
                times.jobs &+= cycle.jobs
                times.stalledInJobs &+= cycle.stalledInJobs
            }
        }
        add(activeEngine)
        add(fadingEngine)
        return times
    }

    /// Adds this call to `silentInputFrames`, or starts it over when any input sample is not zero.
    /// Real-time safe.
    private func countSilentInput(frameCount: Int) {
        for channel in 0..<inputCount {
            guard let input = callInputs[channel] else { continue }
            for index in 0..<frameCount where input[index] != 0 {
                silentInputFrames.store(0, ordering: .relaxed)
                return
            }
        }
        let silent = silentInputFrames.load(ordering: .relaxed)
        silentInputFrames.store(min(silent + frameCount, Int.max / 2), ordering: .relaxed)
    }

    /// Runs the fading engine into `fadeBuffers` and mixes it into the new engine's output in
    /// `engineOutputs`: out = new·gNew + old·gOld per sample, gNew 0 while the new engine warms up
    /// (`fadePosition` < 0), then rising 0 → 1 over `fadeLength`
    /// frames (linear, or sin/cos for equal power). At the end the old engine is retired.
    /// Real-time safe: no allocation (buffers from init), no locks; one eventfd write at the end.
    private func crossfade(
        into engineOutputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>, frameCount: Int, startNanos: UInt64,
        waitLimitNanos: UInt64, sampleRate: Double
    ) {
        guard let fading = fadingEngine else { return }
        if frameCount <= Self.bufferedCallCapacity {
            // SAFETY: `fadingEngine` keeps its retain until this thread retires it.
            fading._withUnsafeGuaranteedRef { old in
                old.process(
                    inputs: UnsafePointer(callInputs.pointer), outputs: UnsafePointer(fade.channels.pointer), frameCount: frameCount,
                    startNanos: startNanos, waitLimitNanos: waitLimitNanos, graphRate: sampleRate)
            }
            let equalPower = crossfadeEqualPower.load(ordering: .relaxed)
            let step = 1 / Float(max(fadeLength, 1))
            for channel in 0..<outputCount {
                guard let output = engineOutputs[channel] else { continue }
                let old = fade.channels[channel]!
                for frame in 0..<frameCount {
                    let progress = min(max(Float(fadePosition + frame) * step, 0), 1)
                    let newGain: Float, oldGain: Float
                    if equalPower {
                        newGain = sinf(progress * .pi / 2)
                        oldGain = cosf(progress * .pi / 2)
                    } else {
                        newGain = progress
                        oldGain = 1 - progress
                    }
                    output[frame] = newGain * output[frame] + oldGain * old[frame]
                }
            }
            fadePosition += frameCount
        } else {
            fadePosition = fadeLength  // a call longer than the buffers: switch now
        }
        if fadePosition >= fadeLength {
            fadingEngine = nil
            engines.retire(fading)
            wakeMainLoop()
        }
    }

    /// Real-time safe: one eventfd write, at most once until the main loop has looked.
    private func wakeMainLoop() {
        guard let wakeLoop, let wakeSource else { return }
        if !mainLoopWoken.exchange(true, ordering: .acquiringAndReleasing) {
            _ = cpw_loop_signal_event(wakeLoop, wakeSource)
        }
    }
}

/// `channels` zeroed buffers of `RealtimeProcessor.bufferedCallCapacity` frames: one storage, and
/// a pointer per channel into it, as the engine takes them.
private final class CallBuffers {
    private let storage: FixedBuffer<Float>
    let channels: FixedBuffer<UnsafeMutablePointer<Float>?>

    init(channels count: Int) throws(ResourceError) {
        let frames = RealtimeProcessor.bufferedCallCapacity
        storage = try FixedBuffer(repeating: 0, count: count * frames)
        channels = try FixedBuffer(repeating: nil, count: count)
        for channel in 0..<count { channels[channel] = storage.pointer + channel * frames }
    }
}
