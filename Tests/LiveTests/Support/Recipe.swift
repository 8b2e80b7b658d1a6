import EngineTestSupport
import Foundation
import XCTest

/// One recipe of the README ("## Recipes", "### TITLE"): its `sh` blocks, read from the README
/// itself, so that what a user copies is what the test runs.
struct Recipe {
    let title: String
    let lines: [String]

    init(title: String, lines: [String]) {
        self.title = title
        self.lines = lines
    }

    /// The README's recipe whose title starts with `titlePrefix`.
    init(_ titlePrefix: String) throws {
        let readme = try String(contentsOfFile: packageRoot + "/README.md", encoding: .utf8)
        guard let recipes = readme.components(separatedBy: "\n## Recipes\n").dropFirst().first?.components(separatedBy: "\n## ").first
        else { throw TestFailure("README has no '## Recipes' section") }
        guard let section = recipes.components(separatedBy: "\n### ").dropFirst().first(where: { $0.hasPrefix(titlePrefix) }) else {
            throw TestFailure("README's recipes have none titled '\(titlePrefix)…'")
        }
        title = String(section.prefix { $0 != "\n" })
        var lines: [String] = [], inBlock = false
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inBlock = line == "```sh" ? true : false
            } else if inBlock {
                lines.append(String(line))
            }
        }
        guard !lines.isEmpty else { throw TestFailure("recipe '\(title)' has no sh block") }
        self.lines = lines
    }
}

/// Runs recipes as a user on an installed package: every command in `system` (the package
/// installed there), with `home` as HOME, against `daemon`. systemd does not run here, so
/// `systemctl --user enable --now swift-convolver@NAME` runs the installed template unit's own
/// `ExecStart` (what systemd would run, `%i` = NAME) in the background; `daemon-reload` checks
/// that the unit is installed; `restart filter-chain` runs PipeWire 1.x's filter-chain.service's.
/// Any other systemctl command fails the test.
final class RecipeRunner {
    static let unitPath = "/usr/lib/systemd/user/swift-convolver@.service"

    let daemon: PrivatePipeWire
    let system: IsolatedSystem
    let home: String
    /// The units started, by NAME.
    private(set) var units: [String: BackgroundProcess] = [:]

    init(daemon: PrivatePipeWire, system: IsolatedSystem, home: String) throws {
        self.daemon = daemon
        self.system = system
        self.home = home
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    }

    /// The user's: their home, its ~/.config, and PipeWire's module directory where the package put the module.
    private var userEnvironment: [String: String] {
        ["HOME": home, "XDG_CONFIG_HOME": home + "/.config", "PIPEWIRE_MODULE_DIR": IsolatedSystem.moduleSearchPath]
    }

    var environment: [String: String] {
        daemon.environment(extra: userEnvironment)
    }

    /// Runs `recipe`. `yours`: values for its `NAME=value   # yours: …` lines (the user's device
    /// names). `record`: the node's record, added to the config a unit starts (a test-only key).
    /// `nodes`: per unit NAME, the node and its port count to wait for once it is started.
    func run(
        _ recipe: Recipe, yours: [String: String] = [:], record: NodeRecord? = nil,
        nodes: [String: (name: String, ports: Int)] = [:]
    ) throws {
        var segment: [String] = [], replaced: Set<String> = []
        for line in recipe.lines {
            if line.hasPrefix("systemctl --user ") {
                try runCommands(segment, recipe: recipe)
                segment = []
                try systemctl(line.dropFirst("systemctl --user ".count).split(separator: " ").map(String.init), record: record, nodes: nodes)
            } else if let equals = line.firstIndex(of: "="), line.contains("# yours"),
                let value = yours[String(line[..<equals])]
            {
                replaced.insert(String(line[..<equals]))
                segment.append("\(line[..<equals])='\(value)'")
            } else {
                segment.append(line)
            }
        }
        try runCommands(segment, recipe: recipe)
        XCTAssertEqual(replaced, Set(yours.keys), "\(recipe.title): the recipe's '# yours' lines")
    }

