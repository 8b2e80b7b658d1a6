import Convolution
import EngineTestSupport
import Foundation
import XCTest

@testable import ConvolverGraph
@testable import ConvolverNode

/// `autogain = true`: pink noise on every input comes out of every output at the level it went in
/// (wet RMS = input RMS within ±0.5 dB), through the engine the node builds for the configuration.
/// The noise is made in the frequency domain; the gains come from the IRs' spectra (`Autogain`).
final class AutogainTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("swconv-autogain-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    /// libmysofa1's own KEMAR set (installed by `make deps`).
    private static let kemar = "/usr/share/libmysofa/MIT_KEMAR_normal_pinna.sofa"

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Pink noise over 20 Hz–20 kHz (power 1/f, nothing outside: as heard), RMS 0.1, made in
    /// the frequency domain: every bin of the band with amplitude 1/sqrt(f) and a random phase.
    private func pinkNoise(frames: Int, seed: UInt64) throws -> [Float] {
        var size = 4
        while size < frames { size *= 2 }
        let fft = try RealFFT.ofSize(size)
        let spectrum = try SplitSpectra(count: 1, binCount: fft.binCount)
        let scratch = try InterleavedSpectra(count: 1, binCount: fft.binCount)
        let output = try AlignedFloats(count: size)
        var generator = SeededGenerator(seed: seed)
        for bin in 0..<fft.binCount {
            let frequency = Double(bin) * 48000 / Double(size)
            let phase = Double.random(in: 0..<(2 * Double.pi), using: &generator)
            let amplitude = (20...20_000).contains(frequency) ? 1 / frequency.squareRoot() : 0
            spectrum.spectrum(0)[SplitSpectra.realOffset(ofBin: bin)] = Float(amplitude * cos(phase))
            spectrum.spectrum(0)[SplitSpectra.imaginaryOffset(ofBin: bin)] = Float(amplitude * sin(phase))
        }
        fft.inverse(spectrum: spectrum.spectrum(0), output: output.pointer, scratch: scratch.spectrum(0))
        let samples = Array(UnsafeBufferPointer(start: output.pointer, count: frames))
        let rms = (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(frames)).squareRoot()
        return samples.map { Float(Double($0) * 0.1 / rms) }
    }

    private func rmsDB(_ samples: ArraySlice<Float>) -> Double {
        10 * log10(samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count))
    }

    /// Runs `arguments` (module keys) with autogain through the node's engine; returns per output
    /// the wet level against the input's, in dB, after the IR has filled.
    private func levels(_ arguments: String, autogain: Bool = true) throws -> (differencesDB: [Double], autogainDB: [Double]?) {
        try levels(try SPAJSONValue.parse(arguments + " autogain = \(autogain)"))
    }

    private func levels(_ arguments: SPAJSONValue) throws -> (differencesDB: [Double], autogainDB: [Double]?) {
        var (configuration, _) = try NodeConfiguration.parse(pipeWire: .running, arguments)
        configuration.workgroupThreads = .fixed(1)
        let prepared = try EngineFactory(context: nil, costs: .typical, graph: nil).preparedMatrix(configuration, sampleRate: 48000)
        let engine = try ConvolutionEngine(matrix: prepared.matrix, configuration: .init(expectedBlockSize: 1024))
        let settle = prepared.matrix.impulseLength
        let frames = settle + 10 * 48000
        let inputs = try (0..<configuration.channelCount).map { try pinkNoise(frames: frames, seed: UInt64($0 + 1)) }
        let outputs = try engine.process(inputs, blockSize: 1024)
        let inputDB = rmsDB(inputs[0][settle...])
        return (outputs.map { rmsDB($0[settle...]) - inputDB }, prepared.autogainDB)
    }

    func testPinkNoiseKeepsItsLevelThroughEveryKindOfIR() throws {
        var random = SeededGenerator(seed: 5)
        // A true-stereo IR (LL LR RL RR), uneven in level and colour.
        let trueStereo = (0..<4).map { channel in
            (0..<24000).map { n in Float.random(in: -1...1, using: &random) * 0.3 * Float(channel + 1) * expf(-Float(n) / 4000) }
        }
        try AudioFile.write(path: path("true-stereo.wav"), sampleRate: 48000, channels: trueStereo)
        // A bass-heavy cabinet at 44.1 kHz (resampled to the graph rate).
        let cabinet = (0..<2048).map { n in sinf(Float(n) * 0.05) * expf(-Float(n) / 300) + (n == 0 ? 0.5 : 0) }
        try AudioFile.write(path: path("cabinet.wav"), sampleRate: 44100, channels: [cabinet])
        // 7.1 to two ears: 16 short HRIR-like IRs, louder on the near ear.
        let positions = ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"]
        var entries: [String] = []
        for (input, _) in positions.enumerated() {
            for ear in 0..<2 {
                let gain = Float(ear == input % 2 ? 1.0 : 0.4)
                let hrir = (0..<256).map { n in Float.random(in: -1...1, using: &random) * gain * expf(-Float(n) / 40) }
                let file = path("hrir-\(input)-\(ear).wav")
                try AudioFile.write(path: file, sampleRate: 48000, channels: [hrir])
                entries.append("{ input = \(input) output = \(ear) filename = \"\(file)\" }")
            }
        }
        let cases = [
            ("builtin:hall", "filename = \"builtin:hall\""),
            ("builtin:dirac", "filename = \"builtin:dirac\""),
            ("builtin:hilbert", "filename = \"builtin:hilbert\""),
            ("true stereo", "filename = \"\(path("true-stereo.wav"))\""),
            ("cabinet 44.1 kHz", "audio.channels = 1 filename = \"\(path("cabinet.wav"))\""),
            ("SOFA source at 60 degrees", "filename = \"\(Self.kemar)\" sofa = { azimuth = 60 }"),
            ("SOFA 7.1 virtual surround", "filename = \"\(Self.kemar)\" audio.position = [ \(positions.joined(separator: " ")) ]"),
            (
                "7.1 to binaural",
                "audio.position = [ \(positions.joined(separator: " ")) ] output.position = [ FL FR ] "
                    + "impulses = [ \(entries.joined(separator: " ")) ]"
            ),
        ]
        for (name, arguments) in cases {
            let result = try levels(arguments)
            let gains = try XCTUnwrap(result.autogainDB, name)
            print(
                "autogain \(name): gains \(gains.map { String(format: "%.2f", $0) }) dB, "
                    + "wet - input \(result.differencesDB.map { String(format: "%+.2f", $0) }) dB")
            for (output, difference) in result.differencesDB.enumerated() {
                XCTAssertEqual(difference, 0, accuracy: 0.5, "\(name), output \(output)")
            }
        }
    }

    /// Every config of pipewire-conf/ with `autogain = true` added to its module's arguments (its
    /// IR directory filled with generated IRs of the channel counts it names, uneven in level and
    /// colour), and the SOFA virtual surround as shipped.
    func testPinkNoiseKeepsItsLevelThroughEveryShippedConfig() throws {
        var random = SeededGenerator(seed: 9)
        let channelCounts = [
            "cabinet.wav": 1, "room-correction.wav": 2, "left.wav": 2, "right.wav": 2,
            "true-stereo-4ch.wav": 4, "hrir.wav": 14,
        ]
        for (name, channels) in channelCounts {
            var impulse: [[Float]] = []
            for channel in 0..<channels {
                let level = 0.2 * Float(channel % 3 + 1), decay = Float(300 * (channel + 1))
                impulse.append((0..<4800).map { n in Float.random(in: -1...1, using: &random) * level * expf(-Float(n) / decay) })
            }
            try AudioFile.write(path: path(name), sampleRate: 48000, channels: impulse)
        }
        let configs = try FileManager.default.contentsOfDirectory(atPath: packageRoot + "/pipewire-conf")
            .filter { $0.hasPrefix("swift-convolver") && $0.hasSuffix(".conf") }.sorted()
        XCTAssertGreaterThanOrEqual(configs.count, 9)
        for config in configs {
            let text = try String(contentsOfFile: packageRoot + "/pipewire-conf/" + config, encoding: .utf8)
                .replacingOccurrences(of: "/path/to/irs/", with: directory.path + "/")
            guard case let .object(top) = try SPAJSONValue.parse(text),
                case let .array(modules)? = top.last(where: { $0.key == "context.modules" })?.value,
                let module = modules.first(where: {
                    guard case let .object(members) = $0 else { return false }
                    return members.contains { $0.key == "name" && $0.value.text == "libpipewire-module-swift-convolver" }
                }),
                case let .object(members) = module,
                case let .object(arguments)? = members.first(where: { $0.key == "args" })?.value
            else {
                XCTFail("\(config): no libpipewire-module-swift-convolver args")
                continue
            }
            let result = try levels(.object(arguments.filter { $0.key != "autogain" } + [SPAJSONMember(key: "autogain", value: .word("true"))]))
            print(
                "autogain \(config): gains \(result.autogainDB?.map { String(format: "%.2f", $0) } ?? []) dB, "
                    + "wet - input \(result.differencesDB.map { String(format: "%+.2f", $0) }) dB")
            for (output, difference) in result.differencesDB.enumerated() {
                XCTAssertEqual(difference, 0, accuracy: 0.5, "\(config), output \(output)")
            }
        }
    }

    /// The judge above fails a node without autogain: the built-in hall then comes out far from
    /// the input's level, and nothing is reported.
    func testWithoutAutogainTheLevelIsTheIRs() throws {
        let result = try levels("filename = \"builtin:hall\"", autogain: false)
        XCTAssertNil(result.autogainDB)
        print("no autogain, builtin:hall: wet - input \(result.differencesDB.map { String(format: "%+.2f", $0) }) dB")
        XCTAssertTrue(result.differencesDB.contains { abs($0) > 0.5 }, "\(result.differencesDB)")
    }
}
