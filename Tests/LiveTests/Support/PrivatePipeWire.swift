import EngineTestSupport
import Foundation
import XCTest

/// Where the package's build products are: `SWIFT_CONVOLVER_BUILD_DIR`, else the directory of the
/// running test bundle (`.build/debug` or `.build/release`).
enum BuildProducts {
    static var directory: String {
        if let explicit = ProcessInfo.processInfo.environment["SWIFT_CONVOLVER_BUILD_DIR"] { return explicit }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent(moduleFileName).path) { return url.path }
        }
        return packageRoot + "/.build/debug"
    }

    static let moduleFileName = "libpipewire-module-swift-convolver.so"

    static var modulePath: String { directory + "/" + moduleFileName }

    /// The module must be built: `swift build` builds it, `swift build --build-tests` too.
    static func requireModule(file: StaticString = #filePath, line: UInt = #line) throws {
        guard FileManager.default.fileExists(atPath: modulePath) else {
            XCTFail("\(modulePath) is missing: run `swift build` first (or set SWIFT_CONVOLVER_BUILD_DIR)", file: file, line: line)
            throw CocoaError(.fileNoSuchFile)
        }
        if directory.hasSuffix("/debug") && !warnedAboutDebug {
            warnedAboutDebug = true
            print(
                """
                warning: the node under test is a debug build (\(directory)). Unoptimized, its engine is too slow for \
                real time with long IRs and small quanta (builtin:hall, q=64 fail). Test the release build: \
                swift build -c release && SWIFT_CONVOLVER_BUILD_DIR=$PWD/.build/release swift test --filter LiveTests
                """)
        }
    }

    nonisolated(unsafe) private static var warnedAboutDebug = false

    /// What users install, built apart from the tests' build (`make build`, `make deb`; `make test`
    /// makes both first): `SWIFT_CONVOLVER_DIST_DIR`, else the repository's `.build/dist`.
    static var distributionDirectory: String {
        ProcessInfo.processInfo.environment["SWIFT_CONVOLVER_DIST_DIR"] ?? packageRoot + "/.build/dist"
    }

    /// The products of `make build` (the Swift runtime linked in).
    static func requireDistributionProducts(file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let products = distributionDirectory + "/release"
        guard FileManager.default.fileExists(atPath: products + "/" + moduleFileName),
            FileManager.default.fileExists(atPath: products + "/pw-convolver")
        else {
            throw TestFailure("\(products) has no module or pw-convolver: run `make build` (`make test` does)")
        }
        return products
    }

    /// The package `make deb` wrote (the newest, if several versions are there).
    static func requireDebianPackage() throws -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: distributionDirectory)) ?? []
        let packages = names.filter { $0.hasPrefix("swift-convolver_") && $0.hasSuffix(".deb") }.map { distributionDirectory + "/" + $0 }
        guard let newest = packages.max(by: { modificationDate($0) < modificationDate($1) }) else {
            throw TestFailure("no swift-convolver_*.deb in \(distributionDirectory): run `make deb` (`make test` does)")
        }
        return newest
    }

    private static func modificationDate(_ path: String) -> Date {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date) ?? .distantPast
    }
}

/// The PipeWire the tests run: the system's, or the one `scripts/pipewire-1.4.sh env` puts first
/// (PATH, PIPEWIRE_MODULE_DIR, LD_LIBRARY_PATH … pointing into its prefix).
enum PipeWireInstallation {
    /// A PipeWire tool (pipewire, pw-play, wpctl …) as PATH finds it.
    static func tool(_ name: String) -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
        for directory in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
            return "\(directory)/\(name)"
        }
        return "/usr/bin/" + name
    }

    /// PipeWire's own module directory (after the build directory in PIPEWIRE_MODULE_DIR).
    static let moduleDirectory =
        ProcessInfo.processInfo.environment["PIPEWIRE_MODULE_DIR"]
        .flatMap { $0.split(separator: ":").last.map(String.init) } ?? "/usr/lib/x86_64-linux-gnu/pipewire-0.3"

    /// PIPEWIRE_MODULE_DIR for a process that loads the convolver module from the build.
    static var moduleSearchPath: String { BuildProducts.directory + ":" + moduleDirectory }

    /// The version `pipewire --version` reports for its libpipewire ("0.3.65", "1.4.2").
    static let version: String = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool("pipewire"))
        process.arguments = ["--version"]
        let pipe = Pipe()
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return "?" }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.components(separatedBy: "libpipewire ").dropFirst().first?.split(separator: "\n").first.map(String.init) ?? "?"
    }()

    /// PipeWire 1.x (and WirePlumber 0.5 beside it), not 0.3.
    static var isOneDotX: Bool { !version.hasPrefix("0.") }
}

