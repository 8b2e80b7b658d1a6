// scipy's resample_poly as the independent reference of IR resampling (resample_reference.py).
import Convolution
import Foundation

public enum ResampleReference {
    /// How a resampled IR compares with the reference.
    public struct Verdict: Decodable, CustomStringConvertible {
        public var oursPeakFrame: Int
        public var referencePeakFrame: Int
        /// Error energy after the first 64 frames, in dB of the reference's energy.
        public var errorAfterHeadDB: Double
        public var errorDB: Double
        /// Our energy against the reference's.
        public var gainDB: Double

        public var description: String {
            String(
                format: "peak at %d (reference %d), error %.1f dB after 64 frames (%.1f dB in all), gain %+.3f dB",
                oursPeakFrame, referencePeakFrame, errorAfterHeadDB, errorDB, gainDB)
        }
    }

    /// A cabinet-like IR: one channel, energy from its first frames, made by scipy.
    public struct Cabinet {
        public var wav: String
        public var raw: String
        public var sampleRate: Double
    }

    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("resample_reference.py").path

    private struct Frames: Decodable { var frames: Int }

    /// Writes the cabinet IR at `rate` into `directory` as raw floats and as a float WAV.
    public static func writeCabinet(rate: Double, directory: String) throws -> Cabinet {
        let raw = directory + "/cabinet-\(Int(rate)).f32"
        let _: Frames = try ReferenceScript.run(
            script, ["task": "cabinet", "out": raw, "rate": "\(rate)"],
            workDirectory: directory)
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let wav = directory + "/cabinet-\(Int(rate)).wav"
        try AudioFile.write(path: wav, sampleRate: rate, channels: [samples])
        return Cabinet(wav: wav, raw: raw, sampleRate: rate)
    }

    private struct CompareSpec: Encodable {
        var task = "compare"
        var source: String
        var sourceRate: Double
        var targetRate: Double
        var ours: String
    }

    /// Compares `resampled` (the cabinet loaded at `targetRate`) with resample_poly's.
    public static func judge(_ resampled: [Float], targetRate: Double, of cabinet: Cabinet, directory: String) throws -> Verdict {
        let ours = directory + "/ours-\(Int(cabinet.sampleRate))-\(Int(targetRate)).f32"
        try resampled.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: ours)) }
        return try ReferenceScript.run(
            script,
            CompareSpec(
                source: cabinet.raw, sourceRate: cabinet.sampleRate,
                targetRate: targetRate, ours: ours), workDirectory: directory)
    }
}
