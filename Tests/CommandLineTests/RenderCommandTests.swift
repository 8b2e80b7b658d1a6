import Convolution
import EngineTestSupport
import Foundation
import XCTest

/// `pw-convolver render` end to end: files in, the built executable, a file out, checked against
/// direct convolution.
final class RenderCommandTests: XCTestCase {
    /// The products sit beside the test bundle in .build/<triple>/<configuration>/.
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("pw-convolver")
    }

    struct MissingExecutable: Error, CustomStringConvertible {
        var description: String { "pw-convolver is not built beside the tests (make test builds it)" }
    }

    /// A failure, not a skip: without the executable the render path is untested.
    static func requireExecutable() throws {
        guard FileManager.default.isExecutableFile(atPath: executable.path) else { throw MissingExecutable() }
    }

    struct Run { var status: Int32; var output: String; var errors: String }

    /// Runs the built executable (after `requireExecutable`) with `arguments`, to its exit.
    static func runExecutable(_ arguments: [String]) throws -> Run {
        try requireExecutable()
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Read both to the end before waiting, so a full pipe cannot block the child.
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
            errors: String(decoding: errorData, as: UTF8.self))
    }

    private func render(_ arguments: [String]) throws -> Run { try Self.runExecutable(["render"] + arguments) }

    func testRenderMatchesDirectConvolutionIncludingTheTail() throws {
        try Self.requireExecutable()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("render-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var generator = SeededGenerator(seed: 11)
        let input = (0..<2).map { _ in [Float].noise(20000, using: &generator).map { $0 * 0.5 } }
        let impulse = (0..<2).map { _ in [Float].noise(7000, using: &generator).map { $0 * 0.01 } }
        let inputPath = directory.appendingPathComponent("in.wav").path
        let irPath = directory.appendingPathComponent("ir.wav").path
        let outputPath = directory.appendingPathComponent("out.wav").path
        try AudioFile.write(path: inputPath, sampleRate: 48000, channels: input, format: .float32Wav)
        try AudioFile.write(path: irPath, sampleRate: 48000, channels: impulse, format: .float32Wav)

        // A node-like call size, with and without helper threads, and the default (throughput) block.
        for options in [["--block", "77"], ["--block", "77", "--threads", "auto"], []] {
            let result = try render(["--ir", irPath] + options + [inputPath, outputPath])
            XCTAssertEqual(result.status, 0, result.errors)
            let output = try AudioFile.read(path: outputPath)
            XCTAssertEqual(output.sampleRate, 48000)
            XCTAssertEqual(output.channels.count, 2)
            XCTAssertEqual(output.channels[0].count, 20000 + 7000 - 1, "input plus the IR's tail")
            for channel in 0..<2 {
                let expected = Reference.convolve(input[channel], impulse[channel], outputLength: 26999)
                XCTAssertLessThanOrEqual(Reference.relativeErrorDB(output.channels[channel], expected), -100, "\(options)")
            }
        }
    }

    /// The files are streamed: six times the input, about the same peak memory (reading or
    /// writing whole files would add 2 channels × 4 bytes × 2 files = 0.77 MB per second of audio).
    func testRenderMemoryDoesNotGrowWithTheInput() throws {
        try Self.requireExecutable()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("render-rss-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var peaks: [Double] = []
        for seconds in [10, 60] {
            var generator = SeededGenerator(seed: UInt64(seconds))
            let input = (0..<2).map { _ in [Float].noise(seconds * 48000, using: &generator).map { $0 * 0.25 } }
            let inputPath = directory.appendingPathComponent("in-\(seconds).wav").path
            try AudioFile.write(path: inputPath, sampleRate: 48000, channels: input)
            // Its own report (VmHWM): a child's rusage peak would be this big test process's, carried over exec.
            let result = try render(["--ir", "builtin:hall", inputPath, directory.appendingPathComponent("out.wav").path])
            XCTAssertEqual(result.status, 0, result.errors)
            let peak = try XCTUnwrap(
                result.errors.range(of: #"peak memory ([0-9.]+) MB"#, options: .regularExpression)
                    .map { Double(result.errors[$0].split(separator: " ")[2]) ?? -1 }, result.errors)
            peaks.append(peak)
        }
        print("render peak RSS: \(peaks.map { String(format: "%.1f", $0) }) MB for 10 s and 60 s of stereo input")
        XCTAssertLessThan(peaks[1], peaks[0] + 8, "peak RSS (MB) for 10 s and 60 s: \(peaks)")
    }

    func testRenderRefusesBadInputWithAClearMessage() throws {
        try Self.requireExecutable()
        let missing = try render(["--ir", "/nonexistent/ir.wav", "/nonexistent/in.wav", "/tmp/out.wav"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.errors.contains("/nonexistent/in.wav"), missing.errors)
        let noIR = try render(["/tmp/in.wav", "/tmp/out.wav"])
        XCTAssertEqual(noIR.status, 2)
        XCTAssertTrue(noIR.errors.contains("--ir is required"), noIR.errors)
        let badBlock = try render(["--ir", "builtin:dirac", "--block", "0", "/tmp/in.wav", "/tmp/out.wav"])
        XCTAssertEqual(badBlock.status, 2)
        XCTAssertTrue(badBlock.errors.contains("--block"), badBlock.errors)
    }
}

final class ConvolutionMatrixFromImpulseResponseTests: XCTestCase {
    func testChannelLayouts() throws {
        let ir = { (channels: Int) in ImpulseResponse(sampleRate: 48000, channels: (0..<channels).map { [Float($0 + 1)] }) }
        let mono = try ConvolutionMatrix(impulseResponse: ir(1), channelCount: 3)
        XCTAssertEqual(mono.entries.map { [$0.input, $0.output] }, [[0, 0], [1, 1], [2, 2]])
        XCTAssertEqual(Set(mono.entries.map(\.impulse)), [[1]])
        let stereo = try ConvolutionMatrix(impulseResponse: ir(2), channelCount: 2)
        XCTAssertEqual(stereo.entries.map(\.impulse), [[1], [2]])
        let trueStereo = try ConvolutionMatrix(impulseResponse: ir(4), channelCount: 2)
        XCTAssertEqual(
            trueStereo.entries.map { [$0.input, $0.output, Int($0.impulse[0])] },
            [[0, 0, 1], [0, 1, 2], [1, 0, 3], [1, 1, 4]])
        XCTAssertThrowsError(try ConvolutionMatrix(impulseResponse: ir(3), channelCount: 2)) { error in
            XCTAssertTrue("\(error)".contains("3 channels"), "\(error)")
        }
    }
}
