// Sink, source and stream modes: the convolver as two pw_streams sharing the node's
// RealtimeProcessor, built as PipeWire's own filter-chain and module-loopback build theirs. A
// capture stream receives the audio; a playback stream (`output.<name>`) sends the convolved audio
// on to `target.object` or the default sink. In sink mode the capture stream is a virtual sink
// (media.class Audio/Sink, the node apps pick); in source mode the playback stream is a virtual
// source (Audio/Source, the node apps record from); in stream mode both are plain streams.
// WirePlumber links them, because each is an ordinary stream with an audio/raw format its adapter
// can negotiate (a pw_filter's DSP ports offer none).
import CConvolverShims
import CPipeWire
import ConvolverGraph
import Glibc
import Synchronization
import Workgroup

/// The two streams of a node in sink mode. Main loop: create, connect, `destroy()`. The data
/// thread runs the capture stream's `process` (which triggers the playback stream) and the
/// playback stream's `process` (which takes both streams' buffers and runs the convolver).
///
/// Names, ports and where Props and statistics live:
/// - capture stream: `node.name = <name>`, media.class Audio/Sink, input ports `playback_<POS>`
///   and monitor ports `monitor_<POS>`; it carries Props (`pw-cli set-param <sink id> Props ...`)
///   and the `convolver.*` statistics properties;
/// - playback stream: `node.name = output.<name>`, Stream/Output/Audio, node.passive, output ports
///   `output_<POS>` (the output positions), `target.object` from the configuration.
/// Both share `node.group` and `node.link-group`, so they run in one graph cycle under one driver
/// and a session manager never links the one into the other.
final class SinkTransport: NodeTransport {
    private let realtime: RealtimeProcessor
    private var capture: OpaquePointer?
    private var playback: OpaquePointer?
    private let captureListener = ListenerHook()
    private let playbackListener = ListenerHook()
    /// The graph's position (SPA_IO_Position of the playback stream), for the cycle's deadline.
    private let position = Atomic<UnsafeMutableRawPointer?>(nil)
    /// The rate the capture stream's format was negotiated at (the buffers' rate); 0 = not yet.
    private let formatRate = Atomic<Int>(0)
    /// Cleared before the streams are destroyed; the callbacks touch the streams only while set.
    private let streamsUsable = Atomic<Bool>(false)
    private let onProps: (UnsafePointer<spa_pod>) -> Void
    private let nodeName: String
    private let playbackNodeName: String
    private let positions: [String]
    private let outputPositions: [String]
    /// Creates both streams (not yet connected). `onProps` gets Props set on the sink node (main loop).
    init(
        core: OpaquePointer, configuration: NodeConfiguration, realtime: RealtimeProcessor,
        onProps: @escaping (UnsafePointer<spa_pod>) -> Void
    ) throws(ConvolverNodeError) {
        self.realtime = realtime
        self.onProps = onProps
        nodeName = configuration.nodeName
        playbackNodeName = configuration.playbackNodeName
        positions = configuration.positions
        outputPositions = configuration.outputChannelPositions
        let group = "swift-convolver-\(getpid())-\(configuration.nodeName)"
        // Without a session manager a stream gets no ports until its adapter configures them
        // itself (docs/facts.md); a session manager configures them again its own way.
        let dspPorts = { (monitor: Bool) in
            "{ mode = dsp monitor = \(monitor) control = false position = preserve }"
        }
        let isSink = configuration.mode == .sink
        var captureProperties = audioNodeProperties(
            name: configuration.nodeName, description: configuration.nodeDescription,
            positions: configuration.positions)
        captureProperties += [
            (PW_KEY_MEDIA_CLASS, isSink ? "Audio/Sink" : "Stream/Input/Audio"),
            (PW_KEY_NODE_VIRTUAL, "true"), (PW_KEY_NODE_GROUP, group), (PW_KEY_NODE_LINK_GROUP, group),
            ("adapter.auto-port-config", dspPorts(isSink)),
        ]
        captureProperties += configuration.extraNodeProperties.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        captureProperties += configuration.captureProperties.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        var playbackProperties = audioNodeProperties(
            name: configuration.playbackNodeName,
            description: configuration.nodeDescription + " output",
            positions: configuration.outputChannelPositions)
        playbackProperties += [
            (PW_KEY_MEDIA_CLASS, configuration.mode == .source ? "Audio/Source" : "Stream/Output/Audio"),
            (PW_KEY_NODE_VIRTUAL, "true"), (PW_KEY_NODE_GROUP, group), (PW_KEY_NODE_LINK_GROUP, group),
            ("adapter.auto-port-config", dspPorts(false)),
        ]
        // Passive: the sink's output does not keep the downstream device running by itself.
        if isSink { playbackProperties.append((PW_KEY_NODE_PASSIVE, "true")) }
        if let target = configuration.targetObject { playbackProperties.append((PW_KEY_TARGET_OBJECT, target)) }
        for key in ["node.latency", "node.lock-quantum", "node.force-quantum"] {
            if let value = configuration.extraNodeProperties[key] { playbackProperties.append((key, value)) }
        }
        playbackProperties += configuration.playbackProperties.filter { $0.key != PW_KEY_NODE_NAME }
            .sorted { $0.key < $1.key }.map { ($0.key, $0.value) }

        // pw_stream_new takes ownership of the properties.
        func newStream(_ name: String, _ properties: [(String, String)]) -> (OpaquePointer?, errno: Int32) {
            guard let streamProperties = makeProperties(properties) else { return (nil, ENOMEM) }
            return name.withCString { name in withErrno { pw_stream_new(core, name, streamProperties) } }
        }
        let (capture, captureError) = newStream(configuration.nodeName, captureProperties)
        guard let capture else { throw .pipeWire(call: "pw_stream_new(\(configuration.nodeName))", errno: captureError) }
        self.capture = capture
        let (playback, playbackError) = newStream(configuration.playbackNodeName, playbackProperties)
        guard let playback else {
            destroy()
            throw .pipeWire(call: "pw_stream_new(\(configuration.playbackNodeName))", errno: playbackError)
        }
        self.playback = playback
        let userData = Unmanaged.passUnretained(self).toOpaque()
        pw_stream_add_listener(capture, captureListener.pointer, PipeWireCallbacks.captureStreamEvents, userData)
        pw_stream_add_listener(playback, playbackListener.pointer, PipeWireCallbacks.playbackStreamEvents, userData)
    }

