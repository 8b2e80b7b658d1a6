// The parsers a user's configs and files reach, as libFuzzer targets (`make fuzz`). Built with
// AddressSanitizer, coverage and -DFUZZING (scripts/fuzz.sh), main hands over to libFuzzer's driver;
// built plainly, this is the replayer: `fuzz-parsers TARGET FILE-OR-DIRECTORY...` runs each input
// once (the corpus and every finding, in `make test`). Errors are answers; only a crash, a sanitizer
// report or a hang is a finding.
import Convolution
import ConvolverGraph
import Glibc

/// One parser and how an input reaches it.
enum FuzzTarget: String, CaseIterable {
    /// The module's arguments (SPA-JSON), a filter graph among them compiled with a tiny IR per file.
    case moduleArguments = "module-arguments"
    /// An EqualizerAPO file, as `param_eq`'s `filename` reads it.
    case equalizerAPO = "equalizer-apo"
    /// An impulse response file (anything libsndfile opens), loaded as a user's IR at 48 kHz.
    case impulseResponse = "impulse-response"
    /// A SOFA file (libmysofa), loaded as an HRTF set for a source in front.
    case hrtfSet = "hrtf-set"

    /// The file an input is written to (the loaders read paths; the name tells them the kind).
    var scratchFile: String { "/dev/shm/swconv-fuzz-\(getpid())." + (self == .hrtfSet ? "sofa" : self == .equalizerAPO ? "txt" : "wav") }

    func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        // The negative control of the fuzzer and the replayer: FUZZ_PLANT and an input "crash..." trap.
        if plantedCrash && bytes.starts(with: "crash".utf8) { fatalError("fuzz-parsers: the planted crash") }
        switch self {
        case .moduleArguments:
            let text = String(decoding: bytes, as: UTF8.self)
            guard let (configuration, _) = try? NodeConfiguration.parse(pipeWire: PipeWireVersion(1, 4, 2), arguments: text),
                let graph = configuration.graph
            else { return }
            let read: (String, FileRequest) throws(ConvolverNodeError) -> [Double] = { _, _ in [1, 0.5, -0.25] }
            let channels = (configuration.channelCount, configuration.outputCount)
            if graph.hasHostedNodes {
                _ = try? graph.stagePlan(
                    inputChannels: channels.0, outputChannels: channels.1, sampleRate: 48000, rules: FilterChainRules(graph.pipeWire), read: read)
            } else {
                _ = try? graph.matrix(
                    inputChannels: channels.0, outputChannels: channels.1, sampleRate: 48000, rules: FilterChainRules(graph.pipeWire), read: read)
            }
        case .equalizerAPO:
            guard write(bytes) else { return }
            _ = try? Equalizer.fileBands(scratchFile, key: "fuzz")
        case .impulseResponse, .hrtfSet:
            guard write(bytes) else { return }
            _ = try? ImpulseResponse.load(scratchFile, sampleRate: 48000)
        }
    }

    private func write(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let file = fopen(scratchFile, "wb") else { return false }
        defer { fclose(file) }
        return bytes.isEmpty || fwrite(bytes.baseAddress, 1, bytes.count, file) == bytes.count
    }
}

let plantedCrash = getenv("FUZZ_PLANT") != nil

/// FUZZ_TARGET names the target (libFuzzer's own arguments are its options).
let selectedTarget: FuzzTarget = {
    guard let name = getenv("FUZZ_TARGET").map({ String(cString: $0) }), let target = FuzzTarget(rawValue: name) else {
        fputs("fuzz-parsers: set FUZZ_TARGET to one of " + FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ") + "\n", stderr)
        exit(2)
    }
    // No plugin is found by name: a fuzzed config opens no library from the usual directories.
    setenv("LADSPA_PATH", "/nonexistent", 1)
    setenv("LV2_PATH", "/nonexistent", 1)
    return target
}()

/// One input through the selected target (libFuzzer's callback).
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selectedTarget.run(UnsafeBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}

#if FUZZING
/// libFuzzer's driver (libclang_rt.fuzzer_no_main): SwiftPM names an executable's entry itself,
/// so libFuzzer's own main cannot be the program's.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
enum Fuzz {
    static func main() {
        _ = selectedTarget
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) })
    }
}
#else
/// The replayer: every file named, or in a directory named, through the target once.
@main
enum Replay {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
            fputs(
                "usage: fuzz-parsers TARGET FILE-OR-DIRECTORY... (targets: "
                    + FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ") + ")\n", stderr)
            exit(2)
        }
        setenv("FUZZ_TARGET", name, 1)
        _ = selectedTarget
        var count = 0
        for path in arguments.dropFirst() {
            for file in files(path) {
                guard let bytes = contents(file) else {
                    fputs("fuzz-parsers: cannot read \(file)\n", stderr)
                    exit(1)
                }
                bytes.withUnsafeBufferPointer { target.run($0) }
                count += 1
            }
        }
        unlink(target.scratchFile)
        print("fuzz-parsers: \(target.rawValue): \(count) inputs replayed, no crash")
    }

    static func files(_ path: String) -> [String] {
        guard let directory = opendir(path) else { return [path] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if !name.hasPrefix(".") { names.append(path + "/" + name) }
        }
        return names.sorted()
    }

    static func contents(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            bytes += chunk[0..<count]
            if count < chunk.count { return bytes }
        }
    }
}
#endif
