// The one owner of raw memory: every table and scratch array of the real-time code is a
// FixedBuffer, so no type pairs an allocate with a deallocate by hand.
import Glibc

/// `count` elements at a fixed address, allocated once (aligned), initialised to one value, and
/// freed when the buffer goes. Read and written in place through `pointer` or the subscript: no
/// copy, no copy-on-write, so real-time code may use it freely once it exists.
public final class FixedBuffer<Element: BitwiseCopyable> {
    public let count: Int
    public let pointer: UnsafeMutablePointer<Element>

    /// Throws `ResourceError.outOfMemory` when the memory cannot be had, or its byte count
    /// overflows: the module runs inside the user's PipeWire process and must not trap there.
    /// `hugePages`: asks the kernel for 2 MB pages (transparent huge pages, where it has them on
    /// `madvise`) before the memory is first touched: for tens of megabytes written a little at a
    /// time, each 4 KB page would be a TLB miss of its own.
    public init(repeating value: Element, count: Int, alignment: Int = 64, hugePages: Bool = false) throws(ResourceError) {
        self.count = count
        let capacity = max(count, 1)
        let (bytes, overflow) = capacity.multipliedReportingOverflow(by: MemoryLayout<Element>.stride)
        let alignment = max(hugePages ? Self.hugePageBytes : alignment, MemoryLayout<Element>.alignment)
        var raw: UnsafeMutableRawPointer?
        // SAFETY: posix_memalign either fails (checked) or returns `bytes` bytes at `alignment`,
        // bound here to `capacity` elements once and owned until deinit. BitwiseCopyable elements
        // need no deinitialisation before `free`.
        guard !overflow, posix_memalign(&raw, alignment, bytes) == 0, let raw else {
            throw .outOfMemory(bytes: overflow ? Int.max : bytes)
        }
        if hugePages { _ = madvise(raw, bytes, MADV_HUGEPAGE) }  // advice: without it, 4 KB pages
        pointer = raw.bindMemory(to: Element.self, capacity: capacity)
        pointer.initialize(repeating: value, count: capacity)
    }

    static var hugePageBytes: Int { 2 << 20 }

    deinit { free(pointer) }

    // Inlinable: the engine's loops index tables from another module, and a call per element
    // would cost more than the element.
    @inlinable public subscript(index: Int) -> Element {
        @inline(__always) get { pointer[index] }
        @inline(__always) set { pointer[index] = newValue }
    }

    /// Every element set to `value`. Real-time safe.
    @inlinable public func fill(with value: Element) { pointer.update(repeating: value, count: count) }
}