    deinit {
        destroy()
    }

    /// The sink node's global id (SPA_ID_INVALID until the server assigned it).
    var nodeID: UInt32 { capture.map { pw_stream_get_node_id($0) } ?? UInt32.max }
    var playbackNodeID: UInt32 { playback.map { pw_stream_get_node_id($0) } ?? UInt32.max }
    let reportsProcessLatency = false

    /// Connects both streams with planar float formats at `sampleRate` (the engine's rate; the
    /// adapters resample when the graph runs at another one).
    func connect(sampleRate: Int) throws(ConvolverNodeError) {
        guard let capture, let playback else { return }
        streamsUsable.store(true, ordering: .sequentiallyConsistent)
        let streams: [(OpaquePointer, spa_direction, [String], pw_stream_flags, String)] = [
            (
                playback, SPA_DIRECTION_OUTPUT, outputPositions,
                pw_stream_flags(
                    PW_STREAM_FLAG_AUTOCONNECT.rawValue | PW_STREAM_FLAG_MAP_BUFFERS.rawValue
                        | PW_STREAM_FLAG_RT_PROCESS.rawValue | PW_STREAM_FLAG_TRIGGER.rawValue), playbackNodeName
            ),
            // ASYNC (PipeWire ≥ 0.3.73): the playback side's process dequeues the capture buffers; without
            // it PipeWire 1.x recycles them after the capture callback (traced: half the input lost,
            // the output silent downstream), as filter-chain's sink sets it.
            (
                capture, SPA_DIRECTION_INPUT, positions,
                pw_stream_flags(
                    PW_STREAM_FLAG_AUTOCONNECT.rawValue | PW_STREAM_FLAG_MAP_BUFFERS.rawValue
                        | PW_STREAM_FLAG_RT_PROCESS.rawValue | cpw_stream_flag_async()), nodeName
            ),
        ]
        for (stream, direction, positions, flags, name) in streams {
            // pw_stream_connect copies the format, so its bytes need not outlive the call.
            // (A Result: withUnsafeTemporaryAllocation passes typed throws on only from Swift 6.3.)
            let result = try withUnsafeTemporaryAllocation(byteCount: 1024, alignment: 8) { scratch in
                Result { () throws(ConvolverNodeError) in
                    let format = try Self.buildFormat(positions: positions, sampleRate: sampleRate, into: scratch)
                    var params: [UnsafePointer<spa_pod>?] = [UnsafePointer(format)]
                    // PW_ID_ANY (a cast macro Swift does not import): no particular target node.
                    return pw_stream_connect(stream, direction, UInt32.max, flags, &params, 1)
                }
            }.get()
            guard result >= 0 else { throw .pipeWire(call: "pw_stream_connect(\(name))", errno: -result) }
        }
    }

