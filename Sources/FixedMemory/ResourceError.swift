/// What the machine could not give: memory, or an FFT plan. The module runs inside the user's
/// PipeWire process, so these are reported to the loader, never a crash.
public enum ResourceError: Error, Equatable, CustomStringConvertible {
    case outOfMemory(bytes: Int)
    case fftPlanFailed(size: Int)

    public var description: String {
        switch self {
        case .outOfMemory(let bytes): return "out of memory allocating \(bytes) bytes"
        case .fftPlanFailed(let size): return "FFTW could not plan a real FFT of size \(size)"
        }
    }
}
