// Test seam: the node's own input and output, call by call, as the data thread saw them.
import Foundation
import Synchronization

/// When `SWIFT_CONVOLVER_TEST_RECORD_CALLS` names a file (read once, at setup), the data thread
/// copies every call's input and output port buffers into memory allocated here (up to two
/// minutes at 48 kHz), and the main loop writes what is recorded so far to that file once a
/// second: raw float32 frames of every input channel, then every output channel. A test (or
/// bench-live) can then hold the output to the exact convolution of the node's own input, whatever
/// the graph did around it (stalls, missed or repeated cycles, cycles its recording lost). Never
/// set outside tests and benchmarks.
final class CallRecorder {
    static let environmentKey = "SWIFT_CONVOLVER_TEST_RECORD_CALLS"
    static let capacityFrames = 120 * 48000

    let path: String
    private let inputCount: Int
    private let channels: Int
    private let samples: UnsafeMutablePointer<Float>
    /// Frames recorded, published by the data thread after their samples.
    private let recordedFrames = Atomic<Int>(0)

    static func fromEnvironment(inputCount: Int, outputCount: Int) -> CallRecorder? {
        guard let path = ProcessInfo.processInfo.environment[environmentKey], !path.isEmpty else { return nil }
        return CallRecorder(path: path, inputCount: inputCount, outputCount: outputCount)
    }

    private init(path: String, inputCount: Int, outputCount: Int) {
        self.path = path
        self.inputCount = inputCount
        channels = inputCount + outputCount
        samples = .allocate(capacity: Self.capacityFrames * channels)
        samples.initialize(repeating: 0, count: Self.capacityFrames * channels)
    }

    deinit { samples.deallocate() }

    /// Real-time safe: copies into the preallocated memory (a missing input buffer is silence, a
    /// missing output buffer NaN); stops when it is full.
    func record(inputs: UnsafePointer<UnsafePointer<Float>?>, outputs: UnsafePointer<UnsafeMutablePointer<Float>?>,
                frameCount: Int) {
        let start = recordedFrames.load(ordering: .relaxed)
        guard start + frameCount <= Self.capacityFrames else { return }
        for channel in 0..<channels {
            let source = channel < inputCount ? inputs[channel] : UnsafePointer(outputs[channel - inputCount])
            let missing: Float = channel < inputCount ? 0 : .nan
            for frame in 0..<frameCount {
                samples[(start + frame) * channels + channel] = source?[frame] ?? missing
            }
        }
        recordedFrames.store(start + frameCount, ordering: .releasing)
    }

    /// Main loop: writes the frames recorded so far (a temporary file, renamed over the last one).
    func write() {
        let frames = recordedFrames.load(ordering: .acquiring)
        let temporary = path + ".partial"
        guard let file = fopen(temporary, "wb") else { return }
        let written = fwrite(samples, MemoryLayout<Float>.size * channels, frames, file)
        fclose(file)
        if written == frames { rename(temporary, path) } else { unlink(temporary) }
    }
}
