import Convolution

/// `--set KEY=VALUE` of `pw-convolver run` and `render`: one module argument on the command line,
/// read by the module's own parser (`NodeConfiguration.parse`), so that offline and live agree.
extension SPAJSONMember {
    /// The module's keys that hold an object: `sofa.azimuth=90` is `sofa = { azimuth = 90 }`.
    static let objectKeys = ["capture.props", "playback.props", "workgroup", "partition", "sofa"]

    /// `KEY=VALUE`, VALUE in SPA-JSON (`90`, `"/path/ir.wav"`, `[ FL FR ]`, `{ azimuth = 30 }`, or a bare word).
    public static func setting(_ text: String) throws(NodeConfigurationError) -> SPAJSONMember {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty else {
            throw NodeConfigurationError(key: text, message: "expected KEY=VALUE (e.g. sofa.azimuth=90)")
        }
        let key = parts[0]
        let parsed: SPAJSONValue
        do {
            parsed = try SPAJSONValue.parse("{ v = \(parts[1]) }")
        } catch {
            throw NodeConfigurationError(key: key, message: "'\(parts[1])' is not a SPA-JSON value: \(error)")
        }
        guard case let .object(members) = parsed, members.count == 1 else {
            throw NodeConfigurationError(key: key, message: "'\(parts[1])' is not one SPA-JSON value")
        }
        let value = members[0].value
        if let object = objectKeys.first(where: { key.hasPrefix($0 + ".") }) {
            return SPAJSONMember(key: object, value: .object([SPAJSONMember(key: String(key.dropFirst(object.count + 1)), value: value)]))
        }
        return SPAJSONMember(key: key, value: value)
    }
}
