import Foundation
import XCTest

/// The real-time contract, shown live: the node loaded from config in a `pipewire -c` client
/// process that has `Tests/RealtimeCheck/realtime_check.c` preloaded. After warm-up the counter is
/// armed; then, while audio plays, Props, the quantum and the IR change; the counts of malloc-family
/// calls and mutex locks on PipeWire's data thread and on our helper threads must be zero, and the
/// FTZ/DAZ bits must be set on those threads whenever they read the clock (denormals flushed).
/// A second node in the same process, fed by the first, posts to the same process-wide workgroup.
/// A third test hosts LADSPA plugins around a long IR (our code around their `run`).
/// A second test runs the node with its allocating fault (`test.fault = allocate-in-process`) and
/// shows the counter sees it.
///
/// Length: `SWIFT_CONVOLVER_RT_SECONDS` (default 12 s, about 16 changes; the full proof is 60 s).
final class RealtimeSafetyLiveTests: XCTestCase {
    private var daemon: PrivatePipeWire!
    private let positions = ["FL", "FR"]

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
        daemon = try PrivatePipeWire(name: "rtsafety")
        try daemon.setQuantum(256)
    }

    override func tearDown() {
        daemon?.stop()
        daemon = nil
    }

    private func path(_ name: String) -> String { daemon.runtimeDirectory + "/" + name }

    func testLiveRunWithPropsQuantumAndImpulseChangesAllocatesAndLocksNothing() throws {
        let seconds = Double(ProcessInfo.processInfo.environment["SWIFT_CONVOLVER_RT_SECONDS"] ?? "") ?? 12
        let warmUp = 3.0
        // Long enough for several helper levels at every quantum.
        try TestSignals.write(TestSignals.syntheticImpulse(frames: 96000), to: path("ir-a.wav"))
        try TestSignals.write(TestSignals.syntheticImpulse(frames: 60000).map { $0.map { -0.8 * $0 } }, to: path("ir-b.wav"))
        try TestSignals.write(TestSignals.noise(seconds: warmUp + seconds + 2, leadOut: 0.5), to: path("input.wav"))
        // A second node in the process, fed by the first: both post to the process's one workgroup.
        let host = try RealtimeCheckHost(
            daemon: daemon, name: "conv-rt",
            arguments: "node.name = conv-rt audio.position = [ FL FR ] filename = \"\(path("ir-a.wav"))\"",
            moreNodes: ["node.name = conv-rt-b audio.position = [ FL FR ] filename = \"\(path("ir-b.wav"))\" workgroup = { threads = 2 }"])
        defer { host.client.stop() }
        try daemon.waitForPorts(ofNode: "conv-rt-b", count: 4, timeout: 30)
        for channel in ["FL", "FR"] {
            let (status, output) = try daemon.run(["pw-link", "conv-rt:output_\(channel)", "conv-rt-b:input_\(channel)"])
            XCTAssertEqual(status, 0, output)
        }
        let nodeID = try XCTUnwrap(try daemon.nodeProperties("conv-rt")).id

        var report: RealtimeCheckReport?
        var changes: [String: Int] = [:]
        var lastImpulse = path("ir-a.wav")
        try PlayThrough(daemon: daemon, nodeName: "conv-rt")
            .run(
                inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: warmUp + seconds + 2,
                tailSeconds: 0.2, tag: "rt"
            ) {
                usleep(UInt32(warmUp * 1_000_000))
                try host.arm()
                let start = Date()
                var step = 0
                let quanta = [64, 256, 1024]
                let props = [("0.5", "0.3", "true"), ("0.8", "1.0", "false"), ("1.0", "0.6", "false")]
                while Date().timeIntervalSince(start) < seconds - 1 {
                    let (gain, mix, bypass) = props[step % props.count]
                    try setProps(nodeID, "\"gain\" \(gain) \"mix\" \(mix) \"bypass\" \(bypass)")
                    changes["props", default: 0] += 1
                    try daemon.setQuantum(quanta[step % quanta.count])
                    changes["quantum", default: 0] += 1
                    if step % 4 == 3 {
                        lastImpulse = lastImpulse.hasSuffix("ir-a.wav") ? path("ir-b.wav") : path("ir-a.wav")
                        try setProps(nodeID, "\"filename\" \"\(lastImpulse)\"")
                        changes["impulse", default: 0] += 1
                    }
                    usleep(700_000)
                    step += 1
                }
                try daemon.setQuantum(256)
                usleep(800_000)
                report = try host.dump()
            }
        let result = try XCTUnwrap(report)
        print("changes while armed: \(changes.sorted { $0.key < $1.key })")
        print(result.summary)
        let statistics = try XCTUnwrap(try daemon.nodeProperties("conv-rt")).properties
        print(
            "node statistics: "
                + statistics.filter { $0.key.hasPrefix("convolver.") }
                .sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        XCTAssertEqual("\(statistics["convolver.ir"] ?? "")", lastImpulse, "the IR changes reached the node")
        XCTAssertGreaterThanOrEqual(changes["impulse", default: 0], 1)
        let second = try XCTUnwrap(try daemon.nodeProperties("conv-rt-b")).properties
        XCTAssertEqual("\(second["convolver.workgroup"] ?? "")", "\(statistics["convolver.workgroup"] ?? "-")", "one workgroup")
        XCTAssertGreaterThan(Int("\(second["convolver.calls"] ?? "0")") ?? 0, 1000, "the second node ran")

        result.assertRealtimeSafe()
        XCTAssertTrue(host.client.isRunning, "host log:\n\(host.client.log)")
    }

    /// A graph with a LADSPA and an LV2 plugin hosted around a long IR (swh's amp, a 60 000-tap
    /// convolver, LSP's compressor: three stages) while its plugin controls change: our code around
    /// the plugins' `run()` allocates and locks nothing, on the data thread and the helpers.
    func testHostedPluginsAllocateAndLockNothingAroundTheirRun() throws {
        let warmUp = 2.0, seconds = 5.0
        try TestSignals.write(TestSignals.syntheticImpulse(frames: 60000), to: path("ir.wav"))
        try TestSignals.write(TestSignals.noise(seconds: warmUp + seconds + 2, leadOut: 0.5), to: path("input.wav"))
        let host = try RealtimeCheckHost(
            daemon: daemon, name: "conv-rt-plugins",
            arguments: "node.name = conv-rt-plugins audio.position = [ FL FR ] filter.graph = { nodes = [ "
                + "{ type = ladspa name = amp plugin = amp_1181 label = amp control = { \"Amps gain (dB)\" = -3 } } "
                + "{ type = builtin name = room label = convolver config = { filename = \"\(path("ir.wav"))\" } } "
                + "{ type = lv2 name = comp plugin = \"http://lsp-plug.in/plugins/lv2/compressor_mono\" } ] "
                + "links = [ { output = \"amp:Output\" input = \"room:In\" } { output = \"room:Out\" input = \"comp:in\" } ] "
                + "inputs = [ \"amp:Input\" ] outputs = [ \"comp:out\" ] }",
            portCount: 2)
        defer { host.client.stop() }
        // A graph makes a stream pair, as filter-chain's does: conv-rt-plugins' inputs, output.conv-rt-plugins' outputs.
        try daemon.waitForPorts(ofNode: "output.conv-rt-plugins", named: ["output_FL", "output_FR"], timeout: 30)
        let nodeID = try XCTUnwrap(try daemon.nodeProperties("conv-rt-plugins")).id
        var report: RealtimeCheckReport?
        var playThrough = PlayThrough(daemon: daemon, nodeName: "conv-rt-plugins")
        playThrough.outputNodeName = "output.conv-rt-plugins"
        try playThrough.run(
            inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: warmUp + seconds + 2, tailSeconds: 0.2, tag: "rt-plugins"
        ) {
            usleep(UInt32(warmUp * 1_000_000))
            try host.arm()
            for step in 0..<Int(seconds / 0.5) {
                try setProps(nodeID, "\"amp:Amps gain (dB)\" \(step % 2 == 0 ? -6 : -3) \"comp:cr\" \(2 + step % 4)")
                usleep(500_000)
            }
            report = try host.dump()
        }
        let result = try XCTUnwrap(report)
        print(result.summary)
        let statistics = try XCTUnwrap(try daemon.nodeProperties("conv-rt-plugins")).properties
        XCTAssertGreaterThan(Int("\(statistics["convolver.calls"] ?? "0")") ?? 0, 1000, "the node with plugins ran")
        XCTAssertTrue("\(statistics["convolver.plan"] ?? "")".contains("comp"), "its plan names its plugins: \(statistics["convolver.plan"] ?? "")")
        result.assertRealtimeSafe()
        XCTAssertTrue(host.client.isRunning, "host log:\n\(host.client.log)")
    }

    /// The fault makes `process` allocate an array per call: the counter must see it, on the
    /// data thread, from inside the module. This is what makes the zero above mean something.
    func testCounterCatchesAnAllocatingProcessCallback() throws {
        try TestSignals.write(TestSignals.syntheticImpulse(frames: 48000), to: path("ir.wav"))
        try TestSignals.write(TestSignals.noise(seconds: 6), to: path("input.wav"))
        let host = try RealtimeCheckHost(
            daemon: daemon, name: "conv-alloc",
            arguments: "node.name = conv-alloc audio.position = [ FL FR ] filename = \"\(path("ir.wav"))\" "
                + "test.fault = allocate-in-process")
        defer { host.client.stop() }
        var report: RealtimeCheckReport?
        try PlayThrough(daemon: daemon, nodeName: "conv-alloc")
            .run(inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: 6, tailSeconds: 0.2, tag: "alloc") {
                usleep(2_000_000)
                try host.arm()
                usleep(2_000_000)
                report = try host.dump()
            }
        let result = try XCTUnwrap(report)
        print(result.summary)
        let dataAllocations = result.dataThreads.map(\.allocations).reduce(0, +)
        // 2 s at 256 frames per call is ~375 calls; allow for some calls at other sizes or merged.
        XCTAssertGreaterThan(dataAllocations, 100, "the counter must catch the allocating process callback")
        // The array is made by the Swift runtime (swift_allocObject → malloc) for the module.
        XCTAssertTrue(
            result.sites.contains { $0.kind == "allocation" && $0.location.contains("swift") },
            "an allocation site in the Swift runtime or the module:\n\(result.summary)")
    }

    private func setProps(_ nodeID: Int, _ params: String) throws {
        let (status, output) = try daemon.run(["pw-cli", "set-param", "\(nodeID)", "Props", "{ params = [ \(params) ] }"])
        guard status == 0 else { throw TestFailure("pw-cli set-param \(nodeID) Props failed: \(output)") }
    }
}