/// A private headless PipeWire daemon in its own runtime dir (docs/facts.md), and helpers that
/// run PipeWire's tools against it. Start one per test class; `stop()` in `tearDown`.
final class PrivatePipeWire {
    let runtimeDirectory: String
    private let daemon: Process
    let logPath: String

    /// `extraModules`: SPA-JSON module entries added at the end of the daemon's `context.modules`
    /// (e.g. the convolver module, to test it inside the daemon).
    /// `extraProperties`: SPA-JSON key-value pairs added to its `context.properties`.
    /// `dropIns`: files copied into `pipewire.conf.d/` beside the daemon's config, which is then
    /// found through PIPEWIRE_CONFIG_DIR as `pipewire.conf` (how a user's drop-in is loaded).
    /// Recordings go here. On tmpfs when there is one: pw-record writes its file from its data
    /// thread, and on a disk a write-back stall (seen at exactly 1 and 2 MB into the file) made it
    /// drop a cycle of both the node's input and output, which then no longer match.
    static let scratchDirectory = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()

    init(name: String, extraModules: String = "", extraProperties: String = "", dropIns: [String] = []) throws {
        runtimeDirectory = Self.scratchDirectory + "swconv-node-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(
            atPath: runtimeDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        var configuration = try String(contentsOfFile: packageRoot + "/pipewire-conf/headless-daemon.conf", encoding: .utf8)
        if !extraProperties.isEmpty {
            // At the end of context.properties: a key the config sets too takes the later value.
            guard let start = configuration.range(of: "context.properties = {"),
                let end = configuration.range(of: "\n}", range: start.upperBound..<configuration.endIndex)
            else {
                throw CocoaError(.fileReadCorruptFile)
            }
            configuration.insert(contentsOf: "\n    " + extraProperties, at: end.lowerBound)
        }
        if !extraModules.isEmpty {
            // At the end of context.modules: after protocol-native, which a module's core needs.
            guard let start = configuration.range(of: "context.modules = ["),
                let end = configuration.range(of: "\n]", range: start.upperBound..<configuration.endIndex)
            else {
                throw CocoaError(.fileReadCorruptFile)
            }
            configuration.insert(contentsOf: "\n" + extraModules + "\n", at: end.lowerBound)
        }
        let configurationPath = runtimeDirectory + "/daemon.conf"
        try configuration.write(toFile: configurationPath, atomically: true, encoding: .utf8)
        var arguments = ["-c", configurationPath]
        var daemonEnvironment = ["PIPEWIRE_DEBUG": "3"]
        if !dropIns.isEmpty {
            let configDirectory = runtimeDirectory + "/config"
            try FileManager.default.createDirectory(atPath: configDirectory + "/pipewire.conf.d", withIntermediateDirectories: true)
            try configuration.write(toFile: configDirectory + "/pipewire.conf", atomically: true, encoding: .utf8)
            for dropIn in dropIns {
                try FileManager.default.copyItem(
                    atPath: dropIn,
                    toPath: configDirectory + "/pipewire.conf.d/"
                        + URL(fileURLWithPath: dropIn).lastPathComponent)
            }
            arguments = []
            daemonEnvironment["PIPEWIRE_CONFIG_DIR"] = configDirectory
        }
        logPath = runtimeDirectory + "/pipewire.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: PipeWireInstallation.tool("pipewire"))
        daemon.arguments = arguments
        daemon.environment = environment(extra: daemonEnvironment)
        let logHandle = FileHandle(forWritingAtPath: logPath)
        daemon.standardOutput = logHandle
        daemon.standardError = logHandle
        try daemon.run()
        let socket = runtimeDirectory + "/pipewire-0"
        guard waitUntil(timeout: 10, { FileManager.default.fileExists(atPath: socket) || !self.daemon.isRunning }),
            daemon.isRunning
        else {
            throw TestFailure("private PipeWire did not start; log:\n\(log(tail: 30))")
        }
    }

    deinit { stop() }

    var isAlive: Bool { daemon.isRunning }

    func stop() {
        guard daemon.isRunning else { return }
        daemon.terminate()  // SIGTERM: the daemon removes its socket
        if !waitUntil(timeout: 5, { !self.daemon.isRunning }) { kill(daemon.processIdentifier, SIGKILL) }
        daemon.waitUntilExit()
        // SWIFT_CONVOLVER_KEEP_TEST_FILES=1 keeps logs, configs and recordings for a look.
        if ProcessInfo.processInfo.environment["SWIFT_CONVOLVER_KEEP_TEST_FILES"] == nil {
            try? FileManager.default.removeItem(atPath: runtimeDirectory)
        }
    }

