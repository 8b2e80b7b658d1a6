// Thin helpers over libpipewire's C API: its log, its version, errno after a call, properties.
// Not real-time code.
import CConvolverShims
import CPipeWire
import ConvolverGraph
import Glibc

/// PipeWire's log (the daemon's log, or stderr of a client), with the module's prefix.
enum PipeWireLog {
    static func info(_ message: String) { cpw_log(SPA_LOG_LEVEL_INFO, "swift-convolver: " + message) }
    static func warning(_ message: String) { cpw_log(SPA_LOG_LEVEL_WARN, "swift-convolver: " + message) }
    static func error(_ message: String) { cpw_log(SPA_LOG_LEVEL_ERROR, "swift-convolver: " + message) }
}

extension PipeWireVersion {
    /// The libpipewire this process runs (not the headers it was built with).
    public static let running = PipeWireVersion(String(cString: pw_get_library_version()))
}

/// `call`'s result and errno read right after it, inside the closure: once Swift releases the
/// temporaries of a call (bridged strings), their deinit may have changed errno. Pass C strings
/// made outside (`withCString`), so that nothing is released between the call and the read.
func withErrno<Result>(_ call: () -> Result) -> (Result, errno: Int32) {
    let result = call()
    return (result, errno)
}

/// Builds a `pw_properties` from Swift pairs; nil when libpipewire has no memory for it. The caller
/// owns the result (`pw_properties_free`, or give it to a call that takes ownership such as
/// `pw_filter_new`).
func makeProperties(_ pairs: [(String, String)]) -> UnsafeMutablePointer<pw_properties>? {
    guard let properties = pw_properties_new_string("") else { return nil }
    for (key, value) in pairs { pw_properties_set(properties, key, value) }
    return properties
}
