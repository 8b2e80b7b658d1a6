import EngineTestSupport
import Foundation
import XCTest

/// The Debian package of `make deb`, installed with dpkg where the Swift toolchain is hidden
/// (IsolatedSystem: a mount namespace over overlays, so the machine itself is left as it was):
/// its binaries need nothing of the toolchain, the installed module plays exactly in a private
/// daemon, a C host loads and unloads it ten times, the man pages render, and `dpkg -r` leaves
/// no file behind.
final class PackageTests: XCTestCase {
    private static let module = IsolatedSystem.packagedModuleDirectory + "/" + BuildProducts.moduleFileName

    func testDebianPackageRunsWithoutTheToolchainAndRemovesCleanly() throws {
        let package = try BuildProducts.requireDebianPackage()
        let daemon = try PrivatePipeWire(name: "package")
        defer { daemon.stop() }
        try daemon.setQuantum(256)
        let system = try IsolatedSystem(directory: daemon.runtimeDirectory + "/isolated")
        defer { system.remove() }

        let install = try system.run(["dpkg", "-i", package])
        XCTAssertEqual(install.status, 0, "dpkg -i: \(install.output)")
        let installed = system.changedEntries(under: "/usr")
        for expected in [
            "bin/pw-convolver", String(Self.module.dropFirst(5)), "lib/systemd/user/swift-convolver.service",
            "share/man/man1/pw-convolver.1.gz", "share/man/man7/libpipewire-module-swift-convolver.7.gz",
            "share/swift-convolver/swift-convolver-dropin.conf", "share/swift-convolver/swift-convolver-hall-sink.conf",
            "share/doc/swift-convolver/copyright",
        ] {
            XCTAssertTrue(installed.contains(expected), "\(expected) not installed: \(installed)")
        }
        XCTAssertEqual(system.changedEntries(under: "/etc"), [], "the package enables nothing (the drop-in is an example)")
        let copyright = try system.run(["cat", "/usr/share/doc/swift-convolver/copyright"]).output
        XCTAssertTrue(copyright.contains("GPL") && copyright.contains("FFTW"), copyright)

        // Nothing of the toolchain is needed, and it is not there to be found.
        XCTAssertNotEqual(try system.run(["ls", IsolatedSystem.toolchain! + "/usr/bin/swift"]).status, 0, "the toolchain is hidden")
        let testBuild = try system.run(["ldd", BuildProducts.modulePath])
        XCTAssertTrue(
            testBuild.output.contains("libswiftCore.so => not found"),
            "the tests' own build, linked to the toolchain's runtime, cannot load here: \(testBuild.output)")
        for binary in ["/usr/bin/pw-convolver", Self.module] {
            let ldd = try system.run(["ldd", binary])
            XCTAssertEqual(ldd.status, 0, ldd.output)
            XCTAssertFalse(ldd.output.contains("swift") || ldd.output.contains("not found"), "\(binary): \(ldd.output)")
        }

        // The installed module, loaded by name from PipeWire's module directory, plays exactly.
        try TestSignals.write(TestSignals.syntheticImpulse(), to: daemon.runtimeDirectory + "/ir.wav")
        try TestSignals.write(TestSignals.noise(seconds: 2), to: daemon.runtimeDirectory + "/input.wav")
        let record = NodeRecord(directory: daemon.runtimeDirectory, name: "packaged")
        let configuration = daemon.runtimeDirectory + "/packaged.conf"
        try ModuleClient.configuration(
            arguments: "node.name = packaged audio.position = [ FL FR ] \(record.argument) "
                + "filename = \"\(daemon.runtimeDirectory)/ir.wav\""
        )
        .write(toFile: configuration, atomically: true, encoding: .utf8)
        let modulePath = IsolatedSystem.moduleSearchPath
        let client = try daemon.spawn(
            system.command(["pipewire", "-c", configuration]), logName: "packaged.log",
            extraEnvironment: ["PIPEWIRE_MODULE_DIR": modulePath])
        defer { client.stop() }
        do {
            try daemon.waitForPorts(ofNode: "packaged", count: 4, timeout: 30)
        } catch {
            throw TestFailure("\(error)\nclient log:\n\(client.log)")
        }
        let mapped = procfsText("/proc/\(client.process.processIdentifier)/maps")
        XCTAssertTrue(mapped.contains(Self.module), "the installed module is the one loaded")
        XCTAssertFalse(mapped.contains("libswift"), "no Swift runtime library is loaded beside it")
        try PlayThrough(daemon: daemon, nodeName: "packaged")
            .run(
                inputPath: daemon.runtimeDirectory + "/input.wav", recordingPath: daemon.runtimeDirectory + "/rec.f32",
                seconds: 2, tailSeconds: 0.3, tag: "packaged")
        XCTAssertTrue(client.isRunning, "the client survived; log:\n\(client.log)")
        client.stop()
        try LiveVerdict(
            record: record, recording: daemon.runtimeDirectory + "/rec.f32",
            played: daemon.runtimeDirectory + "/input.wav", workDirectory: daemon.runtimeDirectory
        )
        .assertExact(entries: try ImpulseEntry.parallel(channels: 2, file: daemon.runtimeDirectory + "/ir.wav"), label: "packaged")

        // Loaded and unloaded ten times by a C host (no Swift runtime but the module's own).
        let host = try ModuleReloadHost.executable.get()
        let reload = try system.run(
            [host, "10", "300", "node.name = reloaded filename = \"builtin:hall\""],
            environment: daemon.environment(extra: ["PIPEWIRE_MODULE_DIR": modulePath]))
        XCTAssertEqual(reload.status, 0, reload.output)
        XCTAssertTrue(reload.output.contains("loaded 10"), reload.output)
        XCTAssertTrue(daemon.answers(), "the daemon survived the reloads")

        let inspect = try system.run(["pw-convolver", "inspect", "--ir", "builtin:hall"])
        XCTAssertEqual(inspect.status, 0, inspect.output)
        XCTAssertTrue(inspect.output.contains("Length:"), inspect.output)
        for (page, heading) in [("man1/pw-convolver.1.gz", "COMMANDS"), ("man7/libpipewire-module-swift-convolver.7.gz", "OPTIONS")] {
            let man = try system.run(
                ["man", "--warnings", "-l", "/usr/share/man/" + page],
                environment: ["MANWIDTH": "100", "PATH": "/usr/bin:/bin"])
            XCTAssertEqual(man.status, 0, man.output)
            XCTAssertTrue(man.output.contains(heading), "man \(page): \(man.output.prefix(300))")
            XCTAssertFalse(man.output.contains("troff:"), "man \(page) warns: \(man.output.prefix(2000))")
        }

        let removal = try system.run(["dpkg", "-r", "swift-convolver"])
        XCTAssertEqual(removal.status, 0, "dpkg -r: \(removal.output)")
        XCTAssertEqual(system.changedEntries(under: "/usr"), [], "dpkg -r left files behind")
        XCTAssertEqual(system.changedEntries(under: "/etc"), [], "dpkg -r left files behind")
        XCTAssertNotEqual(try system.run(["dpkg-query", "-W", "swift-convolver"]).status, 0, "dpkg still knows the package")
    }

    /// The negative: binaries linked to the toolchain's shared runtime (the tests' own build) are
    /// not packaged.
    func testBinariesThatNeedTheToolchainAreNotPackaged() throws {
        try BuildProducts.requireModule()
        let output = NSTemporaryDirectory() + "swconv-deb-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let (status, text) = try runToCompletion(
            packageRoot + "/scripts/make-deb.sh",
            [BuildProducts.directory, BuildProducts.distributionDirectory + "/man", "0.0", output])
        XCTAssertNotEqual(status, 0, text)
        XCTAssertTrue(text.contains("still needs the Swift toolchain"), text)
        XCTAssertEqual((try? FileManager.default.contentsOfDirectory(atPath: output)) ?? [], [], "no package written")
    }
}

/// Tests/ModuleReload/module_reload.c, compiled once per test run against the PipeWire in use.
enum ModuleReloadHost {
    static let executable = TestTool.compile(
        "Tests/ModuleReload/module_reload.c", into: "module_reload",
        flags: "-Werror $(pkg-config --cflags --libs libpipewire-0.3)")
}