    private func runCommands(_ lines: [String], recipe: Recipe) throws {
        guard lines.contains(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty }) else { return }
        let script = lines.joined(separator: "\n")
        let (status, output) = try system.run(["bash", "-eu", "-c", script], environment: environment)
        print("\(recipe.title):\n\(script)\n→ \(output)")
        guard status == 0 else { throw TestFailure("\(recipe.title): exit \(status) from\n\(script)\n\(output)") }
    }

    private func systemctl(_ arguments: [String], record: NodeRecord?, nodes: [String: (name: String, ports: Int)]) throws {
        if arguments == ["restart", "filter-chain"] { return try startFilterChainService(record: record, nodes: nodes) }
        let unitText = try system.run(["cat", Self.unitPath])
        guard unitText.status == 0 else { throw TestFailure("the package installed no \(Self.unitPath): \(unitText.output)") }
        if arguments == ["daemon-reload"] { return }
        guard arguments.count == 3, arguments[0] == "enable", arguments[1] == "--now", arguments[2].hasPrefix("swift-convolver@")
        else { throw TestFailure("systemctl --user \(arguments.joined(separator: " ")): the tests run only enable --now of the template unit") }
        var name = String(arguments[2].dropFirst("swift-convolver@".count))
        if name.hasSuffix(".service") { name.removeLast(".service".count) }
        let command = try execStart(unitText.output, Self.unitPath).replacingOccurrences(of: "%i", with: name)
        try addRecord(record, to: home + "/.config/swift-convolver/" + name + ".conf")
        try start(command, name: name, node: nodes[name])
    }

    /// `record` turned on in the config at `path`, if there is one and it loads this module.
    private func addRecord(_ record: NodeRecord?, to path: String) throws {
        guard let record, let text = try? String(contentsOfFile: path, encoding: .utf8),
            text.contains("libpipewire-module-swift-convolver")
        else { return }
        try ShippedConfig.addingRecord(record, to: text).write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// The ExecStart of `unitText` (the unit at `path`), with systemd's `$$` as the shell's `$`.
    private func execStart(_ unitText: String, _ path: String) throws -> String {
        guard let line = unitText.split(separator: "\n").first(where: { $0.hasPrefix("ExecStart=") }) else {
            throw TestFailure("\(path) has no ExecStart")
        }
        return String(line.dropFirst("ExecStart=".count)).replacingOccurrences(of: "$$", with: "$")
    }

    /// PipeWire 1.x's own filter-chain.service, from the tested PipeWire's installation, its
    /// `/usr/bin/pipewire` that installation's. 1.4.2 is unpacked into a prefix here and finds its
    /// configs through PIPEWIRE_CONFIG_DIR, which replaces the user's directory: there the test
    /// gives it the user's ~/.config/pipewire with the installation's filter-chain.conf beside.
    private func startFilterChainService(record: NodeRecord?, nodes: [String: (name: String, ports: Int)]) throws {
        let configs = home + "/.config/pipewire/filter-chain.conf.d"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: configs)) ?? [] {
            try addRecord(record, to: configs + "/" + name)
        }
        let prefix = String(PipeWireInstallation.moduleDirectory.dropLast(IsolatedSystem.packagedModuleDirectory.count))
        let path = prefix + "/usr/lib/systemd/user/filter-chain.service"
        let unitText = try system.run(["cat", path])
        guard unitText.status == 0 else { throw TestFailure("PipeWire \(PipeWireInstallation.version) has no \(path)") }
        var command = try execStart(unitText.output, path)
        if command.hasPrefix("/usr/bin/") { command = prefix + command }
        var environment: [String: String] = [:]
        if !prefix.isEmpty {
            let userDirectory = home + "/.config/pipewire"
            try? FileManager.default.removeItem(atPath: userDirectory + "/filter-chain.conf")
            try FileManager.default.copyItem(atPath: prefix + "/usr/share/pipewire/filter-chain.conf", toPath: userDirectory + "/filter-chain.conf")
            environment["PIPEWIRE_CONFIG_DIR"] = userDirectory
        }
        try start(command, name: "filter-chain", node: nodes["filter-chain"], environment: environment)
    }

    private func start(_ command: String, name: String, node: (name: String, ports: Int)?, environment: [String: String] = [:]) throws {
        let unit = try daemon.spawn(
            system.command(["sh", "-c", "exec " + command]), logName: "unit-\(name).log",
            extraEnvironment: userEnvironment.merging(environment) { $1 })
        units[name] = unit
        if let node {
            do {
                try daemon.waitForPorts(ofNode: node.name, count: node.ports, timeout: 30)
            } catch {
                throw TestFailure("\(name): \(error)\nits log:\n\(unit.log)")
            }
        }
    }

    func stop() {
        for unit in units.values { unit.stop() }
    }
}
