import EngineTestSupport
import Foundation
import Workgroup
import XCTest

@testable import ConvolverGraph
@testable import ConvolverNode

/// The data thread's side of an engine hand-over, driven call by call without PipeWire: a
/// re-plan offered "in silence" is taken only once the engine in use has had silent input for
/// its IR's length, and then the output goes on unchanged.
final class EngineHandOverTests: XCTestCase {
    private let frames = 256

    func testReplanIsTakenOnlyAfterSilenceAsLongAsTheImpulse() throws {
        var configuration = NodeConfiguration()
        configuration.filename = "builtin:hall"
        let factory = EngineFactory(context: nil, costs: .typical, graph: nil)
        let first = try factory.makeSlot(configuration, sampleRate: 48000, expectedBlockSize: 1024)
        let replan = try factory.makeSlot(configuration, sampleRate: 48000, expectedBlockSize: frames)
        let processor = try RealtimeProcessor(inputCount: 2, outputCount: 2, controls: LiveControls(gain: 1, mix: 1, bypass: false))
        processor.activeEngine = EngineExchange.retain(first)
        defer {
            for slot in [processor.activeEngine, processor.engines.takeUnclaimedOffer(), processor.engines.takeRetired()] {
                if let slot { EngineExchange.release(slot) }
            }
        }
        let input = [UnsafeMutablePointer<Float>.allocate(capacity: frames), .allocate(capacity: frames)]
        let output = [UnsafeMutablePointer<Float>.allocate(capacity: frames), .allocate(capacity: frames)]
        defer { (input + output).forEach { $0.deallocate() } }
        for channel in 0..<2 {
            processor.inputBuffers[channel] = UnsafePointer(input[channel])
            processor.outputBuffers[channel] = output[channel]
        }
        var random = SeededGenerator(seed: 7)
        func call(sound: Bool) -> Float {
            for channel in 0..<2 {
                for index in 0..<frames { input[channel][index] = sound ? Float.random(in: -0.25...0.25, using: &random) : 0 }
            }
            processor.process(frameCount: frames, sampleRate: 48000, deadline: 0, startNanos: monotonicNanos())
            return (0..<2).map { channel in (0..<frames).map { abs(output[channel][$0]) }.max() ?? 0 }.max() ?? 0
        }

        for _ in 0..<20 { _ = call(sound: true) }
        XCTAssertNil(processor.engines.offer(replan, inSilence: true))
        for _ in 0..<40 { _ = call(sound: true) }
        XCTAssertEqual(processor.swaps.load(ordering: .relaxed), 0, "not taken while there is sound")
        // Silence: the hall still rings in the engine in use; the re-plan waits for it to end.
        let impulseCalls = (first.impulseFrames + frames - 1) / frames
        var ringing = 0
        for _ in 0..<impulseCalls where call(sound: false) > 0 { ringing += 1 }
        XCTAssertEqual(processor.swaps.load(ordering: .relaxed), 0, "not taken before the IR's length of silence")
        XCTAssertGreaterThan(ringing, impulseCalls / 2, "the tail rang out in the engine in use")
        _ = call(sound: false)
        XCTAssertEqual(processor.swaps.load(ordering: .relaxed), 1, "taken once the engine held only zeros")
        XCTAssertEqual(processor.crossfades.load(ordering: .relaxed), 0, "without a crossfade")
        let active = try XCTUnwrap(processor.activeEngine)
        XCTAssertEqual(active.takeUnretainedValue().plannedBlockSize, frames)
    }
}
