// swift-tools-version:5.9
// swift-convolver: a zero-latency partitioned convolver as a PipeWire filter node.
// Layout and dependency direction: see docs/design.md.
import PackageDescription

// Why these flags:
// - exclusivity checking off: the first `swift_beginAccess` on a thread of a dlopened module mallocs
//   (TLS), which would break the real-time contract on PipeWire's data thread (docs/facts.md).
let realtimeSwiftSettings: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"])]

let package = Package(
    name: "swift-convolver",
    products: [
        .executable(name: "pw-convolver", targets: ["pw-convolver"]),
        // Loaded by PipeWire as `libpipewire-module-swift-convolver` (the loader adds `.so`).
        .library(name: "pipewire-module-swift-convolver", type: .dynamic, targets: ["SwiftConvolverModule"]),
    ],
    targets: [
        // System libraries: module maps only.
        .systemLibrary(
            name: "CPipeWire", pkgConfig: "libpipewire-0.3",
            providers: [.apt(["libpipewire-0.3-dev", "libspa-0.2-dev"])]),
        .systemLibrary(name: "CFFTW", pkgConfig: "fftw3f", providers: [.apt(["libfftw3-dev"])]),
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),
        .systemLibrary(name: "CMySofa", pkgConfig: "libmysofa", providers: [.apt(["libmysofa-dev"])]),
        // LADSPA's one header (plugins are opened at run time, nothing is linked).
        .systemLibrary(name: "CLADSPA", providers: [.apt(["ladspa-sdk"])]),
        // lilv finds LV2 plugins and makes their instances (with lv2-dev's headers of the extensions).
        .systemLibrary(name: "CLilv", providers: [.apt(["liblilv-dev", "lv2-dev"])]),
        // Thin C: only what Swift cannot import (PipeWire macros and varargs).
        .target(name: "CConvolverShims", dependencies: ["CPipeWire"]),
        // The spectrum multiply-add compiled for AVX, chosen at run time (Swift cannot do that per function).
        .target(name: "CSpectrumKernels"),

        // The owner of raw memory (fixed buffers) and the error when the machine has none left.
        .target(name: "FixedMemory", swiftSettings: realtimeSwiftSettings),
        // Pure DSP: the partitioned engine, its planner, FFT, kernels, impulse responses.
        .target(
            name: "Convolution", dependencies: ["FixedMemory", "CFFTW", "CSndFile", "CSoxr", "CMySofa", "CSpectrumKernels"],
            swiftSettings: realtimeSwiftSettings),
        // Real-time helper threads, semaphores, intervals and deadlines. Knows nothing of DSP.
        .target(name: "Workgroup", dependencies: ["FixedMemory"], swiftSettings: realtimeSwiftSettings),
        // The engine's level jobs and split parts on the workgroup's helpers. No PipeWire.
        .target(name: "LevelScheduling", dependencies: ["Convolution", "Workgroup"], swiftSettings: realtimeSwiftSettings),
        // The node's graph and configuration without PipeWire: SPA-JSON, module arguments, filter-chain's
        // graphs read, compiled and run in stages with hosted plugins, control answers, this machine's costs.
        .target(
            name: "ConvolverGraph", dependencies: ["FixedMemory", "Convolution", "Workgroup", "LevelScheduling", "CLADSPA", "CLilv"],
            swiftSettings: realtimeSwiftSettings),
        // The PipeWire filter node: ports, process(), params, statistics, module entry.
        .target(
            name: "ConvolverNode",
            dependencies: ["FixedMemory", "Convolution", "Workgroup", "LevelScheduling", "ConvolverGraph", "CPipeWire", "CConvolverShims"],
            swiftSettings: realtimeSwiftSettings),

        // Wiring only.
        .executableTarget(
            name: "pw-convolver", dependencies: ["FixedMemory", "ConvolverGraph", "ConvolverNode", "LevelScheduling", "Workgroup"],
            swiftSettings: realtimeSwiftSettings),
        .target(
            name: "SwiftConvolverModule", dependencies: ["ConvolverNode"],
            swiftSettings: realtimeSwiftSettings,
            // nodelete: PipeWire dlcloses modules on unload; a half-unloaded Swift runtime
            // crashes later (docs/facts.md).
            linkerSettings: [.unsafeFlags(["-Xlinker", "-z", "-Xlinker", "nodelete"])],
            plugins: ["ModuleUsage"]),

        // The parsers under libFuzzer (scripts/fuzz.sh builds it with -sanitize=fuzzer,address -DFUZZING);
        // built plainly, the replayer of its corpus and findings (FuzzCorpusTests).
        .executableTarget(
            name: "fuzz-parsers", dependencies: ["Convolution", "ConvolverGraph"], path: "Fuzz/FuzzParsers",
            swiftSettings: realtimeSwiftSettings),

        // Build time: the module's `module.usage` text from the options list of its manual (ModuleEntry.swift).
        .executableTarget(name: "module-usage", path: "Plugins/ModuleUsageTool"),
        .plugin(name: "ModuleUsage", capability: .buildTool(), dependencies: ["module-usage"]),

        // Tests. AllocationCounter interposes malloc & co. and pthread_mutex_lock in the test process.
        .target(name: "AllocationCounter", path: "Tests/AllocationCounter"),
        .target(
            name: "EngineTestSupport", dependencies: ["Convolution"], path: "Tests/EngineTestSupport",
            exclude: ["resample_reference.py"]),
        .testTarget(
            name: "ConvolutionTests", dependencies: ["FixedMemory", "Convolution", "CSpectrumKernels", "AllocationCounter", "EngineTestSupport"]),
        .testTarget(name: "WorkgroupTests", dependencies: ["Workgroup", "AllocationCounter"]),
        // pw-convolver end to end: the built executable run on files, its output checked.
        .testTarget(name: "CommandLineTests", dependencies: ["Convolution", "EngineTestSupport"]),
        .testTarget(
            name: "LevelSchedulingTests",
            dependencies: ["LevelScheduling", "Convolution", "Workgroup", "AllocationCounter", "EngineTestSupport"]),
        // The graph layer without PipeWire: graphs with hosted plugins read, staged and run.
        .testTarget(
            name: "ConvolverGraphTests",
            dependencies: ["ConvolverGraph", "Convolution", "LevelScheduling", "Workgroup", "EngineTestSupport"]),
        // The node's parts without a daemon: configuration, graphs, params, statistics.
        .testTarget(
            name: "ConvolverNodeTests",
            dependencies: ["ConvolverGraph", "ConvolverNode", "LevelScheduling", "Workgroup", "CPipeWire", "EngineTestSupport"]),
        // Against private PipeWire daemons (started by the tests): the module, its client, its tools, the package.
        .testTarget(
            name: "LiveTests", dependencies: ["ConvolverGraph", "ConvolverNode", "LevelScheduling", "AllocationCounter", "EngineTestSupport"],
            exclude: [
                "Support/judge_record.py", "Support/judge_graph.py", "Support/judge_against_filter_chain.py", "Support/ladspa_reference.py",
                "Support/sofa_reference.py", "Support/judge_filter_graph.py", "FilterChainConfigs",
            ]),
    ]
)
