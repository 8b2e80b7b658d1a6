import Convolution
import EngineTestSupport
import Foundation
import XCTest

/// The fuzz targets' seed corpus and every committed finding (Fuzz/Corpus, Fuzz/Findings) through the
/// plain build of `fuzz-parsers`, once each: what the fuzzer once broke stays fixed. `make fuzz`
/// runs the same targets under libFuzzer and AddressSanitizer.
final class FuzzCorpusTests: XCTestCase {
    static let targets = ["module-arguments", "equalizer-apo", "impulse-response", "hrtf-set"]

    private func replay(_ target: String, _ paths: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        let replayer = RenderCommandTests.executable.deletingLastPathComponent().appendingPathComponent("fuzz-parsers")
        guard FileManager.default.isExecutableFile(atPath: replayer.path) else {
            throw RenderCommandTests.MissingExecutable()
        }
        let process = Process()
        process.executableURL = replayer
        process.arguments = [target] + paths
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    func testEverySeedAndFindingReplaysWithoutACrash() throws {
        // The binary seeds are not committed: a few audio files made here (as scripts/fuzz.sh makes
        // them), libmysofa's own SOFA file.
        let audio = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-seeds-\(getpid())")
        try FileManager.default.createDirectory(at: audio, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: audio) }
        for (name, options) in [("mono16.wav", ["-c", "1", "-b", "16"]), ("stereo.flac", ["-c", "2"])] {
            let sox = Process()
            sox.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
            sox.arguments = ["-n", "-r", "48000"] + options + [audio.appendingPathComponent(name).path, "synth", "0.005", "sine", "1000"]
            try sox.run()
            sox.waitUntilExit()
            XCTAssertEqual(sox.terminationStatus, 0, "sox made no \(name)")
        }
        let made = ["impulse-response": [audio.path], "hrtf-set": ["/usr/share/libmysofa/default.sofa"]]
        for target in Self.targets {
            let paths =
                ["Fuzz/Corpus/\(target)", "Fuzz/Findings/\(target)"].map { packageRoot + "/" + $0 }
                .filter { FileManager.default.fileExists(atPath: $0) } + (made[target] ?? [])
            let (status, output) = try replay(target, paths)
            print(output, terminator: "")
            XCTAssertEqual(status, 0, "\(target): \(output)")
            XCTAssertFalse(output.contains(": 0 inputs replayed"), "\(target) replayed nothing: \(output)")
        }
        // The module-arguments corpus holds every test config's arguments, and the rough ones.
        let seeds = try FileManager.default.contentsOfDirectory(atPath: packageRoot + "/Fuzz/Corpus/module-arguments")
        XCTAssertGreaterThan(seeds.count, 20)
    }

    /// The replayer's teeth: a planted crash (FUZZ_PLANT, an input starting "crash") ends it by a signal.
    func testAPlantedCrashIsReported() throws {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-plant-\(getpid())")
        try "crash here".write(to: input, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: input) }
        let (status, output) = try replay("module-arguments", [input.path], environment: ["FUZZ_PLANT": "1"])
        XCTAssertNotEqual(status, 0, output)
        XCTAssertFalse(output.contains("no crash"), output)
    }
}

/// What each finding now gets: an error that names the problem, not a crash of the host process.
final class FuzzFindingTests: XCTestCase {
    /// A FLAC header with no length (libsndfile then reports the most frames a file can have):
    /// converting its duration at 48 kHz to frames trapped (found by the impulse-response target).
    func testAFLACOfUnknownLengthIsRefusedAsTooLong() {
        let path = packageRoot + "/Fuzz/Findings/impulse-response/flac-frame-count-overflow.input"
        do {
            _ = try ImpulseResponse.load(path, sampleRate: 48000)
            XCTFail("loaded")
        } catch {
            print(error)
            XCTAssertTrue("\(error)".contains("flac-frame-count-overflow.input") && "\(error)".contains("is too long"), "\(error)")
        }
    }
}
