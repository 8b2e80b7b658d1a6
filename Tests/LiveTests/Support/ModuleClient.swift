import EngineTestSupport
import Foundation

/// A `pipewire -c client.conf` process that loads the convolver module with given arguments,
/// the same way pipewire-conf/swift-convolver.conf does.
enum ModuleClient {
    /// `contextProperties`: more `context.properties` (e.g. `default.clock.rate = 44100`, the rate
    /// the node starts at). `moreNodes`: the arguments of more convolver modules in the same process.
    static func configuration(arguments: String, contextProperties: String = "", moreNodes: [String] = []) -> String {
        let modules = ([arguments] + moreNodes).map { "    { name = libpipewire-module-swift-convolver args = { \($0) } }" }
        return """
            context.properties = { log.level = 3 \(contextProperties) }
            context.spa-libs = \(spaLibraries)
            context.modules = [
            \(clientModules)
            \(modules.joined(separator: "\n"))
            ]
            """
    }

    private static let spaLibraries = "{ audio.convert.* = audioconvert/libspa-audioconvert  support.* = support/libspa-support }"
    /// What a `pipewire -c` client process needs before its own modules (real-time threads, the
    /// protocol, client nodes and the adapter its streams are made of).
    private static let clientModules = """
            { name = libpipewire-module-rt args = { rtkit.enabled = false rtportal.enabled = false } flags = [ ifexists nofail ] }
            { name = libpipewire-module-protocol-native }
            { name = libpipewire-module-client-node }
            { name = libpipewire-module-adapter }
        """

    /// A config that lists only its own modules (a filter-chain example, written for a process that
    /// has the rest) as a client config: the context a client needs put in front of them.
    static func asClient(_ text: String) throws -> String {
        guard let modules = text.range(of: "context.modules = [") else { throw TestFailure("no context.modules = [ in:\n\(text)") }
        var client = text
        client.replaceSubrange(modules, with: "context.modules = [\n" + clientModules)
        return "context.properties = { log.level = 2 }\ncontext.spa-libs = \(spaLibraries)\n" + client
    }

    /// Starts the client process; `name` names its config and log files.
    static func start(
        _ daemon: PrivatePipeWire, name: String, arguments: String, contextProperties: String = "",
        extraEnvironment: [String: String] = [:]
    ) throws -> BackgroundProcess {
        let path = daemon.runtimeDirectory + "/\(name).conf"
        try configuration(arguments: arguments, contextProperties: contextProperties).write(toFile: path, atomically: true, encoding: .utf8)
        return try daemon.spawn(["pipewire", "-c", path], logName: "\(name).log", extraEnvironment: extraEnvironment)
    }
}

/// A shipped config of pipewire-conf/, as a test runs it: its IR directory placeholder replaced,
/// and the node's record (`test.record-calls`) added to the convolver module's arguments.
enum ShippedConfig {
    static func text(_ name: String, record: NodeRecord, irDirectory: String) throws -> String {
        let text = try String(contentsOfFile: packageRoot + "/pipewire-conf/" + name, encoding: .utf8)
            .replacingOccurrences(of: "/path/to/irs/", with: irDirectory + "/")
        return try addingRecord(record, to: text, name: name)
    }

    /// `text` (a PipeWire config) with the node's record turned on in the args of its
    /// libpipewire-module-swift-convolver.
    static func addingRecord(_ record: NodeRecord, to text: String, name: String = "the config") throws -> String {
        var text = text
        guard let module = text.range(of: "name = libpipewire-module-swift-convolver"),
            let arguments = text.range(of: "args = {", range: module.upperBound..<text.endIndex)
        else {
            throw TestFailure("\(name): no args of libpipewire-module-swift-convolver")
        }
        text.insert(contentsOf: " " + record.argument, at: arguments.upperBound)
        return text
    }
}
