import XCTest

@testable import ConvolverGraph
@testable import ConvolverNode

/// The node's engine requests: which finished builds are installed, which are outdated, when the
/// node re-plans for the graph's quantum, and which build answers a Props request.
final class EngineRequestsTests: XCTestCase {
    private let hall = EngineRequestsTests.configuration("builtin:hall")
    private let room = EngineRequestsTests.configuration("builtin:room")

    private static func configuration(_ filename: String) -> NodeConfiguration {
        var configuration = NodeConfiguration()
        configuration.filename = filename
        return configuration
    }

    func testABuildForTheRequestedRateIsInstalledAndOneOutdatedByANewerRateIsNot() {
        var requests = EngineRequests(sampleRate: 48000, expectedBlockSize: 256)
        let first = requests.request(hall, sampleRate: 44100, purpose: .sampleRate)
        XCTAssertEqual(first.expectedBlockSize, 256)
        let second = requests.request(hall, sampleRate: 96000, purpose: .sampleRate)
        XCTAssertEqual(requests.sampleRate, 96000)
        XCTAssertEqual(requests.completed(first, succeeded: true, impulseSource: hall.impulseSource).action, .discard)
        XCTAssertEqual(
            requests.completed(second, succeeded: true, impulseSource: hall.impulseSource).action, .install(inSilence: false))
    }

    func testOnlyTheNewestIRRequestAnswersPropsAndALaterRateOutdatesIt() {
        var requests = EngineRequests(sampleRate: 48000, expectedBlockSize: 256)
        let older = requests.request(room, sampleRate: 48000, purpose: .impulseResponse)
        let newer = requests.request(hall, sampleRate: 48000, purpose: .impulseResponse)
        XCTAssertEqual(requests.pendingImpulseConfiguration, hall, "later Props build on the newest request")
        XCTAssertEqual(
            requests.completed(older, succeeded: true, impulseSource: hall.impulseSource),
            .init(action: .install(inSilence: false), answersProps: false))
        XCTAssertEqual(
            requests.completed(newer, succeeded: true, impulseSource: hall.impulseSource),
            .init(action: .install(inSilence: false), answersProps: true))
        XCTAssertNil(requests.pendingImpulseConfiguration)

        let outdated = requests.request(room, sampleRate: 48000, purpose: .impulseResponse)
        _ = requests.request(room, sampleRate: 44100, purpose: .sampleRate)
        XCTAssertEqual(
            requests.completed(outdated, succeeded: true, impulseSource: hall.impulseSource),
            .init(action: .discard, answersProps: true), "answered, with a failure the user can act on")

        let failing = requests.request(hall, sampleRate: 44100, purpose: .impulseResponse)
        XCTAssertEqual(
            requests.completed(failing, succeeded: false, impulseSource: room.impulseSource),
            .init(action: .keep, answersProps: true))
    }

    func testReplansForTheGraphsQuantumOnlyInSilenceOnceAtATimeAndNeverAgainAfterAFailure() {
        var requests = EngineRequests(sampleRate: 48000, expectedBlockSize: 1024)
        func replan(_ quantum: Int, silent: Int = 48000) -> Bool {
            requests.shouldReplan(observedQuantum: quantum, plannedBlockSize: 1024, impulseFrames: 48000, silentInputFrames: silent)
        }
        XCTAssertFalse(replan(1024), "already planned for it")
        XCTAssertFalse(replan(8), "not a quantum PipeWire runs")
        XCTAssertFalse(replan(256, silent: 47999), "sound in the last IR length")
        XCTAssertTrue(replan(256))
        XCTAssertEqual(requests.expectedBlockSize, 256)
        let build = requests.request(hall, sampleRate: 48000, purpose: .quantum)
        XCTAssertEqual(build.expectedBlockSize, 256)
        XCTAssertFalse(replan(128), "one re-plan at a time")
        XCTAssertEqual(requests.completed(build, succeeded: false, impulseSource: hall.impulseSource).action, .keep)
        XCTAssertFalse(replan(256), "a quantum that failed is not asked again")
        XCTAssertTrue(replan(128))
    }

    func testAQuantumBuildIsOutdatedByANewerQuantumOrIR() {
        var requests = EngineRequests(sampleRate: 48000, expectedBlockSize: 1024)
        func replan(_ quantum: Int) -> Bool {
            requests.shouldReplan(observedQuantum: quantum, plannedBlockSize: 1024, impulseFrames: 0, silentInputFrames: 0)
        }
        XCTAssertTrue(replan(256))
        let build = requests.request(hall, sampleRate: 48000, purpose: .quantum)
        XCTAssertEqual(
            requests.completed(build, succeeded: true, impulseSource: room.impulseSource).action, .discard,
            "the IR changed while it was built")
        XCTAssertTrue(replan(128))
        let stale = requests.request(hall, sampleRate: 48000, purpose: .quantum)
        XCTAssertEqual(requests.completed(stale, succeeded: true, impulseSource: hall.impulseSource).action, .install(inSilence: true))
        XCTAssertTrue(replan(64))
        let current = requests.request(hall, sampleRate: 48000, purpose: .quantum)
        XCTAssertEqual(requests.completed(stale, succeeded: true, impulseSource: hall.impulseSource).action, .discard, "planned for 128, not 64")
        XCTAssertEqual(requests.completed(current, succeeded: true, impulseSource: hall.impulseSource).action, .install(inSilence: true))
    }
}
