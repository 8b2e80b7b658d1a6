import FixedMemory
import Glibc

/// The engine's sample buffers: zero-initialised Floats on 64-byte lines. FFTW's new-array
/// execute requires the alignment the plans were made with, and aligned SIMD loads need it too.
public typealias AlignedFloats = FixedBuffer<Float>

extension FixedBuffer where Element == Float {
    /// `count` zeros.
    public convenience init(count: Int) throws(ResourceError) { try self.init(repeating: 0, count: count) }

    /// `count` arrays of `length` Floats each, in one allocation.
    public convenience init(count: Int, of length: Int) throws(ResourceError) {
        let (total, overflow) = count.multipliedReportingOverflow(by: length)
        guard !overflow else { throw .outOfMemory(bytes: Int.max) }
        try self.init(count: total)
    }

    /// Real-time safe.
    public func zero() { fill(with: 0) }
}

/// Floats rounded up to whole 64-byte lines, so every array carved from one allocation stays aligned.
@inline(__always)
func alignedLength(_ count: Int) -> Int { (count + 15) & ~15 }

/// `count` split-complex spectra of `binCount` bins in one contiguous aligned allocation, each
/// `2 * paddedBinCount` Floats from `spectrum(k)`, in groups of 16 bins: the group's 16 real parts
/// (one cache line), then its 16 imaginary parts (the next). Why not all real parts, then all
/// imaginary parts: a multiply-add then reads two streams instead of four, and a delay line's
/// spectra come cold from memory on most calls, where hardware prefetchers start again at every
/// page (docs/facts.md, "Spectra in memory").
/// The padding bins stay zero, so kernels may run over `paddedBinCount` without a scalar tail.
public final class SplitSpectra {
    let count: Int
    let binCount: Int
    let paddedBinCount: Int
    private let storage: AlignedFloats

    public init(count: Int, binCount: Int) throws {
        self.count = count
        self.binCount = binCount
        paddedBinCount = alignedLength(binCount)
        storage = try AlignedFloats(count: count, of: 2 * paddedBinCount)
    }

    @inline(__always) public func spectrum(_ index: Int) -> UnsafeMutablePointer<Float> {
        storage.pointer + 2 * index * paddedBinCount
    }

    /// Where bin `bin`'s real part is in a spectrum.
    @inline(__always) public static func realOffset(ofBin bin: Int) -> Int { (bin &>> 4) &<< 5 | (bin & 15) }
    /// Where bin `bin`'s imaginary part is in a spectrum.
    @inline(__always) public static func imaginaryOffset(ofBin bin: Int) -> Int { realOffset(ofBin: bin) | 16 }
    /// |X[bin]|² of `spectrum` (laid out as here), in Double.
    public static func power(ofBin bin: Int, in spectrum: UnsafePointer<Float>) -> Double {
        let real = Double(spectrum[realOffset(ofBin: bin)]), imaginary = Double(spectrum[imaginaryOffset(ofBin: bin)])
        return real * real + imaginary * imaginary
    }

    func zero() { storage.zero() }
}

/// `count` interleaved complex spectra (re, im, re, im …) of `binCount` bins, each 64-byte aligned:
/// FFTW's own format, the scratch a `RealFFT` transforms through (one per thread that transforms).
public final class InterleavedSpectra {
    private let stride: Int
    private let storage: AlignedFloats

    public init(count: Int, binCount: Int) throws {
        stride = alignedLength(2 * binCount)
        storage = try AlignedFloats(count: count, of: stride)
    }

    @inline(__always) public func spectrum(_ index: Int) -> UnsafeMutablePointer<Float> {
        storage.pointer + index * stride
    }
}
