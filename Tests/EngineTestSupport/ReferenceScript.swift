// The independent references that are Python (numpy/scipy): a spec in, a JSON answer out.
import Foundation

public enum ReferenceScript {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Writes `spec` as JSON into `workDirectory`, runs `python3 scriptPath SPEC.json` and decodes
    /// what it prints. A failing script or an unreadable answer throws, with its output.
    public static func run<Spec: Encodable, Answer: Decodable>(
        _ scriptPath: String, _ spec: Spec,
        workDirectory: String
    ) throws -> Answer {
        let name = URL(fileURLWithPath: scriptPath).lastPathComponent
        let specPath = workDirectory + "/\(name)-\(UUID().uuidString).json"
        try JSONEncoder().encode(spec).write(to: URL(fileURLWithPath: specPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [scriptPath, specPath]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0, let answer = try? JSONDecoder().decode(Answer.self, from: data) else {
            throw Failure(description: "\(name) failed: \(String(decoding: data, as: UTF8.self)) \(errorText.suffix(2000))")
        }
        return answer
    }
}
