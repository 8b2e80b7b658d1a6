// Which PipeWire a graph is read and compiled for: filter-chain reads and computes some graphs
// differently from one version to the next, and the node follows the one it runs in. The node
// gives the running library's version (`pw_get_library_version`); tests give any.

/// A libpipewire version, `major.minor.micro`.
public struct PipeWireVersion: Sendable, Equatable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public var micro: Int

    public init(_ major: Int, _ minor: Int, _ micro: Int = 0) {
        (self.major, self.minor, self.micro) = (major, minor, micro)
    }

    /// "1.4.2" (missing or unreadable parts are 0).
    public init(_ text: String) {
        let parts = text.split(separator: ".").map { Int($0.prefix { $0.isNumber }) ?? 0 } + [0, 0, 0]
        self.init(parts[0], parts[1], parts[2])
    }

    public var description: String { "\(major).\(minor).\(micro)" }

    /// Where filter-chain 1.x reads a config differently from 0.3.x.
    public var isOneDotX: Bool { major >= 1 }

    public func isAtLeast(_ major: Int, _ minor: Int, _ micro: Int = 0) -> Bool {
        (self.major, self.minor, self.micro) >= (major, minor, micro)
    }
}
