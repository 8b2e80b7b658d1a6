// A PipeWire client for `pw-convolver set` and `status`: it binds the graph's nodes, keeps what
// the swift-convolver nodes among them publish (their properties and Props), and sends Props to
// one of them. It runs on the caller's main loop: one thread, no locks.
import CConvolverShims
import CPipeWire
import Convolution
import ConvolverGraph
import Glibc

public enum NodeControlError: Error, CustomStringConvertible, Equatable {
    case cannotConnect(runtimeDirectory: String)
    case connectionLost(String)
    case noAnswer(what: String, seconds: Double)
    case noSuchNode(String, convolverNodes: [String])
    case notAConvolver(String)
    case ambiguous(String, ids: [UInt32])
    case tooLong

    public var description: String {
        switch self {
        case let .cannotConnect(directory):
            "cannot connect to PipeWire (XDG_RUNTIME_DIR=\(directory)): is a daemon running there?"
        case let .connectionLost(reason):
            reason
        case let .noAnswer(what, seconds):
            "no answer from \(what) within \(String(cFormat: "%g", seconds)) s"
        case let .noSuchNode(name, nodes):
            "no node '\(name)' in the graph"
                + (nodes.isEmpty ? ": no swift-convolver node runs" : "; swift-convolver nodes: \(nodes.joined(separator: ", "))")
        case let .notAConvolver(name):
            "node '\(name)' is not a swift-convolver node (it publishes no convolver.* properties)"
        case let .ambiguous(name, ids):
            "several nodes are named '\(name)' (ids \(ids.map(String.init).joined(separator: ", "))): give the id"
        case .tooLong:
            "the values do not fit in one Props message (4 KiB)"
        }
    }
}

/// What one swift-convolver node publishes, as the client last heard it.
public struct ConvolverNodeState {
    public var id: UInt32
    public var name: String
    /// All the node's properties (its `convolver.*` statistics among them).
    public var properties: [String: String]
    /// Its Props `params` (gain, mix, bypass, width, crossfade, filename, sofa.*), in its order.
    public var controls: [(key: String, value: ControlValue)]

    /// The number and text of `convolver.control-answer` ("7 ok" → 7, "ok").
    var answer: (request: Int, text: String)? {
        guard let answer = properties[ControlAnswers.answerKey], let space = answer.firstIndex(of: " "),
            let request = Int(answer[..<space])
        else { return nil }
        return (request, String(answer[answer.index(after: space)...]))
    }
}

public final class NodeControlClient {
    private let context: OpaquePointer
    private let core: OpaquePointer
    private let registry: OpaquePointer
    // PipeWire keeps pointers to the hooks: they live at fixed heap addresses until deinit.
    private let registryHook = ListenerHook()
    private let registryProxyHook = ListenerHook()
    private var coreListener: CoreListener?
    private var nodes: [UInt32: BoundNode] = [:]
    private var syncSequence: Int32 = -1
    private var syncsLeft = 0
    private var connectionLost: String?
    /// Runs on the loop when the graph was read, a node's properties changed or the connection ended.
    private var onChange: () -> Void = {}

    /// Connects on `loop` (the caller runs it).
    public init(loop: UnsafeMutablePointer<pw_loop>) throws(NodeControlError) {
        let runtimeDirectory = SystemFiles.environment("XDG_RUNTIME_DIR") ?? "(unset)"
        guard let context = pw_context_new(loop, nil, 0) else { throw .cannotConnect(runtimeDirectory: runtimeDirectory) }
        self.context = context
        guard let core = pw_context_connect(context, nil, 0) else {
            pw_context_destroy(context)
            throw .cannotConnect(runtimeDirectory: runtimeDirectory)
        }
        self.core = core
        guard let registry = pw_core_get_registry(core, UInt32(PW_VERSION_REGISTRY), 0) else {
            pw_core_disconnect(core)
            pw_context_destroy(context)
            throw .cannotConnect(runtimeDirectory: runtimeDirectory)
        }
        self.registry = registry
        let userData = Unmanaged.passUnretained(self).toOpaque()
        // pw_registry_add_listener is a macro over the proxy's object listener: call that directly.
        pw_proxy_add_object_listener(registry, registryHook.pointer, UnsafeRawPointer(PipeWireCallbacks.controlRegistryEvents), userData)
        pw_proxy_add_listener(registry, registryProxyHook.pointer, PipeWireCallbacks.controlRegistryProxyEvents, userData)
        coreListener = CoreListener(core: core) { [unowned self] reason in
            connectionLost = reason
            onChange()
        }
    }

