import Convolution
import ConvolverGraph
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

    static let script = packageRoot + "/Tests/LiveTests/Support/sofa_reference.py"

    static func reference(_ directions: [SourceDirection], path: String = kemar) throws -> LibmysofaAnswer {
        try ReferenceScript.run(
            script, ReferenceSpec(path: path, directions: directions.map { [$0.azimuth, $0.elevation, $0.radius] }),
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
        let onGrid = [
            SourceDirection(azimuth: 30), SourceDirection(azimuth: -90), SourceDirection(azimuth: 150),
            SourceDirection(azimuth: 0, elevation: 40),
        ]
        let between = [
            SourceDirection(azimuth: 33, elevation: 5), SourceDirection(azimuth: -101, elevation: -17),
            SourceDirection(azimuth: 30, elevation: 0, radius: 1.0),
        ]
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
            let ourTaps = ours.left + ours.right, theirTaps = interpolated.left + interpolated.right
            let worst = zip(ourTaps, theirTaps).map { abs($0 - $1) }.max() ?? 1
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
        let render = try runCommand([
            "render", "--ir", Self.kemar, "--set", "sofa.azimuth=90", "--set", "gain=0.5",
            inputPath, outputPath,
        ])
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
        try AudioFile.write(
            path: scratch + "/in.wav", sampleRate: 44100, channels: [[Float].noise(100, using: &generator)],
            format: .float32Wav)
        for (arguments, message) in cases {
            let run = try runCommand(["render"] + arguments + [scratch + "/in.wav", scratch + "/out.wav"])
            XCTAssertNotEqual(run.status, 0, "\(arguments)")
            XCTAssertTrue(run.output.contains(message), "\(arguments): \(run.output.prefix(300))")
        }
        XCTAssertThrowsError(
            try NodeConfiguration.parse(
                pipeWire: .running,
                arguments: """
                    filename = "\(Self.kemar)" audio.position = [ FL FR AUX0 ]
                    """)
        ) { error in
            XCTAssertTrue("\(error)".contains("AUX0 has no standard speaker direction"), "\(error)")
        }
    }

    private func runCommand(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try runToCompletion(BuildProducts.directory + "/pw-convolver", arguments)
    }
}

/// The HRTF node live: in a private daemon, as the module in a `pipewire -c` client.
final class SOFALiveTests: XCTestCase {
    private var daemon: PrivatePipeWire!

    override func tearDown() {
        daemon?.stop()
        daemon = nil
    }

    private func path(_ name: String) -> String { daemon.runtimeDirectory + "/" + name }

    /// At the set's own rate (44.1 kHz graph and node): one mono source at 30° is the convolution
    /// of its input with libmysofa's measurement at 30°, per ear.
    func testMonoSourceIsTheConvolutionWithTheMeasurement() throws {
        try BuildProducts.requireModule()
        daemon = try PrivatePipeWire(name: "sofa")
        try daemon.setQuantum(256)
        // The graph at 44.1 kHz before the node exists, and the node started for it.
        let (status, output) = try daemon.run(["pw-metadata", "-n", "settings", "0", "clock.force-rate", "44100"])
        XCTAssertEqual(status, 0, output)
        let measured = try XCTUnwrap(try SOFATests.reference([SourceDirection(azimuth: 30)]).measured[0])
        try AudioFile.write(path: path("hrir-30.wav"), sampleRate: 44100, channels: [measured.left, measured.right])
        try TestSignals.write(TestSignals.noise(seconds: 2, channels: 1), to: path("input.wav"))
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "conv-sofa")
        let client = try ModuleClient.start(
            daemon, name: "conv-sofa",
            arguments: """
                node.name = conv-sofa filename = "\(SOFATests.kemar)" sofa = { azimuth = 30 } \(record.argument)
                """, contextProperties: "default.clock.rate = 44100")
        defer { client.stop() }
        do {
            try daemon.waitForPorts(ofNode: "conv-sofa", count: 3, timeout: 30)
        } catch {
            throw TestFailure("\(error)\nclient log:\n\(client.log)")
        }
        XCTAssertEqual(try daemon.portNames(ofNode: "conv-sofa"), ["input_MONO", "output_FL", "output_FR"])
        try PlayThrough(daemon: daemon, nodeName: "conv-sofa", positions: ["MONO"], outputPositions: ["FL", "FR"])
            .run(inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: 2, tailSeconds: 0.3, tag: "sofa")
        let statistics = try XCTUnwrap(try daemon.nodeProperties("conv-sofa")).properties
        print(
            "conv-sofa: "
                + statistics.filter { $0.key.hasPrefix("convolver.") }.sorted { $0.key < $1.key }
                .map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        XCTAssertEqual("\(statistics["convolver.rate"] ?? "")", "44100")
        XCTAssertTrue(client.isRunning, client.log)
        client.stop()
        try LiveVerdict(
            record: record, recording: path("rec.f32"), played: path("input.wav"), positions: ["MONO"],
            outputPositions: ["FL", "FR"], workDirectory: daemon.runtimeDirectory
        )
        .assertExact(entries: [.init(0, 0, path("hrir-30.wav"), 0), .init(0, 1, path("hrir-30.wav"), 1)], label: "conv-sofa")
    }

