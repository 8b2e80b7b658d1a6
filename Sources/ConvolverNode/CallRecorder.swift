// Test seam: the node's own input and output, call by call, as the data thread saw them.
import Glibc

/// When the module key `test.record-calls` names a file (read at setup), the data thread
/// copies every call's input and output port buffers into memory allocated here (up to two
/// minutes at 48 kHz), and when the node is destroyed the main loop writes them to that file: raw
/// float32 frames of every input channel, then every output channel. (Not while the node runs: the
/// kernel's copy into the page cache was a fifth of a short IR's CPU in bench-live.) A test (or
/// bench-live) can then hold the output to the exact convolution of the node's own input, whatever
/// the graph did around it (stalls, missed or repeated cycles, cycles its recording lost). Never
/// set outside tests and benchmarks. Channels are in the node's order (position i = channel i),
/// whatever ports the buffers came from.
final class CallRecorder {
    static let capacityFrames = 120 * 48000

    private let path: String
    private let inputCount: Int
    private let channels: Int
    private let samples: UnsafeMutablePointer<Float>
    /// Frames recorded: the data thread's until the node is destroyed (then `write` reads it).
    private var recordedFrames = 0

    init(path: String, inputCount: Int, outputCount: Int) {
        self.path = path
        self.inputCount = inputCount
        channels = inputCount + outputCount
        samples = .allocate(capacity: Self.capacityFrames * channels)
        samples.initialize(repeating: 0, count: Self.capacityFrames * channels)
    }

    deinit { samples.deallocate() }

    /// Real-time safe: copies the call's input into the preallocated memory (a missing buffer is
    /// silence), at the start of the call. Nothing when the memory is full.
    func recordInputs(_ inputs: UnsafePointer<UnsafePointer<Float>?>, frameCount: Int) {
        copy(channels: 0..<inputCount, frameCount: frameCount, missing: 0) { inputs[$0] }
    }

    /// Real-time safe: copies the call's output (a missing buffer is NaN) and counts the call.
    func recordOutputs(_ outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, frameCount: Int) {
        guard
            copy(
                channels: inputCount..<channels, frameCount: frameCount, missing: .nan,
                { UnsafePointer(outputs[$0 - inputCount]) })
        else { return }
        recordedFrames += frameCount
    }

    @discardableResult
    private func copy(
        channels range: Range<Int>, frameCount: Int, missing: Float,
        _ buffer: (Int) -> UnsafePointer<Float>?
    ) -> Bool {
        let start = recordedFrames
        guard start + frameCount <= Self.capacityFrames else { return false }
        for channel in range {
            let source = buffer(channel)
            for frame in 0..<frameCount { samples[(start + frame) * channels + channel] = source?[frame] ?? missing }
        }
        return true
    }

    /// Main loop, once the data thread is gone: writes the file.
    func write() {
        guard let file = fopen(path, "wb") else { return }
        fwrite(samples, MemoryLayout<Float>.size * channels, recordedFrames, file)
        fclose(file)
    }
}
