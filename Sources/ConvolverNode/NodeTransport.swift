import CPipeWire
import ConvolverGraph

/// How a node meets the graph: one pw_filter with DSP ports (`FilterTransport`, routed by hand),
/// or a virtual sink's two streams (`SinkTransport`, routed by a session manager). The node owns
/// one on the main loop; on the data thread the transport looks up each cycle's buffers and hands
/// them to the node's `RealtimeProcessor`.
protocol NodeTransport: AnyObject {
    /// The global id of the node that carries Props and statistics (SPA_ID_INVALID until assigned).
    var nodeID: UInt32 { get }
    /// Whether the node's ProcessLatency is the transport's to report (a sink's stream adapters
    /// own theirs).
    var reportsProcessLatency: Bool { get }
    /// Connects to the graph; `sampleRate` is the engine's (a fixed format needs one).
    func connect(sampleRate: Int) throws(ConvolverNodeError)
    /// Sets one param (Props, ProcessLatency) on the node that carries them. Main loop.
    func updateParam(_ param: UnsafeMutablePointer<spa_pod>)
    /// Sets properties (the statistics) on the node that carries them. Main loop.
    func updateProperties(_ dictionary: UnsafePointer<spa_dict>)
    /// Stops the data thread's use of the transport, then destroys it. Idempotent.
    func destroy()
}

/// The properties every node of ours starts from: an audio node named and described as configured,
/// with its channel count and positions.
func audioNodeProperties(name: String, description: String, positions: [String]) -> [(String, String)] {
    [
        (PW_KEY_MEDIA_TYPE, "Audio"), (PW_KEY_NODE_NAME, name), (PW_KEY_NODE_DESCRIPTION, description),
        (PW_KEY_MEDIA_NAME, description),
        ("audio.channels", "\(positions.count)"), ("audio.position", positions.joined(separator: ",")),
    ]
}
