import Convolution
import Foundation
import XCTest

/// IR hot-swap by Props "filename" during playback, live in a private daemon: crossfaded (no click,
/// no late cycles), a failing load keeps the IR, and a swap every 100 ms leaks nothing.
final class HotSwapTests: XCTestCase {
    private var daemon: PrivatePipeWire!
    private let positions = ["FL", "FR"]

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
        daemon = try PrivatePipeWire(name: "hotswap")
        try daemon.setQuantum(256)
    }

    override func tearDown() {
        daemon?.stop()
        daemon = nil
    }

    private func path(_ name: String) -> String { daemon.runtimeDirectory + "/" + name }

    private func setProps(_ id: Int, _ params: String) throws {
        let (status, output) = try daemon.run(["pw-cli", "set-param", "\(id)", "Props", "{ params = [ \(params) ] }"])
        XCTAssertEqual(status, 0, output)
    }

    private func property(_ node: String, _ key: String) -> String? {
        guard let value = (try? daemon.nodeProperties(node))?.properties[key] else { return nil }
        return "\(value)"
    }

    /// Two IRs whose outputs differ clearly: a direct tap (+1) and an inverted, slightly delayed tap
    /// with a short, quiet tail (its sum ~0.15, so the low sine's level stays ~0.3). A hard switch between them jumps by ~2× the signal's amplitude.
    private func writeImpulses() throws {
        var inverted = [Float](repeating: 0, count: 2400)
        inverted[3] = -0.9
        for index in 4..<inverted.count { inverted[index] = 0.0005 * expf(-Float(index) / 300) }
        try TestSignals.write([[1], [1]], to: path("direct.wav"))
        try TestSignals.write([inverted, inverted], to: path("inverted.wav"))
    }

    /// A 40.1 Hz sine at 0.3: smooth, so the largest sample step in steady state is small and known
    /// (0.3·2π·40.1/48000 ≈ 0.0016); a hard IR switch steps by up to ~0.55. Not 40 Hz: its samples
    /// would repeat every 1200 frames, and the graph judge could not tell one period from another.
    static let sineHertz = 40.1

    private func writeSine(seconds: Double) throws {
        let frames = Int(seconds * 48000)
        let sine = (0..<frames).map { Float(0.3 * sin(2 * Double.pi * Self.sineHertz * Double($0) / 48000)) }
        let lead = [Float](repeating: 0, count: 24000)
        try TestSignals.write([lead + sine + lead, lead + sine + lead], to: path("sine.wav"))
    }

    /// Largest |y[n+1] − y[n]| of the node's output `output` (its own record) in frames `range`,
    /// leaving out frames within 8 of where the node's own input `input` is not the sine: the
    /// player sometimes delivers a block of zeros on this VM (or a stall loses a cycle), and the
    /// node then rightly passes the gap on. A sine keeps x[n+1] = 2·cos(ω)·x[n] − x[n−1]; a step
    /// threshold alone missed gaps that start near a zero crossing (a 1.6× step passed for a click).
    /// Returns the step and how many input glitches were left out.
    private func largestStep(
        _ output: [[Float]], input: [[Float]], _ range: Range<Int>, inputLimit: Float,
        dropouts: inout Int
    ) -> (Float, Int) {
        var largest: Float = 0
        var glitches = 0
        let twoCosine = Float(2 * cos(2 * Double.pi * Self.sineHertz / 48000))
        for (channel, signal) in zip(input, output) {
            let end = min(range.upperBound, signal.count, channel.count) - 1
            guard end > range.lowerBound else { continue }
            var nearInputGap = [Bool](repeating: false, count: end + 1)
            for frame in max(1, range.lowerBound)..<end
            where abs(channel[frame + 1] - twoCosine * channel[frame] + channel[frame - 1]) > 1e-4
                || abs(channel[frame + 1] - channel[frame]) > inputLimit
            {
                glitches += 1
                for near in max(range.lowerBound, frame - 8)...min(end, frame + 8) { nearInputGap[near] = true }
            }
            for frame in range.lowerBound..<end where !nearInputGap[frame] {
                largest = max(largest, abs(signal[frame + 1] - signal[frame]))
            }
            // Dropouts: ≥ 32 exact zeros in the output while the input sounds.
            var zeroRun = 0
            for frame in range.lowerBound..<end {
                zeroRun = signal[frame] == 0 && abs(channel[frame]) > 0.01 ? zeroRun + 1 : 0
                if zeroRun == 32 { dropouts += 1 }
            }
        }
        return (largest, glitches)
    }

    /// Plays the sine through the node, swaps direct ↔ inverted `swapCount` times 0.4 s apart,
    /// returns (steady max step, max step over the swaps, crossfades counted, the node's own late
    /// cycles added (`convolver.late-cycles-own`, printed only: a count of late cycles is a
    /// benchmark's figure on a machine whose stalls are charged as CPU time, docs/facts.md),
    /// dropouts), all from the node's own record; the recording is held to the record (`GraphJudge`).
    /// `graph`: the node runs a filter-chain graph whose `linear` node "scale" swaps its `Mult`
    /// between 1 and −0.9 (`pw-convolver set`, which returns once the recompiled graph plays),
    /// instead of swapping IR files.
    private func swapDuringPlayback(
        crossfade: String, tag: String, swapCount: Int = 4, graph: Bool = false
    )
        throws -> (steady: Float, swapping: Float, crossfades: Int, lateCycles: Int, dropouts: Int)
    {
        let node = "conv-\(tag)"
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: node)
        let source =
            graph
            ? "filter.graph = { nodes = [ { type = builtin label = linear name = scale control = { Mult = 1 } } ] }"
            : "filename = \"\(path("direct.wav"))\""
        let client = try ModuleClient.start(
            daemon, name: node,
            arguments: "node.name = \(node) audio.position = [ FL FR ] \(source) crossfade = \(crossfade) \(record.argument)")
        defer { client.stop() }
        // A graph runs as filter-chain's two streams: `node` (inputs) and output.`node`.
        try daemon.waitForPorts(ofNode: node, count: graph ? 2 : 4, timeout: 30)
        let id = try XCTUnwrap(try daemon.nodeProperties(node)).id
        func ownLateCycles() -> Int { Int(property(node, "convolver.late-cycles-own") ?? "") ?? -1 }
        let lateBefore = ownLateCycles()
        let crossfadesBefore = Int(property(node, "convolver.crossfades") ?? "") ?? -1

        let seconds = 1.5 + 0.4 * Double(swapCount) + 1.0
        try writeSine(seconds: seconds)
        try PlayThrough(daemon: daemon, nodeName: node, outputNodeName: graph ? "output.\(node)" : nil).run(
            inputPath: path("sine.wav"), recordingPath: path("rec-\(tag).f32"), seconds: seconds + 1, tailSeconds: 0.2, tag: tag
        ) {
            usleep(1_500_000)
            for swap in 0..<swapCount {
                if graph {
                    let (status, output) = try self.daemon.run(
                        [BuildProducts.directory + "/pw-convolver", "set", node, "scale:Mult=\(swap % 2 == 0 ? -0.9 : 1)"])
                    XCTAssertEqual(status, 0, "\(tag) swap \(swap): \(output)")
                } else {
                    let target = path(swap % 2 == 0 ? "inverted.wav" : "direct.wav")
                    try setProps(id, "\"filename\" \"\(target)\"")
                    XCTAssertTrue(waitUntil(timeout: 5) { self.property(node, "convolver.ir") == target }, "\(tag) swap \(swap)")
                }
                usleep(300_000)
            }
        }
        // Statistics are published once a second.
        usleep(1_200_000)
        let lateAfter = ownLateCycles()
        print("\(tag): late levels \(property(node, "convolver.late-levels") ?? "-"), swaps \(property(node, "convolver.swaps") ?? "-")")
        let crossfadesAfter = Int(property(node, "convolver.crossfades") ?? "") ?? -1
        XCTAssertTrue(client.isRunning, client.log)

        client.stop()
        try LiveVerdict(
            record: record, recording: path("rec-\(tag).f32"), played: path("sine.wav"),
            workDirectory: daemon.runtimeDirectory
        ).assertGraphPath(label: tag)
        let calls = try record.frames(channels: 4)
        let input = calls[0], output = Array(calls[2...3])
        let first = try XCTUnwrap(input.firstIndex { $0 != 0 })
        let last = try XCTUnwrap(input.lastIndex { $0 != 0 })
        let recorded = Array(calls[0...1])
        // The sine's own largest step, ×2: a larger step of the input is a gap of the player.
        let inputLimit = 2 * Float(0.3 * 2 * Double.pi * Self.sineHertz / 48000)
        var dropouts = 0
        let (steady, steadyGlitches) = largestStep(
            output, input: recorded, (first + 4800)..<(first + 38400),
            inputLimit: inputLimit, dropouts: &dropouts)  // before the first swap (~1 s into the sine)
        let (swapping, swapGlitches) = largestStep(
            output, input: recorded, (first + 38400)..<(last - 4800), inputLimit: inputLimit,
            dropouts: &dropouts)
        print("\(tag): input gaps left out: \(steadyGlitches) steady, \(swapGlitches) while swapping; output dropouts \(dropouts)")
        return (steady, swapping, crossfadesAfter - crossfadesBefore, lateAfter - lateBefore, dropouts)
    }

    /// With the default 50 ms crossfade the largest step while swapping stays at the steady
    /// state's (10% slack: the fade's own slope adds up to 2·0.3/2400 per sample); with
    /// `crossfade = 0` (hard switch) the same measurement shows the click, so it can fail.
    func testSwapDuringPlaybackIsCrossfadedWithoutClickOrDropout() throws {
        try writeImpulses()
        let sineStep = Float(0.3 * 2 * Double.pi * Self.sineHertz / 48000)
        let faded = try swapDuringPlayback(crossfade: "\"50ms\"", tag: "fade")
        print(
            "hot-swap crossfade 50 ms: steady max step \(faded.steady), max step while swapping \(faded.swapping), "
                + "crossfades \(faded.crossfades), own late cycles added \(faded.lateCycles)")
        XCTAssertGreaterThan(faded.steady, 0.001, "the sine reached the output")
        XCTAssertEqual(faded.dropouts, 0, "the node's output has no dropouts")
        XCTAssertLessThanOrEqual(faded.steady, sineStep * 1.1)
        XCTAssertLessThanOrEqual(faded.swapping, faded.steady * 1.1)
        XCTAssertEqual(faded.crossfades, 4)

        let hard = try swapDuringPlayback(crossfade: "0", tag: "hard")
        print(
            "hot-swap crossfade 0: steady max step \(hard.steady), max step while swapping \(hard.swapping), "
                + "crossfades \(hard.crossfades)")
        XCTAssertGreaterThan(hard.swapping, hard.steady * 10, "a hard switch clicks: the measurement can fail")
        XCTAssertEqual(hard.crossfades, 0)
    }

    /// A filter-chain graph's control changed while it plays (`pw-convolver set NODE scale:Mult=…`)
    /// is crossfaded as an IR swap is: no click with the default crossfade, a click with none.
    func testGraphControlChangeDuringPlaybackIsCrossfadedWithoutClick() throws {
        let sineStep = Float(0.3 * 2 * Double.pi * Self.sineHertz / 48000)
        let faded = try swapDuringPlayback(crossfade: "\"50ms\"", tag: "graph-fade", graph: true)
        print("graph control, crossfade 50 ms: steady max step \(faded.steady), while changing \(faded.swapping), crossfades \(faded.crossfades)")
        XCTAssertGreaterThan(faded.steady, 0.001, "the sine reached the output")
        XCTAssertEqual(faded.dropouts, 0, "the node's output has no dropouts")
        XCTAssertLessThanOrEqual(faded.steady, sineStep * 1.1)
        XCTAssertLessThanOrEqual(faded.swapping, faded.steady * 1.1)
        XCTAssertEqual(faded.crossfades, 4)

        let hard = try swapDuringPlayback(crossfade: "0", tag: "graph-hard", graph: true)
        print("graph control, crossfade 0: steady max step \(hard.steady), while changing \(hard.swapping)")
        XCTAssertGreaterThan(hard.swapping, hard.steady * 10, "a hard switch clicks: the measurement can fail")
    }

    /// A failing load during playback keeps the current IR and logs the error naming the file.
    func testFailingLoadKeepsCurrentIR() throws {
        try writeImpulses()
        let node = "conv-keep"
        let client = try ModuleClient.start(daemon, name: node, arguments: "node.name = \(node) filename = \"\(path("direct.wav"))\"")
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: node, count: 4, timeout: 30)
        let id = try XCTUnwrap(try daemon.nodeProperties(node)).id
        try "not audio".write(toFile: path("text.wav"), atomically: true, encoding: .utf8)
        try setProps(id, "\"filename\" \"\(path("text.wav"))\"")
        XCTAssertTrue(
            waitUntil(timeout: 10) { client.log.contains("keeping the current IR") && client.log.contains("text.wav") },
            client.log.suffix(2000).description)
        XCTAssertEqual(property(node, "convolver.ir"), path("direct.wav"))
        XCTAssertEqual(property(node, "convolver.swaps"), "0")
        XCTAssertTrue(client.isRunning)

        // The crossfade time is a Props param too: set, read back; a bad value is refused.
        try setProps(id, "\"crossfade\" 0.2")
        XCTAssertTrue(
            waitUntil(timeout: 5) { (try? self.propsText(id))?.contains("\"crossfade\"\n      Float 0.200000") == true },
            (try? propsText(id)) ?? "")
        try setProps(id, "\"crossfade\" -1")
        XCTAssertTrue(waitUntil(timeout: 5) { client.log.contains("refused: crossfade = -1") })
        XCTAssertTrue(try propsText(id).contains("Float 0.200000"))
    }

    /// `pw-cli enum-params <id> Props`, spaces normalised to one indent level per line.
    private func propsText(_ id: Int) throws -> String {
        let (_, output) = try daemon.run(["pw-cli", "enum-params", "\(id)", "Props"])
        return output.split(separator: "\n").map { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("String") ? trimmed : "      " + trimmed
        }.joined(separator: "\n")
    }

    /// VmRSS of a process, in kB.
    private func residentKilobytes(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }

    /// A swap every 100 ms for two spells of SWIFT_CONVOLVER_SWAP_SECONDS (default 10 each) while the
    /// node runs, after a warm-up of 3 s of swaps: the hosting process keeps processing, and its RSS
    /// does not grow with the swaps. The allocator's own plateau (heap fragmentation from the
    /// builds) is seen in the first spell, 0 to 1.2 MB here whether 100 or 400 swaps followed (the
    /// code before and after the shape step of #25 alike); a leak grows again in the second spell.
    /// So the second spell may add < 1 MB (10 kB per swap; one leaked engine is hundreds of kB),
    /// and both together < 2 MB.
    func testSwapEvery100msLeaksNothing() throws {
        try writeImpulses()
        let seconds = Double(ProcessInfo.processInfo.environment["SWIFT_CONVOLVER_SWAP_SECONDS"] ?? "") ?? 10
        let node = "conv-leak"
        let client = try ModuleClient.start(daemon, name: node, arguments: "node.name = \(node) filename = \"\(path("direct.wav"))\"")
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: node, count: 4, timeout: 30)
        let id = try XCTUnwrap(try daemon.nodeProperties(node)).id
        let recorder = try daemon.spawn(
            [
                "pw-record", "-P", PlayThrough.streamProperties("rec-leak"), "--format", "f32",
                "--channels", "2", path("leak.wav"),
            ], logName: "rec-leak.log")
        defer { recorder.stop() }
        try daemon.waitForPorts(ofNode: "rec-leak", count: 2)
        for position in positions { try daemon.link("\(node):output_\(position)", "rec-leak:input_\(position)") }
        let pid = client.process.processIdentifier

        var swapsRequested = 0
        func swap(for duration: Double) throws {
            // One request every 100 ms on a fixed schedule (pw-cli itself takes tens of ms).
            let start = Date()
            var tick = 0
            while Double(tick) * 0.1 < duration {
                let target = path(swapsRequested % 2 == 0 ? "inverted.wav" : "direct.wav")
                try setProps(id, "\"filename\" \"\(target)\"")
                swapsRequested += 1
                tick += 1
                let wait = start.addingTimeInterval(Double(tick) * 0.1).timeIntervalSinceNow
                if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            }
        }
        try swap(for: 3)
        usleep(1_200_000)
        let rssStart = try XCTUnwrap(residentKilobytes(pid))
        let callsStart = Int(property(node, "convolver.calls") ?? "") ?? 0
        let swapsStart = Int(property(node, "convolver.swaps") ?? "") ?? 0
        try swap(for: seconds)
        usleep(1_500_000)  // the last builds finish, retired engines are freed, statistics published
        let rssMiddle = try XCTUnwrap(residentKilobytes(pid))
        try swap(for: seconds)
        usleep(1_500_000)
        let rssEnd = try XCTUnwrap(residentKilobytes(pid))
        let callsEnd = Int(property(node, "convolver.calls") ?? "") ?? 0
        let swapsEnd = Int(property(node, "convolver.swaps") ?? "") ?? 0
        let late = property(node, "convolver.late-cycles") ?? "-"
        print(
            "swap every 100 ms for 2 × \(seconds) s: \(swapsRequested) requested, \(swapsEnd - swapsStart) installed after warm-up, "
                + "RSS \(rssStart) → \(rssMiddle) → \(rssEnd) kB (growth \(rssMiddle - rssStart) + \(rssEnd - rssMiddle) kB), "
                + "calls +\(callsEnd - callsStart), late cycles \(late)")
        XCTAssertTrue(client.isRunning, client.log)
        XCTAssertLessThan(rssEnd - rssMiddle, 1024, "RSS grew by more than 1 MB in the second spell of swaps: a leak")
        XCTAssertLessThan(rssEnd - rssStart, 2048, "RSS grew by more than 2 MB")
        // Each Props change is a build; installed swaps lag at most by the builds still queued.
        XCTAssertGreaterThan(swapsEnd - swapsStart, Int(2 * seconds * 10 * 0.5))
        XCTAssertGreaterThan(callsEnd - callsStart, Int(2 * seconds * 187 * 0.5), "the node kept processing")
    }
}
