import Foundation

/// Runs `executable` with `arguments` to its end (stdin empty); its exit status and its stdout
/// and stderr together. `environment` nil: this process's.
func runToCompletion(
    _ executable: String, _ arguments: [String],
    environment: [String: String]? = nil
) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, output)
}

/// What is under `directory` that is not a directory (files, symlinks, whiteouts), relative to
/// it, sorted: what an install left or a removal did not take away.
func entriesOtherThanDirectories(under directory: String) -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: directory) else { return [] }
    var found: [String] = []
    while let entry = enumerator.nextObject() as? String {
        let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/" + entry)
        if attributes?[.type] as? FileAttributeType != .typeDirectory { found.append(entry) }
    }
    return found.sorted()
}

/// A procfs file's text (`/proc/<pid>/maps` …): they report size 0, so they are read as a stream.
func procfsText(_ path: String) -> String {
    guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
    defer { try? handle.close() }
    return String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
}
