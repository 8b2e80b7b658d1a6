import Glibc

/// The few file and environment calls the library targets need, on Glibc alone: these targets are
/// loaded into the user's PipeWire process, and Foundation would bring ICU (tens of MB) with it.
public enum SystemFiles {
    /// The environment variable `name`, nil if unset.
    public static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The whole file as UTF-8 text (invalid bytes repaired), nil if it cannot be read.
    public static func readText(_ path: String) -> String? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            bytes += chunk[0..<count]
            if count < chunk.count { break }
        }
        guard ferror(file) == 0 else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes `text` to `path` through a temporary file renamed over it, so that a reader never sees
    /// half of it. False if it could not be written.
    @discardableResult
    public static func writeTextAtomically(_ text: String, to path: String) -> Bool {
        let temporary = path + ".\(getpid())"
        guard let file = fopen(temporary, "wb") else { return false }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        let closed = fclose(file) == 0
        guard written == bytes.count, closed, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// Creates the directory that will hold `path`, and its parents (`mkdir -p "$(dirname path)"`).
    public static func createParentDirectories(of path: String) {
        var directory = ""
        for component in path.split(separator: "/").dropLast() {
            directory += (path.hasPrefix("/") || !directory.isEmpty ? "/" : "") + component
            mkdir(directory, 0o755)  // an existing directory fails with EEXIST: fine
        }
    }
}
