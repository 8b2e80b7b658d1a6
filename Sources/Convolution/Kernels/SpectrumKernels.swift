import CSpectrumKernels

/// Complex multiply-accumulate over spectra in `SplitSpectra`'s layout (16-bin groups: real parts,
/// then imaginary parts): the inner loop of every frequency-domain delay line. `accumulator += x * h`,
/// bin by bin.
///
/// Three kernels with one contract: `multiplyAdd` runs in the engine, and is the AVX kernel (C,
/// `CSpectrumKernels`) on a CPU that has AVX, else `multiplyAddPortable` (SIMD, 16 bins a step);
/// the two give the same bits. `multiplyAddReference` (plain scalar) is the reference the tests
/// hold them to. Plain `a * b + c`: on the baseline x86-64 target `addProduct` would call libm's `fmaf`.
public enum SpectrumKernels {
    /// Whether `multiplyAdd` runs the AVX kernel on this CPU.
    public static var usesAVX: Bool { cspectrum_has_avx() }

    /// Real-time safe. `binCount` must be a multiple of 16 and every pointer 64-byte aligned
    /// (as `SplitSpectra` guarantees: its padding bins are zero, so running over them is harmless).
    @inline(__always)
    public static func multiplyAdd(
        accumulator: UnsafeMutablePointer<Float>, x: UnsafePointer<Float>, h: UnsafePointer<Float>, binCount: Int
    ) {
        if usesAVX {
            cspectrum_multiply_add_avx(accumulator, x, h, binCount)
        } else {
            multiplyAddPortable(accumulator: accumulator, x: x, h: h, binCount: binCount)
        }
    }

    /// Any CPU (SSE2 on x86-64), same contract as `multiplyAdd`. Real-time safe.
    @inline(__always)
    public static func multiplyAddPortable(
        accumulator: UnsafeMutablePointer<Float>, x: UnsafePointer<Float>, h: UnsafePointer<Float>, binCount: Int
    ) {
        typealias Lanes = SIMD16<Float>
        // SAFETY: the caller guarantees alignment and a multiple of 16 bins, so each group's two
        // 16-lane loads/stores below (real parts, then imaginary parts) stay inside the spectra and
        // are suitably aligned.
        let acc = UnsafeMutableRawPointer(accumulator), xBytes = UnsafeRawPointer(x), hBytes = UnsafeRawPointer(h)
        let lanes = MemoryLayout<Lanes>.stride
        var offset = 0
        let end = 2 * binCount * MemoryLayout<Float>.stride
        while offset < end {
            let a = xBytes.load(fromByteOffset: offset, as: Lanes.self)
            let b = xBytes.load(fromByteOffset: offset + lanes, as: Lanes.self)
            let c = hBytes.load(fromByteOffset: offset, as: Lanes.self)
            let d = hBytes.load(fromByteOffset: offset + lanes, as: Lanes.self)
            let re = acc.load(fromByteOffset: offset, as: Lanes.self) + a * c - b * d
            let im = acc.load(fromByteOffset: offset + lanes, as: Lanes.self) + a * d + b * c
            acc.storeBytes(of: re, toByteOffset: offset, as: Lanes.self)
            acc.storeBytes(of: im, toByteOffset: offset + lanes, as: Lanes.self)
            offset += 2 * lanes
        }
    }

    /// The scalar reference, bin by bin through `SplitSpectra`'s offsets: any `binCount`.
    public static func multiplyAddReference(
        accumulator: UnsafeMutablePointer<Float>, x: UnsafePointer<Float>, h: UnsafePointer<Float>, binCount: Int
    ) {
        for k in 0..<binCount {
            let re = SplitSpectra.realOffset(ofBin: k), im = SplitSpectra.imaginaryOffset(ofBin: k)
            accumulator[re] += x[re] * h[re] - x[im] * h[im]
            accumulator[im] += x[re] * h[im] + x[im] * h[re]
        }
    }
}
