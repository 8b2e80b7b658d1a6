// `pw-convolver [run] [options]`: the convolver node as a standalone PipeWire client.
import Convolution
import ConvolverGraph
import ConvolverNode
import Glibc

enum RunCommand: Command {
    static let name = "run"
    static let summary = "run the convolver node in PipeWire until SIGINT/SIGTERM"
    static let usage = """
        Usage: pw-convolver [run] --ir FILE|builtin:NAME [options]

        Runs the convolver as a PipeWire filter node (ports input_<POS>/output_<POS> per channel)
        until SIGINT or SIGTERM. Route it with pw-link or qpwgraph.

        With --sink it is a virtual sink apps can pick as their output, made of two streams as
        filter-chain's sinks are: the sink NAME (media.class Audio/Sink, inputs playback_<POS>,
        monitor_<POS>; Props and statistics are on this node) and its output stream output.NAME
        (ports output_<POS>), which WirePlumber links to --target or the default sink. Without a
        session manager, link both by hand: pw-link <app>:output_FL NAME:playback_FL and
        pw-link output.NAME:output_FL <device>:playback_FL. In sink mode the positions must be
        names PipeWire knows (FL FR FC LFE SL SR RL RR ... AUX0...AUX63); the output stream has
        output.position (--args '{ output.position = [ FL FR ] }'), by default the same.

        Options (each is the module argument in brackets):
          --ir FILE|builtin:NAME  impulse response: a sound file, builtin:hall, builtin:dirac or builtin:hilbert [filename]
          --channels N            channel count, 1...64 (default 2) [audio.channels]
          --position FL,FR        channel positions; sets the count too [audio.position]
          --name NAME             node.name (default swift-convolver) [node.name]
          --description TEXT      node.description (default Convolver) [node.description]
          --gain G                gain of the convolved signal, linear or "-6dB" (default 1.0) [gain]
          --mix M                 dry/wet, 0 = dry ... 1 = wet (default 1.0) [mix]
          --threads N|auto|levels workgroup helper threads (default auto) [workgroup.threads]
          --target NODE           where the session manager sends the output (a node name or serial; in
                                  sink mode the default sink when absent) [target.object]
          --sink                  a virtual sink apps can pick (see above) [mode = sink]
          --set KEY=VALUE         any module argument (repeatable), e.g. --set sofa.azimuth=90
                                  --set 'workgroup.threads=2' (in order with the options above)
          --args '{ ... }'        any module arguments in SPA-JSON (applied before the options above)
          --config FILE           the arguments of the libpipewire-module-swift-convolver module in a PipeWire
                                  config file (one module; a filter-chain config with the module's name
                                  changed is one), applied first; `~/` is the home directory

        Examples:
          pw-convolver --ir builtin:hall --name hall
          pw-link <source>:output_FL hall:input_FL
          pw-convolver --ir builtin:hall --name hall-sink --sink
          pw-convolver run --config ~/.config/swift-convolver/hesuvi.conf
          wpctl set-default <id of hall-sink>     # or pw-play --target hall-sink music.wav
        """

    static func run(_ arguments: [String]) throws {
        var members: [SPAJSONMember] = []
        var index = 0
        func value(_ option: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw UsageError("\(option) needs a value") }
            return arguments[index]
        }
        var extra: [SPAJSONMember] = []
        while index < arguments.count {
            let option = arguments[index]
            switch option {
            case "--ir": members.append(.init(key: "filename", value: .string(try value(option))))
            case "--channels": members.append(.init(key: "audio.channels", value: .word(try value(option))))
            case "--position": members.append(.init(key: "audio.position", value: .string(try value(option))))
            case "--name": members.append(.init(key: "node.name", value: .string(try value(option))))
            case "--description": members.append(.init(key: "node.description", value: .string(try value(option))))
            case "--gain": members.append(.init(key: "gain", value: .word(try value(option))))
            case "--mix": members.append(.init(key: "mix", value: .word(try value(option))))
            case "--threads":
                members.append(.init(key: "workgroup", value: .object([.init(key: "threads", value: .word(try value(option)))])))
            case "--sink": members.append(.init(key: "mode", value: .word("sink")))
            case "--target": members.append(.init(key: "target.object", value: .string(try value(option))))
            case "--set":
                do { members.append(try SPAJSONMember.setting(try value(option))) } catch let error as NodeConfigurationError {
                    throw UsageError("--set \(error)")
                }
            case "--config": extra = try moduleArguments(inConfig: NodeConfiguration.expandingHome(try value(option))) + extra
            case "--args":
                let text = try value(option)
                do {
                    guard case let .object(parsed) = try SPAJSONValue.parse(text) else {
                        throw UsageError("--args: expected { key = value ... }")
                    }
                    extra += parsed
                } catch let error as SPAJSONError {
                    throw UsageError("--args: \(error)")
                }
            default:
                throw UsageError("unknown option '\(option)'")
            }
            index += 1
        }
        let configuration: NodeConfiguration
        do {
            let (parsed, warnings) = try NodeConfiguration.parse(pipeWire: .running, .object(extra + members))
            for warning in warnings { printToStandardError("pw-convolver: warning: \(warning)") }
            configuration = parsed
        } catch {
            throw UsageError(error.description)
        }
        try StandaloneClient.run(configuration, sampleRate: configuration.audioRate) { line in
            printToStandardError("pw-convolver: \(line)")
        }
    }

    /// The `args` of the one libpipewire-module-swift-convolver module in the config file at `path`.
    static func moduleArguments(inConfig path: String) throws -> [SPAJSONMember] {
        guard let text = SystemFiles.readText(path) else { throw UsageError("--config: cannot read '\(path)'") }
        let config: SPAJSONValue
        do { config = try SPAJSONValue.parse(text) } catch { throw UsageError("--config \(path): \(error)") }
        guard case let .object(sections) = config, case let .array(modules)? = sections.last(where: { $0.key == "context.modules" })?.value
        else { throw UsageError("--config \(path): no context.modules = [ ... ]") }
        var found: [[SPAJSONMember]] = []
        for case let .object(module) in modules {
            switch module.first(where: { $0.key == "name" })?.value.text {
            case "libpipewire-module-swift-convolver":
                guard case let .object(arguments) = module.first(where: { $0.key == "args" })?.value ?? .object([]) else {
                    throw UsageError("--config \(path): the module's args are not an object { ... }")
                }
                found.append(arguments)
            case "libpipewire-module-filter-chain":
                throw UsageError(
                    "--config \(path): this config loads libpipewire-module-filter-chain; change that name to "
                        + "libpipewire-module-swift-convolver (man libpipewire-module-swift-convolver, \"FILTER-CHAIN CONFIGS\")")
            default: continue
            }
        }
        guard found.count == 1 else {
            throw UsageError(
                "--config \(path): \(found.count) libpipewire-module-swift-convolver modules; --config runs one "
                    + "(pipewire -c runs a config with several)")
        }
        return found[0]
    }
}
