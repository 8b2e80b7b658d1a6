// The Props param (filter-chain's `params` struct): the live controls it carries, built and parsed.
// Not real-time code.
import CConvolverShims
import CPipeWire
import Convolution
import ConvolverGraph
import Glibc

/// The live controls, as carried by the Props param's `params` struct (filter-chain's convention):
/// `{ params = [ "gain" 0.5 "mix" 0.3 "bypass" false ] }`.
struct LiveControls: Equatable {
    var gain: Double
    var mix: Double
    var bypass: Bool
    /// `StereoWidth` of the wet signal (two outputs only).
    var width = 1.0
}

/// A change requested by a Props param: any subset of the controls, and (for IR hot-swap) a new
/// `filename`.
struct PropsChange {
    var gain: Double?
    var mix: Double?
    var bypass: Bool?
    var width: Double?
    var filename: String?
    /// `sofa.azimuth`, `sofa.elevation`, `sofa.radius`: where an HRTF set places the source.
    var sofa: [(coordinate: String, value: Double)] = []
    /// Crossfade time for the next swaps, seconds.
    var crossfade: Double?
    /// The other keys: a filter graph's controls ("node:Port"), if the node runs one.
    var graphControls: [FilterGraph.ControlChange] = []
    /// What was refused, one message per key ("mix = 3.0 (expects 0...1)"), for the node's answer.
    var rejected: [String] = []

    mutating func reject(_ key: String, _ value: UnsafeMutablePointer<spa_pod>, expecting: String) {
        rejected.append("\(key) = \(PropsParam.text(value)) (expects \(expecting))")
    }
}

/// One value in a Props `params` struct.
public enum ControlValue: Equatable {
    case number(Double)
    case flag(Bool)
    case text(String)

    /// Typed as pw-cli types the JSON it is given: a number, true/false, else text.
    public init(parsing text: String) {
        if let number = Double(text), number.isFinite {
            self = .number(number)
        } else if text == "true" || text == "false" {
            self = .flag(text == "true")
        } else {
            self = .text(text)
        }
    }
}

enum PropsParam {
    /// The node's controls as its Props object, built into `buffer`; returns the pod inside it.
    static func build(
        _ controls: LiveControls, filename: String?, sofa: SourceDirection?, crossfadeSeconds: Double,
        graphControls: [(name: String, value: Double)], into buffer: UnsafeMutableRawBufferPointer
    ) -> UnsafeMutablePointer<spa_pod>? {
        var params: [(String, ControlValue)] = [
            ("gain", .number(controls.gain)), ("mix", .number(controls.mix)), ("bypass", .flag(controls.bypass)),
            ("width", .number(controls.width)), ("crossfade", .number(crossfadeSeconds)),
        ]
        if let filename { params.append(("filename", .text(filename))) }
        if let sofa {
            params += [("sofa.azimuth", .number(sofa.azimuth)), ("sofa.elevation", .number(sofa.elevation))]
            if let radius = sofa.radius { params.append(("sofa.radius", .number(radius))) }
        }
        params += graphControls.map { ($0.name, ControlValue.number($0.value)) }
        return build(params, into: buffer)
    }

    /// A Props object `{ params = [ key value ... ] }` built into `buffer`; returns the pod inside it.
    static func build(_ params: [(String, ControlValue)], into buffer: UnsafeMutableRawBufferPointer) -> UnsafeMutablePointer<spa_pod>? {
        var builder = spa_pod_builder()
        spa_pod_builder_init(&builder, buffer.baseAddress, UInt32(buffer.count))
        var objectFrame = spa_pod_frame()
        var structFrame = spa_pod_frame()
        spa_pod_builder_push_object(&builder, &objectFrame, UInt32(SPA_TYPE_OBJECT_Props), SPA_PARAM_Props.rawValue)
        spa_pod_builder_prop(&builder, SPA_PROP_params.rawValue, 0)
        spa_pod_builder_push_struct(&builder, &structFrame)
        for (key, value) in params {
            spa_pod_builder_string(&builder, key)
            switch value {
            case let .number(number): spa_pod_builder_float(&builder, Float(number))  // as filter-chain's controls
            case let .flag(flag): spa_pod_builder_bool(&builder, flag)
            case let .text(text): spa_pod_builder_string(&builder, text)
            }
        }
        spa_pod_builder_pop(&builder, &structFrame)
        // NULL when the buffer was too small (a file name longer than it).
        let pod = spa_pod_builder_pop(&builder, &objectFrame)
        return builder.state.offset <= builder.size ? pod?.assumingMemoryBound(to: spa_pod.self) : nil
    }

