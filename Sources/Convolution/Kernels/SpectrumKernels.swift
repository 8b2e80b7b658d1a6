import CSpectrumKernels

/// Complex multiply-accumulate over split-complex spectra: the inner loop of every frequency-domain
/// delay line. `accumulator += x * h`, bin by bin.
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
        accumulatorReal: UnsafeMutablePointer<Float>, accumulatorImaginary: UnsafeMutablePointer<Float>,
        xReal: UnsafePointer<Float>, xImaginary: UnsafePointer<Float>,
        hReal: UnsafePointer<Float>, hImaginary: UnsafePointer<Float>, binCount: Int
    ) {
        if usesAVX {
            cspectrum_multiply_add_avx(accumulatorReal, accumulatorImaginary, xReal, xImaginary, hReal, hImaginary, binCount)
        } else {
            multiplyAddPortable(
                accumulatorReal: accumulatorReal, accumulatorImaginary: accumulatorImaginary,
                xReal: xReal, xImaginary: xImaginary, hReal: hReal, hImaginary: hImaginary, binCount: binCount)
        }
    }

    /// Any CPU (SSE2 on x86-64), same contract as `multiplyAdd`. Real-time safe.
    @inline(__always)
    public static func multiplyAddPortable(
        accumulatorReal: UnsafeMutablePointer<Float>, accumulatorImaginary: UnsafeMutablePointer<Float>,
        xReal: UnsafePointer<Float>, xImaginary: UnsafePointer<Float>,
        hReal: UnsafePointer<Float>, hImaginary: UnsafePointer<Float>, binCount: Int
    ) {
        typealias Lanes = SIMD16<Float>
        // SAFETY: the caller guarantees alignment and a multiple of 16 bins, so each 16-lane
        // load/store below stays inside the arrays and is suitably aligned.
        let accR = UnsafeMutableRawPointer(accumulatorReal), accI = UnsafeMutableRawPointer(accumulatorImaginary)
        let xR = UnsafeRawPointer(xReal), xI = UnsafeRawPointer(xImaginary)
        let hR = UnsafeRawPointer(hReal), hI = UnsafeRawPointer(hImaginary)
        var offset = 0
        let end = binCount * MemoryLayout<Float>.stride
        while offset < end {
            let a = xR.load(fromByteOffset: offset, as: Lanes.self)
            let b = xI.load(fromByteOffset: offset, as: Lanes.self)
            let c = hR.load(fromByteOffset: offset, as: Lanes.self)
            let d = hI.load(fromByteOffset: offset, as: Lanes.self)
            let re = accR.load(fromByteOffset: offset, as: Lanes.self) + a * c - b * d
            let im = accI.load(fromByteOffset: offset, as: Lanes.self) + a * d + b * c
            accR.storeBytes(of: re, toByteOffset: offset, as: Lanes.self)
            accI.storeBytes(of: im, toByteOffset: offset, as: Lanes.self)
            offset += MemoryLayout<Lanes>.stride
        }
    }

    /// The scalar reference: any `binCount`, any alignment.
    public static func multiplyAddReference(
        accumulatorReal: UnsafeMutablePointer<Float>, accumulatorImaginary: UnsafeMutablePointer<Float>,
        xReal: UnsafePointer<Float>, xImaginary: UnsafePointer<Float>,
        hReal: UnsafePointer<Float>, hImaginary: UnsafePointer<Float>, binCount: Int
    ) {
        for k in 0..<binCount {
            accumulatorReal[k] += xReal[k] * hReal[k] - xImaginary[k] * hImaginary[k]
            accumulatorImaginary[k] += xReal[k] * hImaginary[k] + xImaginary[k] * hReal[k]
        }
    }
}
