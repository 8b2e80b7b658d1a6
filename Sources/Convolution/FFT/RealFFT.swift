import CFFTW
import FixedMemory
import Glibc
import Synchronization

/// A real FFT of one size with split-complex spectra (`SplitSpectra`'s layout), backed by FFTW3f plans.
///
/// Plans are made once per size per process (FFTW's planner is not thread-safe: a lock serialises
/// planning), with FFTW_MEASURE and wisdom cached in the user's cache directory, so only the first
/// run on a machine pays for measuring. Executing is real-time safe: the new-array execute calls on
/// 64-byte aligned arrays (the alignment the plans were made with).
/// Unnormalised, like FFTW: `inverse(forward(x)) == size * x`.
///
/// Both directions run one FFTW plan: a forward complex FFT of half the size, on the samples
/// taken in pairs (x[2m] + i·x[2m+1]), through the caller's scratch (`InterleavedSpectra`). Our
/// own pass turns its output into the real signal's split spectrum (and, for the inverse, a split
/// spectrum into its input, conjugated, since conj(DFT(conj Z)) is the inverse DFT).
/// Why: on every call the plans come back cold from memory (other processes run between two
/// graph cycles), and FFTW's r2c and c2r plans are two trees of different codelets. With one plan,
/// a stereo head's two forward and two inverse FFTs cost 9.3-9.6 µs instead of 15.4-15.8 µs at
/// size 512 after 64 MB were written (a C prototype against FFTW; 6.1-6.7 instead of 10.4-12.2 µs
/// at 256, even at 4096); warm they cost 0.3-0.8 µs more. In the engine (`bench --evict-mb 64`):
/// 20 % less CPU with a 1 ms IR, 6 % with 3 s at quantum 256. The split spectra keep the
/// multiply-adds simple (`SpectrumKernels`).
public final class RealFFT: @unchecked Sendable {
    public let size: Int
    public var binCount: Int { size / 2 + 1 }
    /// Forward complex FFT of `size / 2` points.
    private let halfPlan: fftwf_plan
    /// e^(-2πik/size) for k < size / 2, split.
    private let twiddleReal: AlignedFloats
    private let twiddleImaginary: AlignedFloats

    private init(size: Int, halfPlan: fftwf_plan) throws {
        self.size = size
        self.halfPlan = halfPlan
        twiddleReal = try AlignedFloats(count: size / 2)
        twiddleImaginary = try AlignedFloats(count: size / 2)
        for k in 0..<size / 2 {
            let angle = -2 * Double.pi * Double(k) / Double(size)
            twiddleReal.pointer[k] = Float(cos(angle))
            twiddleImaginary.pointer[k] = Float(sin(angle))
        }
    }

    /// The shared FFT of `size` (a power of two ≥ 4). Not real-time safe: may plan.
    public static func ofSize(_ size: Int) throws -> RealFFT {
        precondition(size >= 4 && size & (size - 1) == 0, "FFT size must be a power of two")
        return try planner.withLock { cache in
            if let fft = cache.plans[size] { return fft }
            let fft = try cache.makeFFT(size: size)
            cache.plans[size] = fft
            return fft
        }
    }