    deinit {
        if connectionLost == nil {
            for node in nodes.values { node.unbind() }
            spa_hook_remove(registryHook.pointer)
            spa_hook_remove(registryProxyHook.pointer)
            pw_proxy_destroy(registry)
            coreListener?.remove()
            pw_core_disconnect(core)
        }
        pw_context_destroy(context)  // after a lost connection: also the core and its proxies
    }

    // MARK: - What the commands use

    /// Runs `mainLoop` until every node was bound and the swift-convolver nodes' Props were read.
    public func readGraph(on mainLoop: PipeWireMainLoop, timeout: Double) throws(NodeControlError) {
        // Three round trips: the registry's globals (each node bound as it comes), the nodes'
        // info (which says which are ours), then our nodes' Props.
        syncsLeft = 3
        syncSequence = pw_proxy_sync(registry, 0)
        try run(mainLoop, timeout: timeout, waitingFor: "the PipeWire daemon") { [unowned self] in syncsLeft == 0 }
    }

    /// The swift-convolver nodes, by id.
    public var convolverNodes: [ConvolverNodeState] {
        nodes.values.compactMap(\.state).sorted { $0.id < $1.id }
    }

    /// The node numbered (id), named (node.name) or serial (object.serial) `name`; it must be a
    /// swift-convolver node.
    public func convolverNode(_ name: String) throws(NodeControlError) -> ConvolverNodeState {
        let ids = Self.nodeIDs(matching: name, among: nodes.values.map { ($0.id, $0.properties) })
        guard let id = ids.first, let match = nodes[id] else { throw .noSuchNode(name, convolverNodes: convolverNodes.map(\.name)) }
        guard ids.count == 1 else { throw .ambiguous(name, ids: ids) }
        guard let state = match.state else { throw .notAConvolver(name) }
        return state
    }

    /// The ids `name` picks: the node with that id, else the nodes with that node.name, else the
    /// one with that object.serial. Ids and serials are both small numbers: an id must not also
    /// pick the node whose serial it happens to equal.
    static func nodeIDs(matching name: String, among nodes: [(id: UInt32, properties: [String: String])]) -> [UInt32] {
        let byID = nodes.filter { "\($0.id)" == name }
        let byName = nodes.filter { $0.properties[PW_KEY_NODE_NAME] == name }
        let bySerial = nodes.filter { $0.properties[PW_KEY_OBJECT_SERIAL] == name }
        return ([byID, byName, bySerial].first { !$0.isEmpty } ?? []).map(\.id).sorted()
    }

