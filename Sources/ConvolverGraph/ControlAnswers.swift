// What the node did with each Props request, for `pw-convolver set` and anyone reading pw-dump:
// pw-cli's set-param reports only that the message was sent, so the node says the rest itself.

/// Props requests are numbered as they arrive (`convolver.control-requests`); the answer to the
/// newest one answered is `convolver.control-answer`: `"7 ok"`, or `"7 refused: mix = 3.0 (expects
/// 0...1)"` (the keys not named were applied). A request that starts an IR build is answered when
/// the build ends; one overtaken by a newer request's build is answered with that one.
package struct ControlAnswers {
    package static let requestsKey = "convolver.control-requests"
    package static let answerKey = "convolver.control-answer"

    private(set) var requests = 0
    private(set) var answer = "0 ok"
    /// The newest request whose IR build runs, and what was already refused in it.
    private var awaitingBuild: (request: Int, refusals: [String])?

    package init() {}

    /// A request arrived: its number.
    package mutating func received() -> Int {
        requests += 1
        return requests
    }

    /// Answers `request` now.
    package mutating func answer(_ request: Int, refusals: [String]) {
        answer = refusals.isEmpty ? "\(request) ok" : "\(request) refused: \(refusals.joined(separator: "; "))"
    }

    /// `request` is answered when the IR build it started ends.
    package mutating func awaitBuild(_ request: Int, refusals: [String]) {
        awaitingBuild = (request, refusals)
    }

    /// The newest requested IR build ended (`failure`: why it is not used); true when that
    /// answered a request.
    package mutating func buildEnded(failure: String?) -> Bool {
        guard let (request, refusals) = awaitingBuild else { return false }
        awaitingBuild = nil
        answer(request, refusals: refusals + (failure.map { ["keeping the current IR: \($0)"] } ?? []))
        return true
    }

    package var properties: [(String, String)] { [(Self.requestsKey, "\(requests)"), (Self.answerKey, answer)] }
}
