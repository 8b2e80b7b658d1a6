// Test seam: the node's own input and output, call by call, as the data thread saw them.
import FixedMemory
import Glibc
import Workgroup

/// When the module key `test.record-calls` names a file (read at setup), the data thread
/// copies every call's input and output port buffers into memory allocated here (up to two
/// minutes at 48 kHz), and when the node is destroyed the main loop writes them to that file: raw
/// float32 frames of every input channel, then every output channel. The data thread copies each
/// channel whole (a call's channels one after another: a copy the library vectorises, where
/// interleaving frame by frame stored one float at a time into cold memory, 4 % of a floor
/// node's CPU); `write` interleaves them. (Not while the node runs: the
/// kernel's copy into the page cache was a fifth of a short IR's CPU in bench-live.) A test (or
/// bench-live) can then hold the output to the exact convolution of the node's own input, whatever
/// the graph did around it (stalls, missed or repeated cycles, cycles its recording lost). Never
/// set outside tests and benchmarks. Channels are in the node's order (position i = channel i),
/// whatever ports the buffers came from. Beside it, `<file>.times`: each call's frames and when it
/// began and finished writing its output buffers (three UInt64, CLOCK_MONOTONIC ns), which the
/// graph judge holds against when the recorder read them (Tests/SyncRecorder); and `<file>.swaps`.
final class CallRecorder {
    static let capacityFrames = 120 * 48000
    /// Calls of 16 frames or more (PipeWire's smallest quantum).
    static let capacityCalls = capacityFrames / 16

    private let path: String
    private let inputCount: Int
    private let channels: Int
    private let samples: FixedBuffer<Float>
    /// Per call: frames, start and end of its writes (ns).
    private let callTimes: FixedBuffer<UInt64>
    /// The calls in which the data thread took a new engine (`<file>.swaps`): where a graph's
    /// plugins were started, for the graph judge's own host to start its plugins alike.
    private let swapCalls: FixedBuffer<UInt64>
    /// Frames, calls and swaps recorded: the data thread's until the node is destroyed (then `write` reads them).
    private var recordedFrames = 0
    private var recordedCalls = 0
    private var recordedSwaps = 0

    init(path: String, inputCount: Int, outputCount: Int) throws(ResourceError) {
        self.path = path
        self.inputCount = inputCount
        channels = inputCount + outputCount
        // Huge pages: every call writes a few kilobytes into memory no call has touched since
        // setup, and on 4 KB pages that was a TLB miss a page (on an AMD EPYC VM a floor node's
        // busy p99 85-97 µs with the record, 55-60 µs without).
        samples = try FixedBuffer(repeating: 0, count: Self.capacityFrames * channels, hugePages: true)
        callTimes = try FixedBuffer(repeating: 0, count: 3 * Self.capacityCalls)
        swapCalls = try FixedBuffer(repeating: 0, count: 4096)
    }

    /// Real-time safe: the call being recorded took a new engine.
    func recordSwap() {
        guard recordedSwaps < swapCalls.count else { return }
        swapCalls[recordedSwaps] = UInt64(recordedCalls)
        recordedSwaps += 1
    }

    /// Real-time safe: copies the call's input into the preallocated memory (a missing buffer is
    /// silence), at the start of the call. Nothing when the memory is full.
    func recordInputs(_ inputs: UnsafePointer<UnsafePointer<Float>?>, frameCount: Int) {
        copy(channels: 0..<inputCount, frameCount: frameCount, missing: 0) { inputs[$0] }
    }

    /// Real-time safe: copies the call's output (a missing buffer is NaN) and counts the call,
    /// which began writing its outputs at `startNanos` and has finished now.
    func recordOutputs(_ outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, frameCount: Int, startNanos: UInt64) {
        let endNanos = monotonicNanos()
        guard recordedCalls < Self.capacityCalls,
            copy(
                channels: inputCount..<channels, frameCount: frameCount, missing: .nan,
                { UnsafePointer(outputs[$0 - inputCount]) })
        else { return }
        let times = callTimes.pointer + 3 * recordedCalls
        times[0] = UInt64(frameCount)
        times[1] = startNanos
        times[2] = endNanos
        recordedFrames += frameCount
        recordedCalls += 1
    }

    /// The call's channels lie one after another from `recordedFrames * channels` on.
    @discardableResult
    private func copy(
        channels range: Range<Int>, frameCount: Int, missing: Float,
        _ buffer: (Int) -> UnsafePointer<Float>?
    ) -> Bool {
        let start = recordedFrames
        guard start + frameCount <= Self.capacityFrames else { return false }
        for channel in range {
            let destination = samples.pointer + start * channels + channel * frameCount
            if let source = buffer(channel) {
                destination.update(from: source, count: frameCount)
            } else {
                destination.update(repeating: missing, count: frameCount)
            }
        }
        return true
    }

    /// Main loop, once the data thread is gone: writes the file, frames interleaved.
    func write() {
        var interleaved = [Float](repeating: 0, count: recordedFrames * channels)
        var start = 0
        for call in 0..<recordedCalls {
            let frameCount = Int(callTimes[3 * call])
            let block = samples.pointer + start * channels
            for channel in 0..<channels {
                for frame in 0..<frameCount {
                    interleaved[(start + frame) * channels + channel] = block[channel * frameCount + frame]
                }
            }
            start += frameCount
        }
        if let file = fopen(path, "wb") {
            fwrite(interleaved, MemoryLayout<Float>.size * channels, recordedFrames, file)
            fclose(file)
        }
        if let file = fopen(path + ".times", "wb") {
            fwrite(callTimes.pointer, 3 * MemoryLayout<UInt64>.size, recordedCalls, file)
            fclose(file)
        }
        if let file = fopen(path + ".swaps", "wb") {
            fwrite(swapCalls.pointer, MemoryLayout<UInt64>.size, recordedSwaps, file)
            fclose(file)
        }
    }
}
