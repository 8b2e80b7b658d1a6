import Convolution
import Foundation
import XCTest

/// Test signals and IRs (deterministic), written as 32-bit float WAV with the project's AudioFile.
enum TestSignals {
    /// A small deterministic generator (xorshift), so failures reproduce.
    struct Random {
        var state: UInt64
        mutating func next() -> Float {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Float(state >> 40) / Float(1 << 24) * 2 - 1
        }
    }

    /// Silence for `leadIn` seconds, `seconds` of white noise at `amplitude` per channel, then
    /// `leadOut` seconds of silence.
    /// The lead-in covers the moments while pw-link connects the channels one after the other
    /// (pw-play starts streaming at the first link), so every channel gets all of the noise.
    /// The lead-out must be at least the IR's length: pw-play's last, partial buffer is not
    /// delivered cleanly (pw-record alone drops it; a filter sees it repeated), so the signal and
    /// its whole convolution tail must be over before it.
    static func noise(seconds: Double, channels: Int = 2, amplitude: Float = 0.25, leadIn: Double = 0.5,
                      leadOut: Double = 0.5, seed: UInt64 = 1) -> [[Float]] {
        var random = Random(state: 0x9E37_79B9_7F4A_7C15 ^ seed)
        let before = [Float](repeating: 0, count: Int(leadIn * 48000))
        let after = [Float](repeating: 0, count: Int(leadOut * 48000))
        let frames = Int(seconds * 48000)
        return (0..<channels).map { _ in before + (0..<frames).map { _ in random.next() * amplitude } + after }
    }

    /// A synthetic stereo IR: decaying noise (~0.1 s), different per channel, with a direct tap.
    static func syntheticImpulse(frames: Int = 4800) -> [[Float]] {
        var random = Random(state: 42)
        return (0..<2).map { channel in
            (0..<frames).map { index in
                let decay = expf(-Float(index) / Float(frames / 5))
                let tap: Float = index == channel * 7 ? 0.6 : 0
                return tap + 0.3 * decay * random.next()
            }
        }
    }

    static func write(_ channels: [[Float]], to path: String) throws {
        try AudioFile.write(path: path, sampleRate: 48000, channels: channels)
    }
}

/// The reference comparison, done by numpy/scipy in double precision (an implementation
/// independent of the engine): expected = wet · (input ∗ IR) + dry · input, per channel; the lag
/// is found by cross-correlation; the error is measured over every recorded sample of the
/// expected signal after that lag.
enum NumpyReference {
    struct ChannelResult: Decodable {
        /// Recording frame of expected frame 0, found by cross-correlation at the start…
        var lag: Int
        /// …and again over the last second of the signal: equal when nothing was dropped or repeated.
        var endLag: Int
        /// Error energy over expected energy, all compared frames.
        var errorDB: Double
        /// The same, outside the glitch windows.
        var cleanErrorDB: Double
        /// Runs of wrong samples (> 1e-4 off; gaps under 256 frames merged): [start, length].
        var glitches: [[Int]]
        var comparedFrames: Int
        var expectedFrames: Int
    }

