import Convolution
import Foundation
import Glibc
import XCTest

/// Every bad input gives its own typed error, and the message names the file and the problem.
/// The files are made here, in a temporary directory.
final class ImpulseResponseErrorTests: XCTestCase {
    private var directory: IRTestDirectory!

    override func setUpWithError() throws { directory = try IRTestDirectory() }
    override func tearDown() { directory = nil }

    private func loadError(
        _ spec: String, sampleRate: Double = 48_000, options: ImpulseResponseOptions = .init(),
        file: StaticString = #filePath, line: UInt = #line
    ) -> ImpulseResponseError? {
        do {
            let ir = try ImpulseResponse.load(spec, sampleRate: sampleRate, options: options)
            XCTFail("loaded \(ir.channelCount)×\(ir.frameCount) frames, expected an error", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    private func assertMessage(
        _ error: ImpulseResponseError?, contains parts: [String],
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let message = error.map { "\($0)" } ?? "(no error)"
        for part in parts {
            XCTAssertTrue(message.contains(part), "'\(message)' should contain '\(part)'", file: file, line: line)
        }
    }

    private func writeWav(
        _ name: String, _ channels: [[Float]], rate: Double = 48_000,
        format: AudioFile.Format = .float32Wav
    ) throws -> String {
        let path = directory.path(name)
        try AudioFile.write(path: path, sampleRate: rate, channels: channels, format: format)
        return path
    }

    func testMissingFile() {
        let path = directory.path("nope.wav")
        let error = loadError(path)
        XCTAssertEqual(error, .fileNotFound(path: path))
        assertMessage(error, contains: [path, "does not exist"])
        XCTAssertEqual(loadError(directory.path("no/such/dir/ir.wav")), .fileNotFound(path: directory.path("no/such/dir/ir.wav")))
    }

    func testDirectory() {
        let error = loadError(directory.url.path)
        XCTAssertEqual(error, .unreadable(path: directory.url.path, reason: "it is a directory"))
        assertMessage(error, contains: [directory.url.path, "directory"])
    }

    /// Root reads any file whatever its mode, so as root the load runs with the effective user
    /// `nobody` (seteuid, undone right after); as another user the mode alone is enough.
    func testNoReadPermission() throws {
        let path = try writeWav("secret.wav", [[1, 0, 0]])
        XCTAssertEqual(chmod(path, 0), 0)
        let runningAsRoot = getuid() == 0
        if runningAsRoot { XCTAssertEqual(seteuid(65_534), 0) }
        let error = loadError(path)
        if runningAsRoot { XCTAssertEqual(seteuid(0), 0) }
        XCTAssertEqual(error, .unreadable(path: path, reason: String(cString: strerror(EACCES))))
        assertMessage(error, contains: [path, "Permission denied"])
    }

    func testEmptyFileAndNoFrames() throws {
        let zeroBytes = try directory.write("zero.wav", bytes: [])
        let error = loadError(zeroBytes)
        XCTAssertEqual(error, .empty(source: zeroBytes, detail: "the file has 0 bytes"))
        assertMessage(error, contains: [zeroBytes, "empty"])

        let noFrames = try writeWav("noframes.wav", [[]])
        XCTAssertEqual(try AudioFile.info(path: noFrames).frameCount, 0)
        let noFramesError = loadError(noFrames)
        XCTAssertEqual(noFramesError, .empty(source: noFrames, detail: "it has no audio frames"))
        assertMessage(noFramesError, contains: [noFrames, "no audio frames"])
    }

    func testNotAudio() throws {
        let text = try directory.write("notes.wav", bytes: Array("This is a text file, not a WAV.\n".utf8))
        let error = loadError(text)
        guard case .notAudio(text, let reason)? = error else { return XCTFail("\(String(describing: error))") }
        XCTAssertFalse(reason.isEmpty)
        assertMessage(error, contains: [text, "not audio"])
        // Random bytes are no better.
        let noise = try directory.write("noise.flac", bytes: (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) })
        guard case .notAudio(noise, _)? = loadError(noise) else { return XCTFail("random bytes accepted") }
    }

    func testTruncatedHeader() throws {
        let whole = try writeWav("whole.wav", [irTestNoise(count: 1000, seed: 1)])
        let bytes = try directory.bytes(of: whole)
        for cut in [4, 12, 30] {
            let path = try directory.write("header\(cut).wav", bytes: Array(bytes.prefix(cut)))
            let error = loadError(path)
            guard case .notAudio(path, _)? = error else { return XCTFail("cut at \(cut): \(String(describing: error))") }
            assertMessage(error, contains: [path])
        }
    }

    /// libsndfile alone would read a cut WAV as a shorter one; the loader says it is truncated.
    func testTruncatedData() throws {
        for (format, name) in [(AudioFile.Format.float32Wav, "float"), (.pcm16Wav, "pcm16"), (.pcm24Wav, "pcm24")] {
            let whole = try writeWav("whole-\(name).wav", [irTestNoise(count: 1000, seed: 1)], format: format)
            let bytes = try directory.bytes(of: whole)
            let path = try directory.write("cut-\(name).wav", bytes: Array(bytes.prefix(bytes.count - 700)))
            let error = loadError(path)
            guard case .truncated(path, let detail)? = error else { return XCTFail("\(name): \(String(describing: error))") }
            XCTAssertTrue(detail.contains("declares"), detail)
            assertMessage(error, contains: [path, "truncated"])
            // The uncut file loads.
            XCTAssertEqual(try ImpulseResponse.load(whole, sampleRate: 48_000, options: .init(trimThresholdDB: nil)).frameCount, 1000)
        }
    }

    func testNaNAndInfinitySamplesSayChannelAndFrame() throws {
        for (bad, word) in [(Float.nan, "NaN"), (Float.infinity, "+Inf"), (-Float.infinity, "-Inf")] {
            var right = irTestNoise(count: 100, seed: 2)
            right[7] = bad
            let path = try writeWav("bad-\(word).wav", [irTestNoise(count: 100, seed: 1), right])
            let error = loadError(path)
            XCTAssertEqual(error, .nonFiniteSample(source: path, channel: 1, frame: 7, value: word))
            assertMessage(error, contains: [path, word, "channel 1", "frame 7"])
            // Frames count in the file even after an offset, and only the used channel is checked.
            XCTAssertEqual(
                loadError(path, options: .init(channel: 1, offset: .samples(5))),
                .nonFiniteSample(source: path, channel: 1, frame: 7, value: word))
            XCTAssertEqual(try ImpulseResponse.load(path, sampleRate: 48_000, options: .init(channel: 0)).channelCount, 1)
        }
    }

    func testChannelOutOfRange() throws {
        let stereo = try writeWav("stereo.wav", [[1], [1]])
        let error = loadError(stereo, options: .init(channel: 2))
        XCTAssertEqual(error, .channelOutOfRange(source: stereo, channel: 2, channelCount: 2))
        assertMessage(error, contains: [stereo, "no channel 2", "2 channels", "0...1"])
        let mono = try writeWav("mono.wav", [[1]])
        assertMessage(loadError(mono, options: .init(channel: 1)), contains: [mono, "1 channel", "only channel 0"])
        XCTAssertEqual(
            loadError("builtin:hall", options: .init(channel: 5)),
            .channelOutOfRange(source: "builtin:hall", channel: 5, channelCount: 2))
    }

    func testTooLongSaysSecondsLimitAndMemory() throws {
        // 2 s of stereo noise at 48 kHz: 2 · 48000 · 2 · 4 bytes = 768000 bytes = 0.73 MiB.
        let long = try writeWav("long.wav", [irTestNoise(count: 96_000, seed: 1), irTestNoise(count: 96_000, seed: 2)])
        let error = loadError(long, options: .init(maxSeconds: 1.5))
        XCTAssertEqual(error, .tooLong(source: long, seconds: 2, limitSeconds: 1.5, bytes: 768_000))
        assertMessage(error, contains: [long, "too long", "2 s", "limit is 1.5 s", "0.73 MiB"])
        // The limit is at the target rate: resampled to 96 kHz the same file has twice the samples
        // (and, as it starts at frame 0, the resampling filter's ringing in front).
        let resampledError = loadError(long, sampleRate: 96_000, options: .init(channel: 0, maxSeconds: 1.5))
        guard case .tooLong(long, let seconds, 1.5, let bytes)? = resampledError else {
            return XCTFail("\(String(describing: resampledError))")
        }
        XCTAssertEqual(seconds, 2, accuracy: 0.01)
        XCTAssertEqual(Double(bytes), 2 * 96_000 * 4, accuracy: 0.01 * 96_000 * 4)
        // Within the limit after `length`, or after trimming trailing silence: fine.
        XCTAssertEqual(try ImpulseResponse.load(long, sampleRate: 48_000, options: .init(length: .seconds(1), maxSeconds: 1.5)).frameCount, 48_000)
        let padded = try writeWav("padded.wav", [irTestNoise(count: 48_000, seed: 1) + [Float](repeating: 0, count: 48_000)])
        XCTAssertEqual(try ImpulseResponse.load(padded, sampleRate: 48_000, options: .init(maxSeconds: 1.5)).frameCount, 48_000)
        // The delay counts.
        XCTAssertEqual(
            loadError(padded, options: .init(delay: .seconds(1), maxSeconds: 1.5)),
            .tooLong(source: padded, seconds: 2, limitSeconds: 1.5, bytes: 384_000))
        // Absurd amounts fail the limit instead of overflowing.
        for delay in [TimeAmount.seconds(1e300), .samples(Int.max)] {
            guard case .tooLong(padded, _, 1.5, _)? = loadError(padded, options: .init(delay: delay, maxSeconds: 1.5)) else {
                return XCTFail("delay \(delay) accepted")
            }
        }
        XCTAssertEqual(try ImpulseResponse.load(padded, sampleRate: 48_000, options: .init(length: .seconds(1e300))).frameCount, 48_000)
        // The default limit is 60 s.
        XCTAssertEqual(
            loadError("builtin:dirac", options: .init(delay: .seconds(61))),
            .tooLong(
                source: "builtin:dirac", seconds: Double(61 * 48_000 + 1) / 48_000, limitSeconds: 60,
                bytes: (61 * 48_000 + 1) * 4))
    }

    func testUnknownBuiltinListsTheKnownOnes() {
        let error = loadError("builtin:cathedral")
        XCTAssertEqual(error, .unknownBuiltin(name: "cathedral", known: ["dirac", "hall", "hilbert"]))
        assertMessage(error, contains: ["builtin:cathedral", "builtin:dirac", "builtin:hall"])
    }

    func testInvalidOptionValues() throws {
        let path = try writeWav("ir.wav", [[1, 0.5, 0.25]])
        let cases: [(ImpulseResponseOptions, String)] = [
            (.init(channel: -1), "channel"),
            (.init(offset: .samples(-1)), "offset"),
            (.init(offset: .seconds(-0.5)), "offset"),
            (.init(length: .samples(-10)), "length"),
            (.init(delay: .seconds(-0.01)), "delay"),
            (.init(delay: .seconds(.nan)), "delay"),
            (.init(gain: .nan), "gain"),
            (.init(gain: .infinity), "gain"),
            (.init(resampleQuality: -1), "resample.quality"),
            (.init(resampleQuality: 15), "resample.quality"),
            (.init(trimThresholdDB: .nan), "trimThresholdDB"),
            (.init(trimThresholdDB: 6), "trimThresholdDB"),
            (.init(maxSeconds: 0), "maxSeconds"),
            (.init(maxSeconds: .infinity), "maxSeconds"),
        ]
        for (options, key) in cases {
            let error = loadError(path, options: options)
            guard case .invalidOption(key, _, _)? = error else { XCTFail("\(key): \(String(describing: error))"); continue }
            assertMessage(error, contains: [key])
        }
        for rate in [0, -48_000, Double.nan] {
            guard case .invalidOption("sampleRate", _, _)? = loadError(path, sampleRate: rate) else {
                return XCTFail("sample rate \(rate) accepted")
            }
        }
    }

    func testSelectionOutsideTheFileIsEmpty() throws {
        let path = try writeWav("short.wav", [[1, 0.5, 0.25]])
        let error = loadError(path, options: .init(offset: .samples(3)))
        guard case .empty(path, let detail)? = error else { return XCTFail("\(String(describing: error))") }
        XCTAssertTrue(detail.contains("offset 3"), detail)
        XCTAssertTrue(detail.contains("3 frames"), detail)
        // A length shorter than one frame is not "to the end".
        guard case .empty(path, _)? = loadError(path, options: .init(length: .seconds(1e-6))) else {
            return XCTFail("a length of less than a frame was accepted")
        }
    }

    func testNormalizingSilenceFails() throws {
        let path = try writeWav("silence.wav", [[Float](repeating: 0, count: 100)])
        XCTAssertEqual(loadError(path, options: .init(normalize: true)), .silent(source: path))
        // Without normalize a silent IR is a valid (if useless) filter, trimmed to one frame.
        XCTAssertEqual(try ImpulseResponse.load(path, sampleRate: 48_000).channels, [[0]])
    }
}
