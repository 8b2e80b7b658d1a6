import Foundation
import XCTest

/// `make install` / `make uninstall` of what users install (`make build`: the Swift runtime linked
/// in) into a temporary HOME (user-level) and a DESTDIR (system-wide): the installed module and
/// pw-convolver run in a private daemon from where they were installed, with the Swift toolchain
/// hidden (IsolatedSystem), and uninstall leaves no file behind.
final class InstallTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    private var scratch = ""
    private var products = ""

    override func setUpWithError() throws {
        products = try BuildProducts.requireDistributionProducts()
        scratch = NSTemporaryDirectory() + "swconv-install-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: scratch)
    }

    @discardableResult
    private func make(_ arguments: [String]) throws -> String {
        let (status, output) = try runToCompletion("/usr/bin/make", ["-s", "-C", Self.repository, "BUILD_DIR=\(products)"] + arguments)
        guard status == 0 else { throw TestFailure("make \(arguments) failed: \(output)") }
        return output
    }

    func testUserInstallLoadsFromThereAndUninstallLeavesNothing() throws {
        let home = scratch + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try make(["install", "HOME=\(home)"])
        let installed = entriesOtherThanDirectories(under: home)
        for expected in [
            ".local/bin/pw-convolver", ".local/lib/pipewire-0.3/libpipewire-module-swift-convolver.so",
            ".local/share/swift-convolver/swift-convolver-dropin.conf",
            ".config/systemd/user/swift-convolver.service", ".config/systemd/user/swift-convolver@.service",
            ".config/systemd/user/pipewire.service.d/swift-convolver.conf",
            ".local/share/swift-convolver/swift-convolver.conf",
            ".local/share/swift-convolver/swift-convolver-virtual-surround-7.1-hesuvi.conf",
        ] {
            XCTAssertTrue(installed.contains(expected), "\(expected) not in \(installed)")
        }
        // Like the package, it enables nothing: no node appears in the user's daemon by itself.
        XCTAssertFalse(installed.contains { $0.hasPrefix(".config/pipewire/") }, "\(installed)")
        // The unit runs the installed binary.
        let unit = try String(contentsOfFile: home + "/.config/systemd/user/swift-convolver.service", encoding: .utf8)
        XCTAssertTrue(unit.contains("ExecStart=\(home)/.local/bin/pw-convolver run --sink"), unit)
        // The module dir PipeWire gets from the installed systemd drop-in.
        let environmentDropIn = try String(
            contentsOfFile: home + "/.config/systemd/user/pipewire.service.d/swift-convolver.conf",
            encoding: .utf8)
        let moduleDirectory = try XCTUnwrap(
            environmentDropIn.split(separator: "\n")
                .first { $0.hasPrefix("Environment=PIPEWIRE_MODULE_DIR=") }.map { String($0.dropFirst("Environment=PIPEWIRE_MODULE_DIR=".count)) })
        XCTAssertTrue(moduleDirectory.hasPrefix(home + "/.local/lib/pipewire-0.3:"), moduleDirectory)

        XCTAssertTrue(installed.contains(".local/share/man/man1/pw-convolver.1"), "\(installed)")
        XCTAssertTrue(installed.contains(".local/share/man/man7/libpipewire-module-swift-convolver.7"), "\(installed)")

        let daemon = try PrivatePipeWire(name: "install")
        defer { daemon.stop() }
        let system = try IsolatedSystem(directory: daemon.runtimeDirectory + "/isolated")
        defer { system.remove() }
        // The installed client config loads the installed module (not the build directory's).
        let client = try daemon.spawn(
            system.command(["pipewire", "-c", home + "/.local/share/swift-convolver/swift-convolver.conf"]),
            logName: "installed-client.log", extraEnvironment: ["PIPEWIRE_MODULE_DIR": moduleDirectory])
        defer { client.stop() }
        do {
            try daemon.waitForPorts(ofNode: "swift-convolver", count: 4, timeout: 30)
        } catch {
            throw TestFailure("\(error)\nclient log:\n\(client.log)")
        }
        XCTAssertTrue(
            procfsText("/proc/\(client.process.processIdentifier)/maps").contains(
                home + "/.local/lib/pipewire-0.3/libpipewire-module-swift-convolver.so"), "the installed module is the one loaded")
        // The installed pw-convolver, as the unit runs it.
        let standalone = try daemon.spawn(
            system.command([
                home + "/.local/bin/pw-convolver", "run", "--sink", "--name", "installed-sink",
                "--ir", "builtin:dirac",
            ]), logName: "installed-standalone.log")
        defer { standalone.stop() }
        do {
            try daemon.waitForPorts(ofNode: "installed-sink", count: 4, timeout: 30)
        } catch {
            throw TestFailure("\(error)\nlog:\n\(standalone.log)")
        }
        XCTAssertEqual(try daemon.nodeProperties("installed-sink")?.properties["media.class"] as? String, "Audio/Sink")
        standalone.stop()
        client.stop()

        // swift-convolver@NAME.service: its command line as systemd would run it ($$ → $, %i → NAME),
        // on the user's own config first (a filter-chain config switched to this module), then on a
        // ready-made one, and a name with no config fails saying where it looked.
        let template = try String(contentsOfFile: home + "/.config/systemd/user/swift-convolver@.service", encoding: .utf8)
        let script = try XCTUnwrap(
            template.split(separator: "\n").first { $0.hasPrefix("ExecStart=/bin/sh -c '") }
                .map { String($0.dropFirst("ExecStart=/bin/sh -c '".count).dropLast()) })
        func runUnit(_ name: String) throws -> BackgroundProcess {
            let command = script.replacingOccurrences(of: "$$", with: "$").replacingOccurrences(of: "%i", with: name)
            return try daemon.spawn(
                system.command(["/bin/sh", "-c", command]), logName: "unit-\(name).log",
                extraEnvironment: ["HOME": home])
        }
        let mine = home + "/.config/swift-convolver/mix.conf"
        try FileManager.default.createDirectory(atPath: home + "/.config/swift-convolver", withIntermediateDirectories: true)
        try String(contentsOfFile: Self.repository + "/Tests/LiveTests/FilterChainConfigs/sink-mix-FL-FR.conf", encoding: .utf8)
            .replacingOccurrences(of: "libpipewire-module-filter-chain", with: "libpipewire-module-swift-convolver")
            .write(toFile: mine, atomically: true, encoding: .utf8)
        let mixUnit = try runUnit("mix")
        defer { mixUnit.stop() }
        try daemon.waitForPorts(ofNode: "mix_input.mix-FL-FR-to-FL", count: 2, timeout: 30)
        XCTAssertEqual(try daemon.nodeProperties("mix_input.mix-FL-FR-to-FL")?.properties["media.class"] as? String, "Audio/Sink")
        XCTAssertTrue(mixUnit.log.contains("sink 'mix_input.mix-FL-FR-to-FL' running"), mixUnit.log)
        mixUnit.stop()
        let readyMade = try runUnit("swift-convolver")
        defer { readyMade.stop() }
        try daemon.waitForPorts(ofNode: "swift-convolver", count: 4, timeout: 30)
        readyMade.stop()
        let missing = try runUnit("no-such-config")
        XCTAssertTrue(missing.waitForExit(timeout: 10))
        XCTAssertEqual(missing.process.terminationStatus, 1)
        XCTAssertTrue(missing.log.contains("swift-convolver@no-such-config: no no-such-config.conf in \(home)/.config/swift-convolver/"), missing.log)
        try FileManager.default.removeItem(atPath: home + "/.config/swift-convolver")

        try make(["uninstall", "HOME=\(home)"])
        XCTAssertEqual(entriesOtherThanDirectories(under: home), [], "uninstall left files behind")
    }

    func testSystemWideInstallIntoDestdirAndUninstall() throws {
        let destination = scratch + "/dest"
        try make(["install", "PREFIX=/usr/local", "DESTDIR=\(destination)"])
        let installed = entriesOtherThanDirectories(under: destination)
        XCTAssertTrue(installed.contains("usr/local/bin/pw-convolver"), "\(installed)")
        XCTAssertFalse(installed.contains { $0.hasPrefix("etc/") }, "system-wide too, nothing enabled: \(installed)")
        XCTAssertTrue(installed.contains("usr/local/lib/systemd/user/swift-convolver.service"), "\(installed)")
        // System-wide, the module goes where PipeWire looks without any environment.
        XCTAssertTrue(
            installed.contains { $0.hasSuffix("/pipewire-0.3/libpipewire-module-swift-convolver.so") && !$0.hasPrefix("usr/local") },
            "\(installed)")
        XCTAssertFalse(installed.contains { $0.contains("pipewire.service.d") }, "no module-dir drop-in needed system-wide")
        try make(["uninstall", "PREFIX=/usr/local", "DESTDIR=\(destination)"])
        XCTAssertEqual(entriesOtherThanDirectories(under: destination), [], "uninstall left files behind")
    }
}