/// A `pipewire -c` process hosting the module (ModuleClient's config) with the real-time check
/// library preloaded. The library is compiled once per test run with the system C compiler.
final class RealtimeCheckHost {
    let client: BackgroundProcess
    let outputPath: String

    static let library = TestTool.compile(
        "Tests/RealtimeCheck/realtime_check.c", into: "librealtime_check.so",
        flags: "-shared -fPIC -ldl")

    /// `launcher`: a command put before `pipewire` (e.g. `setpriv` to refuse real-time).
    /// `portCount`: the node's ports to wait for (4 for a stereo filter).
    init(
        daemon: PrivatePipeWire, name: String, arguments: String, moreNodes: [String] = [], extraEnvironment: [String: String] = [:],
        launcher: [String] = [], portCount: Int = 4
    ) throws {
        let library = try Self.library.get()
        outputPath = daemon.runtimeDirectory + "/\(name)-realtime-check.txt"
        let configurationPath = daemon.runtimeDirectory + "/\(name).conf"
        try ModuleClient.configuration(arguments: arguments, moreNodes: moreNodes)
            .write(toFile: configurationPath, atomically: true, encoding: .utf8)
        var environment = extraEnvironment
        environment["LD_PRELOAD"] = library
        environment["REALTIME_CHECK_OUTPUT"] = outputPath
        environment["REALTIME_CHECK_PROGRAM"] = "pipewire"
        client = try daemon.spawn(
            launcher + ["pipewire", "-c", configurationPath], logName: "\(name).log",
            extraEnvironment: environment)
        let nodeName =
            arguments.components(separatedBy: "node.name = ").dropFirst().first?
            .split(separator: " ").first.map(String.init) ?? name
        do {
            try daemon.waitForPorts(ofNode: nodeName, count: portCount, timeout: 30)
        } catch {
            client.stop()
            throw TestFailure("\(error)\nhost log:\n\(client.log)")
        }
    }

