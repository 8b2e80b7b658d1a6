import Convolution
import ConvolverNode
import EngineTestSupport
import Foundation
import XCTest

/// HRTF sets in SOFA files (libmysofa), judged by libmysofa itself: the filters for a direction
/// are the file's measurement there (read raw) and, between measurements, what libmysofa's
/// `mysofa_getfilter_float` gives (Support/sofa_reference.py, through ctypes); the interaural
/// delay has the sign of the source's side; `render --set` is the direct convolution with the
/// measurement; the live node's output is the convolution of its input with those filters.
final class SOFATests: XCTestCase {
    /// MIT's KEMAR set, shipped by Debian's libmysofa1 (a dependency of libmysofa-dev).
    static let kemar = "/usr/share/libmysofa/MIT_KEMAR_normal_pinna.sofa"

    struct Filters: Decodable {
        var left: [Float]
        var right: [Float]
        var delay: [Float]
    }

    struct LibmysofaAnswer: Decodable {
        var rate: Double
        var filterLength: Int
        var measured: [Filters?]
        var interpolated: [Filters]
    }

    struct ReferenceSpec: Encodable {
        var path: String
        var directions: [[Double?]]
    }

    static let script = BuildProducts.packageRoot + "/Tests/ConvolverNodeTests/Support/sofa_reference.py"

    static func reference(_ directions: [SourceDirection], path: String = kemar) throws -> LibmysofaAnswer {
        try ReferenceScript.run(script, ReferenceSpec(path: path, directions: directions.map { [$0.azimuth, $0.elevation, $0.radius] }),
                                workDirectory: NSTemporaryDirectory())
    }

