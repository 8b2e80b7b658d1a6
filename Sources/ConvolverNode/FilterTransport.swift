// Filter mode: the convolver as one pw_filter with a DSP input and output port per channel
// position (`input_<POS>`, `output_<POS>`), routed by hand (pw-link, qpwgraph).
import CConvolverShims
import CPipeWire
import ConvolverGraph
import FixedMemory
import Glibc
import Workgroup

/// One pw_filter. Main loop: create, connect, `destroy()`. The data thread runs `process`.
final class FilterTransport: NodeTransport {
    private let realtime: RealtimeProcessor
    private var filter: OpaquePointer?
    /// PipeWire keeps pointers to the hook and the event table: both outlive the filter.
    private let listener = ListenerHook()
    /// Port data pointers from `pw_filter_add_port`, one per channel.
    private let inputPorts: FixedBuffer<UnsafeMutableRawPointer?>
    private let outputPorts: FixedBuffer<UnsafeMutableRawPointer?>
    private let nodeName: String
    private let onProps: (UnsafePointer<spa_pod>) -> Void

    /// Creates the filter and its ports (not yet connected). `onProps` gets Props set on the node (main loop).
    init(
        core: OpaquePointer, configuration: NodeConfiguration, realtime: RealtimeProcessor,
        onProps: @escaping (UnsafePointer<spa_pod>) -> Void
    ) throws(ConvolverNodeError) {
        self.realtime = realtime
        self.onProps = onProps
        nodeName = configuration.nodeName
        do {
            inputPorts = try FixedBuffer(repeating: nil, count: configuration.channelCount)
            outputPorts = try FixedBuffer(repeating: nil, count: configuration.outputCount)
        } catch {
            throw .engine("\(error)")
        }

        var properties = audioNodeProperties(
            name: configuration.nodeName, description: configuration.nodeDescription,
            positions: configuration.positions)
        properties += [(PW_KEY_MEDIA_CATEGORY, "Filter"), (PW_KEY_MEDIA_ROLE, "DSP")]
        if let target = configuration.targetObject { properties.append((PW_KEY_TARGET_OBJECT, target)) }
        properties += configuration.extraNodeProperties.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        // pw_filter_new takes ownership of the properties.
        guard let nodeProperties = makeProperties(properties) else { throw .pipeWire(call: "pw_properties_new", errno: ENOMEM) }
        let (created, error) = configuration.nodeName.withCString { name in withErrno { pw_filter_new(core, name, nodeProperties) } }
        guard let filter = created else { throw .pipeWire(call: "pw_filter_new", errno: error) }
        self.filter = filter
        pw_filter_add_listener(filter, listener.pointer, PipeWireCallbacks.filterEvents, Unmanaged.passUnretained(self).toOpaque())

        let portLists = [
            (SPA_DIRECTION_INPUT, "input", configuration.positions, inputPorts),
            (SPA_DIRECTION_OUTPUT, "output", configuration.outputChannelPositions, outputPorts),
        ]
        for (direction, prefix, positions, ports) in portLists {
            for (index, position) in positions.enumerated() {
                let portProperties = makeProperties([
                    (PW_KEY_FORMAT_DSP, "32 bit float mono audio"), (PW_KEY_PORT_NAME, "\(prefix)_\(position)"),
                    (PW_KEY_AUDIO_CHANNEL, position),
                ])
                guard let portProperties else {
                    destroy()
                    throw .pipeWire(call: "pw_properties_new(\(prefix)_\(position))", errno: ENOMEM)
                }
                guard
                    let port = pw_filter_add_port(
                        filter, direction, PW_FILTER_PORT_FLAG_MAP_BUFFERS,
                        MemoryLayout<UInt64>.size, portProperties, nil, 0)
                else {
                    let error = errno
                    destroy()
                    throw .pipeWire(call: "pw_filter_add_port(\(prefix)_\(position))", errno: error)
                }
                ports[index] = port
            }
        }
    }

    deinit {
        destroy()
    }

    var nodeID: UInt32 { filter.map { pw_filter_get_node_id($0) } ?? UInt32.max }
    let reportsProcessLatency = true

    /// RT_PROCESS: since PipeWire 1.1.81 a filter without it runs on the main loop, a cycle late.
    func connect(sampleRate: Int) throws(ConvolverNodeError) {
        guard let filter else { return }
        let result = pw_filter_connect(filter, PW_FILTER_FLAG_RT_PROCESS, nil, 0)
        guard result >= 0 else { throw .pipeWire(call: "pw_filter_connect", errno: -result) }
    }

    func updateParam(_ param: UnsafeMutablePointer<spa_pod>) {
        guard let filter else { return }
        var params: [UnsafePointer<spa_pod>?] = [UnsafePointer(param)]
        _ = pw_filter_update_params(filter, nil, &params, 1)
    }

    func updateProperties(_ dictionary: UnsafePointer<spa_dict>) {
        guard let filter else { return }
        _ = pw_filter_update_properties(filter, nil, dictionary)
    }

    /// pw_filter_destroy returns after the data thread left the filter's process for good.
    func destroy() {
        guard let filter else { return }
        pw_filter_destroy(filter)  // emits `destroy`, which removes our hook and clears `filter`
        if self.filter != nil {
            spa_hook_remove(listener.pointer)
            self.filter = nil
        }
    }

    /// One graph cycle: the ports' buffers for the clock's duration, then the processor.
    /// Real-time safe.
    func process(position: UnsafeMutablePointer<spa_io_position>?) {
        let startNanos = monotonicNanos()
        guard let position else { return }
        let clock = position.pointee.clock
        let frameCount = Int(clock.duration)
        realtime.statistics.recordClock(position: clock.position, duration: clock.duration, rate: UInt64(clock.rate.denom))
        for channel in 0..<realtime.inputCount {
            realtime.inputBuffers[channel] = UnsafePointer(
                pw_filter_get_dsp_buffer(inputPorts[channel], UInt32(frameCount))?.assumingMemoryBound(to: Float.self))
        }
        for channel in 0..<realtime.outputCount {
            realtime.outputBuffers[channel] =
                pw_filter_get_dsp_buffer(outputPorts[channel], UInt32(frameCount))?.assumingMemoryBound(to: Float.self)
        }
        realtime.process(
            frameCount: frameCount, sampleRate: Int(clock.rate.denom), deadline: clock.next_nsec,
            startNanos: startNanos)
    }

    // MARK: - Filter events (from PipeWireCallbacks, main loop)

    func filterDestroyed() {
        spa_hook_remove(listener.pointer)
        filter = nil
    }

    /// The connection's end is handled by the owner's CoreListener; errors are logged here.
    func filterFailed(error: UnsafePointer<CChar>?) {
        PipeWireLog.error("\(nodeName): filter error: \(error.map { String(cString: $0) } ?? "unknown")")
    }

    func propsChanged(_ param: UnsafePointer<spa_pod>) { onProps(param) }
}
