// A graph with hosted plugins as it runs on the data thread: the StagePlan's steps in order, each
// a compiled matrix then the plugin instances of its wave, over buffers allocated at setup.
import Convolution
import FixedMemory

/// The stages of one graph at one rate: plugin instances, the buffers between stages, the
/// compiled parts. Built off the real-time thread; `process` is real-time safe on our side.
public final class StagedGraph {
    /// Frames the buffers between stages hold; a longer call runs in pieces of this size.
    public static let pieceFrames = 8192

    private final class Step {
        let compiled: CompiledStage?
        let sources: FixedBuffer<Int>
        let targets: FixedBuffer<Int>
        let inputTable: FixedBuffer<UnsafePointer<Float>?>
        let outputTable: FixedBuffer<UnsafeMutablePointer<Float>?>
        let instances: [any PluginInstance]

        init(_ step: StagePlan.Step, compiled: CompiledStage?, instances: [any PluginInstance]) throws(ResourceError) {
            self.compiled = compiled
            sources = try FixedBuffer(repeating: 0, count: step.sources.count)
            targets = try FixedBuffer(repeating: 0, count: step.targets.count)
            for (index, source) in step.sources.enumerated() { sources[index] = source }
            for (index, target) in step.targets.enumerated() { targets[index] = target }
            inputTable = try FixedBuffer(repeating: nil, count: step.sources.count)
            outputTable = try FixedBuffer(repeating: nil, count: step.targets.count)
            self.instances = instances
        }
    }

    private let inputChannels: Int
    private let outputChannels: Int
    private let steps: [Step]
    private let finalStep: Step
    /// Every source's samples for this piece: the stream's inputs, then the plugins' outputs.
    private let sourcePointers: FixedBuffer<UnsafePointer<Float>?>
    /// The plugins' outputs, then their inputs, then one piece of silence: `pieceFrames` each.
    private let audio: FixedBuffer<Float>
    /// Every plugin instance's control ports, in the order of `StagePlan.Step.runs`.
    private let controls: FixedBuffer<Float>
    /// Each of `controls`' shared value in `hostedControls` (-1: an output port, the plugin's own).
    private let controlSources: FixedBuffer<Int>
    private let hostedControls: HostedControls
    /// `hostedControls.changeCount` when `controls` last took its values (-1: never).
    private var controlsTaken = -1
    public let compiledStages: [CompiledStage]

