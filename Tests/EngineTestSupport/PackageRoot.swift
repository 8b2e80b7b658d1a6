import Foundation

/// The repository's root (for `pipewire-conf/`, the test configs and the scripts), from this file's path.
public let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path
