// `pw-convolver top`'s decoding of module-profiler pods and its late-cycle rule, on pods built with
// libspa's own pod builder; expected values are worked out by hand from the numbers put in.
import CPipeWire
import XCTest

@testable import ConvolverNode

final class ProfileDecodingTests: XCTestCase {
    /// One follower's block: times relative to the driver's signal, in ns.
    private struct Block { var id: Int32; var name: String; var signal: Int64; var awake: Int64; var finish: Int64; var status: Int32 }

    private let driverSignal: Int64 = 7_000_000_000
    private let quantum: Int64 = 256  // at 48 kHz: a period of 5_333_333 ns

    func testDecodesOneCycleAndFlagsLateAndUnfinishedNodes() throws {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 16384, alignment: 8)
        defer { buffer.deallocate() }
        try buildProfile(
            into: buffer, size: 16384,
            followers: [
                Block(id: 40, name: "on-time", signal: 10_000, awake: 30_000, finish: 130_000, status: 3),
                Block(id: 41, name: "too-slow", signal: 10_000, awake: 20_000, finish: 5_400_000, status: 3),
                Block(id: 42, name: "unfinished", signal: 10_000, awake: 20_000, finish: 90_000, status: 2),
            ])
        let cycles = try decodeProfile(buffer.assumingMemoryBound(to: spa_pod.self))
        XCTAssertEqual(cycles.count, 1)
        let cycle = try XCTUnwrap(cycles.first)
        XCTAssertEqual(cycle.quantum, 256)
        XCTAssertEqual(cycle.rate, 48000)
        XCTAssertEqual(cycle.periodNanoseconds, 5_333_333)
        XCTAssertEqual(cycle.driver.name, "Dummy-Driver")
        XCTAssertEqual(cycle.driver.id, 30)
        XCTAssertEqual(cycle.followers.map(\.name), ["on-time", "too-slow", "unfinished"])
        XCTAssertEqual(cycle.followers[0].awake - cycle.followers[0].signal, 20_000)
        XCTAssertFalse(cycle.isLate(cycle.driver))
        XCTAssertEqual(cycle.followers.map(cycle.isLate), [false, true, true])

