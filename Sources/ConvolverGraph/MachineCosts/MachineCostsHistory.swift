import Convolution

/// The last few machine-cost measurements on this CPU model, one line each, in a small text file
/// (a debug build keeps its own, `machine-costs-debug`: its unoptimised kernels cost many times
/// more and must not move a release build's median):
/// `cpu <model>, kernels <version>`, then per measurement `costs multiply-add=<ns> direct-tap=<ns> fft<size>=<ns> ...`.
/// A file written for another CPU model or other kernels counts as empty; a line that does not read
/// back is left out (and dropped by the next save).
struct MachineCostsHistory {
    /// Measurements kept: enough for a steady median, few enough to follow a changed machine.
    static let kept = 9
    /// Bumped whenever the measured kernels change, so that their old costs do not move the median:
    /// 2 = FFTW's interleaved plans, 3 = the AVX multiply-add, 4 = one half-size complex FFT plan,
    /// 5 = spectra in 16-bin groups, 6 = multiply-adds measured from memory only, 7 = the AVX
    /// multiply-add prefetches ahead, 8 = the direct head's taps.
    static let kernelsVersion = 8
    #if DEBUG
    var path = UserCache.path("machine-costs-debug")
    #else
    var path = UserCache.path("machine-costs")
    #endif
    var cpu = MachineCostsHistory.cpuModel()

    /// The file's first line: whose costs these are.
    var header: String { "cpu \(cpu), kernels \(Self.kernelsVersion)" }

    func load() -> [MachineCosts] {
        guard let text = SystemFiles.readText(path) else { return [] }
        let lines = text.split(separator: "\n")
        guard lines.first == Substring(header) else { return [] }
        return lines.dropFirst().compactMap(Self.costs(from:))
    }

    /// Keeps the last `kept` of `measurements`. Failing to write only loses the history.
    func save(_ measurements: [MachineCosts]) {
        let lines = [header] + measurements.suffix(Self.kept).map(Self.line(for:))
        SystemFiles.createParentDirectories(of: path)
        SystemFiles.writeTextAtomically(lines.joined(separator: "\n") + "\n", to: path)
    }

    private static func line(for costs: MachineCosts) -> String {
        ([
            "costs", "multiply-add=\(costs.multiplyAddNanosecondsPerBin)", "direct-tap=\(costs.directTapNanoseconds)",
        ]
            + costs.fftPairNanoseconds.keys.sorted().map { "fft\($0)=\(costs.fftPairNanoseconds[$0]!)" })
            .joined(separator: " ")
    }

    private static func costs(from line: Substring) -> MachineCosts? {
        let fields = line.split(separator: " ")
        guard fields.first == "costs" else { return nil }
        var ffts: [Int: Double] = [:]
        var multiplyAdd: Double?, directTap: Double?
        for field in fields.dropFirst() {
            let pair = field.split(separator: "=")
            guard pair.count == 2, let value = Double(pair[1]), value.isFinite, value > 0 else { return nil }
            switch pair[0] {
            case "multiply-add": multiplyAdd = value
            case "direct-tap": directTap = value
            case let key where key.hasPrefix("fft"):
                guard let size = Int(key.dropFirst(3)), size >= 2, size & (size - 1) == 0 else { return nil }
                ffts[size] = value
            default: return nil
            }
        }
        guard !ffts.isEmpty, let multiplyAdd, let directTap else { return nil }
        return MachineCosts(fftPairNanoseconds: ffts, multiplyAddNanosecondsPerBin: multiplyAdd, directTapNanoseconds: directTap)
    }

    /// This machine's CPU, as `cpuModel(cpuinfo:)` names it from /proc/cpuinfo.
    static func cpuModel() -> String { cpuModel(cpuinfo: SystemFiles.readText("/proc/cpuinfo") ?? "") }

    /// The first `model name` ("unknown" if none) and the widest vector unit its `flags` list: a
    /// virtual machine may name AVX2-only and AVX-512 hosts alike ("AMD EPYC"), and FFTW's costs
    /// differ between them.
    static func cpuModel(cpuinfo: String) -> String {
        func field(_ name: String) -> String {
            let line = cpuinfo.split(separator: "\n").first { $0.hasPrefix(name) }
            return line?.split(separator: ":", maxSplits: 1).last.map { String($0.drop(while: \.isWhitespace)) } ?? ""
        }
        let name = field("model name")
        let model = name.isEmpty ? "unknown" : name
        let flags = Set(field("flags").split(separator: " ").map(String.init))
        guard let widest = ["avx512f", "avx2", "avx"].first(where: flags.contains) else { return model }
        return "\(model) (\(widest))"
    }
}
