import Foundation
import XCTest

/// One workgroup per process: two convolver nodes loaded in one `pipewire -c` process share one
/// set of helpers, as many as the node that asks for most (`workgroup.threads`), and one node's
/// engines joining and leaving the group (IR changes) leave the other's output exact.
final class SharedWorkgroupTests: XCTestCase {
    private var daemon: PrivatePipeWire!

    override func setUpWithError() throws {
        try BuildProducts.requireModule()
        daemon = try PrivatePipeWire(name: "shared-workgroup")
        try daemon.setQuantum(256)
    }

    override func tearDown() {
        daemon?.stop()
        daemon = nil
    }

    private func path(_ name: String) -> String { daemon.runtimeDirectory + "/" + name }

    /// A client process with node `conv-a` (its record on, `threads = 1`) and node `conv-b`
    /// (`threads = 2`), both with `shared` as given, 3 s IRs: their longer levels run on helpers.
    private func startTwoNodes(shared: Bool, record: NodeRecord) throws -> BackgroundProcess {
        try TestSignals.write(TestSignals.syntheticImpulse(frames: 144000), to: path("ir-a.wav"))
        try TestSignals.write(TestSignals.syntheticImpulse(frames: 120000).map { $0.map { -0.7 * $0 } }, to: path("ir-b.wav"))
        func module(_ name: String, _ impulse: String, threads: Int, extra: String = "") -> String {
            "{ name = libpipewire-module-swift-convolver args = { node.name = \(name) filename = \"\(path(impulse))\" "
                + "workgroup = { threads = \(threads) shared = \(shared) split = off } \(extra) } }"
        }
        let text = try ModuleClient.asClient(
            "context.modules = [\n" + module("conv-a", "ir-a.wav", threads: 1, extra: record.argument) + "\n"
                + module("conv-b", "ir-b.wav", threads: 2) + "\n]\n")
        let configurationPath = path("two-nodes.conf")
        try text.write(toFile: configurationPath, atomically: true, encoding: .utf8)
        let client = try daemon.spawn(["pipewire", "-c", configurationPath], logName: "two-nodes.log")
        for node in ["conv-a", "conv-b"] { try daemon.waitForPorts(ofNode: node, count: 4, timeout: 30) }
        return client
    }

    /// The process's helper threads (`swconv-helper*`).
    private func helperThreads(of client: BackgroundProcess) -> [String] {
        let tasks = "/proc/\(client.process.processIdentifier)/task"
        return ((try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []).compactMap {
            try? String(contentsOfFile: "\(tasks)/\($0)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }.filter { $0.hasPrefix("swconv-helper") }.sorted()
    }

    private func helperCount(_ node: String) throws -> String? {
        try daemon.nodeProperties(node)?.properties["convolver.helper-threads"].map { "\($0)" }
    }

    /// The load `pw-convolver status` prints on the workgroup's line for `process`.
    private func groupLoad(process: String) throws -> Double? {
        let (status, output) = try daemon.run([BuildProducts.directory + "/pw-convolver", "status"])
        XCTAssertEqual(status, 0, output)
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("workgroup of \(process):") }),
            let range = line.range(of: #"load [0-9.]+%"#, options: .regularExpression)
        else { return nil }
        return Double(line[range].dropFirst(5).dropLast())
    }

    func testTwoNodesInOneProcessShareTheHelpersOfTheLargestRequestAndStayExact() throws {
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "conv-a")
        let client = try startTwoNodes(shared: true, record: record)
        defer { client.stop() }
        XCTAssertTrue(
            waitUntil(timeout: 10) { (try? self.helperCount("conv-a")) == "2" }, "conv-a: \(String(describing: try? helperCount("conv-a")))")
        XCTAssertEqual(try helperCount("conv-b"), "2")
        XCTAssertEqual(helperThreads(of: client), ["swconv-helper0", "swconv-helper1"], "one group of two, not 1 + 2")
        let idB = try XCTUnwrap(try daemon.nodeProperties("conv-b")).id
        let process = "process \(client.process.processIdentifier)"
        XCTAssertEqual(try daemon.nodeProperties("conv-a")?.properties["convolver.workgroup"] as? String, process)
        let (status, output) = try daemon.run([BuildProducts.directory + "/pw-convolver", "status"])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("helpers 2 real-time (the \(process)'s workgroup)"), output)
        XCTAssertTrue(output.contains("workgroup of \(process): 2 helpers shared by 2 node(s), load "), output)
        XCTAssertTrue(output.contains("%; late levels: conv-a 0, conv-b 0"), output)

        try TestSignals.write(TestSignals.noise(seconds: 6), to: path("input.wav"))
        var swaps = 0
        var loadWhilePlaying: Double?
        try PlayThrough(daemon: daemon, nodeName: "conv-a")
            .run(inputPath: path("input.wav"), recordingPath: path("rec.f32"), seconds: 6, tailSeconds: 0.3, tag: "shared") {
                // conv-b's engines join the group and leave it while conv-a plays.
                for impulse in ["ir-a.wav", "ir-b.wav", "ir-a.wav"] {
                    usleep(1_200_000)
                    let (status, output) = try self.daemon.run([
                        BuildProducts.directory + "/pw-convolver", "set", "\(idB)", "filename=\(self.path(impulse))",
                    ])
                    XCTAssertEqual(status, 0, output)
                    swaps += 1
                }
                loadWhilePlaying = try self.groupLoad(process: process)
            }
        XCTAssertEqual(swaps, 3)
        // Both nodes' long levels ran on the group in the last second: its load is theirs, once.
        let load = try XCTUnwrap(loadWhilePlaying, "no load in the workgroup's status line")
        XCTAssertTrue(load > 0 && load <= 100, "workgroup load \(load)%")
        XCTAssertEqual(helperThreads(of: client).count, 2, "the group stays while its nodes do")
        let statistics = try XCTUnwrap(try daemon.nodeProperties("conv-a")).properties
        XCTAssertEqual("\(statistics["convolver.late-levels"] ?? "?")", "0")
        client.stop()  // the record is written only by a clean exit
        try LiveVerdict(
            record: record, recording: path("rec.f32"), played: path("input.wav"), workDirectory: daemon.runtimeDirectory
        ).assertExact(entries: ImpulseEntry.parallel(channels: 2, file: path("ir-a.wav")), label: "conv-a beside conv-b's swaps")
    }

    /// The switch keeps each node's own helpers: 1 + 2 threads. Also what makes the count above mean something.
    func testSeparatePoolsWhenNotShared() throws {
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "conv-a")
        let client = try startTwoNodes(shared: false, record: record)
        defer { client.stop() }
        XCTAssertTrue(waitUntil(timeout: 10) { self.helperThreads(of: client).count == 3 }, "\(helperThreads(of: client))")
        XCTAssertTrue(
            waitUntil(timeout: 10) { (try? self.helperCount("conv-a")) == "1" }, "conv-a: \(String(describing: try? helperCount("conv-a")))")
        XCTAssertEqual(try helperCount("conv-b"), "2")
        XCTAssertEqual(try daemon.nodeProperties("conv-a")?.properties["convolver.workgroup"] as? String, "node")
        let (status, output) = try daemon.run([BuildProducts.directory + "/pw-convolver", "status"])
        XCTAssertEqual(status, 0, output)
        XCTAssertFalse(output.contains("workgroup of process"), output)
    }
}