    /// Real-time safe. `input`: `size` samples (preserved). `spectrum`: `binCount` bins in
    /// `SplitSpectra`'s layout. `scratch`: one spectrum of an `InterleavedSpectra` of this
    /// `binCount`, the caller's own.
    @inline(__always)
    public func forward(
        _ input: UnsafeMutablePointer<Float>, spectrum: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>
    ) {
        fftwf_execute_dft(halfPlan, complex(input), complex(scratch))  // Z; out of place: input kept
        // X[k] = E[k] + W^k·O[k], the spectra of the even and odd samples:
        // E = (Z[k] + conj Z[h-k]) / 2, O = -i·(Z[k] - conj Z[h-k]) / 2.
        let half = size / 2, z = scratch
        if half >= 16 {
            // 16 bins at a time: one group of the layout.
            // SAFETY: z holds `half + 1` complex values (the scratch's `binCount`), so the reversed
            // run of bins half - k, k in the group, is inside it; the twiddles hold `half`, the
            // spectrum `binCount` padded to whole groups; every aligned load is at a group's start.
            let zBytes = UnsafeRawPointer(z)
            for group in 0..<half / 16 {
                let a = zBytes.load(fromByteOffset: 128 * group, as: SIMD32<Float>.self)
                let b = zBytes.loadUnaligned(fromByteOffset: 8 * (half - 16 * group - 15), as: SIMD32<Float>.self)
                let x = forwardBins(
                    a: (lanes(a, from: 0), lanes(a, from: 1)), b: (lanesReversed(b, from: 30), -lanesReversed(b, from: 31)),
                    w: twiddles(from: 16 * group))
                let groupStart = UnsafeMutableRawPointer(spectrum + 32 * group)
                groupStart.storeBytes(of: x.real, as: SIMD16<Float>.self)
                groupStart.storeBytes(of: x.imaginary, toByteOffset: 64, as: SIMD16<Float>.self)
            }
        } else {
            // Sizes below 32: the same, bin k in lane k, gathered and scattered one by one.
            var a = SplitLanes(SIMD16(), SIMD16()), b = a, w = a
            for k in 1..<half {
                a.real[k] = z[2 * k]
                a.imaginary[k] = z[2 * k + 1]
                b.real[k] = z[2 * (half - k)]
                b.imaginary[k] = -z[2 * (half - k) + 1]
                w.real[k] = twiddleReal.pointer[k]
                w.imaginary[k] = twiddleImaginary.pointer[k]
            }
            let x = forwardBins(a: a, b: b, w: w)
            for k in 1..<half {
                spectrum[SplitSpectra.realOffset(ofBin: k)] = x.real[k]
                spectrum[SplitSpectra.imaginaryOffset(ofBin: k)] = x.imaginary[k]
            }
        }
        // Bins 0 and half (the group pass wrote bin 0 from z[half], which is not Z's).
        spectrum[SplitSpectra.realOffset(ofBin: 0)] = z[0] + z[1]
        spectrum[SplitSpectra.imaginaryOffset(ofBin: 0)] = 0
        spectrum[SplitSpectra.realOffset(ofBin: half)] = z[0] - z[1]
        spectrum[SplitSpectra.imaginaryOffset(ofBin: half)] = 0
    }

    /// Real-time safe. `output`: `size` samples. `spectrum` and `scratch` as for `forward`; the
    /// spectrum is preserved. As FFTW's c2r, it reads the spectrum as a real signal's: the imaginary
    /// parts of bins 0 and `size / 2` count as zero.
    @inline(__always)
    public func inverse(
        spectrum: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>
    ) {
        // The pairs y[2m] + i·y[2m+1] are the inverse DFT of C = Fe + i·Fo, where
        // Fe = Y[k] + conj Y[h-k] and Fo = (Y[k] - conj Y[h-k])·conj W^k. The scratch gets conj C.
        let half = size / 2
        let d = scratch
        if half >= 16 {
            // 16 bins at a time, as in `forward`. Bin half - k of bin k = 16·group + j is lane 0 of
            // group `groups - group` for j = 0, and lane 16 - j of the group below that for the others.
            // SAFETY: the spectrum holds `binCount` bins padded to whole groups (group `groups` is
            // bin half's), the scratch `half + 1` complex values; aligned loads at groups' starts.
            let groups = half / 16
            for group in 0..<groups {
                let own = UnsafeRawPointer(spectrum + 32 * group), above = spectrum + 32 * (groups - group)
                let below = UnsafeRawPointer(above - 32)
                let c = inverseBins(
                    y: (own.load(as: SIMD16<Float>.self), own.load(fromByteOffset: 64, as: SIMD16<Float>.self)),
                    b: (
                        mirrored(above[0], below.load(as: SIMD16<Float>.self)),
                        -mirrored(above[16], below.load(fromByteOffset: 64, as: SIMD16<Float>.self))
                    ),
                    w: twiddles(from: 16 * group))
                UnsafeMutableRawPointer(d + 32 * group).storeBytes(of: interleaved(c.real, c.imaginary), as: SIMD32<Float>.self)
            }
        } else {
            // Sizes below 32: the same, bin k in lane k, as in `forward`.
            var y = SplitLanes(SIMD16(), SIMD16()), b = y, w = y
            for k in 1..<half {
                y.real[k] = spectrum[SplitSpectra.realOffset(ofBin: k)]
                y.imaginary[k] = spectrum[SplitSpectra.imaginaryOffset(ofBin: k)]
                b.real[k] = spectrum[SplitSpectra.realOffset(ofBin: half - k)]
                b.imaginary[k] = -spectrum[SplitSpectra.imaginaryOffset(ofBin: half - k)]
                w.real[k] = twiddleReal.pointer[k]
                w.imaginary[k] = twiddleImaginary.pointer[k]
            }
            let c = inverseBins(y: y, b: b, w: w)
            for k in 1..<half {
                d[2 * k] = c.real[k]
                d[2 * k + 1] = c.imaginary[k]
            }
        }
        // Bin 0, without the imaginary parts of bins 0 and half (the group pass used them).
        let dcReal = spectrum[SplitSpectra.realOffset(ofBin: 0)], nyquistReal = spectrum[SplitSpectra.realOffset(ofBin: half)]
        d[0] = dcReal + nyquistReal
        d[1] = -(dcReal - nyquistReal)
        fftwf_execute_dft(halfPlan, complex(scratch), complex(output))
        // conj: the inverse. Times ±1, exact: the odd samples negated, 16 at a time.
        let signs = SIMD16<Float>(1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1)
        let outputBytes = UnsafeMutableRawPointer(output)
        for chunk in 0..<size / 16 {
            let samples = outputBytes.loadUnaligned(fromByteOffset: 64 * chunk, as: SIMD16<Float>.self)
            outputBytes.storeBytes(of: samples * signs, toByteOffset: 64 * chunk, as: SIMD16<Float>.self)
        }
        for m in size / 16 * 8..<half { output[2 * m + 1] = -output[2 * m + 1] }
    }

