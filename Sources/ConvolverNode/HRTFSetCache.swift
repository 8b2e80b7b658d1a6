// SOFA files read by a node's earlier engine builds. Moving a source (`sofa.azimuth`) builds a
// new engine for every move, and libmysofa takes 100-200 ms to read MIT's KEMAR set each time.
import Convolution
import Glibc

/// HRTF sets kept from one build to the next, by path, rate and the file's identity (inode, size,
/// modification time: a file replaced on disk is read again). A build's unused sets are freed
/// when it ends. One thread at a time (the engine builder's worker).
final class HRTFSetCache {
    private struct Key: Hashable {
        var path: String
        var normalizedAt: Double?
        var inode: UInt, size: Int, modifiedSeconds: Int, modifiedNanoseconds: Int
    }

    private var sets: [Key: HRTFSet] = [:]
    private var usedByThisBuild: Set<Key> = []

    /// The set at `path`, as `HRTFSet(path:normalizedAt:)` reads it.
    func set(path: String, normalizedAt rate: Double?) throws(ImpulseResponseError) -> HRTFSet {
        var status = stat()
        guard stat(path, &status) == 0 else { return try HRTFSet(path: path, normalizedAt: rate) }  // its error names why
        let key = Key(
            path: path, normalizedAt: rate, inode: UInt(status.st_ino), size: Int(status.st_size),
            modifiedSeconds: Int(status.st_mtim.tv_sec), modifiedNanoseconds: Int(status.st_mtim.tv_nsec))
        usedByThisBuild.insert(key)
        if let set = sets[key] { return set }
        let set = try HRTFSet(path: path, normalizedAt: rate)
        sets[key] = set
        return set
    }

    /// A build ended: the sets it did not use are freed.
    func buildEnded() {
        sets = sets.filter { usedByThisBuild.contains($0.key) }
        usedByThisBuild = []
    }

    /// Sets held now (for tests).
    var count: Int { sets.count }
}
