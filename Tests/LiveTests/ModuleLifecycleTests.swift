import CPipeWire
import EngineTestSupport
import Foundation
import XCTest

@testable import ConvolverGraph
@testable import ConvolverNode

/// Loading, unloading and refusing to load: in the daemon, in a `pipewire -c` client, and
/// 10 load/unload cycles in one process while audio runs.
final class ModuleLifecycleTests: XCTestCase {
    private var daemon: PrivatePipeWire?

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
    }

    override func tearDown() {
        daemon?.stop()
        daemon = nil
    }

    private static let moduleName = "libpipewire-module-swift-convolver"

    /// In the daemon: one good instance and one with a missing file (`nofail`). The bad one logs
    /// its error and the daemon runs; the good one's node appears, and `pw-cli destroy` of its
    /// module removes the node while the daemon keeps answering (0.3.65; 1.x refuses clients that).
    func testInsideTheDaemonLoadRefuseAndDestroy() throws {
        let daemon = try PrivatePipeWire(
            name: "in-daemon",
            extraModules: """
                { name = \(Self.moduleName) args = { node.name = conv-daemon filename = "builtin:dirac" } }
                { name = \(Self.moduleName) args = { node.name = conv-missing filename = "/nonexistent/ir.wav" } flags = [ nofail ] }
                """)
        self.daemon = daemon
        try daemon.waitForPorts(ofNode: "conv-daemon", count: 4, timeout: 30)
        XCTAssertTrue(daemon.answers())
        XCTAssertTrue(
            daemon.log().contains("filename: impulse response file '/nonexistent/ir.wav' does not exist"),
            daemon.log(tail: 40))
        XCTAssertNil(try daemon.nodeProperties("conv-missing"))

        let modules = try daemon.moduleIDs(named: Self.moduleName)
        XCTAssertEqual(modules.count, 1, "only the good instance stays loaded")
        try checkUsage(try XCTUnwrap(daemon.moduleProperties(named: Self.moduleName)["module.usage"] as? String))
        let module = try XCTUnwrap(modules.first)
        let (status, output) = try daemon.run(["pw-cli", "destroy", "\(module)"])
        XCTAssertEqual(status, 0, output)
        if PipeWireInstallation.isOneDotX {
            // PipeWire 1.x gives clients no X permission on module globals (r--m): a client cannot
            // unload a daemon's module, and the node stays (unloading is tested in a client process,
            // testReloadTenTimesWhileAudioRuns).
            usleep(500_000)
            XCTAssertNotNil(try daemon.nodeProperties("conv-daemon"), "PipeWire 1.x refuses a client's destroy of a module")
        } else {
            XCTAssertTrue(waitUntil(timeout: 10) { (try? daemon.nodeProperties("conv-daemon")) == nil }, "node gone with its module")
        }
        XCTAssertTrue(daemon.answers(), "daemon alive after unload; log:\n\(daemon.log(tail: 40))")
    }

    /// `module.usage`, generated from the manual's options list at build time, names every key
    /// the parser knows (its string literals that it takes as keys, at the top level or inside
    /// `workgroup`, `partition` and `sofa`), and every option it names is one the parser knows.
    private func checkUsage(_ usage: String) throws {
        XCTAssertTrue(usage.hasPrefix("( node.name=<name> ) "), usage)
        func known(_ key: String, inside parent: String? = nil) -> Bool {
            let member = parent.map { "\($0) = { \(key) = 1 }" } ?? "\(key) = 1"
            guard let (_, warnings) = try? NodeConfiguration.parse(pipeWire: .running, arguments: "{ filename = \"builtin:dirac\" \(member) }") else {
                return true  // a value error: the key is known
            }
            let name = parent.map { "\($0).\(key)" } ?? key
            return !warnings.contains { $0.contains("'\(name)'") }
        }
        // Every option the usage names: `( key=<value> )`, a `*` standing for any name.
        let options = usage.components(separatedBy: "( ").dropFirst().map {
            String($0.prefix { $0 != "=" }).replacingOccurrences(of: "*", with: "anything")
        }
        XCTAssertGreaterThan(options.count, 30, usage)
        for option in options { XCTAssertTrue(known(option), "module.usage names '\(option)', which the parser does not know") }

        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/ConvolverGraph/Configuration")
        var literals = Set<String>()
        for file in ["NodeConfiguration+Parsing.swift", "NodeConfiguration.swift"] {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            let pattern = try NSRegularExpression(pattern: #""([a-z][a-z0-9._-]*)""#)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                literals.insert(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        var checked = 0
        for literal in literals.sorted() {
            if known(literal) {
                checked += 1
                let prefix = literal.prefix { $0 != "." }
                XCTAssertTrue(
                    usage.contains("( \(literal)=") || usage.contains("( \(prefix).*="),
                    "the parser knows '\(literal)', module.usage does not name it")
            }
            for parent in ["workgroup", "partition", "sofa"] where known(literal, inside: parent) {
                checked += 1
                XCTAssertTrue(
                    usage.contains("( \(parent)={") && usage.contains(" \(literal)=<"),
                    "the parser knows '\(parent).\(literal)', module.usage does not name it")
            }
        }
        XCTAssertGreaterThan(checked, 30, "keys found in the parser's source")
    }

    /// In a `pipewire -c` client: wrong args make the process fail with the error in its log;
    /// the daemon is untouched.
    func testBadArgumentsInAClientProcess() throws {
        let daemon = try PrivatePipeWire(name: "bad-args")
        self.daemon = daemon
        let cases: [(arguments: String, message: String)] = [
            ("filename = \"/nonexistent/ir.wav\"", "filename: impulse response file '/nonexistent/ir.wav' does not exist"),
            ("filename = \"builtin:dirac\" gain = loud", "gain: 'loud' is not a gain"),
            ("filename = \"builtin:dirac\" mix = 2", "mix: 2.0 is outside 0.0...1.0"),
            ("filename = \"builtin:dirac\" audio.channels = 3 audio.position = [ FL FR ]", "audio.position: has 2 positions but audio.channels is 3"),
            ("filename = \"builtin:nothing\"", "unknown built-in impulse response 'builtin:nothing'"),
            ("filename = \"builtin:dirac\" workgroup = { threads = many }", "workgroup.threads: 'many' is not auto, levels or a thread count"),
        ]
        for (index, testCase) in cases.enumerated() {
            let client = try ModuleClient.start(daemon, name: "bad-\(index)", arguments: "node.name = bad-\(index) \(testCase.arguments)")
            XCTAssertTrue(client.waitForExit(timeout: 20), "the client process should exit: \(testCase.arguments)")
            XCTAssertNotEqual(client.process.terminationStatus, 0)
            XCTAssertTrue(client.log.contains(testCase.message), "expected '\(testCase.message)' in:\n\(client.log.suffix(1500))")
        }
        // An unknown key is a warning, not an error.
        let client = try ModuleClient.start(daemon, name: "warn", arguments: "node.name = conv-warn filename = \"builtin:dirac\" colour = blue")
        defer { client.stop() }
        try daemon.waitForPorts(ofNode: "conv-warn", count: 4, timeout: 30)
        XCTAssertTrue(client.log.contains("unknown key 'colour' ignored"), client.log.suffix(1500).description)
        XCTAssertTrue(daemon.answers())
    }

    /// Ten load → link → unload cycles in one process while pw-play streams into pw-record, and
    /// refused loads (filter-chain graphs that cannot compile among them, beside a playing node)
    /// returning their errno; the daemon, the host process and the node beside them survive.
    func testReloadTenTimesWhileAudioRuns() throws {
        let daemon = try PrivatePipeWire(name: "reload")
        self.daemon = daemon
        try daemon.setQuantum(256)
        let path = daemon.runtimeDirectory + "/long.wav"
        try TestSignals.write(TestSignals.noise(seconds: 30, leadIn: 0, leadOut: 0), to: path)
        let recorder = try daemon.spawn(
            [
                "pw-record", "-P",
                "{ node.name = rec-reload node.want-driver = true "
                    + "adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve } }",
                "--format", "f32", "--channels", "2", daemon.runtimeDirectory + "/reload.wav",
            ], logName: "rec-reload.log")
        defer { recorder.stop() }
        let player = try daemon.spawn(["pw-play", "-P", PlayThrough.streamProperties("play-reload"), path], logName: "play-reload.log")
        defer { player.stop() }
        try daemon.waitForPorts(ofNode: "rec-reload", count: 2)
        try daemon.waitForPorts(ofNode: "play-reload", count: 2)
        for position in ["FL", "FR"] { try daemon.link("play-reload:output_\(position)", "rec-reload:input_\(position)") }

        let host = try ModuleHost(daemon: daemon)
        for cycle in 0..<10 {
            let (loaded, error) = host.load(arguments: "{ node.name = conv-reload filename = \"builtin:hall\" }")
            let module = try XCTUnwrap(loaded, "cycle \(cycle): load failed, errno \(error)")
            try daemon.waitForPorts(ofNode: "conv-reload", count: 4, timeout: 30)
            for position in ["FL", "FR"] {
                try daemon.link("play-reload:output_\(position)", "conv-reload:input_\(position)")
                try daemon.link("conv-reload:output_\(position)", "rec-reload:input_\(position)")
            }
            if cycle == 0 || cycle == 9 {
                // Statistics come once a second: the node is really processing.
                XCTAssertTrue(
                    waitUntil(timeout: 5) {
                        let calls = (try? daemon.nodeProperties("conv-reload"))?.properties["convolver.calls"]
                        return ((calls as? Int) ?? 0) > 50
                    }, "cycle \(cycle): the node does not process")
            } else {
                usleep(300_000)
            }
            host.unload(module)
            XCTAssertTrue(waitUntil(timeout: 10) { (try? daemon.nodeProperties("conv-reload")) == nil }, "cycle \(cycle): node still there")
            XCTAssertTrue(daemon.answers(), "cycle \(cycle): daemon gone; log:\n\(daemon.log(tail: 40))")
        }
        XCTAssertTrue(player.isRunning, "audio still runs")

        let (missing, missingErrno) = host.load(arguments: "{ filename = \"/nonexistent/ir.wav\" }")
        XCTAssertNil(missing)
        XCTAssertEqual(missingErrno, ENOENT)
        let (bad, badErrno) = host.load(arguments: "{ filename = \"builtin:dirac\" gain = loud }")
        XCTAssertNil(bad)
        XCTAssertEqual(badErrno, EINVAL)

        // filter-chain graphs that cannot be compiled, refused while a good node plays beside them in this process.
        let (beside, besideErrno) = host.load(arguments: "{ node.name = conv-beside filename = \"builtin:hall\" }")
        let good = try XCTUnwrap(beside, "errno \(besideErrno)")
        try daemon.waitForPorts(ofNode: "conv-beside", count: 4, timeout: 30)
        for position in ["FL", "FR"] {
            try daemon.link("play-reload:output_\(position)", "conv-beside:input_\(position)")
            try daemon.link("conv-beside:output_\(position)", "rec-reload:input_\(position)")
        }
        func calls() -> Int { ((try? daemon.nodeProperties("conv-beside"))?.properties["convolver.calls"] as? Int) ?? 0 }
        for graph in [
            "nodes = [ { type = ladspa name = enc plugin = no_such_encoder label = surroundEncoder } ]",
            "nodes = [ { type = builtin label = copy name = a } { type = builtin label = mixer name = m } { type = builtin label = copy name = b } ] "
                + "links = [ { output = \"a:Out\" input = \"m:In 1\" } { output = \"m:Out\" input = \"a:In\" } ] "
                + "inputs = [ \"m:In 2\" ] outputs = [ \"b:Out\" ]",
            "nodes = [ { type = builtin label = convolver name = c config = { filename = \"/nonexistent/hrir.wav\" } } ]",
        ] {
            let (refused, refusedErrno) = host.load(arguments: "{ node.name = conv-graph filter.graph = { \(graph) } }")
            XCTAssertNil(refused, graph)
            XCTAssertTrue([EINVAL, ENOENT].contains(refusedErrno), "\(graph): errno \(refusedErrno)")
        }
        let before = calls()
        XCTAssertTrue(waitUntil(timeout: 5) { calls() > before }, "the node beside the refused graphs stopped")
        host.unload(good)
        XCTAssertTrue(player.isRunning, "audio still runs")
        XCTAssertTrue(daemon.answers())
    }

    /// `pw-convolver run` is the same node as a client: ports appear, SIGTERM and SIGINT end it
    /// with status 0.
    func testStandaloneRunsUntilSignalAndExitsCleanly() throws {
        let daemon = try PrivatePipeWire(name: "standalone")
        self.daemon = daemon
        let executable = BuildProducts.directory + "/pw-convolver"
        for (index, signal) in [SIGTERM, SIGINT].enumerated() {
            let name = "conv-standalone-\(index)"
            let client = try daemon.spawn(
                [executable, "--ir", "builtin:dirac", "--name", name, "--position", "FL,FR,LFE"],
                logName: "\(name).log")
            try daemon.waitForPorts(ofNode: name, count: 6, timeout: 30)
            XCTAssertEqual(
                try daemon.portNames(ofNode: name),
                ["input_FL", "input_FR", "input_LFE", "output_FL", "output_FR", "output_LFE"])
            kill(client.process.processIdentifier, signal)
            XCTAssertTrue(client.waitForExit(timeout: 10), "signal \(signal): still running")
            XCTAssertEqual(client.process.terminationReason, .exit, client.log)
            XCTAssertEqual(client.process.terminationStatus, 0, client.log)
            XCTAssertTrue(waitUntil(timeout: 5) { (try? daemon.nodeProperties(name)) == nil })
        }
        XCTAssertTrue(daemon.answers())
    }

    /// The shipped configs load as their headers say: the client config with `pipewire -c`, the
    /// drop-in from the daemon's `pipewire.conf.d/`. Both make the node "swift-convolver".
    func testShippedConfigsLoad() throws {
        let root = packageRoot + "/pipewire-conf/"
        let daemon = try PrivatePipeWire(name: "dropin", dropIns: [root + "swift-convolver-dropin.conf"])
        self.daemon = daemon
        try daemon.waitForPorts(ofNode: "swift-convolver", count: 4, timeout: 30)
        XCTAssertEqual(try daemon.portNames(ofNode: "swift-convolver"), ["input_FL", "input_FR", "output_FL", "output_FR"])
        daemon.stop()

        let other = try PrivatePipeWire(name: "client-conf")
        self.daemon = other
        let client = try other.spawn(["pipewire", "-c", root + "swift-convolver.conf"], logName: "client-conf.log")
        defer { client.stop() }
        try other.waitForPorts(ofNode: "swift-convolver", count: 4, timeout: 30)
        XCTAssertEqual(try other.nodeProperties("swift-convolver")?.properties["node.description"] as? String, "Convolver (hall)")
    }
}
