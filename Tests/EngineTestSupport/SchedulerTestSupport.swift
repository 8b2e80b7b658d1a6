// What the scheduler tests of several test targets share: a level-job runner without DSP, the
// process's thread names, and a warning collector.
import Convolution
import Foundation
import Glibc
import Synchronization

/// A level-job runner for scheduler tests that do not need DSP, of levels 1 ... `levelCount`: each
/// job writes a value derived from (level, block) into a preallocated table (level `k`'s row `k - 1`), can sleep for chosen jobs (injected delays), and
/// remembers the scheduling policy its helper ran under.
public final class TableRunner: LevelJobRunner, @unchecked Sendable {
    public let levelCount: Int, blockCount: Int
    public let table: UnsafeMutablePointer<Int>
    public var injectedDelays: [Int: UInt32] = [:]  // (level << 32 | block) -> µs
    public let helperPolicy = Atomic<Int>(-1), helperPriority = Atomic<Int>(-1)

    public init(levelCount: Int, blockCount: Int) {
        self.levelCount = levelCount
        self.blockCount = blockCount
        table = .allocate(capacity: levelCount * blockCount)
        table.initialize(repeating: -1, count: levelCount * blockCount)
    }

    public func runLevelJob(level: Int, block: Int) {
        if helperPolicy.load(ordering: .relaxed) < 0 {
            var parameters = sched_param()
            helperPolicy.store(Int(sched_getscheduler(0) & 0xff), ordering: .relaxed)
            sched_getparam(0, &parameters)
            helperPriority.store(Int(parameters.sched_priority), ordering: .relaxed)
        }
        if !injectedDelays.isEmpty, let delay = injectedDelays[level << 32 | block] { usleep(delay) }
        table[(level - 1) * blockCount + block % blockCount] = level * 1_000_000 + block
    }
}

/// The names of this process's threads (/proc/self/task/*/comm).
public func threadNames() throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap {
        try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)
    }.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// Collects the scheduler's warnings (it may warn from any thread).
public final class WarningLog: @unchecked Sendable {
    public init() {}
    private let lock = NSLock()
    private var stored: [String] = []
    public func append(_ message: String) { lock.lock(); stored.append(message); lock.unlock() }
    public var messages: [String] { lock.lock(); defer { lock.unlock() }; return stored }
}