    /// W^k for the 16 bins from `first` (a multiple of 16, below `size / 2`).
    @inline(__always)
    private func twiddles(from first: Int) -> SplitLanes {
        // SAFETY: the twiddles hold `size / 2` values, 64-byte aligned, and `first + 16` is at most that.
        (
            UnsafeRawPointer(twiddleReal.pointer + first).load(as: SIMD16<Float>.self),
            UnsafeRawPointer(twiddleImaginary.pointer + first).load(as: SIMD16<Float>.self)
        )
    }

    // MARK: Planning (off the real-time path)

    private static let planner = Mutex(PlanCache())

    private final class PlanCache {
        var plans: [Int: RealFFT] = [:]
        var wisdomLoaded = false

        /// FFTW_MEASURE by default; `SWIFT_CONVOLVER_FFTW_PLANNING=estimate` plans instantly (slower FFTs).
        let planningFlags: UInt32 =
            SystemFiles.environment("SWIFT_CONVOLVER_FFTW_PLANNING") == "estimate"
            ? UInt32(FFTW_ESTIMATE) : UInt32(FFTW_MEASURE)

        static var wisdomPath: String { UserCache.path("fftwf-wisdom") }

        func makeFFT(size: Int) throws -> RealFFT {
            if !wisdomLoaded {
                wisdomLoaded = true
                _ = fftwf_import_wisdom_from_filename(Self.wisdomPath)
            }
            // Arrays with the engine's alignment; FFTW_MEASURE overwrites them while measuring.
            let samples = try AlignedFloats(count: size)
            let spectrum = try InterleavedSpectra(count: 1, binCount: size / 2 + 1)
            guard
                let halfPlan = fftwf_plan_dft_1d(
                    Int32(size / 2), complex(samples.pointer), complex(spectrum.spectrum(0)),
                    FFTW_FORWARD, planningFlags)
            else { throw ResourceError.fftPlanFailed(size: size) }
            saveWisdom()
            return try RealFFT(size: size, halfPlan: halfPlan)
        }

        private func saveWisdom() {
            let path = Self.wisdomPath
            SystemFiles.createParentDirectories(of: path)
            _ = fftwf_export_wisdom_to_filename(path)
        }
    }
}