    /// Reads the `params` struct of a Props object. Values may come as float, double, int, long,
    /// bool or string (pw-cli picks the pod type from the JSON text).
    static func parse(_ pod: UnsafePointer<spa_pod>) -> PropsChange {
        var change = PropsChange()
        forEachParam(in: pod) { key, value in
            switch key {
            case "gain":
                if let number = number(value) ?? string(value).flatMap(NodeConfiguration.linearGain),
                    (0...NodeConfiguration.gainLimit).contains(number)
                {
                    change.gain = number
                } else {
                    change.reject(key, value, expecting: "0...\(Int(NodeConfiguration.gainLimit)) linear, or decibels like \"-6dB\"")
                }
            case "mix":
                if let number = number(value), (0...1).contains(number) { change.mix = number } else { change.reject(key, value, expecting: "0...1") }
            case "bypass":
                if let flag = boolean(value) { change.bypass = flag } else { change.reject(key, value, expecting: "true or false") }
            case "width":
                if let number = number(value), StereoWidth.range.contains(number) {
                    change.width = number
                } else {
                    change.reject(key, value, expecting: "\(StereoWidth.range.lowerBound)...\(StereoWidth.range.upperBound)")
                }
            case "crossfade":
                if let number = number(value), (0...NodeConfiguration.crossfadeLimit).contains(number) {
                    change.crossfade = number
                } else {
                    change.reject(key, value, expecting: "0...\(NodeConfiguration.crossfadeLimit) seconds")
                }
            case "filename":
                if let text = string(value), !text.isEmpty {
                    change.filename = NodeConfiguration.expandingHome(text)
                } else {
                    change.reject(key, value, expecting: "a file name")
                }
            case _ where key.hasPrefix("sofa."):
                let coordinate = String(key.dropFirst(5))
                if let range = SourceDirection.ranges[coordinate], let number = number(value), range.contains(number) {
                    change.sofa.append((coordinate, number))
                } else if let range = SourceDirection.ranges[coordinate] {
                    change.reject(key, value, expecting: "\(range.lowerBound)...\(range.upperBound)")
                } else {
                    change.rejected.append("unknown key '\(key)' (the HRTF keys: sofa.azimuth, sofa.elevation, sofa.radius)")
                }
            default:
                change.graphControls.append(FilterGraph.ControlChange(name: key, value: number(value), written: text(value)))
            }
        }
        return change
    }

    /// The `params` struct as published (for `pw-convolver status`): each value as a number, a
    /// flag or text.
    static func values(_ pod: UnsafePointer<spa_pod>) -> [(key: String, value: ControlValue)] {
        var values: [(key: String, value: ControlValue)] = []
        forEachParam(in: pod) { key, value in
            var flag = false
            if spa_pod_get_bool(value, &flag) == 0 {
                values.append((key, .flag(flag)))
            } else if let number = number(value) {
                values.append((key, .number(number)))
            } else if let text = string(value) {
                values.append((key, .text(text)))
            }
        }
        return values
    }

    /// Calls `body` with each key and value of a Props object's `params` struct.
    private static func forEachParam(in pod: UnsafePointer<spa_pod>, _ body: (String, UnsafeMutablePointer<spa_pod>) -> Void) {
        guard let prop = spa_pod_find_prop(pod, nil, SPA_PROP_params.rawValue),
            let structPod = UnsafeMutablePointer(mutating: cpw_pod_prop_value(prop)), spa_pod_is_struct(structPod) != 0
        else { return }
        var parser = spa_pod_parser()
        var frame = spa_pod_frame()
        spa_pod_parser_pod(&parser, structPod)
        guard spa_pod_parser_push_struct(&parser, &frame) == 0 else { return }
        while true {
            var keyPointer: UnsafePointer<CChar>?
            guard spa_pod_parser_get_string(&parser, &keyPointer) == 0, let keyPointer else { break }
            guard let value = spa_pod_parser_next(&parser) else { break }
            body(String(cString: keyPointer), value)
        }
    }

    /// Every key `parse` takes, in the order `build` writes them.
    static let liveKeys = ["gain", "mix", "bypass", "width", "crossfade", "filename", "sofa.azimuth", "sofa.elevation", "sofa.radius"]

    /// A value as the user wrote it, for messages: a number, a quoted string or true/false.
    static func text(_ pod: UnsafeMutablePointer<spa_pod>) -> String {
        var flag = false, float: Float = 0, double = 0.0
        if spa_pod_get_bool(pod, &flag) == 0 { return flag ? "true" : "false" }
        if spa_pod_get_float(pod, &float) == 0 { return "\(float)" }  // NaN too: say what was sent
        if spa_pod_get_double(pod, &double) == 0 { return "\(double)" }
        if let number = number(pod) { return "\(Int(number))" }
        if let string = string(pod) { return "\"\(string)\"" }
        return "(a value of pod type \(pod.pointee.type))"
    }

    private static func number(_ pod: UnsafeMutablePointer<spa_pod>) -> Double? {
        var float: Float = 0, double: Double = 0, int: Int32 = 0, long: Int64 = 0
        let value: Double
        if spa_pod_get_float(pod, &float) == 0 {
            value = Double(float)
        } else if spa_pod_get_double(pod, &double) == 0 {
            value = double
        } else if spa_pod_get_int(pod, &int) == 0 {
            value = Double(int)
        } else if spa_pod_get_long(pod, &long) == 0 {
            value = Double(long)
        } else {
            return nil
        }
        return value.isFinite ? value : nil
    }

    private static func string(_ pod: UnsafeMutablePointer<spa_pod>) -> String? {
        var text: UnsafePointer<CChar>?
        guard spa_pod_get_string(pod, &text) == 0, let text else { return nil }
        return String(cString: text)
    }

    private static func boolean(_ pod: UnsafeMutablePointer<spa_pod>) -> Bool? {
        var flag = false
        if spa_pod_get_bool(pod, &flag) == 0 { return flag }
        if let number = number(pod) { return number != 0 }
        return string(pod).flatMap { SPAJSONValue.word($0).bool }
    }
}
