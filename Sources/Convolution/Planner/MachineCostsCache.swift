import Foundation

/// The user's cache directory for swift-convolver (`$XDG_CACHE_HOME` or `~/.cache`, then
/// `swift-convolver/`): FFTW wisdom and machine costs, measured once and kept between processes.
enum UserCache {
    static func path(_ file: String) -> String {
        let environment = ProcessInfo.processInfo.environment
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? "/tmp") + "/.cache")
        return cache + "/swift-convolver/" + file
    }
}

/// The fastest machine costs measured so far on this CPU model, as a small text file:
/// `cpu <model>`, `fft <size> <ns>` per size, `multiply-add-cached <ns>`, `multiply-add-streaming <ns>`.
/// Anything unreadable, or written for another CPU, is ignored (and replaced by the next save).
struct MachineCostsCache {
    var path = UserCache.path("machine-costs")
    var cpu = MachineCostsCache.cpuModel()

    func load() -> MachineCosts? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        var ffts: [Int: Double] = [:]
        var cached: Double?, streaming: Double?, sameCPU = false
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard fields.count == 2 else { return nil }
            if fields[0] == "cpu" { sameCPU = fields[1] == cpu; continue }
            let numbers = fields[1].split(separator: " ").compactMap { Double($0) }
            guard let value = numbers.last, value.isFinite, value > 0 else { return nil }
            switch (fields[0], numbers.count) {
            case ("fft", 2) where numbers[0] >= 2 && numbers[0] <= 16_777_216: ffts[Int(numbers[0])] = value
            case ("multiply-add-cached", 1): cached = value
            case ("multiply-add-streaming", 1): streaming = value
            default: return nil
            }
        }
        guard sameCPU, !ffts.isEmpty, let cached, let streaming else { return nil }
        return MachineCosts(fftPairNanoseconds: ffts, multiplyAddNanosecondsPerBinCached: cached,
                            multiplyAddNanosecondsPerBinStreaming: streaming)
    }

    /// Written to a temporary file and renamed, so a process reading it never sees half of it.
    func save(_ costs: MachineCosts) {
        var lines = ["cpu \(cpu)"]
        lines += costs.fftPairNanoseconds.keys.sorted().map { "fft \($0) \(costs.fftPairNanoseconds[$0]!)" }
        lines.append("multiply-add-cached \(costs.multiplyAddNanosecondsPerBinCached)")
        lines.append("multiply-add-streaming \(costs.multiplyAddNanosecondsPerBinStreaming)")
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = path + ".\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        guard (try? (lines.joined(separator: "\n") + "\n").write(toFile: temporary, atomically: false, encoding: .utf8)) != nil
        else { return }
        if rename(temporary, path) != 0 { unlink(temporary) }
    }

    /// The first `model name` of /proc/cpuinfo ("unknown" if none).
    static func cpuModel() -> String {
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let line = info.split(separator: "\n").first { $0.hasPrefix("model name") }
        let model = line?.split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? ""
        return model.isEmpty ? "unknown" : model
    }
}