    /// The daemon's log so far (last `tail` lines).
    func log(tail: Int = 200) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(tail).joined(separator: "\n")
    }

    /// Environment for clients of this daemon; the module is found in the build directory.
    func environment(extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtimeDirectory
        environment["PIPEWIRE_MODULE_DIR"] = PipeWireInstallation.moduleSearchPath
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.removeValue(forKey: "PIPEWIRE_REMOTE")
        for (key, value) in extra { environment[key] = value }
        return environment
    }

    /// A stereo null sink (support.null-audio-sink): a device sink for routing tests, with monitor ports.
    func createNullSink(_ name: String, description: String) throws {
        let (status, output) = try run([
            "pw-cli", "create-node", "adapter",
            "{ factory.name = support.null-audio-sink node.name = \(name) node.description = \(description) "
                + "media.class = Audio/Sink audio.position = [ FL FR ] object.linger = true }",
        ])
        guard status == 0 else { throw TestFailure("pw-cli create-node (null sink \(name)) failed (\(status)): \(output)") }
    }

    /// Links as "node:port -> node:port", from `pw-link -l`.
    func links() throws -> Set<String> {
        let (status, output) = try run(["pw-link", "-l"])
        guard status == 0 else { throw TestFailure("pw-link -l failed: \(output)") }
        var links: Set<String> = []
        var current = ""
        for line in output.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("|->") {
                links.insert("\(current) -> \(trimmed.dropFirst(3).trimmingCharacters(in: .whitespaces))")
            } else if trimmed.hasPrefix("|<-") {
                links.insert("\(trimmed.dropFirst(3).trimmingCharacters(in: .whitespaces)) -> \(current)")
            } else {
                current = trimmed
            }
        }
        return links
    }

    /// Runs a tool to completion (with a timeout) and returns its status and output.
    @discardableResult
    func run(_ arguments: [String], timeout: TimeInterval = 10) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.environment = environment()
        let outputPath = runtimeDirectory + "/run-\(UUID().uuidString).out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let handle = FileHandle(forWritingAtPath: outputPath)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        if !waitUntil(timeout: timeout, { !process.isRunning }) {
            process.terminate()
            process.waitUntilExit()
            throw TestFailure("\(arguments.joined(separator: " ")) timed out after \(timeout) s")
        }
        process.waitUntilExit()
        try? handle?.close()
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: outputPath)
        return (process.terminationStatus, output)
    }

    /// Starts a long-running client (pw-play, pw-record, `pipewire -c`); output to `logName`.
    func spawn(_ arguments: [String], logName: String, extraEnvironment: [String: String] = [:]) throws -> BackgroundProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.environment = environment(extra: extraEnvironment)
        let logPath = runtimeDirectory + "/" + logName
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let handle = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return BackgroundProcess(process: process, logPath: logPath)
    }

    // MARK: - Graph queries (pw-dump JSON)

    func dump() throws -> [[String: Any]] {
        let (status, output) = try run(["pw-dump", "-N"], timeout: 10)
        guard status == 0, let data = output.data(using: .utf8),
            let objects = try JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else {
            throw TestFailure("pw-dump failed (\(status)): \(output.prefix(500))")
        }
        return objects
    }

    /// Properties of the node named `name`, nil if absent.
    func nodeProperties(_ name: String) throws -> (id: Int, properties: [String: Any])? {
        for object in try dump() where (object["type"] as? String) == "PipeWire:Interface:Node" {
            let info = object["info"] as? [String: Any]
            let properties = info?["props"] as? [String: Any] ?? [:]
            if properties["node.name"] as? String == name, let id = object["id"] as? Int { return (id, properties) }
        }
        return nil
    }

    /// The `param` params (e.g. "ProcessLatency") of the node named `name`, or of its port `port`,
    /// as pw-dump shows them (empty if absent).
    func params(ofNode name: String, port: String? = nil, _ param: String) throws -> [[String: Any]] {
        let objects = try dump()
        func info(_ object: [String: Any]) -> [String: Any] { object["info"] as? [String: Any] ?? [:] }
        func properties(_ object: [String: Any]) -> [String: Any] { info(object)["props"] as? [String: Any] ?? [:] }
        guard
            let node = objects.first(where: {
                ($0["type"] as? String) == "PipeWire:Interface:Node" && properties($0)["node.name"] as? String == name
            })
        else { return [] }
        let object =
            port.flatMap { port in
                objects.first {
                    ($0["type"] as? String) == "PipeWire:Interface:Port" && properties($0)["node.id"] as? Int == node["id"] as? Int
                        && properties($0)["port.name"] as? String == port
                }
            } ?? (port == nil ? node : [:])
        return (info(object)["params"] as? [String: Any])?[param] as? [[String: Any]] ?? []
    }

    /// Port names of the node named `name` (empty if absent).
    func portNames(ofNode name: String) throws -> [String] {
        let objects = try dump()
        guard
            let nodeID = objects.first(where: {
                ($0["type"] as? String) == "PipeWire:Interface:Node"
                    && ((($0["info"] as? [String: Any])?["props"] as? [String: Any])?["node.name"] as? String) == name
            })?["id"] as? Int
        else { return [] }
        return objects.compactMap { object -> String? in
            guard (object["type"] as? String) == "PipeWire:Interface:Port",
                let properties = (object["info"] as? [String: Any])?["props"] as? [String: Any],
                (properties["node.id"] as? Int) == nodeID
            else { return nil }
            return properties["port.name"] as? String
        }.sorted()
    }

    /// Modules by id whose name is `name`.
    func moduleIDs(named name: String) throws -> [Int] {
        try dump().compactMap { object in
            guard (object["type"] as? String) == "PipeWire:Interface:Module",
                ((object["info"] as? [String: Any])?["name"] as? String) == name
            else { return nil }
            return object["id"] as? Int
        }
    }

    /// The properties of the first module named `name` (empty if none).
    func moduleProperties(named name: String) throws -> [String: Any] {
        let module = try dump().first { object in
            (object["type"] as? String) == "PipeWire:Interface:Module"
                && ((object["info"] as? [String: Any])?["name"] as? String) == name
        }
        return (module?["info"] as? [String: Any])?["props"] as? [String: Any] ?? [:]
    }

    /// Waits until the node has every port in `names`: a new node's ports appear one by one, and a
    /// count of them can be reached first by ports of the other direction.
    func waitForPorts(ofNode name: String, named names: [String], timeout: TimeInterval = 20) throws {
        var last: [String] = []
        guard
            waitUntil(
                timeout: timeout,
                {
                    last = (try? self.portNames(ofNode: name)) ?? []; return names.allSatisfy(last.contains)
                })
        else {
            throw TestFailure("node \(name) has ports \(last) after \(timeout) s, expected \(names)")
        }
    }

    func waitForPorts(ofNode name: String, count: Int, timeout: TimeInterval = 20) throws {
        var last: [String] = []
        guard
            waitUntil(
                timeout: timeout,
                {
                    last = (try? self.portNames(ofNode: name)) ?? []
                    return last.count >= count
                })
        else {
            throw TestFailure("node \(name) has ports \(last) after \(timeout) s, expected \(count)")
        }
    }

    func link(_ output: String, _ input: String) throws {
        let (status, text) = try run(["pw-link", output, input])
        guard status == 0 else { throw TestFailure("pw-link \(output) \(input) failed: \(text)") }
    }

    func setQuantum(_ quantum: Int) throws {
        try run(["pw-metadata", "-n", "settings", "0", "clock.force-quantum", "\(quantum)"])
    }

    /// The quantum the graph really ran `node` at (the profiler's clock.duration, by
    /// `pw-convolver top --batch`), over `seconds`, and top's line for it.
    func profiledQuantum(ofNode node: String, seconds: Double = 1.5) throws -> (quantum: String, line: String) {
        let (status, top) = try run(
            [
                BuildProducts.directory + "/pw-convolver", "top", "--batch", "--seconds", "\(seconds)",
                "--node", node,
            ], timeout: 20 + seconds)
        guard status == 0 else { throw TestFailure("pw-convolver top exited \(status): \(top)") }
        let line = top.split(separator: "\n").last { $0.hasSuffix(" " + node) } ?? ""
        let columns = line.split(separator: " ")
        return (columns.count > 2 ? String(columns[2]) : "", String(line))
    }

    /// True while the daemon answers (`pw-cli info 0`).
    func answers() -> Bool {
        guard isAlive, let result = try? run(["pw-cli", "info", "0"], timeout: 5) else { return false }
        return result.status == 0 && result.output.contains("PipeWire:Interface:Core")
    }
}

/// A client process started by `PrivatePipeWire.spawn`.
final class BackgroundProcess {
    let process: Process
    let logPath: String

    init(process: Process, logPath: String) {
        self.process = process
        self.logPath = logPath
    }

    deinit { stop() }

    var isRunning: Bool { process.isRunning }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// SIGINT (pw-record writes its WAV header on SIGINT), then waits; SIGKILL after `timeout`.
    @discardableResult
    func interrupt(timeout: TimeInterval = 10) -> Int32 {
        if process.isRunning { process.interrupt() }
        if !waitUntil(timeout: timeout, { !self.process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    func waitForExit(timeout: TimeInterval) -> Bool { waitUntil(timeout: timeout, { !self.process.isRunning }) }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        if !waitUntil(timeout: 5, { !self.process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` every 50 ms until it holds or `timeout` passes.
@discardableResult
func waitUntil(timeout: TimeInterval, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(50_000)
    }
    return condition()
}