        var statistics = GraphStatistics()
        statistics.add(cycle)
        let onTime = try XCTUnwrap(statistics.nodes[40])
        XCTAssertEqual(onTime.waitMicroseconds, [20])
        XCTAssertEqual(onTime.busyMicroseconds, [100])
        XCTAssertEqual(onTime.busyPerQuantum ?? 0, 100 / 5333.333, accuracy: 1e-6)
        XCTAssertEqual(statistics.nodes[41]?.lateCycles, 1)
        XCTAssertEqual(statistics.nodes[42]?.lateCycles, 1)
        XCTAssertEqual(statistics.nodes[30]?.isDriver, true)
    }

    /// PipeWire 1.x's asynchronous nodes (pw-play, pw-record) are reported with the times of
    /// the run the driver signalled in the cycle before: measured as pw-top measures them, and
    /// late only when that run took more than a period from its own signal. A node whose times
    /// are older did not run.
    func testAsynchronousNodesAreMeasuredFromTheCycleBefore() throws {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 16384, alignment: 8)
        defer { buffer.deallocate() }
        try buildProfile(
            into: buffer, size: 16384,
            followers: [
                Block(id: 50, name: "async", signal: -5_333_333, awake: -5_300_000, finish: -5_200_000, status: 1),
                Block(id: 51, name: "async-slow", signal: -5_333_333, awake: -5_300_000, finish: 100_000, status: 1),
                Block(id: 52, name: "stale", signal: -20_000_000, awake: -19_990_000, finish: -19_900_000, status: 3),
            ])
        let cycle = try XCTUnwrap(try decodeProfile(buffer.assumingMemoryBound(to: spa_pod.self)).first)
        XCTAssertEqual(cycle.followers.map(cycle.ran), [true, true, false])
        XCTAssertEqual(cycle.followers.map(cycle.isLate), [false, true, true])
        var statistics = GraphStatistics()
        statistics.add(cycle)
        let async = try XCTUnwrap(statistics.nodes[50])
        XCTAssertEqual(async.waitMicroseconds.map { ($0 * 1000).rounded() / 1000 }, [33.333])
        XCTAssertEqual(async.busyMicroseconds, [100])
        XCTAssertEqual(statistics.nodes[52]?.busyMicroseconds, [], "a node that did not run is not measured")
    }

    func testSummaryIsMeanNearestRankP99AndMax() {
        let summary = Summary((1...200).map(Double.init).shuffled())
        XCTAssertEqual(summary?.average, 100.5)
        XCTAssertEqual(summary?.p99, 198)  // nearest rank: ceil(0.99 * 200) = 198th smallest
        XCTAssertEqual(summary?.max, 200)
        XCTAssertNil(Summary([]))
    }

    func testANonStructPodIsAnError() {
        var pod = spa_pod(size: 0, type: UInt32(SPA_TYPE_None))
        XCTAssertThrowsError(try decodeProfile(&pod))
    }

    // MARK: - building a profile pod like module-profiler does

    private func buildProfile(into buffer: UnsafeMutableRawPointer, size: UInt32, followers: [Block]) throws {
        // The builder keeps pointers to its frames: both live on the heap for the whole build.
        let builder = UnsafeMutablePointer<spa_pod_builder>.allocate(capacity: 1)
        let frames = UnsafeMutablePointer<spa_pod_frame>.allocate(capacity: 3)
        defer { builder.deallocate(); frames.deallocate() }
        builder.initialize(to: spa_pod_builder())
        frames.initialize(repeating: spa_pod_frame(), count: 3)
        spa_pod_builder_init(builder, buffer, size)
        spa_pod_builder_push_struct(builder, frames)
        spa_pod_builder_push_object(builder, frames + 1, UInt32(SPA_TYPE_OBJECT_Profiler), 0)

        property(builder, SPA_PROFILER_info, frames + 2) { builder in
            spa_pod_builder_long(builder, 12)  // counter
            for load: Float in [0.1, 0.1, 0.1] { spa_pod_builder_float(builder, load) }
            spa_pod_builder_int(builder, 0)  // xrun count
        }
        property(builder, SPA_PROFILER_clock, frames + 2) { builder in
            spa_pod_builder_int(builder, 0)  // flags
            spa_pod_builder_int(builder, 30)  // id
            spa_pod_builder_string(builder, "clock")
            spa_pod_builder_long(builder, driverSignal)  // nsec
            spa_pod_builder_fraction(builder, 1, 48000)
            spa_pod_builder_long(builder, 0)  // position
            spa_pod_builder_long(builder, quantum)  // duration
        }
        let driver = Block(id: 30, name: "Dummy-Driver", signal: 0, awake: 5_000, finish: 200_000, status: 3)
        for (key, block) in [(SPA_PROFILER_driverBlock, driver)] + followers.map({ (SPA_PROFILER_followerBlock, $0) }) {
            property(builder, key, frames + 2) { builder in
                spa_pod_builder_int(builder, block.id)
                spa_pod_builder_string(builder, block.name)
                spa_pod_builder_long(builder, driverSignal - 5_333_333)  // prev_signal
                spa_pod_builder_long(builder, driverSignal + block.signal)
                spa_pod_builder_long(builder, driverSignal + block.awake)
                spa_pod_builder_long(builder, driverSignal + block.finish)
                spa_pod_builder_int(builder, block.status)
                spa_pod_builder_fraction(builder, 256, 48000)
            }
        }
        spa_pod_builder_pop(builder, frames + 1)
        spa_pod_builder_pop(builder, frames)
        XCTAssertLessThanOrEqual(builder.pointee.state.offset, size, "pod buffer too small")
    }

    private func property(
        _ builder: UnsafeMutablePointer<spa_pod_builder>, _ key: spa_profiler,
        _ frame: UnsafeMutablePointer<spa_pod_frame>,
        _ fields: (UnsafeMutablePointer<spa_pod_builder>) -> Void
    ) {
        spa_pod_builder_prop(builder, key.rawValue, 0)
        spa_pod_builder_push_struct(builder, frame)
        fields(builder)
        spa_pod_builder_pop(builder, frame)
    }
}
