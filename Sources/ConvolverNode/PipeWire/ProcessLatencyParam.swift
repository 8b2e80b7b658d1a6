import CConvolverShims
import CPipeWire
import Glibc

/// The node's own latency (`SPA_PARAM_ProcessLatency`), which PipeWire adds to the latency its
/// ports report downstream, so that the graph can compensate it.
enum ProcessLatencyParam {
    /// Builds the param for `frames` of latency into `buffer`; returns the pod inside it.
    static func build(frames: Int, into buffer: UnsafeMutableRawBufferPointer) -> UnsafeMutablePointer<spa_pod>? {
        var builder = spa_pod_builder()
        spa_pod_builder_init(&builder, buffer.baseAddress, UInt32(buffer.count))
        var frame = spa_pod_frame()
        spa_pod_builder_push_object(
            &builder, &frame, UInt32(SPA_TYPE_OBJECT_ParamProcessLatency),
            SPA_PARAM_ProcessLatency.rawValue)
        spa_pod_builder_prop(&builder, SPA_PARAM_PROCESS_LATENCY_quantum.rawValue, 0)
        spa_pod_builder_float(&builder, 0)
        spa_pod_builder_prop(&builder, SPA_PARAM_PROCESS_LATENCY_rate.rawValue, 0)
        spa_pod_builder_int(&builder, Int32(clamping: frames))
        spa_pod_builder_prop(&builder, SPA_PARAM_PROCESS_LATENCY_ns.rawValue, 0)
        spa_pod_builder_long(&builder, 0)
        return spa_pod_builder_pop(&builder, &frame)?.assumingMemoryBound(to: spa_pod.self)
    }
}
