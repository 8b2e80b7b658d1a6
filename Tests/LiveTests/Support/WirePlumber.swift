import Foundation

extension PrivatePipeWire {
    /// WirePlumber against the daemon: 0.5 (beside PipeWire 1.x) with its `policy` profile (the
    /// session policy, no hardware monitors); 0.4.13 with Debian's config minus what needs a D-Bus
    /// session (bluetooth/logind, the flatpak portal, device reservation) and minus the device
    /// monitors (no hardware here): those make it quit with "Cannot autolaunch D-Bus".
    /// Its state (default nodes, stream volumes) goes to the daemon's dir, not the user's ~/.local/state.
    func startWirePlumber() throws -> BackgroundProcess {
        var arguments = ["wireplumber"]
        var environment = ["XDG_STATE_HOME": runtimeDirectory + "/state", "XDG_CONFIG_HOME": runtimeDirectory + "/config-home"]
        if PipeWireInstallation.isOneDotX {
            arguments += ["--profile", "policy"]
        } else {
            let configDirectory = runtimeDirectory + "/wireplumber"
            try FileManager.default.copyItem(atPath: "/usr/share/wireplumber", toPath: configDirectory)
            let mainConfig = configDirectory + "/wireplumber.conf"
            let text = try String(contentsOfFile: mainConfig, encoding: .utf8)
            try text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.contains("bluetooth.lua") }
                .joined(separator: "\n").write(toFile: mainConfig, atomically: true, encoding: .utf8)
            try """
            default_access.properties["enable-flatpak-portal"] = false
            alsa_monitor.enabled = false
            alsa_monitor.properties["alsa.reserve"] = false
            v4l2_monitor.enabled = false
            libcamera_monitor.enabled = false
            """.write(toFile: configDirectory + "/main.lua.d/51-headless-test.lua", atomically: true, encoding: .utf8)
            environment["WIREPLUMBER_CONFIG_DIR"] = configDirectory
        }
        let wireplumber = try spawn(arguments, logName: "wireplumber.log", extraEnvironment: environment)
        let connected = waitUntil(timeout: 20) {
            !wireplumber.isRunning || (try? self.run(["wpctl", "status"]).output.contains("WirePlumber")) == true
        }
        guard wireplumber.isRunning, connected else {
            wireplumber.stop()
            throw TestFailure("WirePlumber did not connect in 20 s:\n\(wireplumber.log)\ndaemon log:\n\(log(tail: 30))")
        }
        return wireplumber
    }

    /// A null sink `name` standing in for the user's device (the headless daemon has none), then
    /// WirePlumber, waited on until it has made that sink the default.
    func startWirePlumber(withDefaultSink name: String, description: String) throws -> BackgroundProcess {
        try createNullSink(name, description: description)
        let wireplumber = try startWirePlumber()
        let isDefault = waitUntil(timeout: 20) {
            (try? self.run(["pw-metadata", "-n", "default", "0", "default.audio.sink"]).output.contains(name)) == true
        }
        guard isDefault else {
            wireplumber.stop()
            throw TestFailure("WirePlumber did not make the null sink '\(name)' the default:\n\(wireplumber.log)")
        }
        return wireplumber
    }
}