    private var scratch = ""

    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: Self.kemar) else {
            throw TestFailure("\(Self.kemar) is missing: install libmysofa1 (make deps does)")
        }
        scratch = NSTemporaryDirectory() + "swconv-sofa-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: scratch)
    }

    func testFiltersAreTheMeasurementsAndLibmysofasInterpolation() throws {
        let set = try HRTFSet(path: Self.kemar)
        XCTAssertEqual(set.sampleRate, 44100)
        XCTAssertEqual(set.measurementCount, 710)
        XCTAssertEqual(set.filterLength, 512)
        let onGrid = [SourceDirection(azimuth: 30), SourceDirection(azimuth: -90), SourceDirection(azimuth: 150),
                      SourceDirection(azimuth: 0, elevation: 40)]
        let between = [SourceDirection(azimuth: 33, elevation: 5), SourceDirection(azimuth: -101, elevation: -17),
                       SourceDirection(azimuth: 30, elevation: 0, radius: 1.0)]
        let reference = try Self.reference(onGrid + between)
        for (index, direction) in (onGrid + between).enumerated() {
            let ours = set.filters(for: direction)
            if index < onGrid.count {
                let measured = try XCTUnwrap(reference.measured[index], "\(direction) is a measured direction")
                XCTAssertEqual(measured.delay, [0, 0], "KEMAR's delays are in its filters")
                XCTAssertEqual(ours.left, measured.left, "\(direction): the measurement, left ear")
                XCTAssertEqual(ours.right, measured.right, "\(direction): the measurement, right ear")
            } else {
                XCTAssertNil(reference.measured[index], "\(direction) lies between measurements")
            }
            let interpolated = reference.interpolated[index]
            XCTAssertEqual(ours.left.count, interpolated.left.count)
            let worst = zip(ours.left + ours.right, interpolated.left + interpolated.right).map { abs($0 - $1) }.max() ?? 1
            XCTAssertLessThanOrEqual(worst, 1e-6, "\(direction): libmysofa's mysofa_getfilter_float")
        }
    }

    /// A source at +90° (AES69: counter-clockwise, the left) reaches the left ear first and louder.
    func testASourceOnTheLeftReachesTheLeftEarFirst() throws {
        let set = try HRTFSet(path: Self.kemar)
        func onsetAndEnergy(_ channel: [Float]) -> (onset: Int, energy: Double) {
            let peak = channel.map(abs).max() ?? 0
            return (channel.firstIndex { abs($0) >= 0.1 * peak } ?? -1, channel.reduce(0) { $0 + Double($1) * Double($1) })
        }
        for (azimuth, nearEar) in [(90.0, 0), (-90.0, 1), (60.0, 0), (-120.0, 1)] {
            let pair = try ImpulseResponse.load(set, direction: SourceDirection(azimuth: azimuth), sampleRate: 48000)
            let near = onsetAndEnergy(pair.channels[nearEar]), far = onsetAndEnergy(pair.channels[1 - nearEar])
            // A head is about 0.18 m across: the far ear hears it ~0.3-0.7 ms later (15-33 frames).
            XCTAssertGreaterThan(far.onset - near.onset, 10, "azimuth \(azimuth): interaural delay \(far.onset - near.onset) frames")
            XCTAssertGreaterThan(near.energy, 2 * far.energy, "azimuth \(azimuth): the near ear is louder")
        }
    }

    /// `render --set sofa.azimuth=90` at the set's own rate (no resampling): the direct convolution
    /// of the input with libmysofa's measurement at 90°.
    func testRenderWithSetIsTheConvolutionWithTheMeasurement() throws {
        var generator = SeededGenerator(seed: 5)
        let input = [Float].noise(8000, using: &generator).map { $0 * 0.5 }
        let inputPath = scratch + "/in.wav", outputPath = scratch + "/out.wav"
        try AudioFile.write(path: inputPath, sampleRate: 44100, channels: [input], format: .float32Wav)
        let render = try runCommand(["render", "--ir", Self.kemar, "--set", "sofa.azimuth=90", "--set", "gain=0.5",
                                     inputPath, outputPath])
        XCTAssertEqual(render.status, 0, render.output)
        let output = try AudioFile.read(path: outputPath)
        XCTAssertEqual(output.channels.count, 2, "one source, two ears")
        let measured = try XCTUnwrap(try Self.reference([SourceDirection(azimuth: 90)]).measured[0])
        for (ear, filter) in [measured.left, measured.right].enumerated() {
            let expected = Reference.convolve(input, filter.map { 0.5 * $0 }, outputLength: input.count + filter.count - 1)
            XCTAssertEqual(output.channels[ear].count, expected.count)
            XCTAssertLessThanOrEqual(Reference.relativeErrorDB(output.channels[ear], expected), -100, "ear \(ear)")
        }
    }

    func testBadSOFAInputIsAClearError() throws {
        try "not an HRTF set".write(toFile: scratch + "/text.sofa", atomically: true, encoding: .utf8)
        let cases: [(arguments: [String], message: String)] = [
            (["--ir", scratch + "/text.sofa"], "is not an HRTF set libmysofa can read"),
            (["--ir", scratch + "/missing.sofa"], "does not exist"),
            (["--ir", Self.kemar, "--set", "sofa.azimuth=nan"], "sofa.azimuth: 'nan' is not a number"),
            (["--ir", Self.kemar, "--set", "sofa.elevation=100"], "sofa.elevation: 100.0 is outside -90.0...90.0"),
            (["--ir", Self.kemar, "--set", "sofa.radius=0"], "sofa.radius: 0.0 is outside"),
            (["--ir", Self.kemar, "--set", "output.position=[ FL FR FC ]"], "has two outputs, the ears, not 3"),
            (["--ir", Self.kemar, "--set", "sofa.azimuth"], "expected KEY=VALUE"),
        ]
        var generator = SeededGenerator(seed: 1)
        try AudioFile.write(path: scratch + "/in.wav", sampleRate: 44100, channels: [[Float].noise(100, using: &generator)],
                            format: .float32Wav)
        for (arguments, message) in cases {
            let run = try runCommand(["render"] + arguments + [scratch + "/in.wav", scratch + "/out.wav"])
            XCTAssertNotEqual(run.status, 0, "\(arguments)")
            XCTAssertTrue(run.output.contains(message), "\(arguments): \(run.output.prefix(300))")
        }
        XCTAssertThrowsError(try NodeConfiguration.parse(arguments: """
            filename = "\(Self.kemar)" audio.position = [ FL FR AUX0 ]
            """)) { error in
            XCTAssertTrue("\(error)".contains("AUX0 has no standard speaker direction"), "\(error)")
        }
    }

    private func runCommand(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuildProducts.directory + "/pw-convolver")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }
}