    /// The source moves every 100 ms for 10 s (`pw-cli set-param … Props sofa.azimuth`), a 500 Hz
    /// tone playing: the new filters are built off the data thread and crossfaded in, so each ear
    /// stays a tone whose steps are those of a steady tone (no click), with no allocation or lock
    /// on the real-time threads (what building a filter there would do). With the crossfade off
    /// (`crossfade = 0`), the same sweep clicks: the measure sees it. Late cycles are printed, not
    /// judged: this VM charges its stalls to a thread as CPU time (docs/facts.md), so a count of
    /// them is a benchmark's figure, not a test's.
    func testMovingTheSourceLiveNeitherClicksNorAllocates() throws {
        try BuildProducts.requireModule()
        daemon = try PrivatePipeWire(name: "sofa-sweep")
        try daemon.setQuantum(256)
        let smooth = try sweep(name: "conv-sweep", crossfade: "", seconds: 10, checkRealtime: true)
        XCTAssertLessThanOrEqual(
            smooth.sweep, 1.1 * smooth.steady,
            "largest step while moving \(smooth.sweep) vs steady \(smooth.steady) (in a tone's own steps)")
        let hard = try sweep(name: "conv-hard", crossfade: "crossfade = 0", seconds: 3, checkRealtime: false)
        XCTAssertGreaterThan(hard.sweep, 2 * hard.steady, "without a crossfade the moves click: \(hard)")
    }

