import Glibc

/// Flush-to-zero and denormals-are-zero on the calling thread: a reverb tail decaying into
/// denormals would otherwise multiply the cost of every multiply-add (x86 SSE: MXCSR bits FTZ, DAZ).
public enum DenormalFlush {
    private static let flushToZeroAndDenormalsAreZero: UInt32 = 0x8040

    /// Real-time safe (reads the FPU environment; writes it only when the bits are not yet set; no system call).
    @inline(__always)
    public static func enableOnCurrentThread() {
        #if arch(x86_64)
        var environment = fenv_t()
        fegetenv(&environment)
        if environment.__mxcsr & flushToZeroAndDenormalsAreZero != flushToZeroAndDenormalsAreZero {
            environment.__mxcsr |= flushToZeroAndDenormalsAreZero
            fesetenv(&environment)
        }
        #endif
    }

    /// Denormals kept on the calling thread again (PipeWire's default, `cpu.zero.denormals = false`):
    /// hosted plugins run as filter-chain runs them. Real-time safe, as `enableOnCurrentThread`.
    @inline(__always)
    public static func disableOnCurrentThread() {
        #if arch(x86_64)
        var environment = fenv_t()
        fegetenv(&environment)
        if environment.__mxcsr & flushToZeroAndDenormalsAreZero != 0 {
            environment.__mxcsr &= ~flushToZeroAndDenormalsAreZero
            fesetenv(&environment)
        }
        #endif
    }
}
