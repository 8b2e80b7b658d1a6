// Test only: the data-thread faults of `test.fault`, as three hooks around one call. The
// processor holds an injector only when the key is given.
import ConvolverGraph
import Glibc

/// Breaks a node's calls the way `fault` says (the faults that live in the engine's scheduler are
/// `FaultInjectingScheduler`'s). Real-time safe except `allocate-in-process`, whose point is not to be.
final class FaultInjector {
    let fault: TestFault
    private let outputCount: Int
    /// `delay-one-sample`: each output's last sample of the previous call (written in place).
    private var delayCarry: [Float]
    /// `alter-after-record`: calls so far.
    private var calls = 0
    /// `allocate-in-process`: where each call's allocation goes.
    private var allocationSink: [Float] = []

    init(fault: TestFault, outputCount: Int) {
        self.fault = fault
        self.outputCount = outputCount
        delayCarry = Array(repeating: 0, count: outputCount)
    }

    /// Before the call: `swap-outputs` exchanges the first two output ports.
    func beforeCall(outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>) {
        guard fault == .swapOutputs, outputCount >= 2 else { return }
        (outputs[0], outputs[1]) = (outputs[1], outputs[0])
    }

    /// After the output is mixed, before the call is recorded: `allocate-in-process`,
    /// `delay-one-sample`.
    func beforeRecord(outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>, frameCount: Int) {
        switch fault {
        case .allocateInProcess: allocationSink = [Float](repeating: 0, count: frameCount + 1)
        case .delayOneSample: delayOneSample(outputs, frameCount: frameCount)
        default: break
        }
    }

    /// After the call is recorded: `alter-after-record` adds 0.25 to each output's first sample
    /// every 64th call.
    func afterRecord(outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>) {
        guard fault == .alterAfterRecord else { return }
        calls += 1
        guard calls % 64 == 0 else { return }
        for channel in 0..<outputCount { outputs[channel]?[0] += 0.25 }
    }

    /// Shifts every output one frame later, carrying the last one to the next call.
    private func delayOneSample(_ outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>, frameCount: Int) {
        for channel in 0..<outputCount {
            guard let output = outputs[channel], frameCount > 0 else { continue }
            let last = output[frameCount - 1]
            (output + 1).update(from: output, count: frameCount - 1)
            output[0] = delayCarry[channel]
            delayCarry[channel] = last
        }
    }
}
