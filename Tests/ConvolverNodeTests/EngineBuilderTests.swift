import Foundation
import XCTest

@testable import ConvolverGraph
@testable import ConvolverNode

/// The engine builder's queue: a source moved faster than engines build, and a teardown while
/// builds are queued (seen live: 50 SOFA moves queued, the client's teardown waited 10 s for them).
final class EngineBuilderTests: XCTestCase {
    private static let kemar = "/usr/share/libmysofa/MIT_KEMAR_normal_pinna.sofa"

    private func sofaConfiguration(azimuth: Double) -> NodeConfiguration {
        var configuration = NodeConfiguration()
        configuration.filename = Self.kemar
        configuration.positions = ["MONO"]
        configuration.outputPositions = ["FL", "FR"]
        configuration.sofa.azimuth = azimuth
        return configuration
    }

    private func request(_ configuration: NodeConfiguration) -> EngineBuilder.Request {
        .init(configuration: configuration, sampleRate: 48000, expectedBlockSize: 256, purpose: .impulseResponse)
    }

    func testQueuedIRBuildsOvertakenByANewerOneAreSkippedAndTheNewestIsBuilt() throws {
        let builder = EngineBuilder(factory: EngineFactory(context: nil, costs: .typical, graph: nil)) {}
        for move in 0..<20 { builder.request(request(sofaConfiguration(azimuth: Double(move)))) }
        var completions: [EngineBuilder.Completion] = []
        defer { for completion in completions + builder.finish() { if case let .success(slot) = completion.result { slot.stop() } } }
        let deadline = Date().addingTimeInterval(60)
        while completions.last?.request.configuration.sofa.azimuth != 19 && Date() < deadline {
            usleep(20_000)
            completions += builder.takeCompletions()
        }
        XCTAssertEqual(completions.last?.request.configuration.sofa.azimuth, 19, "the newest move is built")
        usleep(200_000)
        completions += builder.takeCompletions()
        XCTAssertLessThanOrEqual(
            completions.count, 2, "the one in progress, then the newest: \(completions.map(\.request.configuration.sofa.azimuth))")
    }

    func testTeardownSkipsQueuedBuilds() throws {
        let builder = EngineBuilder(factory: EngineFactory(context: nil, costs: .typical, graph: nil)) {}
        for move in 0..<20 {
            var rebuild = request(sofaConfiguration(azimuth: Double(move)))
            rebuild.purpose = .sampleRate  // not overtaken by one another: only the teardown skips them
            builder.request(rebuild)
        }
        let completions = builder.finish()
        XCTAssertLessThanOrEqual(completions.count, 1, "only the build in progress when finish() began")
        for completion in completions { if case let .success(slot) = completion.result { slot.stop() } }
    }

    func testASOFAFileIsReadOnceAcrossBuildsAndAgainWhenReplaced() throws {
        let directory = NSTemporaryDirectory() + "hrtf-cache-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let copy = directory + "/kemar.sofa", contents = try Data(contentsOf: URL(fileURLWithPath: Self.kemar))
        try contents.write(to: URL(fileURLWithPath: copy))
        let cache = HRTFSetCache()
        let first = try cache.set(path: copy, normalizedAt: nil)
        cache.buildEnded()
        XCTAssertTrue(try cache.set(path: copy, normalizedAt: nil) === first, "read again for the next build")
        XCTAssertFalse(try cache.set(path: copy, normalizedAt: 48000) === first, "another rate is another set")
        cache.buildEnded()
        XCTAssertEqual(cache.count, 2)
        usleep(50_000)  // a modification time the file system tells apart
        try contents.write(to: URL(fileURLWithPath: copy))  // replaced on disk
        XCTAssertFalse(try cache.set(path: copy, normalizedAt: nil) === first, "a replaced file is read again")
        cache.buildEnded()
        XCTAssertEqual(cache.count, 1, "sets the last build did not use are freed")
        XCTAssertThrowsError(try cache.set(path: directory + "/missing.sofa", normalizedAt: nil))
    }
}
