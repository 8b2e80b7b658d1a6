// The values of a graph's plugin controls, shared by every build of one node's graph: a control
// change reaches the plugins at their next call, with no rebuild, so their state (a compressor's
// envelope, a limiter's look-ahead) carries on.
import Synchronization

/// One value per control input of each hosted node (filter-chain 0.3.x shares a node's controls
/// among its instances; 1.x sets every instance alike). The main loop sets them; each staged build
/// copies them into its plugins' ports at the start of a call when they changed.
public final class HostedControls: @unchecked Sendable {
    // @unchecked Sendable: every value is an atomic, and the tables are constant after init.
    /// By node index: the index of its first control input in `values` (nil: not hosted).
    private let firstIndex: [Int?]
    private let portNames: [[String]]
    private let values: UnsafeMutablePointer<Atomic<UInt32>>
    public let count: Int
    /// Bumped after every change (release), read by the data thread (acquire).
    private let changes = Atomic<Int>(0)

    public init(graph: FilterGraph) {
        var next = 0
        var firstIndex: [Int?] = [], portNames: [[String]] = []
        for node in graph.nodes {
            guard let plugin = node.kind.hosted else {
                firstIndex.append(nil)
                portNames.append([])
                continue
            }
            let names = plugin.ports.filter { $0.role == .controlInput }.map(\.name)
            firstIndex.append(next)
            portNames.append(names)
            next += names.count
        }
        self.firstIndex = firstIndex
        self.portNames = portNames
        count = next
        values = UnsafeMutablePointer<Atomic<UInt32>>.allocate(capacity: max(next, 1))
        for (node, names) in portNames.enumerated() {
            for (offset, name) in names.enumerated() {
                let value = graph.nodes[node].controls.first { $0.port == name }?.value ?? 0
                (values + firstIndex[node]! + offset).initialize(to: Atomic(Float(value).bitPattern))
            }
        }
    }

    deinit {
        values.deinitialize(count: count)
        values.deallocate()
    }

    /// Where `node`'s control `port` is kept (nil: no such hosted control).
    public func index(node: Int, port: String) -> Int? {
        guard node < firstIndex.count, let first = firstIndex[node], let offset = portNames[node].firstIndex(of: port) else { return nil }
        return first + offset
    }

    /// Main loop: the plugins hear `value` from their next call on.
    public func set(node: Int, port: String, value: Double) {
        guard let index = index(node: node, port: port) else { return }
        values[index].store(Float(value).bitPattern, ordering: .relaxed)
        changes.add(1, ordering: .releasing)
    }

    /// How many changes were made so far. Real-time safe.
    @inline(__always) var changeCount: Int { changes.load(ordering: .acquiring) }

    /// Real-time safe.
    @inline(__always) func value(at index: Int) -> Float { Float(bitPattern: values[index].load(ordering: .relaxed)) }
}
