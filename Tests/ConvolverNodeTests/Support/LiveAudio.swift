import Foundation
import XCTest

/// The sample-exact comparisons of pw-play → node → pw-record against a reference.
///
/// On small VMs PipeWire's graph now and then gives the node other input than the recorder saw
/// for a cycle, which leaves one IR length of output "wrong" (seen with the plainest node: one
/// head level, no helper threads, 180 µs busy at most). Fresh-clone runs on this kind of machine
/// failed 0, 1 and 7 of these tests. So `make test` reports them as skipped and `make test-live`
/// (SWIFT_CONVOLVER_LIVE_AUDIO=1) runs them; the other live tests always run.
enum LiveAudio {
    static func requireEnabled() throws {
        guard ProcessInfo.processInfo.environment["SWIFT_CONVOLVER_LIVE_AUDIO"] == "1" else {
            throw XCTSkip("sample-exact live audio comparison: run with `make test-live` (SWIFT_CONVOLVER_LIVE_AUDIO=1)")
        }
    }
}