    static let script = #"""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    from scipy.io import wavfile
    from scipy.signal import fftconvolve
    rec, channels, ir, wet, dry = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
    def load(path):
        rate, data = wavfile.read(path)
        data = np.asarray(data, dtype=np.float64)
        return data.reshape(len(data), -1)
    def find_lag(got, probe, offset):
        n = 1 << int(np.ceil(np.log2(len(got) + len(probe))))
        corr = np.fft.irfft(np.fft.rfft(got, n) * np.conj(np.fft.rfft(probe, n)), n)[: len(got)]
        return int(np.argmax(np.abs(corr))) - offset
    def db(num, den):
        return float(10 * np.log10(max(num, 1e-300) / max(den, 1e-300)))
    both = load(rec)
    x = both[:, :channels]; r = both[:, channels:2 * channels]   # node input | node output, same cycles
    h = load(ir) if ir != "none" else np.ones((1, x.shape[1]))
    out = []
    for c in range(x.shape[1]):
        hc = h[:, c if h.shape[1] > 1 else 0]
        expected = wet * fftconvolve(x[:, c], hc) if wet != 0 else np.zeros(len(x) + len(hc) - 1)
        expected[:len(x)] += dry * x[:, c]
        got = r[:, c]
        active = np.nonzero(np.abs(x[:, c]) > 0)[0]   # the input's noise, not the IR's quiet tail
        first, last = int(active[0]), int(active[-1])
        lag = find_lag(got, expected[: first + 48000], 0)
        tail_start = max(first, last - 48000)
        end_lag = find_lag(got, expected[tail_start: last], tail_start)
        m = max(0, min(len(expected), len(got) - lag))
        err = got[lag:lag + m] - expected[:m]
        bad = np.nonzero(np.abs(err) > 1e-4)[0]
        glitches = []
        for index in bad:
            if glitches and index - (glitches[-1][0] + glitches[-1][1]) < 256:
                glitches[-1][1] = int(index) - glitches[-1][0] + 1
            else:
                glitches.append([int(index), 1])
        mask = np.ones(m, dtype=bool)
        for start, length in glitches: mask[start:start + length] = False
        out.append({"lag": lag, "endLag": end_lag, "errorDB": db(np.sum(err ** 2), np.sum(expected[:m] ** 2)),
                    "cleanErrorDB": db(np.sum(err[mask] ** 2), np.sum(expected[:m][mask] ** 2)),
                    "glitches": glitches[:20], "comparedFrames": int(m), "expectedFrames": int(len(x))})
    print(json.dumps(out))
    """#

    /// `recording`: the node's input in the first `channels` channels and its output in the next.
    static func compare(recording: String, channels: Int, impulse: String?, wet: Double, dry: Double,
                        workDirectory: String) throws -> [ChannelResult] {
        let scriptPath = workDirectory + "/compare.py"
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [scriptPath, recording, "\(channels)", impulse ?? "none", "\(wet)", "\(dry)"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice   // scipy warns about WAV chunks it skips
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let results = try? JSONDecoder().decode([ChannelResult].self, from: data) else {
            throw TestFailure("compare.py failed: \(String(decoding: data, as: UTF8.self))")
        }
        return results
    }
}

/// pw-play → node → pw-record, all linked by hand (no session manager). One pw-record with
/// twice the channels takes both what pw-play sends (the node's input) and the node's output, in
/// the same cycles: PipeWire 0.3.65's streams do not keep two separate recordings aligned on this
/// VM (measured without any filter: two pw-record on one pw-play drifted by 64 samples in 1 of 4
/// runs of 64 → 256 → 1024 → 128, and pw-play shifts by a quantum at quantum changes), so the
/// node is judged against its own input, in one stream. A zero-latency node's output then lines
/// up with its input at lag 0.
struct PlayThrough {
    let daemon: PrivatePipeWire
    let nodeName: String
    /// The player's channels = the node's inputs, and the node's outputs (nil: the same).
    var positions = ["FL", "FR"]
    var outputPositions: [String]? = nil
    /// `input` for a filter, `playback` for a node in sink mode.
    var nodeInputPrefix = "input"
    /// The recording's channels: the node's inputs, then its outputs (FL FR RL RR for stereo).
    var recordedPositions: [String] {
        let count = positions.count + (outputPositions ?? positions).count
        return count == 4 ? ["FL", "FR", "RL", "RR"] : (0..<count).map { "AUX\($0)" }
    }

    static func streamProperties(_ name: String) -> String {
        "{ node.name = \(name) node.want-driver = false "
            + "adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve } }"
    }

    /// Plays `inputPath` through the node and records input and output into `recordingPath`.
    /// `whilePlaying` runs once playback has started (quantum or Props changes).
    func run(inputPath: String, recordingPath: String, seconds: Double, tailSeconds: Double,
             tag: String, whilePlaying: () throws -> Void = {}) throws {
        let recorderName = "rec-\(tag)"
        let playerName = "play-\(tag)"
        let recorder = try daemon.spawn([
            "pw-record", "-P", Self.streamProperties(recorderName), "--format", "f32", "--rate", "48000",
            "--channels", "\(recordedPositions.count)", "--channel-map", recordedPositions.joined(separator: ","), recordingPath,
        ], logName: "\(recorderName).log")
        defer { recorder.stop() }
        try daemon.waitForPorts(ofNode: recorderName, count: recordedPositions.count)
        let outputs = outputPositions ?? positions
        for (position, recorded) in zip(outputs, recordedPositions.suffix(outputs.count)) {
            try daemon.link("\(nodeName):output_\(position)", "\(recorderName):input_\(recorded)")
        }
        let player = try daemon.spawn(["pw-play", "-P", Self.streamProperties(playerName),
                                       "--channels", "\(positions.count)", "--channel-map", positions.joined(separator: ","), inputPath],
                                      logName: "\(playerName).log")
        defer { player.stop() }
        try daemon.waitForPorts(ofNode: playerName, count: positions.count)
        for (position, recorded) in zip(positions, recordedPositions) {
            try daemon.link("\(playerName):output_\(position)", "\(recorderName):input_\(recorded)")
            try daemon.link("\(playerName):output_\(position)", "\(nodeName):\(nodeInputPrefix)_\(position)")
        }
        try whilePlaying()
        guard player.waitForExit(timeout: seconds * 3 + 10) else {
            throw TestFailure("pw-play did not finish in time; log: \(player.log)")
        }
        usleep(UInt32(tailSeconds * 1_000_000))
        recorder.interrupt()
    }
}
