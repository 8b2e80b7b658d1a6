import Foundation
import XCTest

/// The machine as a user without Swift sees it, for the packaging tests: commands run in a mount
/// namespace of their own (`unshare -m`, root) where the Swift toolchain's directory is an empty
/// tmpfs, and /usr, /etc and /var are overlays whose upper layers live in `directory`. So `dpkg -i`
/// really installs, the installed module really loads, and the machine itself is left untouched;
/// what an install or a removal changed is read from the upper layers. Every command gets a new
/// namespace over the same layers: the changes of one are there for the next.
final class IsolatedSystem {
    static let overlaid = ["/usr", "/etc", "/var"]

    /// The toolchain this test process runs on: the directory holding the Swift runtime it loaded
    /// (`<toolchain>/usr/lib/swift/linux/libswiftCore.so`), e.g. /opt/swift.
    static let toolchain: String? = {
        guard let line = procfsText("/proc/self/maps").split(separator: "\n").first(where: { $0.hasSuffix("/usr/lib/swift/linux/libswiftCore.so") }),
            let path = line.split(separator: " ").last
        else { return nil }
        return String(path.dropLast("/usr/lib/swift/linux/libswiftCore.so".count))
    }()

    /// Where the Debian package puts the module: PipeWire's own module directory on Debian.
    static let packagedModuleDirectory = "/usr/lib/x86_64-linux-gnu/pipewire-0.3"

    /// PIPEWIRE_MODULE_DIR for the installed module: the tested PipeWire's own modules first
    /// (1.4.2's when testing on it), then the system's, where the package put ours.
    static var moduleSearchPath: String {
        PipeWireInstallation.moduleDirectory == packagedModuleDirectory
            ? packagedModuleDirectory : PipeWireInstallation.moduleDirectory + ":" + packagedModuleDirectory
    }

    let directory: String

    /// Needs root (mount namespaces, overlays): the packaging tests fail with this reason otherwise.
    init(directory: String) throws {
        guard getuid() == 0 else { throw TestFailure("the packaging tests need root (unshare -m, overlay mounts)") }
        guard Self.toolchain != nil else { throw TestFailure("cannot tell where this process's Swift runtime is") }
        self.directory = directory
        for path in Self.overlaid {
            for layer in ["upper", "work"] {
                try FileManager.default.createDirectory(atPath: layerPath(path, layer), withIntermediateDirectories: true)
            }
        }
    }

    private func layerPath(_ path: String, _ layer: String) -> String {
        directory + "/" + path.dropFirst() + "." + layer
    }

    /// `arguments` as a command line that runs them inside the isolated system.
    func command(_ arguments: [String]) -> [String] {
        let mounts = Self.overlaid.map {
            "mount -t overlay overlay -o lowerdir=\($0),upperdir=\(layerPath($0, "upper")),workdir=\(layerPath($0, "work")) \($0)"
        }
        let script = (["set -e", "mount -t tmpfs -o ro,mode=755 tmpfs \(Self.toolchain!)"] + mounts + ["exec \"$@\""])
            .joined(separator: "\n")
        return ["unshare", "-m", "bash", "-c", script, "isolated"] + arguments
    }

    /// Runs `arguments` inside, to completion; its status and output.
    @discardableResult
    func run(_ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, output: String) {
        try runToCompletion("/usr/bin/env", command(arguments), environment: environment)
    }

    /// What is in the upper layer of `path` (one of `overlaid`) that is not a directory: files
    /// written and whiteouts of files removed, relative to `path`.
    func changedEntries(under path: String) -> [String] {
        entriesOtherThanDirectories(under: layerPath(path, "upper"))
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