    /// Sends `params` as the node's Props and runs `mainLoop` until the node answers them; returns
    /// the answer ("ok" or "refused: …") and the node as it is then.
    public func set(
        _ params: [(String, ControlValue)], on node: ConvolverNodeState, mainLoop: PipeWireMainLoop, timeout: Double
    ) throws(NodeControlError) -> (answer: String, node: ConvolverNodeState) {
        guard let bound = nodes[node.id] else { throw .notAConvolver(node.name) }
        // The node numbers requests as they come: this one is the next.
        let request = (Int(node.properties[ControlAnswers.requestsKey] ?? "0") ?? 0) + 1
        // The pod is marshalled to the daemon by the call, so its bytes need not outlive it.
        let sent = withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 8) { scratch in
            guard let pod = PropsParam.build(params, into: scratch) else { return false }
            _ = cpw_node_set_param(bound.proxy, SPA_PARAM_Props.rawValue, pod)
            return true
        }
        guard sent else { throw .tooLong }
        try run(mainLoop, timeout: timeout, waitingFor: "node '\(node.name)'") {
            (bound.state?.answer?.request ?? 0) >= request
        }
        guard let state = bound.state, let answer = state.answer else { throw .notAConvolver(node.name) }
        if answer.request > request {
            return ("overtaken by a later request to the node, whose answer is: \(answer.text)", state)
        }
        // Its Props as they are now (a new IR is published when it is in use, before the answer).
        try readProps(of: bound, on: mainLoop, timeout: timeout)
        return (answer.text, bound.state ?? state)
    }

    // MARK: - The loop

    private func run(
        _ mainLoop: PipeWireMainLoop, timeout: Double, waitingFor what: String, until done: @escaping () -> Bool
    ) throws(NodeControlError) {
        if connectionLost == nil && !done() {
            onChange = { [unowned self, unowned mainLoop] in
                if connectionLost != nil || done() { mainLoop.quit() }
            }
            let timer = mainLoop.timer(after: timeout) { [unowned mainLoop] in mainLoop.quit() }
            mainLoop.run()
            timer.cancel()
            onChange = {}
        }
        if let connectionLost { throw .connectionLost(connectionLost) }
        if !done() { throw .noAnswer(what: what, seconds: timeout) }
    }

    private func readProps(of node: BoundNode, on mainLoop: PipeWireMainLoop, timeout: Double) throws(NodeControlError) {
        node.controls = []
        _ = cpw_node_enum_params(node.proxy, 0, SPA_PARAM_Props.rawValue)
        syncsLeft = 1
        syncSequence = pw_proxy_sync(registry, 0)
        try run(mainLoop, timeout: timeout, waitingFor: "node '\(node.name)'") { [unowned self] in syncsLeft == 0 }
    }

    // MARK: - Events (from PipeWireCallbacks)

    func registryGlobal(id: UInt32, type: String) {
        guard type == "PipeWire:Interface:Node", nodes[id] == nil,
            let proxy = pw_registry_bind(registry, id, type, UInt32(PW_VERSION_NODE), 0)
        else { return }
        nodes[id] = BoundNode(id: id, proxy: proxy, client: self)
    }

    func registryGlobalRemoved(id: UInt32) {
        nodes.removeValue(forKey: id)?.unbind()
    }

    func synced(sequence: Int32) {
        guard sequence == syncSequence, syncsLeft > 0 else { return }
        syncsLeft -= 1
        if syncsLeft == 1 {  // every node's info is in: ask ours for their Props
            for node in nodes.values where node.state != nil {
                node.controls = []
                _ = cpw_node_enum_params(node.proxy, 0, SPA_PARAM_Props.rawValue)
            }
        }
        if syncsLeft > 0 { syncSequence = pw_proxy_sync(registry, 0) }
        onChange()
    }

    func nodeChanged() { onChange() }
}

/// One bound node: its properties from its info events, its Props from param events.
final class BoundNode {
    let id: UInt32
    let proxy: OpaquePointer
    private unowned let client: NodeControlClient
    private let hook = ListenerHook()
    private var bound = true
    var properties: [String: String] = [:]
    var controls: [(key: String, value: ControlValue)] = []

    init(id: UInt32, proxy: UnsafeMutableRawPointer, client: NodeControlClient) {
        self.id = id
        self.proxy = OpaquePointer(proxy)
        self.client = client
        pw_proxy_add_object_listener(
            self.proxy, hook.pointer, UnsafeRawPointer(PipeWireCallbacks.controlNodeEvents), Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        unbind()
    }

    func unbind() {
        guard bound else { return }
        bound = false
        spa_hook_remove(hook.pointer)
        pw_proxy_destroy(proxy)
    }

    var name: String { properties[PW_KEY_NODE_NAME] ?? "\(id)" }

    /// Nil unless the node publishes swift-convolver's statistics.
    var state: ConvolverNodeState? {
        guard properties["convolver.calls"] != nil else { return nil }
        return ConvolverNodeState(id: id, name: name, properties: properties, controls: controls)
    }

    // MARK: - Events (from PipeWireCallbacks)

    func info(_ info: UnsafePointer<pw_node_info>) {
        guard info.pointee.change_mask & UInt64(PW_NODE_CHANGE_MASK_PROPS) != 0, let dictionary = info.pointee.props else { return }
        var properties: [String: String] = [:]
        for index in 0..<Int(dictionary.pointee.n_items) {
            let item = dictionary.pointee.items[index]
            if let key = item.key, let value = item.value { properties[String(cString: key)] = String(cString: value) }
        }
        self.properties = properties
        client.nodeChanged()
    }

    func param(id: UInt32, _ pod: UnsafePointer<spa_pod>) {
        guard id == SPA_PARAM_Props.rawValue else { return }
        controls = PropsParam.values(pod)
        client.nodeChanged()
    }
}
