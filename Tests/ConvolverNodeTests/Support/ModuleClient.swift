import Foundation

/// A `pipewire -c client.conf` process that loads the convolver module with given arguments,
/// the same way pipewire-conf/swift-convolver.conf does.
enum ModuleClient {
    /// `contextProperties`: more `context.properties` (e.g. `default.clock.rate = 44100`, the rate
    /// the node starts at).
    static func configuration(arguments: String, contextProperties: String = "") -> String {
        """
        context.properties = { log.level = 3 \(contextProperties) }
        context.spa-libs = {
            audio.convert.* = audioconvert/libspa-audioconvert
            support.*       = support/libspa-support
        }
        context.modules = [
            { name = libpipewire-module-rt args = { rtkit.enabled = false rtportal.enabled = false } flags = [ ifexists nofail ] }
            { name = libpipewire-module-protocol-native }
            { name = libpipewire-module-client-node }
            { name = libpipewire-module-adapter }
            { name = libpipewire-module-swift-convolver args = { \(arguments) } }
        ]
        """
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
        var text = try String(contentsOfFile: BuildProducts.packageRoot + "/pipewire-conf/" + name, encoding: .utf8)
            .replacingOccurrences(of: "/path/to/irs/", with: irDirectory + "/")
        guard let module = text.range(of: "name = libpipewire-module-swift-convolver"),
            let arguments = text.range(of: "args = {", range: module.upperBound..<text.endIndex)
        else {
            throw TestFailure("\(name): no args of libpipewire-module-swift-convolver")
        }
        text.insert(contentsOf: " " + record.argument, at: arguments.upperBound)
        return text
    }
}
