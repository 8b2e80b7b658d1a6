import Convolution
import EngineTestSupport
import Foundation
import XCTest

#if canImport(FoundationXML)
import FoundationXML
#endif

/// `pw-convolver inspect` end to end: the built executable on IR files with known decays and on
/// builtin:hall; the printed figures and the SVG (parsed as XML).
final class InspectCommandTests: XCTestCase {
    private func inspect(_ arguments: [String]) throws -> RenderCommandTests.Run {
        try RenderCommandTests.runExecutable(["inspect"] + arguments)
    }

    /// The per-channel table: "channel  peak dBFS  pre-delay ms  EDT s  T20 s  T30 s  RT60 s (from)".
    struct ChannelRow { var peakDBFS: Double; var preDelayMilliseconds: Double; var rt60: Double; var rt60Source: String }

    private func channelRows(_ output: String) -> [ChannelRow] {
        let lines = output.split(separator: "\n").map(String.init)
        guard let header = lines.firstIndex(where: { $0.hasPrefix("channel  peak dBFS") }) else { return [] }
        return lines[(header + 1)...].prefix { !$0.isEmpty && $0.first == " " }.compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count == 8, let peak = Double(fields[1]), let preDelay = Double(fields[2]),
                let rt60 = Double(fields[6])
            else { return nil }
            return ChannelRow(peakDBFS: peak, preDelayMilliseconds: preDelay, rt60: rt60, rt60Source: fields[7])
        }
    }

    private func value(after prefix: String, in output: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix(prefix) }
            .map { $0.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces) }
    }

    private func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("inspect-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    func testInspectMeasuresAGeneratedIRAndDrawsIt() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let rate = 44100.0
        // Channel 0: RT60 0.8 s from time 0; channel 1: RT60 1.6 s after 30 ms of silence.
        let channels = [
            exponentialDecay(rt60: 0.8, seconds: 2.1, sampleRate: rate, seed: 31).map { $0 * 0.5 },
            exponentialDecay(rt60: 1.6, seconds: 2.07, preDelay: 0.030, sampleRate: rate, seed: 32).map { $0 * 0.25 },
        ]
        let irPath = directory.appendingPathComponent("ir.wav").path
        let svgPath = directory.appendingPathComponent("ir.svg").path
        try AudioFile.write(path: irPath, sampleRate: rate, channels: channels, format: .float32Wav)

        let run = try inspect(["--ir", irPath, "--quantum", "512", "--svg", svgPath])
        XCTAssertEqual(run.status, 0, run.errors)
        XCTAssertEqual(value(after: "Channels:", in: run.output), "2", run.output)
        XCTAssertEqual(value(after: "Rate:", in: run.output), "44100 Hz", run.output)
        XCTAssertEqual(
            value(after: "Length:", in: run.output),
            String(
                format: "%d samples (%.3f s)", channels[0].count,
                Double(channels[0].count) / rate), run.output)
        let peaks = channels.map { 20 * log10(Double($0.map(abs).max()!)) }
        XCTAssertEqual(value(after: "Peak:", in: run.output), String(format: "%.2f dBFS", peaks.max()!), run.output)

        let rows = channelRows(run.output)
        guard rows.count == 2 else { return XCTFail("expected 2 channel rows in:\n\(run.output)") }
        for (row, (rt60, preDelay, peak)) in zip(rows, [(0.8, 0.0, peaks[0]), (1.6, 30.0, peaks[1])]) {
            XCTAssertEqual(row.rt60, rt60, accuracy: 0.1 * rt60, run.output)
            XCTAssertEqual(row.rt60Source, "(T30)", run.output)
            XCTAssertEqual(row.preDelayMilliseconds, preDelay, accuracy: 1, run.output)
            XCTAssertEqual(row.peakDBFS, peak, accuracy: 0.01, run.output)
        }

        XCTAssertTrue(run.output.contains("Partition plan at quantum 512 (2 in, 2 out, 2 IRs):"), run.output)
        let cpuLine = try XCTUnwrap(value(after: "Estimated CPU:", in: run.output), run.output)
        let cpuPercent = try XCTUnwrap(Double(cpuLine.prefix { $0 != "%" }), cpuLine)
        XCTAssertGreaterThan(cpuPercent, 0)
        XCTAssertLessThan(cpuPercent, 100)
        // The printed plan covers the whole IR: its last level ends at or after the IR's length.
        let lastLevel = try XCTUnwrap(run.output.split(separator: "\n").last { $0.contains("level ") && $0.contains(" ms") })
        let endMilliseconds = try XCTUnwrap(Double(lastLevel.split(separator: "-").last!.dropLast(3)), String(lastLevel))
        XCTAssertGreaterThanOrEqual(endMilliseconds, 1000 * Double(channels[0].count) / rate - 0.1)

        let svg = try SVGSummary(path: svgPath)
        for channel in 0..<2 {
            for kind in ["waveform", "magnitude", "decay"] {
                let plot = try XCTUnwrap(svg.plots["channel-\(channel)-\(kind)"], "no \(kind) plot for channel \(channel)")
                XCTAssertEqual(plot.classes, "plot \(kind)")
                XCTAssertEqual(plot.traces.count, 1, "\(kind) \(channel)")
                XCTAssertGreaterThanOrEqual(plot.traces.first?.count ?? 0, 100, "\(kind) \(channel): points in its trace")
                XCTAssertGreaterThanOrEqual(plot.texts, 5, "\(kind) \(channel): title, tick labels and axis names")
                XCTAssertEqual(plot.fits.count, kind == "decay" ? 1 : 0, "\(kind) \(channel): the RT60 fit line")
            }
            // The fit line falls: its right end is lower (larger y) than its left end.
            let fit = try XCTUnwrap(svg.plots["channel-\(channel)-decay"]?.fits.first)
            XCTAssertEqual(fit.count, 2)
            XCTAssertGreaterThan(fit[1].y, fit[0].y)
            // Drawn to scale: the plot is 420 x 220 px for the IR's duration x 80 dB, so the line's
            // slope gives back the printed RT60.
            let duration = Double(channels[0].count) / rate
            let secondsPerPixel = duration / 420, decibelsPerPixel = 80.0 / 220
            let slope = (fit[1].y - fit[0].y) * decibelsPerPixel / ((fit[1].x - fit[0].x) * secondsPerPixel)
            XCTAssertEqual(60 / slope, rows[channel].rt60, accuracy: 0.02 * rows[channel].rt60, "channel \(channel)")
        }
        XCTAssertEqual(svg.plots.count, 6)
        XCTAssertTrue(svg.title.contains("ir.wav"), svg.title)
    }

    func testInspectBuiltinHallReadsItsDesignedRT60() throws {
        let run = try inspect(["--ir", "builtin:hall"])
        XCTAssertEqual(run.status, 0, run.errors)
        XCTAssertEqual(value(after: "Channels:", in: run.output), "2")
        XCTAssertEqual(value(after: "Rate:", in: run.output), "48000 Hz")
        let rows = channelRows(run.output)
        XCTAssertEqual(rows.count, 2, run.output)
        for row in rows {
            XCTAssertEqual(row.rt60, 2.5, accuracy: 0.25, run.output)
            // No direct sound: the onset is the first early reflection or the tail, between the
            // hall's 15 ms pre-delay and the end of its early reflections at 80 ms.
            XCTAssertGreaterThanOrEqual(row.preDelayMilliseconds, 15, run.output)
            XCTAssertLessThanOrEqual(row.preDelayMilliseconds, 80, run.output)
        }
        XCTAssertTrue(run.output.contains("Partition plan at quantum 256 (2 in, 2 out, 2 IRs):"), run.output)
        // The gains a node with `autogain = true` applies (AutogainTests: -2.05, -2.48 dB for the hall).
        XCTAssertEqual(value(after: "Autogain:", in: run.output), "-2.05, -2.48 dB per output (`autogain = true`: pink noise keeps its level)")
    }

    /// A SOFA file: its grid, the ears' filters for a source ahead, planned as one input to two ears.
    func testInspectSOFAShowsItsGrid() throws {
        let run = try inspect(["--ir", "/usr/share/libmysofa/MIT_KEMAR_normal_pinna.sofa"])
        XCTAssertEqual(run.status, 0, run.errors)
        XCTAssertTrue(
            run.output.contains("SOFA:      710 measurements, 512 taps at 44100 Hz, elevation -40...90 deg, radius 1.40...1.40 m"),
            run.output)
        XCTAssertEqual(value(after: "Rate:", in: run.output), "44100 Hz")
        XCTAssertTrue(run.output.contains("Partition plan at quantum 256 (1 in, 2 out, 2 IRs):"), run.output)
    }

    func testTrueStereoIRIsPlannedOnTwoChannelsAndResampled() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let irPath = directory.appendingPathComponent("true-stereo.wav").path
        let channels = (0..<4).map { exponentialDecay(rt60: 0.3, seconds: 0.4, sampleRate: 48000, seed: 40 + UInt64($0)) }
        try AudioFile.write(path: irPath, sampleRate: 48000, channels: channels, format: .float32Wav)
        let run = try inspect(["--ir", irPath, "--rate", "96000", "--quantum", "128"])
        XCTAssertEqual(run.status, 0, run.errors)
        XCTAssertEqual(value(after: "Rate:", in: run.output), "96000 Hz")
        XCTAssertEqual(channelRows(run.output).count, 4, run.output)
        for row in channelRows(run.output) { XCTAssertEqual(row.rt60, 0.3, accuracy: 0.03, run.output) }
        XCTAssertTrue(run.output.contains("Partition plan at quantum 128 (2 in, 2 out, 4 IRs):"), run.output)
    }

    func testBadInputIsRefusedWithAClearMessage() throws {
        let missing = try inspect(["--ir", "/nonexistent/ir.wav"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.errors.contains("/nonexistent/ir.wav"), missing.errors)
        XCTAssertTrue(missing.output.isEmpty, missing.output)
        let missingAtRate = try inspect(["--ir", "/nonexistent/ir.wav", "--rate", "48000"])
        XCTAssertEqual(missingAtRate.status, 1)
        XCTAssertTrue(missingAtRate.errors.contains("/nonexistent/ir.wav"), missingAtRate.errors)
        let unknownBuiltin = try inspect(["--ir", "builtin:cathedral"])
        XCTAssertEqual(unknownBuiltin.status, 1)
        XCTAssertTrue(unknownBuiltin.errors.contains("cathedral"), unknownBuiltin.errors)
        let noIR = try inspect([])
        XCTAssertEqual(noIR.status, 2)
        XCTAssertTrue(noIR.errors.contains("--ir is required"), noIR.errors)
        let badQuantum = try inspect(["--ir", "builtin:dirac", "--quantum", "0"])
        XCTAssertEqual(badQuantum.status, 2)
        XCTAssertTrue(badQuantum.errors.contains("--quantum"), badQuantum.errors)
        let misfit = try inspect(["--ir", "builtin:hall", "--channels", "3"])
        XCTAssertEqual(misfit.status, 1)
        XCTAssertTrue(misfit.errors.contains("2 channels"), misfit.errors)
        let unwritable = try inspect(["--ir", "builtin:dirac", "--svg", "/nonexistent/dir/out.svg"])
        XCTAssertEqual(unwritable.status, 1)
        XCTAssertTrue(unwritable.errors.contains("/nonexistent/dir/out.svg"), unwritable.errors)
    }

    func testHelpDocumentsEveryOption() throws {
        let help = try inspect(["--help"])
        XCTAssertEqual(help.status, 0)
        for option in ["--ir", "--rate", "--quantum", "--channels", "--svg", "EDT", "T20", "T30", "RT60", "pre-delay"] {
            XCTAssertTrue(help.output.contains(option), "--help lacks \(option)")
        }
    }
}

