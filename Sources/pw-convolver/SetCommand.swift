// `pw-convolver set NODE KEY=VALUE ...`: live controls by node name, with the node's own answer.
import ConvolverGraph
import ConvolverNode
import Glibc

enum SetCommand: Command {
    static let name = "set"
    static let summary = "set a running node's live controls by name, and say what it did"
    static let usage = """
        Usage: pw-convolver set NODE KEY=VALUE [KEY=VALUE ...] [--timeout S]

        Sends live controls to a running swift-convolver node, named by its node.name (in sink mode
        the sink's name), its id or its object.serial, and waits for the node's answer. Exit status 0
        when the node took every value; 1, with the node's own message, when it refused one (the
        others are applied) or cannot be reached.

        Keys:
          gain        gain of the convolved signal: linear (0.5) or decibels (-6dB), up to 100 (+40 dB)
          mix         dry/wet, 0 = dry ... 1 = wet
          bypass      true or false
          width       stereo width of the wet signal, 0 (mono) ... 1 ... 2 (two outputs only)
          crossfade   seconds the next IR changes take, 0...10
          filename    another IR file: built off the real-time thread, then crossfaded in; the
                      answer comes when it plays (or says why the current IR is kept)
          sofa.azimuth, sofa.elevation, sofa.radius
                      where an HRTF set (.sofa) places the source: degrees, degrees, metres
        Values are typed as pw-cli types them: a number, true or false, else text.

        Options:
          --timeout S   how long to wait for the node's answer (default 60 s: an IR build takes time)

        Examples:
          pw-convolver set hall gain=-6dB mix=0.3
          pw-convolver set hesuvi filename=~/hrir/other.wav
        The same Props, without the answer: pw-cli set-param <id> Props '{ params = [ "gain" 0.5 ] }'
        """

    static func run(_ arguments: [String]) throws {
        var remaining = arguments[...]
        var timeout = 60.0
        var nodeName: String?
        var params: [(String, ControlValue)] = []
        while let argument = remaining.popFirst() {
            if argument == "--timeout" {
                guard let text = remaining.popFirst(), let seconds = Double(text), seconds > 0 else {
                    throw UsageError("--timeout needs a positive number of seconds")
                }
                timeout = seconds
            } else if nodeName == nil {
                nodeName = argument
            } else if let equals = argument.firstIndex(of: "="), equals != argument.startIndex {
                let key = String(argument[..<equals])
                var value = String(argument[argument.index(after: equals)...])
                if key == "filename" { value = NodeConfiguration.expandingHome(value) }
                params.append((key, ControlValue(parsing: value)))
            } else {
                throw UsageError("'\(argument)' is not KEY=VALUE")
            }
        }
        guard let nodeName else { throw UsageError("which node? (its node.name, id or serial)") }
        guard !params.isEmpty else { throw UsageError("nothing to set: give KEY=VALUE") }

        let mainLoop = try PipeWireMainLoop()
        try withExtendedLifetime(mainLoop) {
            let client = try NodeControlClient(loop: mainLoop.loop)
            try client.readGraph(on: mainLoop, timeout: 10)
            let node = try client.convolverNode(nodeName)
            let (answer, now) = try client.set(params, on: node, mainLoop: mainLoop, timeout: timeout)
            guard answer == "ok" else { throw CommandFailure("node '\(node.name)' \(answer)") }
            let values = now.controls.filter { control in params.contains { $0.0 == control.key } }
            print("\(node.name): " + values.map { "\($0.key)=\(StatusCommand.text($0.value))" }.joined(separator: " "))
        }
    }
}
