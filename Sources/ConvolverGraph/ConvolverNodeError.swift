import Glibc

/// Why a node could not be made or changed. Every message names the key, file or call.
public enum ConvolverNodeError: Error, CustomStringConvertible, Equatable {
    /// A module argument or command-line option is wrong.
    case configuration(NodeConfigurationError)
    /// An impulse response could not be loaded (`key` is `filename` or `impulses[i].filename`).
    case impulseResponse(key: String, message: String, errno: Int32)
    /// The engine refused the matrix or its plan.
    case engine(String)
    /// A PipeWire call failed with a negative errno.
    case pipeWire(call: String, errno: Int32)
    /// The connection to the PipeWire server ended (the standalone client then exits).
    case disconnected(String)

    public var description: String {
        switch self {
        case let .configuration(error): return error.description
        case let .impulseResponse(key, message, _): return "\(key): \(message)"
        case let .engine(message): return "engine: \(message)"
        case let .pipeWire(call, errno): return "\(call) failed: \(String(cString: strerror(errno)))"
        case let .disconnected(reason): return reason
        }
    }

    /// The negative errno `pipewire__module_init` returns for this error.
    public var negativeErrno: Int32 {
        switch self {
        case .configuration: return -EINVAL
        case let .impulseResponse(_, _, errno): return -errno
        case .engine: return -EINVAL
        case let .pipeWire(_, errno): return -errno
        case .disconnected: return -EPIPE
        }
    }
}
