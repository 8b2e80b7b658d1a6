// Thin helpers over libpipewire's C API: its log, its version, errno after a call, properties.
// Not real-time code.
import CConvolverShims
import CPipeWire
import Glibc

/// PipeWire's log (the daemon's log, or stderr of a client), with the module's prefix.
enum PipeWireLog {
    static func info(_ message: String) { cpw_log(SPA_LOG_LEVEL_INFO, "swift-convolver: " + message) }
    static func warning(_ message: String) { cpw_log(SPA_LOG_LEVEL_WARN, "swift-convolver: " + message) }
    static func error(_ message: String) { cpw_log(SPA_LOG_LEVEL_ERROR, "swift-convolver: " + message) }
}

/// The libpipewire this process runs (not the headers it was built with).
enum PipeWireVersion {
    static let running = String(cString: pw_get_library_version())
    /// Where filter-chain 1.x reads a config differently from 0.3.x, the graph compiler follows the running one.
    static var runningIsOneDotX: Bool { !running.hasPrefix("0.") }

    /// Whether the running libpipewire is `major.minor.micro` or newer.
    static func runningIsAtLeast(_ major: Int, _ minor: Int, _ micro: Int = 0) -> Bool {
        let parts = running.split(separator: ".").map { Int($0) ?? 0 } + [0, 0, 0]
        return (parts[0], parts[1], parts[2]) >= (major, minor, micro)
    }
}

/// `call`'s result and errno read right after it, inside the closure: once Swift releases the
/// temporaries of a call (bridged strings), their deinit may have changed errno. Pass C strings
/// made outside (`withCString`), so that nothing is released between the call and the read.
func withErrno<Result>(_ call: () -> Result) -> (Result, errno: Int32) {
    let result = call()
    return (result, errno)
}

/// Builds a `pw_properties` from Swift pairs. The caller owns the result (`pw_properties_free`, or
/// give it to a call that takes ownership such as `pw_filter_new`).
func makeProperties(_ pairs: [(String, String)]) -> UnsafeMutablePointer<pw_properties> {
    let properties = pw_properties_new_string("")!
    for (key, value) in pairs { pw_properties_set(properties, key, value) }
    return properties
}
