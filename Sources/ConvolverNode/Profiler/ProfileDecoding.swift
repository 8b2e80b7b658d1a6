// Decoding the `profile` event of PipeWire's module-profiler into Swift values.
//
// The event carries one SPA Struct pod holding one Object (type SPA_TYPE_OBJECT_Profiler) per driver
// cycle. Each object has the properties of `spa/param/profiler.h`: `info`, `clock`, one `driverBlock`
// and one `followerBlock` per node the driver ran. Each property value is a Struct whose fields are
// read in order with libspa's own pod parser; newer PipeWire versions append fields at the end, so
// fields after the ones read here are ignored (0.3.65 and 1.x both decode).
import CPipeWire

/// The timing of one node in one cycle, in CLOCK_MONOTONIC nanoseconds (profiler "driverBlock" /
/// "followerBlock").
public struct NodeCycleTiming: Equatable {
    public var id: UInt32
    public var name: String
    /// When the node was told to run the cycle before.
    public var previousSignal: Int64 = 0
    /// When the node was told to run (its dependencies were done).
    public var signal: Int64
    /// When the node's thread woke up to run it.
    public var awake: Int64
    /// When the node finished its cycle.
    public var finish: Int64
    /// The node's activation status when the cycle was sampled (see `finishedStatus`).
    public var status: Int32
    /// The node's own latency (quantum/rate it asked for).
    public var latency: spa_fraction

    /// `PW_NODE_ACTIVATION_FINISHED` (private header `pipewire/private.h`, stable since 0.3.0):
    /// the node completed its work in this cycle.
    public static let finishedStatus: Int32 = 3

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.id == rhs.id && lhs.name == rhs.name && lhs.previousSignal == rhs.previousSignal
            && lhs.signal == rhs.signal && lhs.awake == rhs.awake
            && lhs.finish == rhs.finish && lhs.status == rhs.status
            && lhs.latency.num == rhs.latency.num && lhs.latency.denom == rhs.latency.denom
    }
}

/// One driver cycle as reported by module-profiler.
public struct ProfilerCycle: Equatable {
    /// Frames in this cycle (the quantum the graph ran with: `clock.duration`).
    public var quantum: Int64
    /// Sample rate of the cycle (denominator of `clock.rate`, which is 1/rate).
    public var rate: UInt32
    /// The driver's xrun counter (`info`).
    public var driverXrunCount: Int32
    public var driver: NodeCycleTiming
    public var followers: [NodeCycleTiming]

    /// Length of the cycle in nanoseconds: the time every node had to finish in.
    public var periodNanoseconds: Int64 {
        rate == 0 ? 0 : quantum * 1_000_000_000 / Int64(rate)
    }

    /// Whether `timing` is a run of the node for this cycle: signalled in it (a node the driver
    /// runs in its cycle), or in the cycle before, whose times the profiler reports for PipeWire
    /// 1.x's asynchronous nodes (streams without RT_PROCESS, such as pw-play and pw-record).
    /// Older times belong to a node that did not run. As pw-top, a run's times must be in order.
    public func ran(_ timing: NodeCycleTiming) -> Bool {
        let signalled = timing.signal >= driver.signal || (driver.previousSignal > 0 && timing.signal >= driver.previousSignal)
        return signalled && timing.awake >= timing.signal && timing.finish >= timing.awake
    }

    /// A node's cycle is late when the node did not run or finish in the cycle, or finished after
    /// the cycle's period was over: counted from the driver's signal (the start of the cycle), or
    /// for an asynchronous node from its own signal (it has a whole period from there).
    public func isLate(_ timing: NodeCycleTiming) -> Bool {
        guard ran(timing) else { return true }
        guard timing.signal >= driver.signal else {
            return periodNanoseconds > 0 && timing.finish - timing.signal > periodNanoseconds
        }
        if timing.status != NodeCycleTiming.finishedStatus { return true }
        return periodNanoseconds > 0 && timing.finish - driver.signal > periodNanoseconds
    }
}

public enum ProfileDecodingError: Error, CustomStringConvertible {
    case notAStruct(type: UInt32)
    case badProperty(name: String)

    public var description: String {
        switch self {
        case .notAStruct(let type): "profiler event: expected a Struct pod, got SPA type \(type)"
        case .badProperty(let name): "profiler event: property '\(name)' is not the expected Struct"
        }
    }
}

/// Decodes one `profile` event pod. Cycles without a driver block are skipped.
public func decodeProfile(_ pod: UnsafePointer<spa_pod>) throws(ProfileDecodingError) -> [ProfilerCycle] {
    guard pod.pointee.type == UInt32(SPA_TYPE_Struct) else { throw .notAStruct(type: pod.pointee.type) }
    var parser = structBodyParser(pod)
    var cycles: [ProfilerCycle] = []
    while let object = spa_pod_parser_next(&parser) {
        guard spa_pod_is_object_type(object, UInt32(SPA_TYPE_OBJECT_Profiler)) else { continue }
        if let cycle = try decodeCycle(UnsafePointer(object)) { cycles.append(cycle) }
    }
    return cycles
}

