import CFFTW
import Foundation

/// A real FFT of one size with split-complex spectra, backed by FFTW3f plans.
///
/// Plans are made once per size per process (FFTW's planner is not thread-safe: a lock serialises
/// planning), with FFTW_MEASURE and wisdom cached in the user's cache directory, so only the first
/// run on a machine pays for measuring. Executing is real-time safe: the new-array execute calls on
/// 64-byte aligned arrays (the alignment the plans were made with).
/// Unnormalised, like FFTW: `inverse(forward(x)) == size * x`.
///
/// FFTW transforms in its interleaved format (re, im, re, im …) through the caller's scratch
/// (`InterleavedSpectra`); the spectra are split on the way out and interleaved on the way in.
/// Why: FFTW's interleaved r2c/c2r plans ran 1.1-1.6x faster here than its split ones (sizes 512
/// to 32768, caches warm or evicted), which is more than the two extra passes over a spectrum still
/// in cache cost; the split spectra keep the multiply-adds simple (`SpectrumKernels`).
public final class RealFFT: @unchecked Sendable {
    public let size: Int
    public var binCount: Int { size / 2 + 1 }
    private let forwardPlan: fftwf_plan
    private let inversePlan: fftwf_plan

    private init(size: Int, forwardPlan: fftwf_plan, inversePlan: fftwf_plan) {
        self.size = size
        self.forwardPlan = forwardPlan
        self.inversePlan = inversePlan
    }

    /// The shared FFT of `size` (a power of two ≥ 4). Not real-time safe: may plan.
    public static func ofSize(_ size: Int) -> RealFFT {
        precondition(size >= 4 && size & (size - 1) == 0, "FFT size must be a power of two")
        return planner.withLock { cache in
            if let fft = cache.plans[size] { return fft }
            let fft = cache.makeFFT(size: size)
            cache.plans[size] = fft
            return fft
        }
    }

    /// Real-time safe. `input`: `size` samples (preserved). `real`/`imaginary`: `binCount` bins.
    /// `scratch`: one spectrum of an `InterleavedSpectra` of this `binCount`, the caller's own.
    @inline(__always)
    public func forward(_ input: UnsafeMutablePointer<Float>, real: UnsafeMutablePointer<Float>,
                        imaginary: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>) {
        fftwf_execute_dft_r2c(forwardPlan, input, complex(scratch))
        for bin in 0..<binCount {
            real[bin] = scratch[2 * bin]
            imaginary[bin] = scratch[2 * bin + 1]
        }
    }

    /// Real-time safe. `output`: `size` samples. `scratch` as for `forward`; the spectrum is preserved.
    @inline(__always)
    public func inverse(real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>,
                        output: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>) {
        for bin in 0..<binCount {
            scratch[2 * bin] = real[bin]
            scratch[2 * bin + 1] = imaginary[bin]
        }
        fftwf_execute_dft_c2r(inversePlan, complex(scratch), output)  // destroys the scratch only
    }

    // MARK: Planning (off the real-time path)

    private static let planner = PlannerLock(PlanCache())

    private final class PlanCache {
        var plans: [Int: RealFFT] = [:]
        var wisdomLoaded = false

        /// FFTW_MEASURE by default; `SWIFT_CONVOLVER_FFTW_PLANNING=estimate` plans instantly (slower FFTs).
        let planningFlags: UInt32 = ProcessInfo.processInfo.environment["SWIFT_CONVOLVER_FFTW_PLANNING"] == "estimate"
            ? UInt32(FFTW_ESTIMATE) : UInt32(FFTW_MEASURE)

        static var wisdomPath: String { UserCache.path("fftwf-wisdom") }

        func makeFFT(size: Int) -> RealFFT {
            if !wisdomLoaded {
                wisdomLoaded = true
                _ = fftwf_import_wisdom_from_filename(Self.wisdomPath)
            }
            let bins = size / 2 + 1
            // Scratch arrays with the engine's alignment; FFTW_MEASURE overwrites them while measuring.
            let samples = AlignedFloats(count: size)
            let spectrum = InterleavedSpectra(count: 1, binCount: bins)
            let forward = fftwf_plan_dft_r2c_1d(Int32(size), samples.pointer, complex(spectrum.spectrum(0)), planningFlags)
            let inverse = fftwf_plan_dft_c2r_1d(Int32(size), complex(spectrum.spectrum(0)), samples.pointer, planningFlags)
            guard let forward, let inverse else { fatalError("FFTW could not plan a real FFT of size \(size)") }
            saveWisdom()
            return RealFFT(size: size, forwardPlan: forward, inversePlan: inverse)
        }

        private func saveWisdom() {
            let path = Self.wisdomPath
            try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                     withIntermediateDirectories: true)
            _ = fftwf_export_wisdom_to_filename(path)
        }
    }
}

/// FFTW's `fftwf_complex` (`float[2]`) view of interleaved Floats: the same layout.
@inline(__always)
private func complex(_ interleaved: UnsafeMutablePointer<Float>) -> UnsafeMutablePointer<fftwf_complex> {
    UnsafeMutableRawPointer(interleaved).assumingMemoryBound(to: fftwf_complex.self)
}

/// A plain lock for setup-time state (never taken on a real-time thread).
final class PlannerLock<State>: @unchecked Sendable {
    private let lock = NSLock()
    private let state: State
    init(_ state: State) { self.state = state }
    func withLock<Result>(_ body: (State) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(state)
    }
}