    /// Plays a tone through a SOFA node while moving the source; the largest sample-to-sample step
    /// per ear relative to the tone's own (2·A·sin(π f / rate) at the local amplitude A), before and
    /// while moving, from the node's own record.
    private func sweep(
        name: String, crossfade: String, seconds: Double,
        checkRealtime: Bool
    ) throws -> (steady: Double, sweep: Double) {
        let rate = 48000.0, frequency = 500.0, warmUp = 3.0
        let total = warmUp + seconds + 1
        let tone = (0..<Int(total * rate)).map { Float(0.3 * sin(2 * Double.pi * frequency * Double($0) / rate)) }
        try TestSignals.write([tone + [Float](repeating: 0, count: Int(0.5 * rate))], to: path("\(name).wav"))
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: name)
        let host = try RealtimeCheckHost(
            daemon: daemon, name: name,
            arguments: """
                node.name = \(name) filename = "\(SOFATests.kemar)" \(crossfade) \(record.argument)
                """, portCount: 3)
        defer { host.client.stop() }
        let nodeID = try XCTUnwrap(try daemon.nodeProperties(name)).id
        var report: RealtimeCheckReport?
        var moves = 0
        // One pw-cli for all the moves (a new process per move takes longer than 100 ms here).
        let control = Process()
        control.executableURL = URL(fileURLWithPath: PipeWireInstallation.tool("pw-cli"))
        control.environment = daemon.environment()
        let commands = Pipe()
        control.standardInput = commands
        control.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        control.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try control.run()
        defer { if control.isRunning { control.terminate() }; control.waitUntilExit() }
        try PlayThrough(daemon: daemon, nodeName: name, positions: ["MONO"], outputPositions: ["FL", "FR"])
            .run(
                inputPath: path("\(name).wav"), recordingPath: path("\(name).f32"), seconds: total + 0.5, tailSeconds: 0.2,
                tag: name
            ) {
                usleep(UInt32(warmUp * 1_000_000))
                if checkRealtime { try host.arm() }
                let start = Date()
                while Date().timeIntervalSince(start) < seconds {
                    let azimuth = -90 + 180 * (0.5 + 0.5 * sin(Double(moves) * 0.35))
                    commands.fileHandleForWriting.write(Data("set-param \(nodeID) Props { params = [ \"sofa.azimuth\" \(azimuth) ] }\n".utf8))
                    moves += 1
                    usleep(100_000)
                }
                usleep(500_000)
                if checkRealtime { report = try host.dump() }
            }
        let statistics = try XCTUnwrap(try daemon.nodeProperties(name)).properties
        print(
            "\(name): \(moves) moves; "
                + statistics.filter { $0.key.hasPrefix("convolver.") }
                .sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        XCTAssertGreaterThan(Int("\(statistics["convolver.swaps"] ?? 0)") ?? 0, moves / 2, "the moves reached the node")
        if checkRealtime { try XCTUnwrap(report).assertRealtimeSafe(withHelpers: false) }  // 512 taps: all in the head
        host.client.stop()

        // The record: input, left ear, right ear per frame (NaN where a call had no output).
        let channels = try record.frames(channels: 3)
        guard let onset = channels[0].firstIndex(where: { $0 != 0 }) else { throw TestFailure("\(name): no sound in the record") }
        let toneStep = 2 * sin(Double.pi * frequency / rate)
        // Where the node's input itself is not the tone (a cycle the machine lost between player
        // and node, a block of zeros from the player), its output is not one either, for the
        // filter's length: not the node's doing, left out. A tone keeps x[n+1] = 2·cos(ω)·x[n] − x[n−1].
        let x = channels[0], twoCosine = Float(2 * cos(2 * Double.pi * frequency / rate))
        var inputJumped = [Bool](repeating: false, count: x.count)
        for n in 1..<(x.count - 1) where abs(x[n + 1] - twoCosine * x[n] + x[n - 1]) > 1e-4 {
            for k in max(0, n - 240)..<min(inputJumped.count, n + 1200) { inputJumped[k] = true }
        }
        print("\(name): \(inputJumped.filter { $0 }.count) frames left out around the input's breaks")
        func largestRelativeStep(_ frames: Range<Int>) -> Double {
            var largest = 0.0
            for ear in 1...2 {
                let y = channels[ear]
                let window = 240  // 10 ms around each frame: five periods of the tone
                var energies = [0.0]  // prefix sums of y² (frames without output count as 0)
                for value in y { energies.append(energies.last! + (value.isFinite ? Double(value) * Double(value) : 0)) }
                for n in frames where n > window && n + window < y.count && !inputJumped[n] {
                    guard y[n].isFinite, y[n - 1].isFinite else { continue }
                    let energy = energies[n + window] - energies[n - window]
                    let amplitude = (2 * energy / Double(2 * window)).squareRoot()
                    guard amplitude > 1e-4 else { continue }
                    largest = max(largest, Double(abs(y[n] - y[n - 1])) / (toneStep * amplitude))
                }
            }
            return largest
        }
        let frame = { (seconds: Double) in onset + Int(seconds * rate) }
        let steady = largestRelativeStep(frame(0.3)..<frame(warmUp - 0.3))
        let moving = largestRelativeStep(frame(warmUp + 0.2)..<min(frame(warmUp + seconds), channels[1].count))
        print("\(name): largest step relative to the tone's: steady \(steady), moving \(moving)")
        return (steady, moving)
    }
}