/// FFTW's `fftwf_complex` (`float[2]`) view of interleaved Floats: the same layout.
@inline(__always)
private func complex(_ interleaved: UnsafeMutablePointer<Float>) -> UnsafeMutablePointer<fftwf_complex> {
    UnsafeMutableRawPointer(interleaved).assumingMemoryBound(to: fftwf_complex.self)
}

// Lane shuffles, spelt out lane by lane: the compiler makes each one shuffle (SIMD32's
// `evenHalf`/`oddHalf` accessors are not inlined).

/// Lanes first, first + 2 ... first + 30 of `v`: the real (0) or imaginary (1) parts of 16 complex values.
@inline(__always)
private func lanes(_ v: SIMD32<Float>, from first: Int) -> SIMD16<Float> {
    SIMD16(
        v[first], v[first + 2], v[first + 4], v[first + 6], v[first + 8], v[first + 10], v[first + 12], v[first + 14],
        v[first + 16], v[first + 18], v[first + 20], v[first + 22], v[first + 24], v[first + 26], v[first + 28],
        v[first + 30])
}

/// Lanes last, last - 2 ... last - 30 of `v`: the same of 16 complex values in reverse order.
@inline(__always)
private func lanesReversed(_ v: SIMD32<Float>, from last: Int) -> SIMD16<Float> {
    SIMD16(
        v[last], v[last - 2], v[last - 4], v[last - 6], v[last - 8], v[last - 10], v[last - 12], v[last - 14],
        v[last - 16], v[last - 18], v[last - 20], v[last - 22], v[last - 24], v[last - 26], v[last - 28],
        v[last - 30])
}

/// `first`, then `v`'s lanes 15 down to 1: bins half - k of a group's bins k (see `inverse`).
@inline(__always)
private func mirrored(_ first: Float, _ v: SIMD16<Float>) -> SIMD16<Float> {
    SIMD16(first, v[15], v[14], v[13], v[12], v[11], v[10], v[9], v[8], v[7], v[6], v[5], v[4], v[3], v[2], v[1])
}

/// a[0], b[0], a[1], b[1] ... (the `evenHalf`/`oddHalf` setters are not inlined).
@inline(__always)
private func interleaved(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD32<Float> {
    SIMD32(
        a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3], a[4], b[4], a[5], b[5], a[6], b[6], a[7], b[7],
        a[8], b[8], a[9], b[9], a[10], b[10], a[11], b[11], a[12], b[12], a[13], b[13], a[14], b[14], a[15], b[15])
}

/// 16 bins: their real parts, their imaginary parts.
private typealias SplitLanes = (real: SIMD16<Float>, imaginary: SIMD16<Float>)

/// `forward`'s arithmetic for 16 bins k: X[k] = E[k] + W^k·O[k], from `a` = Z[k], `b` = conj Z[h-k]
/// and `w` = W^k, where E = (a + b) / 2 and O = -i·(a - b) / 2.
@inline(__always)
private func forwardBins(
    a: SplitLanes, b: SplitLanes,
    w: SplitLanes
) -> SplitLanes {
    let evenReal = 0.5 * (a.real + b.real), evenImaginary = 0.5 * (a.imaginary + b.imaginary)
    let oddReal = 0.5 * (a.imaginary - b.imaginary), oddImaginary = -0.5 * (a.real - b.real)
    return (
        evenReal + (w.real * oddReal - w.imaginary * oddImaginary),
        evenImaginary + (w.real * oddImaginary + w.imaginary * oddReal)
    )
}

/// `inverse`'s arithmetic for 16 bins k: conj C[k], C = Fe + i·Fo with Fe = y + b and
/// Fo = (y - b)·conj W^k, from `y` = Y[k], `b` = conj Y[h-k] and `w` = W^k.
@inline(__always)
private func inverseBins(
    y: SplitLanes, b: SplitLanes,
    w: SplitLanes
) -> SplitLanes {
    let sumReal = y.real + b.real, sumImaginary = y.imaginary + b.imaginary
    let differenceReal = y.real - b.real, differenceImaginary = y.imaginary - b.imaginary
    let oddReal = differenceReal * w.real + differenceImaginary * w.imaginary
    let oddImaginary = differenceImaginary * w.real - differenceReal * w.imaginary
    return (sumReal - oddImaginary, -(sumImaginary + oddReal))
}
