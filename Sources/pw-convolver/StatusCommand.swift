// `pw-convolver status [NODE]`: what each running swift-convolver node does now, in a few lines.
import ConvolverGraph
import ConvolverNode
import Glibc

enum StatusCommand: Command {
    static let name = "status"
    static let summary = "what the running nodes do now: IR, rate, plan, helpers, late counts, controls"
    static let usage = """
        Usage: pw-convolver status [NODE] [--json]

        Prints, for each swift-convolver node in the graph (or the one named by its node.name, id or
        object.serial), what it does now: its IR, rate and the quantum its plan is for, the plan, its
        helper threads, its late cycles and levels, the data thread's busy time, its live controls and
        the answer to the last `pw-convolver set`; then, once per process whose nodes share its
        workgroup, its helpers and each node's late levels. All of it is what the node publishes: its
        convolver.* properties (updated every second) and its Props, as pw-dump shows them.

        Options:
          --json   one JSON object: { "nodes": [ { "id", "name", "properties", "props" } ] }
        Exit status 1 when NODE is not a running swift-convolver node.
        """

    static func run(_ arguments: [String]) throws {
        var json = false
        var nodeName: String?
        for argument in arguments {
            if argument == "--json" {
                json = true
            } else if argument.hasPrefix("-") {
                throw UsageError("unknown option '\(argument)'")
            } else if nodeName == nil {
                nodeName = argument
            } else {
                throw UsageError("one node at most ('\(argument)')")
            }
        }
        let mainLoop = try PipeWireMainLoop()
        try withExtendedLifetime(mainLoop) {
            let client = try NodeControlClient(loop: mainLoop.loop)
            try client.readGraph(on: mainLoop, timeout: 10)
            let nodes = try nodeName.map { [try client.convolverNode($0)] } ?? client.convolverNodes
            if json {
                print(jsonObject(nodes))
            } else if nodes.isEmpty {
                print("no swift-convolver node runs in this PipeWire graph")
            } else {
                print((nodes.map(summary) + sharedWorkgroups(nodes)).joined(separator: "\n"))
            }
        }
    }

    /// A control's value as `set` takes it.
    static func text(_ value: ControlValue) -> String {
        switch value {
        case let .number(number): String(cFormat: "%g", number)
        case let .flag(flag): flag ? "true" : "false"
        case let .text(text): text
        }
    }

    private static func summary(_ node: ConvolverNodeState) -> String {
        func property(_ key: String) -> String { node.properties["convolver." + key] ?? "?" }
        let helpers = property("helper-threads")
        // Props carry the IR in use at once; convolver.ir follows within a second.
        let filename = node.controls.first { $0.key == "filename" }.flatMap { if case let .text(name) = $0.value { name } else { nil } }
        return """
            \(node.name) (id \(node.id)): \(filename ?? property("ir"))
              \(property("rate")) Hz, planned for quantum \(property("plan-quantum")), latency \(property("latency-frames")) frames; plan \(property("plan"))
              helpers \(helpers)\(helpers == "0" ? "" : property("helper-realtime") == "true" ? " real-time" : " not real-time")\(property("workgroup").hasPrefix("process") ? " (the \(property("workgroup"))'s workgroup)" : "")\(helpers == "0" ? "" : " load \(property("helper-load-percent"))%"), late cycles \(property("late-cycles-own")) own of \(property("late-cycles")), late levels \(property("late-levels")), busy p99 \(property("busy-p99-us")) µs
              \(node.controls.map { "\($0.key)=\(text($0.value))" }.joined(separator: " "))
              last set: \(node.properties["convolver.control-answer"] ?? "none")
            """
    }

    /// One line per process whose nodes share its workgroup: its helpers and their load once, each node's late levels.
    private static func sharedWorkgroups(_ nodes: [ConvolverNodeState]) -> [String] {
        let shared = Dictionary(grouping: nodes.filter { $0.properties["convolver.workgroup"]?.hasPrefix("process ") == true }) {
            $0.properties["convolver.workgroup"] ?? ""
        }
        return shared.keys.sorted().map { process in
            let members = shared[process] ?? []
            let helpers = members.first?.properties["convolver.helper-threads"] ?? "?"
            let load = members.first?.properties["convolver.helper-load-percent"] ?? "?"
            let lateLevels = members.map { "\($0.name) \($0.properties["convolver.late-levels"] ?? "?")" }
            return "workgroup of \(process): \(helpers) helpers shared by \(members.count) node(s), load \(load)%; late levels: "
                + lateLevels.joined(separator: ", ")
        }
    }

    /// Strict JSON: properties as pw-dump's strings, Props values as numbers, booleans or strings.
    private static func jsonObject(_ nodes: [ConvolverNodeState]) -> String {
        func member(_ key: String, _ value: SPAJSONValue) -> SPAJSONMember { SPAJSONMember(key: key, value: value) }
        func value(_ value: ControlValue) -> SPAJSONValue {
            switch value {
            // A float pod's value as written (0.05, not 0.05000000074505806).
            case let .number(number): .word(Double(Float(number)) == number ? "\(Float(number))" : "\(number)")
            case let .flag(flag): .word(flag ? "true" : "false")
            case let .text(text): .string(text)
            }
        }
        let objects = nodes.map { node in
            SPAJSONValue.object([
                member("id", .word("\(node.id)")), member("name", .string(node.name)),
                member("properties", .object(node.properties.sorted { $0.key < $1.key }.map { member($0.key, .string($0.value)) })),
                member("props", .object(node.controls.map { member($0.key, value($0.value)) })),
            ])
        }
        return SPAJSONValue.object([member("nodes", .array(objects))]).json
    }
}
