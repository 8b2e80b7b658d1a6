import Glibc

/// The user's cache directory for swift-convolver (`$XDG_CACHE_HOME` or `~/.cache`, then
/// `swift-convolver/`): FFTW wisdom and machine costs, kept between processes.
public enum UserCache {
    public static func path(_ file: String) -> String {
        let cache =
            SystemFiles.environment("XDG_CACHE_HOME").flatMap { $0.isEmpty ? nil : $0 }
            ?? ((SystemFiles.environment("HOME") ?? "/tmp") + "/.cache")
        return cache + "/swift-convolver/" + file
    }
}