/// What the tests need from an `inspect` SVG, read with a real XML parser (so it must be well formed).
final class SVGSummary: NSObject, XMLParserDelegate {
    struct Plot {
        var classes: String
        var traces: [[(x: Double, y: Double)]] = []
        var fits: [[(x: Double, y: Double)]] = []
        var texts = 0
    }

    private(set) var plots: [String: Plot] = [:]
    private(set) var title = ""
    private var currentPlot: String?
    private var groupDepth = 0
    private var readingTitle = false

    struct ParseError: Error, CustomStringConvertible { var description: String }

    init(path: String) throws {
        super.init()
        guard let parser = XMLParser(contentsOf: URL(fileURLWithPath: path)) else {
            throw ParseError(description: "cannot open \(path)")
        }
        parser.delegate = self
        guard parser.parse() else {
            throw ParseError(description: "\(path) is not well-formed XML: \(parser.parserError.map { "\($0)" } ?? "?")")
        }
    }

    func parser(
        _ parser: XMLParser, didStartElement element: String, namespaceURI: String?,
        qualifiedName: String?, attributes: [String: String] = [:]
    ) {
        switch element {
        case "g":
            if currentPlot != nil {
                groupDepth += 1
            } else if let classes = attributes["class"], classes.hasPrefix("plot "), let id = attributes["id"] {
                currentPlot = id
                groupDepth = 0
                plots[id] = Plot(classes: classes)
            }
        case "polyline":
            guard let id = currentPlot else { return }
            let points = (attributes["points"] ?? "").split(separator: " ").compactMap { pair -> (x: Double, y: Double)? in
                let coordinates = pair.split(separator: ",").compactMap { Double($0) }
                return coordinates.count == 2 ? (coordinates[0], coordinates[1]) : nil
            }
            if attributes["class"] == "trace" { plots[id]?.traces.append(points) }
            if attributes["class"] == "fit" { plots[id]?.fits.append(points) }
        case "text":
            if let id = currentPlot { plots[id]?.texts += 1 }
            readingTitle = attributes["class"] == "title"
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if readingTitle { title += string }
    }

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        if element == "text" { readingTitle = false }
        guard element == "g", currentPlot != nil else { return }
        if groupDepth == 0 { currentPlot = nil } else { groupDepth -= 1 }
    }
}
