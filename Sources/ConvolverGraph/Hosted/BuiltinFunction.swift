// filter-chain's builtins that are not linear (plugin_builtin.c of 1.4 and 1.6): clamp, linear
// with an offset, recip, exp, log, abs, sqrt, mult and max, sample by sample in single precision
// with filter-chain's arithmetic, hosted like a plugin between the compiled parts.
import Glibc

public final class BuiltinFunction: HostedPlugin, @unchecked Sendable, Equatable {
    // @unchecked Sendable: constant after init.
    public enum Function: String, Sendable, CaseIterable {
        case clamp, linear, recip, exp, log, abs, sqrt, mult, max
    }

    public let function: Function
    public let ports: [HostedPort]

    /// The function `label` names (nil: not one of these).
    public init?(label: String) {
        guard let function = Function(rawValue: label) else { return nil }
        self.function = function
        ports = Self.ports(function)
    }

    public var description: String { "builtin \(function.rawValue)" }

    /// filter-chain gives these builtins no buffer for an input nothing feeds (mult multiplies
    /// the inputs it has, max passes its one input on).
    public var acceptsUnconnectedInputs: Bool { true }

    public func instantiate(
        sampleRate: Int, buffer: (HostedPort) -> UnsafeMutablePointer<Float>?
    ) throws(HostedPluginError) -> any PluginInstance {
        BuiltinFunctionInstance(function, pointers: ports.map(buffer))
    }

    public static func == (left: BuiltinFunction, right: BuiltinFunction) -> Bool { left.function == right.function }

    /// filter-chain's ports, in its order, with its defaults and ranges.
    private static func ports(_ function: Function) -> [HostedPort] {
        var ports: [HostedPort] = []
        func add(_ name: String, _ role: HostedPort.Role, _ defaultValue: Float = 0, _ range: ClosedRange<Float>? = nil) {
            ports.append(
                HostedPort(
                    index: ports.count, name: name, role: role, defaultValue: defaultValue, lower: range?.lowerBound,
                    upper: range?.upperBound))
        }
        add("Out", .audioOutput)
        switch function {
        case .mult: for input in 1...8 { add("In \(input)", .audioInput) }
        case .max: for input in 1...2 { add("In \(input)", .audioInput) }
        case .abs, .sqrt: add("In", .audioInput)
        case .clamp, .linear, .recip, .exp, .log:
            add("In", .audioInput)
            add("Notify", .controlOutput)
            add("Control", .controlInput)
        }
        switch function {
        case .clamp:
            add("Min", .controlInput, 0, -100...100)
            add("Max", .controlInput, 1, -100...100)
        case .linear:
            add("Mult", .controlInput, 1, -10...10)
            add("Add", .controlInput, 0, -10...10)
        case .exp: add("Base", .controlInput, Float(M_E), -10...10)
        case .log:
            add("Base", .controlInput, Float(M_E), 2...100)
            add("M1", .controlInput, 1, -10...10)
            add("M2", .controlInput, 1, -10...10)
        case .recip, .abs, .sqrt, .mult, .max: break
        }
        return ports
    }
}

/// One builtin function's instance: the port pointers it was given, its arithmetic each call.
final class BuiltinFunctionInstance: PluginInstance {
    private let function: BuiltinFunction.Function
    /// By port index (nil: an input nothing feeds, or a control output nothing reads).
    private let pointers: [UnsafeMutablePointer<Float>?]
    /// mult's and max's inputs that something feeds, in port order.
    private let fedInputs: [UnsafeMutablePointer<Float>]

    init(_ function: BuiltinFunction.Function, pointers: [UnsafeMutablePointer<Float>?]) {
        self.function = function
        self.pointers = pointers
        fedInputs = function == .mult || function == .max ? pointers.dropFirst().compactMap { $0 } : []
    }

    func run(frameCount: Int) {
        // SAFETY: the output port always has a buffer of at least frameCount (StagedGraph's).
        guard let out = pointers[0] else { return }
        let frames = 0..<frameCount
        switch function {
        case .mult:
            // dsp_mult: no input gives silence; else the first input times each other, in order.
            guard let first = fedInputs.first else { return out.update(repeating: 0, count: frameCount) }
            out.update(from: first, count: frameCount)
            for input in fedInputs.dropFirst() { for n in frames { out[n] *= input[n] } }
            return
        case .max:
            // SPA_MAX(in1, in2) = in1 > in2 ? in1 : in2; one input is passed on; none gives silence.
            switch (pointers[1], pointers[2]) {
            case let (one?, two?): for n in frames { out[n] = one[n] > two[n] ? one[n] : two[n] }
            case let (one?, nil), let (nil, one?): out.update(from: one, count: frameCount)
            case (nil, nil): out.update(repeating: 0, count: frameCount)
            }
            return
        default: break
        }
        guard let input = pointers[1] else { return }
        switch function {
        case .abs: for n in frames { out[n] = Swift.abs(input[n]) }
        case .sqrt: for n in frames { out[n] = input[n] <= 0 ? 0 : sqrtf(input[n]) }
        default:
            let first = input[0]
            for n in frames { out[n] = apply(input[n], first: first) }
            // The control path: Notify = f(Control), where both are connected.
            if let control = pointers[3], let notify = pointers[2] { notify.pointee = apply(control.pointee, first: control.pointee) }
        }
    }

    /// A control's value this call (a change reaches the next call).
    @inline(__always)
    private func control(_ index: Int) -> Float { pointers[index]?.pointee ?? 0 }

    /// f(x) for the one-input functions, given the block's first sample (recip tests in[0], not
    /// in[n], as filter-chain does). Single precision, filter-chain's expressions.
    @inline(__always)
    private func apply(_ x: Float, first: Float) -> Float {
        switch function {
        case .clamp: return fminf(fmaxf(x, control(4)), control(5))
        case .linear:
            // dsp_linear: Add 0 is a gain; Mult 0 gives Add; Mult 1 adds.
            let (mult, add) = (control(4), control(5))
            if add == 0 { return mult * x }
            if mult == 0 { return add }
            if mult == 1 { return x + add }
            return mult * x + add
        case .recip: return first == 0 ? 0 : 1 / x
        case .exp: return powf(control(4), x)
        case .log: return control(6) * log2f(fabsf(x * control(5))) / log2f(control(4))
        case .abs, .sqrt, .mult, .max: return x
        }
    }
}