    /// Props (main loop): shown in the sink node's params.
    func updateParam(_ param: UnsafeMutablePointer<spa_pod>) {
        guard let capture else { return }
        var params: [UnsafePointer<spa_pod>?] = [UnsafePointer(param)]
        _ = pw_stream_update_params(capture, &params, 1)
    }

    /// Statistics properties (main loop), on the sink node.
    func updateProperties(_ dictionary: UnsafePointer<spa_dict>) {
        guard let capture else { return }
        _ = pw_stream_update_properties(capture, dictionary)
    }

    /// Stops the data thread's use of the streams, then destroys them, the capture side first
    /// (the one whose callback triggers the other). Idempotent. No wait is needed for callbacks in
    /// flight: pw_stream_destroy removes the stream's node from the data loop by a blocking invoke
    /// on that loop, so it returns only between two callbacks of that thread, and every later
    /// callback sees `streamsUsable` cleared (as filter-chain's streams are destroyed).
    func destroy() {
        streamsUsable.store(false, ordering: .sequentiallyConsistent)
        for (stream, listener) in [(capture, captureListener.pointer), (playback, playbackListener.pointer)] {
            guard let stream else { continue }
            pw_stream_destroy(stream)  // emits `destroy`, which removes the hook and clears the pointer
            if stream == capture { spa_hook_remove(listener); capture = nil }
            if stream == playback { spa_hook_remove(listener); playback = nil }
        }
    }

    // MARK: - Formats

    /// An EnumFormat pod: planar 32-bit float, `positions`, `sampleRate`. A fixed rate, because
    /// the adapter's auto-port-config (no session manager) negotiates only a complete format.
    static func buildFormat(
        positions: [String], sampleRate: Int,
        into buffer: UnsafeMutableRawBufferPointer
    ) throws(ConvolverNodeError) -> UnsafeMutablePointer<spa_pod> {
        var info = spa_audio_info_raw()
        info.format = SPA_AUDIO_FORMAT_F32P
        info.rate = UInt32(sampleRate)
        info.channels = UInt32(positions.count)
        var ids: [UInt32] = []
        for name in positions {
            let id = cpw_audio_channel_from_name(name)
            guard id != SPA_ID_INVALID else {
                throw .configuration(
                    NodeConfigurationError(
                        key: "audio.position",
                        message: "'\(name)' is not a channel position PipeWire knows (FL FR FC LFE SL SR RL RR … AUX0…AUX63); sink mode needs one"))
            }
            ids.append(id)
        }
        // SAFETY: `position` is a fixed array of SPA_AUDIO_MAX_CHANNELS (64) UInt32; positions.count ≤ 64
        // (NodeConfiguration.channelLimit).
        withUnsafeMutableBytes(of: &info.position) { raw in
            let slots = raw.bindMemory(to: UInt32.self)
            for (index, id) in ids.enumerated() where index < slots.count { slots[index] = id }
        }
        var builder = spa_pod_builder()
        spa_pod_builder_init(&builder, buffer.baseAddress, UInt32(buffer.count))
        guard let pod = spa_format_audio_raw_build(&builder, SPA_PARAM_EnumFormat.rawValue, &info) else {
            throw .pipeWire(call: "spa_format_audio_raw_build", errno: ENOSPC)
        }
        return pod
    }

    // MARK: - Data thread

    /// Capture stream's cycle: its buffer is ready; run the playback side now, in this cycle.
    /// Real-time safe: pw_stream_trigger_process runs the playback process inline on this thread.
    func captureProcess() {
        guard streamsUsable.load(ordering: .sequentiallyConsistent), let capture, let playback else { return }
        if pw_stream_trigger_process(playback) < 0 {
            // The playback side is not ready (not linked yet): recycle the input.
            while let buffer = pw_stream_dequeue_buffer(capture) { pw_stream_queue_buffer(capture, buffer) }
        }
    }