    var processID: pid_t { client.process.processIdentifier }

    /// Resets and arms the counters (SIGUSR1).
    func arm() throws {
        guard kill(processID, SIGUSR1) == 0 else { throw TestFailure("kill SIGUSR1: errno \(errno)") }
    }

    /// Asks for the counts (SIGUSR2) and reads them.
    func dump() throws -> RealtimeCheckReport {
        try? FileManager.default.removeItem(atPath: outputPath)
        guard kill(processID, SIGUSR2) == 0 else { throw TestFailure("kill SIGUSR2: errno \(errno)") }
        guard waitUntil(timeout: 10, { FileManager.default.fileExists(atPath: self.outputPath) }) else {
            throw TestFailure("no realtime check dump at \(outputPath); host log:\n\(client.log)")
        }
        return RealtimeCheckReport(try String(contentsOfFile: outputPath, encoding: .utf8), processID: processID)
    }

    /// Thread ids of the process whose name starts with `prefix` (the main thread excluded).
    func threadIDs(named prefix: String) -> [pid_t] {
        let taskDirectory = "/proc/\(processID)/task"
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: taskDirectory)) ?? []
        return tasks.compactMap { pid_t($0) }.filter { tid in
            guard tid != processID,
                let name = try? String(contentsOfFile: "\(taskDirectory)/\(tid)/comm", encoding: .utf8)
            else { return false }
            return name.hasPrefix(prefix)
        }
    }
}