/// Decodes one Profiler object (one cycle).
private func decodeCycle(_ object: UnsafePointer<spa_pod>) throws(ProfileDecodingError) -> ProfilerCycle? {
    var quantum: Int64 = 0
    var rate: UInt32 = 0
    var xrunCount: Int32 = 0
    var driver: NodeCycleTiming?
    var followers: [NodeCycleTiming] = []
    // SAFETY: the caller checked that `object` is an Object pod, so it starts with a spa_pod_object
    // header, and its props lie within `pod.size` bytes after the header (checked by
    // spa_pod_prop_is_inside before each prop is read).
    let size = object.pointee.size
    let body = UnsafeRawPointer(object).advanced(by: MemoryLayout<spa_pod>.size)
        .assumingMemoryBound(to: spa_pod_object_body.self)
    guard let first = spa_pod_prop_first(body) else { return nil }
    var prop = UnsafePointer(first)
    let valueOffset = MemoryLayout<spa_pod_prop>.offset(of: \spa_pod_prop.value)!
    while spa_pod_prop_is_inside(body, size, prop) {
        let value = UnsafeRawPointer(prop).advanced(by: valueOffset).assumingMemoryBound(to: spa_pod.self)
        switch prop.pointee.key {
        case SPA_PROFILER_info.rawValue:
            var fields = try StructFields(value, name: "info")
            _ = fields.long()  // counter
            _ = fields.float(); _ = fields.float(); _ = fields.float()  // cpu load fast/medium/slow
            xrunCount = fields.int() ?? 0
        case SPA_PROFILER_clock.rawValue:
            var fields = try StructFields(value, name: "clock")
            _ = fields.int(); _ = fields.int(); _ = fields.string()  // flags, id, name
            _ = fields.long()  // nsec
            rate = fields.fraction()?.denom ?? 0
            _ = fields.long()  // position
            quantum = fields.long() ?? 0  // duration
        case SPA_PROFILER_driverBlock.rawValue:
            driver = try decodeNodeBlock(value, name: "driverBlock")
        case SPA_PROFILER_followerBlock.rawValue:
            followers.append(try decodeNodeBlock(value, name: "followerBlock"))
        default:
            break
        }
        guard let next = spa_pod_prop_next(prop) else { break }
        prop = UnsafePointer(next)
    }
    guard let driver else { return nil }
    return ProfilerCycle(quantum: quantum, rate: rate, driverXrunCount: xrunCount, driver: driver, followers: followers)
}

/// driverBlock and followerBlock share their first fields:
/// (Int id, String name, Long prev_signal, Long signal, Long awake, Long finish, Int status, Fraction latency, ...).
private func decodeNodeBlock(_ value: UnsafePointer<spa_pod>, name: String) throws(ProfileDecodingError) -> NodeCycleTiming {
    var fields = try StructFields(value, name: name)
    let id = UInt32(bitPattern: fields.int() ?? -1)
    let nodeName = fields.string() ?? "\(id)"
    let previousSignal = fields.long() ?? 0
    let signal = fields.long() ?? 0
    let awake = fields.long() ?? 0
    let finish = fields.long() ?? 0
    let status = fields.int() ?? 0
    let latency = fields.fraction() ?? spa_fraction(num: 0, denom: 0)
    return NodeCycleTiming(
        id: id, name: nodeName, previousSignal: previousSignal, signal: signal, awake: awake, finish: finish,
        status: status, latency: latency)
}

/// A parser over the fields of a Struct pod (the caller checked the type). The parser is set on the
/// struct's body instead of being pushed into it: spa_pod_parser_push_struct would keep a pointer to a
/// frame, which a Swift value may not provide for longer than one call.
private func structBodyParser(_ pod: UnsafePointer<spa_pod>) -> spa_pod_parser {
    var parser = spa_pod_parser()
    // SAFETY: a pod's body directly follows its 8-byte header and is `size` bytes long.
    spa_pod_parser_init(&parser, UnsafeRawPointer(pod).advanced(by: MemoryLayout<spa_pod>.size), pod.pointee.size)
    return parser
}

/// Reads the fields of a Struct pod in order with libspa's parser. A field of another type (or past
/// the end) reads as nil; the parser does not advance over it then, as in spa_pod_parser_get_*.
private struct StructFields {
    private var parser: spa_pod_parser

    init(_ pod: UnsafePointer<spa_pod>, name: String) throws(ProfileDecodingError) {
        guard pod.pointee.type == UInt32(SPA_TYPE_Struct) else { throw .badProperty(name: name) }
        parser = structBodyParser(pod)
    }

    mutating func int() -> Int32? {
        var value: Int32 = 0
        return spa_pod_parser_get_int(&parser, &value) == 0 ? value : nil
    }

    mutating func long() -> Int64? {
        var value: Int64 = 0
        return spa_pod_parser_get_long(&parser, &value) == 0 ? value : nil
    }

    mutating func float() -> Float? {
        var value: Float = 0
        return spa_pod_parser_get_float(&parser, &value) == 0 ? value : nil
    }

    mutating func fraction() -> spa_fraction? {
        var value = spa_fraction(num: 0, denom: 0)
        return spa_pod_parser_get_fraction(&parser, &value) == 0 ? value : nil
    }

    mutating func string() -> String? {
        var value: UnsafePointer<CChar>?
        guard spa_pod_parser_get_string(&parser, &value) == 0, let value else { return nil }
        return String(cString: value)
    }
}