    /// Playback stream's cycle: newest capture buffer in, convolver, own buffer out. A missing
    /// input is silence (the reverb tail still rings out); a missing output buffer means nothing
    /// is sent this cycle. Real-time safe: no allocation, no locks, no logging.
    func playbackProcess() {
        let startNanos = monotonicNanos()
        guard streamsUsable.load(ordering: .sequentiallyConsistent), let capture, let playback else { return }

        // The newest capture buffer; older ones (if the capture side ran ahead) go back at once.
        var input: UnsafeMutablePointer<pw_buffer>?
        while let next = pw_stream_dequeue_buffer(capture) {
            if let older = input { pw_stream_queue_buffer(capture, older) }
            input = next
        }
        defer { if let input { pw_stream_queue_buffer(capture, input) } }
        guard let output = pw_stream_dequeue_buffer(playback) else { return }
        defer { pw_stream_queue_buffer(playback, output) }
        guard let outputBuffer = output.pointee.buffer else { return }

        let clock = position.load(ordering: .acquiring)?.assumingMemoryBound(to: spa_io_position.self)
        let sampleFloats = MemoryLayout<Float>.size
        // SAFETY: n_datas entries of `datas` are valid for the buffer's lifetime (this call).
        let outputDatas = outputBuffer.pointee.datas!
        let outputDataCount = Int(outputBuffer.pointee.n_datas)
        var capacity = Int.max
        for channel in 0..<realtime.outputCount {
            if channel < outputDataCount, let data = outputDatas[channel].data {
                realtime.outputBuffers[channel] = data.assumingMemoryBound(to: Float.self)
                capacity = min(capacity, Int(outputDatas[channel].maxsize) / sampleFloats)
            } else {
                realtime.outputBuffers[channel] = nil
            }
        }
        if capacity == .max { capacity = 0 }

        var frameCount: Int
        if let input, let inputBuffer = input.pointee.buffer {
            let inputDatas = inputBuffer.pointee.datas!
            let inputDataCount = Int(inputBuffer.pointee.n_datas)
            var inputFrames = Int.max
            for channel in 0..<realtime.inputCount {
                guard channel < inputDataCount, let data = inputDatas[channel].data,
                    let chunk = inputDatas[channel].chunk
                else {
                    realtime.inputBuffers[channel] = nil
                    continue
                }
                // Clamp the chunk to the mapped memory, as PipeWire's own modules do.
                let maxSize = Int(inputDatas[channel].maxsize)
                let offset = min(Int(chunk.pointee.offset), maxSize)
                let size = min(Int(chunk.pointee.size), maxSize - offset)
                realtime.inputBuffers[channel] = UnsafePointer((data + offset).assumingMemoryBound(to: Float.self))
                inputFrames = min(inputFrames, size / sampleFloats)
            }
            frameCount = inputFrames == .max ? Int(output.pointee.requested) : inputFrames
        } else {
            for channel in 0..<realtime.inputCount { realtime.inputBuffers[channel] = nil }
            frameCount = output.pointee.requested > 0 ? Int(output.pointee.requested) : Int(clock?.pointee.clock.duration ?? 0)
        }
        frameCount = min(frameCount, capacity)

        if let clock {
            realtime.statistics.recordClock(
                position: clock.pointee.clock.position, duration: clock.pointee.clock.duration,
                rate: UInt64(clock.pointee.clock.rate.denom))
        }
        if frameCount > 0 {
            let negotiatedRate = formatRate.load(ordering: .relaxed)
            let rate = negotiatedRate > 0 ? negotiatedRate : Int(clock?.pointee.clock.rate.denom ?? 0)
            realtime.process(
                frameCount: frameCount, sampleRate: rate, deadline: clock?.pointee.clock.next_nsec ?? 0,
                startNanos: startNanos)
        }
        for channel in 0..<min(outputDataCount, realtime.outputCount) {
            guard let chunk = outputDatas[channel].chunk else { continue }
            chunk.pointee.offset = 0
            chunk.pointee.size = UInt32(frameCount * sampleFloats)
            chunk.pointee.stride = Int32(sampleFloats)
        }
    }

    // MARK: - Stream events (from PipeWireCallbacks, main loop)

    func captureDestroyed() {
        spa_hook_remove(captureListener.pointer)
        capture = nil
    }

    func playbackDestroyed() {
        spa_hook_remove(playbackListener.pointer)
        playback = nil
    }

    func streamFailed(playback: Bool, error: UnsafePointer<CChar>?) {
        let stream = playback ? playbackNodeName : nodeName
        PipeWireLog.error("\(stream): stream error: \(error.map { String(cString: $0) } ?? "unknown")")
    }

    /// Props set on the sink; the capture stream's negotiated format, whose rate its buffers have.
    func captureParamChanged(_ id: UInt32, _ param: UnsafePointer<spa_pod>) {
        if id == SPA_PARAM_Props.rawValue {
            onProps(param)
        } else if id == SPA_PARAM_Format.rawValue {
            var info = spa_audio_info_raw()
            if spa_format_audio_raw_parse(param, &info) >= 0 {
                formatRate.store(Int(info.rate), ordering: .relaxed)
            }
        }
    }

    func positionChanged(_ area: UnsafeMutableRawPointer?) {
        position.store(area, ordering: .releasing)
    }
}
