import Convolution
import Foundation
import XCTest

@testable import ConvolverGraph
@testable import ConvolverNode

/// What the node and the CLI plan with: the median of this process's measurement and the last ones
/// kept in the user's cache for this CPU model.
final class MeasuredMachineCostsTests: XCTestCase {
    /// The planner's costs are the median of this process's measurement and the last ones on this
    /// CPU model: per cost, over the measurements that have it.
    func testMachineCostsAreTheMedianOfEachCost() {
        let measurements =
            [(100.0, 5.0), (300, 9), (200, 1)].map { fft, multiplyAdd in
                MachineCosts(fftPairNanoseconds: [64: fft], multiplyAddNanosecondsPerBin: multiplyAdd, directTapNanoseconds: multiplyAdd / 10)
            } + [MachineCosts(fftPairNanoseconds: [64: 250, 128: 700], multiplyAddNanosecondsPerBin: 6, directTapNanoseconds: 0.6)]
        let median = MeasuredMachineCosts.median(of: measurements)
        XCTAssertEqual(median.fftPairNanoseconds, [64: 225, 128: 700], "even count: mean of the middle two")
        XCTAssertEqual(median.multiplyAddNanosecondsPerBin, 5.5)
        XCTAssertEqual(median.directTapNanoseconds, 0.55, accuracy: 1e-12)
        XCTAssertEqual(MeasuredMachineCosts.median(of: measurements.prefix(3)).fftPairNanoseconds, [64: 200])
    }

    /// The history keeps the last measurements for this CPU model and these kernels only, and a line
    /// that does not read back is left out without losing the others.
    func testMachineCostsHistoryKeepsTheLastMeasurementsOfThisCPU() throws {
        let directory = NSTemporaryDirectory() + "machine-costs-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let history = MachineCostsHistory(path: directory + "/machine-costs", cpu: "CPU A @ 3.0GHz")
        XCTAssertEqual(history.load().count, 0, "nothing saved yet")
        let measurements = (1...12).map {
            MachineCosts(
                fftPairNanoseconds: [64: Double($0), 32768: 1e5 + Double($0)],
                multiplyAddNanosecondsPerBin: 0.25 * Double($0), directTapNanoseconds: 0.01 * Double($0))
        }
        history.save(measurements)
        let loaded = history.load()
        XCTAssertEqual(loaded.map(\.fftPairNanoseconds), measurements.suffix(MachineCostsHistory.kept).map(\.fftPairNanoseconds))
        XCTAssertEqual(loaded.map(\.multiplyAddNanosecondsPerBin), (4...12).map { 0.25 * Double($0) })
        XCTAssertEqual(loaded.map(\.directTapNanoseconds), (4...12).map { 0.01 * Double($0) })

        XCTAssertEqual(MachineCostsHistory(path: history.path, cpu: "CPU B").load().count, 0, "costs of another CPU model")
        let good = "costs multiply-add=5 direct-tap=0.1 fft64=100"
        try (["cpu CPU A @ 3.0GHz", good].joined(separator: "\n")).write(toFile: history.path, atomically: true, encoding: .utf8)
        XCTAssertEqual(history.load().count, 0, "costs measured with older kernels")
        let text = [
            history.header, good,
            "costs multiply-add=5 direct-tap=0.1 fft64=fast",
            "costs multiply-add=-1 direct-tap=0.1 fft64=100",
            "costs multiply-add=5 direct-tap=0.1 fft63=100",
            "costs multiply-add=5 fft64=100",
            "costs fft64=100", "costs multiply-add-cached=2 multiply-add-streaming=5 fft64=100", "garbage", good,
        ].joined(separator: "\n")
        try text.write(toFile: history.path, atomically: true, encoding: .utf8)
        XCTAssertEqual(history.load().map(\.fftPairNanoseconds), [[64: 100], [64: 100]])
    }

    /// Two hosts a virtual machine names alike keep separate histories when one has AVX-512.
    func testTheCPUNameTellsVectorUnitsApart() {
        func cpuinfo(_ flags: String) -> String {
            "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 \(flags)\n\nprocessor\t: 1\n"
        }
        XCTAssertEqual(MachineCostsHistory.cpuModel(cpuinfo: cpuinfo("avx avx2 fma")), "AMD EPYC (avx2)")
        XCTAssertEqual(MachineCostsHistory.cpuModel(cpuinfo: cpuinfo("avx avx2 avx512f avx512bw")), "AMD EPYC (avx512f)")
        XCTAssertEqual(MachineCostsHistory.cpuModel(cpuinfo: cpuinfo("ssse3")), "AMD EPYC")
        XCTAssertEqual(MachineCostsHistory.cpuModel(cpuinfo: ""), "unknown")
    }
}