/// A parsed dump of realtime_check.c (see its header for the format).
struct RealtimeCheckReport {
    struct Thread {
        var tid: Int, name: String, policy: Int
        var clockCalls: Int, clockCallsWithFlush: Int, flushLost: Int, allocations: Int, mutexLocks: Int
    }
    struct Site { var kind: String, tid: Int, address: UInt, count: Int, location: String }

    var threads: [Thread] = []
    var sites: [Site] = []
    var armed = false

    init(_ text: String, processID: pid_t) {
        var maps: [(start: UInt, end: UInt, offset: UInt, path: String)] = []
        var inMaps = false
        var rawSites: [(String, Int, UInt, Int)] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            if inMaps {
                guard fields.count >= 6 else { continue }
                let range = fields[0].split(separator: "-")
                if range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
                    let offset = UInt(fields[2], radix: 16)
                {
                    maps.append((start, end, offset, fields[5...].joined(separator: " ")))
                }
            } else if fields.first == "maps" {
                inMaps = true
            } else if fields.first == "armed" {
                armed = fields.count > 1 && fields[1] == "1"
            } else if fields.first == "thread", fields.count == 9 {
                let n = fields[3...].map { Int($0) ?? -1 }
                threads.append(
                    Thread(
                        tid: Int(fields[1]) ?? 0, name: fields[2], policy: n[0] & 0xff, clockCalls: n[1],
                        clockCallsWithFlush: n[2], flushLost: n[3], allocations: n[4], mutexLocks: n[5]))
            } else if fields.first == "site", fields.count == 5 {
                rawSites.append((fields[1], Int(fields[2]) ?? 0, UInt(fields[3].dropFirst(2), radix: 16) ?? 0, Int(fields[4]) ?? 0))
            }
        }
        sites = rawSites.map { kind, tid, address, count in
            let location =
                maps.first { address >= $0.start && address < $0.end }
                .map { "\($0.path)+0x\(String(address - $0.start + $0.offset, radix: 16))" } ?? "?"
            return Site(kind: kind, tid: tid, address: address, count: count, location: location)
        }
    }

    /// PipeWire's data thread: in a `pipewire -c` process of 0.3.65 it keeps the process name.
    var dataThreads: [Thread] { threads.filter { ($0.name.hasPrefix("pipewire") || $0.name.hasPrefix("data-loop")) && $0.clockCalls > 0 } }
    var helperThreads: [Thread] { threads.filter { $0.name.hasPrefix("swconv") } }

    /// The real-time contract on the watched threads: the data thread and the helpers were seen,
    /// none allocated or locked a mutex, and FTZ/DAZ were set on every clock read but a new
    /// helper's very first (its job sets them) and never cleared.
    /// `withHelpers`: the node runs helper threads (not one whose IR fits its head level).
    func assertRealtimeSafe(withHelpers: Bool = true, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(dataThreads.isEmpty, "the data thread was watched (it reads the clock every cycle)", file: file, line: line)
        XCTAssertEqual(helperThreads.isEmpty, !withHelpers, "helper threads watched: \(helperThreads.count)", file: file, line: line)
        for thread in dataThreads + helperThreads {
            XCTAssertEqual(thread.allocations, 0, "\(thread.name) (\(thread.tid)) allocated:\n\(sites(of: thread))", file: file, line: line)
            XCTAssertEqual(
                thread.mutexLocks - loopLocks(of: thread), 0, "\(thread.name) (\(thread.tid)) locked a mutex:\n\(sites(of: thread))",
                file: file, line: line)
            XCTAssertGreaterThan(thread.clockCallsWithFlush, 0, "\(thread.name): FTZ/DAZ never set", file: file, line: line)
            XCTAssertEqual(thread.flushLost, 0, "\(thread.name): FTZ/DAZ cleared again", file: file, line: line)
            XCTAssertLessThanOrEqual(
                thread.clockCalls - thread.clockCallsWithFlush, 2, "\(thread.name): FTZ/DAZ not set",
                file: file, line: line)
        }
    }

    /// Locks PipeWire's own data loop takes between cycles: from 1.6 its loop_iterate relocks the
    /// loop's mutex after every poll (spa/plugins/support/loop.c), from libspa-support, never from a
    /// callback of the node. Reported in the summary, not held against the node.
    func loopLocks(of thread: Thread) -> Int {
        sites.filter { $0.tid == thread.tid && $0.kind == "mutex" && $0.location.contains("/spa-0.2/support/libspa-support.so+") }
            .reduce(0) { $0 + $1.count }
    }

    func sites(of thread: Thread) -> String {
        sites.filter { $0.tid == thread.tid }.map { "  \($0.kind) ×\($0.count) from \($0.location)" }.joined(separator: "\n")
    }

    var summary: String {
        let policyNames = [0: "OTHER", 1: "FIFO", 2: "RR"]
        return "realtime check (armed: \(armed)):\n"
            + threads.map { thread in
                "  thread \(thread.tid) \(thread.name) SCHED_\(policyNames[thread.policy] ?? "\(thread.policy)"): "
                    + "clock reads \(thread.clockCalls) (FTZ/DAZ set in \(thread.clockCallsWithFlush), lost \(thread.flushLost)), "
                    + "allocations \(thread.allocations), mutex locks \(thread.mutexLocks)"
                    + (sites(of: thread).isEmpty ? "" : "\n" + sites(of: thread))
            }.joined(separator: "\n")
    }
}
