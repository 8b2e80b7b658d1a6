import CSndFile
import Convolution
import Foundation
import XCTest

/// A fresh directory under the system temp dir for files a test generates; removed afterwards.
/// (Audio files are made by the tests, never committed.)
final class IRTestDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("swconv-ir-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Writes raw bytes (for files that are not, or no longer, valid audio).
    @discardableResult
    func write(_ name: String, bytes: [UInt8]) throws -> String {
        let path = path(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func bytes(of path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
}

/// Deterministic test signal in [-1, 1) (a linear congruential generator; no system randomness).
func irTestNoise(count: Int, seed: UInt32) -> [Float] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 1_664_525 &+ 1_013_904_223
        return Float(Int32(bitPattern: state)) / 2_147_483_648
    }
}

final class AudioFileTests: XCTestCase {
    func testFloatWavRoundTripIsExact() throws {
        let directory = try IRTestDirectory()
        let path = directory.path("stereo.wav")
        let channels = [irTestNoise(count: 40_000, seed: 1), irTestNoise(count: 40_000, seed: 2).map { $0 * 3 }]
        try AudioFile.write(path: path, sampleRate: 44_100, channels: channels)

        XCTAssertEqual(
            try AudioFile.info(path: path),
            AudioFile.Info(sampleRate: 44_100, channelCount: 2, frameCount: 40_000))
        let read = try AudioFile.read(path: path)
        XCTAssertEqual(read.sampleRate, 44_100)
        // Float WAV stores floats as they are, including values beyond ±1.
        XCTAssertEqual(read.channels, channels)
    }

    func testPCMWavRoundTripIsWithinOneQuantizationStepAndClips() throws {
        let directory = try IRTestDirectory()
        var signal = irTestNoise(count: 1000, seed: 3).map { $0 * 0.9 }
        signal[10] = 1.5  // out of range: clipped, not wrapped
        signal[11] = -1.5
        for (format, bits) in [(AudioFile.Format.pcm16Wav, 16), (.pcm24Wav, 24)] {
            let path = directory.path("pcm\(bits).wav")
            try AudioFile.write(path: path, sampleRate: 48_000, channels: [signal], format: format)
            let read = try AudioFile.read(path: path)
            XCTAssertEqual(read.channels.count, 1)
            let step = Float(1) / Float(1 << (bits - 1))
            for (index, (written, got)) in zip(signal, read.channels[0]).enumerated() where index != 10 && index != 11 {
                XCTAssertEqual(got, written, accuracy: step, "\(bits)-bit frame \(index)")
            }
            XCTAssertEqual(read.channels[0][10], 1, accuracy: 2 * step, "\(bits)-bit clipping")
            XCTAssertEqual(read.channels[0][11], -1, accuracy: 2 * step, "\(bits)-bit clipping")
        }
    }

    /// The reader takes whatever libsndfile reads, not only WAV: FLAC, AIFF and Ogg Vorbis files
    /// made here with libsndfile's own writer.
    func testReadsFlacAiffAndOgg() throws {
        let directory = try IRTestDirectory()
        let frameCount = 4800
        let sine = (0..<frameCount).map { Float(0.5 * sin(2 * Double.pi * 1000 * Double($0) / 48_000)) }
        let cases: [(String, Int32, Float)] = [
            ("x.flac", Int32(SF_FORMAT_FLAC) | Int32(SF_FORMAT_PCM_24), 1e-6),
            ("x.aiff", Int32(SF_FORMAT_AIFF) | Int32(SF_FORMAT_PCM_16), 1e-4),
            ("x.ogg", Int32(SF_FORMAT_OGG) | Int32(SF_FORMAT_VORBIS), 0.05),  // lossy
        ]
        for (name, format, tolerance) in cases {
            let path = directory.path(name)
            var info = SF_INFO(frames: 0, samplerate: 48_000, channels: 1, format: format, sections: 0, seekable: 0)
            let handle = try XCTUnwrap(sf_open(path, Int32(SFM_WRITE), &info), "\(name): \(String(cString: sf_strerror(nil)))")
            XCTAssertEqual(sf_writef_float(handle, sine, sf_count_t(frameCount)), sf_count_t(frameCount))
            sf_close(handle)

            let read = try AudioFile.read(path: path)
            XCTAssertEqual(read.sampleRate, 48_000, name)
            XCTAssertEqual(read.channels.count, 1, name)
            XCTAssertEqual(read.channels[0].count, frameCount, name)
            let worst = zip(read.channels[0], sine).map { abs($0 - $1) }.max() ?? .infinity
            XCTAssertLessThan(worst, tolerance, name)
        }
    }

    func testReadErrorsNameTheFileAndTheProblem() throws {
        let directory = try IRTestDirectory()
        let missing = directory.path("missing.wav")
        XCTAssertThrowsError(try AudioFile.read(path: missing)) { error in
            XCTAssertEqual(error as? AudioFileError, .notFound(path: missing))
            XCTAssertEqual("\(error)", "audio file '\(missing)' does not exist")
        }
        XCTAssertThrowsError(try AudioFile.read(path: directory.url.path)) { error in
            XCTAssertEqual(error as? AudioFileError, .unreadable(path: directory.url.path, reason: "it is a directory"))
        }
        let empty = try directory.write("empty.wav", bytes: [])
        XCTAssertThrowsError(try AudioFile.read(path: empty)) { error in
            XCTAssertEqual(error as? AudioFileError, .empty(path: empty))
        }
        let text = try directory.write("text.wav", bytes: Array("not audio at all\n".utf8))
        XCTAssertThrowsError(try AudioFile.read(path: text)) { error in
            guard case .notAudio(text, let reason)? = error as? AudioFileError else { return XCTFail("\(error)") }
            XCTAssertFalse(reason.isEmpty)
            XCTAssertTrue("\(error)".contains(text))
        }
    }

    func testWriteErrors() throws {
        let directory = try IRTestDirectory()
        let noSuchDirectory = directory.path("no/such/dir.wav")
        XCTAssertThrowsError(try AudioFile.write(path: noSuchDirectory, sampleRate: 48_000, channels: [[0]])) { error in
            guard case .cannotWrite(noSuchDirectory, _)? = error as? AudioFileError else { return XCTFail("\(error)") }
        }
        let path = directory.path("x.wav")
        XCTAssertThrowsError(try AudioFile.write(path: path, sampleRate: 48_000, channels: [[0, 0], [0]])) { error in
            XCTAssertEqual(error as? AudioFileError, .cannotWrite(path: path, reason: "channels differ in length: [2, 1]"))
        }
        XCTAssertThrowsError(try AudioFile.write(path: path, sampleRate: 44_100.5, channels: [[0]]))
        XCTAssertThrowsError(try AudioFile.write(path: path, sampleRate: 48_000, channels: []))
    }
}