    /// `compiled[k]`: step k's matrix as an engine (nil where the step has none). Instantiates and
    /// activates every plugin, connected to this graph's buffers.
    public init(
        graph: FilterGraph, plan: StagePlan, compiled: [CompiledStage?], controls hostedControls: HostedControls, sampleRate: Int
    ) throws(ConvolverNodeError) {
        self.hostedControls = hostedControls
        let frames = Self.pieceFrames
        inputChannels = plan.inputChannels
        outputChannels = plan.outputChannels
        let hostedOutputs = plan.sourceCount - plan.inputChannels
        let controlCount = plan.steps.flatMap(\.runs).reduce(0) { count, run in
            guard let plugin = graph.nodes[run.node].kind.hosted else { return count }
            return count + plugin.ports.filter { $0.role == .controlInput || $0.role == .controlOutput }.count
        }
        let sourcePointers: FixedBuffer<UnsafePointer<Float>?>, audio: FixedBuffer<Float>, controls: FixedBuffer<Float>
        let controlSources: FixedBuffer<Int>
        do {
            sourcePointers = try FixedBuffer(repeating: nil, count: plan.sourceCount)
            audio = try FixedBuffer(repeating: 0, count: (hostedOutputs + plan.sinkCount + 1) * frames)
            controls = try FixedBuffer(repeating: 0, count: controlCount)
            controlSources = try FixedBuffer(repeating: -1, count: controlCount)
        } catch { throw .engine("\(error)") }
        (self.sourcePointers, self.audio, self.controls, self.controlSources) = (sourcePointers, audio, controls, controlSources)
        let sinkBase = audio.pointer + hostedOutputs * frames
        let silence = sinkBase + plan.sinkCount * frames
        for source in plan.inputChannels..<plan.sourceCount {
            sourcePointers[source] = UnsafePointer(audio.pointer + (source - plan.inputChannels) * frames)
        }
        var nextControl = 0
        var built: [Step] = []
        for (index, step) in plan.steps.enumerated() {
            var instances: [any PluginInstance] = []
            for run in step.runs {
                let node = graph.nodes[run.node]
                guard let plugin = node.kind.hosted else { continue }
                let audioInputs = plugin.ports.filter { $0.role == .audioInput }.map(\.index)
                let audioOutputs = plugin.ports.filter { $0.role == .audioOutput }.map(\.index)
                do {
                    instances.append(
                        try plugin.instantiate(sampleRate: sampleRate) { port in
                            switch port.role {
                            case .audioInput:
                                let fed = run.inputs[audioInputs.firstIndex(of: port.index)!].map { sinkBase + $0 * frames }
                                return fed ?? (plugin.acceptsUnconnectedInputs ? nil : silence)
                            case .audioOutput:
                                return audio.pointer + (run.outputs[audioOutputs.firstIndex(of: port.index)!] - plan.inputChannels) * frames
                            case .controlInput, .controlOutput:
                                let storage = controls.pointer + nextControl
                                storage.pointee = Float(node.controls.first { $0.port == port.name }?.value ?? 0)
                                if port.role == .controlInput {
                                    controlSources[nextControl] = hostedControls.index(node: run.node, port: port.name) ?? -1
                                }
                                nextControl += 1
                                return storage
                            }
                        })
                } catch {
                    throw .configuration(NodeConfigurationError(key: "filter.graph node '\(node.name)'", message: error.description))
                }
            }
            do {
                built.append(try Step(step, compiled: compiled[index], instances: instances))
            } catch { throw .engine("\(error)") }
        }
        for (index, step) in built.enumerated() {
            for source in 0..<step.sources.count { step.inputTable[source] = sourcePointers[step.sources[source]] }
            if index < built.count - 1 {
                for target in 0..<step.targets.count { step.outputTable[target] = sinkBase + step.targets[target] * frames }
            }
        }
        finalStep = built.removeLast()
        steps = built
        compiledStages = compiled.compactMap { $0 }
    }

    /// One call: every step in order, in pieces of at most `pieceFrames`. `inputs[c] == nil` is
    /// silence; `outputs[c] == nil` is computed and discarded. Real-time safe on our side: no
    /// allocation, no lock (what a plugin does inside its `run` is the plugin's business).
    public func process(
        inputs: UnsafePointer<UnsafePointer<Float>?>, outputs: UnsafePointer<UnsafeMutablePointer<Float>?>, frameCount: Int
    ) {
        takeControlChanges()
        var offset = 0
        while offset < frameCount {
            let frames = min(Self.pieceFrames, frameCount - offset)
            for channel in 0..<inputChannels { sourcePointers[channel] = inputs[channel].map { $0 + offset } }
            for step in steps {
                run(step, frameCount: frames)
            }
            for target in 0..<finalStep.targets.count {
                finalStep.outputTable[target] = outputs[finalStep.targets[target]].map { $0 + offset }
            }
            if finalStep.compiled == nil {
                for target in 0..<finalStep.targets.count { finalStep.outputTable[target]?.update(repeating: 0, count: frames) }
            }
            run(finalStep, frameCount: frames)
            offset += frames
        }
    }

    /// The shared control values, copied into the plugins' ports if they changed. Real-time safe.
    @inline(__always)
    private func takeControlChanges() {
        let changes = hostedControls.changeCount
        guard changes != controlsTaken else { return }
        controlsTaken = changes
        for index in 0..<controlSources.count where controlSources[index] >= 0 {
            controls[index] = hostedControls.value(at: controlSources[index])
        }
    }

    @inline(__always)
    private func run(_ step: Step, frameCount: Int) {
        // The stream's inputs move with each piece; the plugins' outputs stay where they are.
        for source in 0..<step.sources.count where step.sources[source] < inputChannels {
            step.inputTable[source] = sourcePointers[step.sources[source]]
        }
        step.compiled?.process(
            inputs: UnsafePointer(step.inputTable.pointer), outputs: UnsafePointer(step.outputTable.pointer), frameCount: frameCount)
        guard !step.instances.isEmpty else { return }
        // As filter-chain runs them: with denormals (our engines flush them, on the same thread).
        DenormalFlush.disableOnCurrentThread()
        for instance in step.instances { instance.run(frameCount: frameCount) }
        DenormalFlush.enableOnCurrentThread()
    }
}
