import Convolution
import EngineTestSupport
import Foundation
import XCTest

/// `pw-convolver bench`'s options for pricing layouts: the built executable, end to end.
final class BenchCommandTests: XCTestCase {
    private func bench(_ arguments: [String]) throws -> RenderCommandTests.Run {
        try RenderCommandTests.runExecutable(["bench"] + arguments)
    }

    func testPlanOptionPricesTheGivenLayoutWithEvictedCaches() throws {
        // 0.1 s at 48 kHz = 4800 samples: the head runs to 2 x 512, the 512 level to the IR's end.
        let run = try bench([
            "--json", "--ir-seconds", "0.1", "--blocks", "64", "--seconds", "0.2",
            "--plan", "64,512", "--evict-mb", "8",
        ])
        XCTAssertEqual(run.status, 0, run.errors)
        let partitioned = run.output.split(separator: "\n").first { $0.contains(#""engine":"partitioned""#) }
        XCTAssertNotNil(partitioned, run.output)
        XCTAssertTrue(partitioned?.contains(#""plan":"64x16 | 512x8@1024""#) ?? false, run.output)
    }

    /// Figures from two machines compare only with the same kernel: the text names the one that ran.
    func testTextNamesTheMultiplyAddKernel() throws {
        let run = try bench(["--ir-seconds", "0.1", "--blocks", "64", "--seconds", "0.2"])
        XCTAssertEqual(run.status, 0, run.errors)
        let kernel = SpectrumKernels.usesAVX ? "the AVX kernel" : "the portable kernel"
        XCTAssertTrue(run.output.hasPrefix("Multiply-adds: \(kernel)"), run.output)
    }

    func testBadLayoutsAndCombinationsAreRefusedByName() throws {
        let badBlock = try bench(["--ir-seconds", "0.1", "--blocks", "64", "--seconds", "0.2", "--plan", "64,100"])
        XCTAssertNotEqual(badBlock.status, 0)
        XCTAssertTrue(badBlock.errors.contains("invalid partition plan"), badBlock.errors)
        let pastTheEnd = try bench(["--ir-seconds", "0.01", "--blocks", "64", "--seconds", "0.2", "--plan", "64,512,4096"])
        XCTAssertNotEqual(pastTheEnd.status, 0)
        XCTAssertTrue(pastTheEnd.errors.contains("--plan"), pastTheEnd.errors)
        let threaded = try bench(["--threads", "1", "--evict-mb", "8"])
        XCTAssertEqual(threaded.status, 2)
        XCTAssertTrue(threaded.errors.contains("--evict-mb"), threaded.errors)
    }

    /// `scripts/bench-builds.py` (two builds side by side, rounds alternating) reads what bench
    /// writes: run here with one build as both, every case gets its medians and ratio.
    func testBenchBuildsComparesEveryCaseOfTwoBuilds() throws {
        try RenderCommandTests.requireExecutable()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        let executable = RenderCommandTests.executable.path
        process.arguments = [
            packageRoot + "/scripts/bench-builds.py", "--old", executable, "--new", executable, "--rounds", "2", "--",
            "--ir-seconds", "0.1", "--blocks", "64,256", "--seconds", "0.2",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, text)
        for engine in ["partitioned", "uniform"] {
            for block in [64, 256] {
                let line = text.split(separator: "\n").first {
                    $0.hasPrefix("\(engine) 0.1 s IR, block \(block) ") && $0.contains("cpu_percent")
                }
                let columns = line?.split(separator: " ", omittingEmptySubsequences: true) ?? []
                XCTAssertNotNil(line.flatMap { _ in columns.count > 10 ? Double(columns[9]) : nil }, "\(engine) \(block): \(text)")
            }
        }
    }
}
