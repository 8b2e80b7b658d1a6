import Glibc

extension String {
    /// printf-style formatting by the C library (`String(format:)` is Foundation's, which the
    /// library targets do not load; see SystemFiles).
    public init(cFormat format: String, _ arguments: CVarArg...) {
        let length = withVaList(arguments) { vsnprintf(nil, 0, format, $0) }
        guard length > 0 else { self = ""; return }
        var bytes = [CChar](repeating: 0, count: Int(length) + 1)
        _ = bytes.withUnsafeMutableBufferPointer { buffer in
            withVaList(arguments) { vsnprintf(buffer.baseAddress, buffer.count, format, $0) }
        }
        self = String(decoding: bytes.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
