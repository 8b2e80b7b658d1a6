import Synchronization

/// The one helper group of the process, shared by every pool that joins it (every convolver
/// node), as an audio workgroup is shared by the threads working to one device's deadline: the
/// first pool starts it, the last one to leave stops it. Its size is the largest any member
/// asked for (`auto`: online cores − 1); its priority the first member's.
///
/// One group per thread domain (`ThreadFactory.domain`): a process has one PipeWire context,
/// hence one; threads of another context's thread utils would outlive that context otherwise.
public enum ProcessWorkgroup {
    /// Queue slots of the group: about ten nodes' levels. A pool that finds none free gets a group
    /// of its own (`join` says so through `configuration.warn`).
    public static let slotCount = 64

    private final class Membership: @unchecked Sendable {
        let group: HelperGroup
        /// Each member pool's requested helper count.
        var requests: [ObjectIdentifier: Int] = [:]
        init(group: HelperGroup) { self.group = group }
    }

    private static let groups = Mutex<[UInt: Membership]>([:])

    /// A pool of `queueCount` queues on the process's group for `factory`'s domain, started with
    /// `configuration` if there is none yet. `configuration.threadCount` is this member's request
    /// (`perLevel` is not shared: ask `JobPool.init` for a group of its own).
    public static func join(
        queueCount: Int, runner: any JobRunner, configuration: JobPoolConfiguration, factory: any ThreadFactory
    ) throws -> JobPool {
        precondition(configuration.threadCount != .perLevel)
        let requested = configuration.threadCount.resolved(levelCount: queueCount)
        let domain = factory.domain
        return try groups.withLock { groups throws -> JobPool in
            let membership: Membership
            if let existing = groups[domain] {
                membership = existing
            } else {
                var shared = configuration
                shared.queueCapacity = 256
                membership = Membership(
                    group: try HelperGroup(slotCount: slotCount, threadCount: requested, configuration: shared, factory: factory))
                groups[domain] = membership
            }
            let pool: JobPool
            do {
                pool = try JobPool(queueCount: queueCount, runner: runner, group: membership.group) { pool in
                    leave(pool, domain: domain)
                }
            } catch HelperGroupError.noFreeQueues {
                configuration.warn("the process's workgroup has no free job queues: this node's levels get helpers of their own")
                if membership.requests.isEmpty {
                    membership.group.stop()
                    groups[domain] = nil
                }
                return try JobPool(queueCount: queueCount, runner: runner, configuration: configuration, factory: factory)
            }
            membership.requests[ObjectIdentifier(pool)] = requested
            do {
                try membership.group.resize(threadCount: membership.requests.values.max() ?? requested)
            } catch {
                configuration.warn("the process's workgroup keeps \(membership.group.threadCount) helpers: \(error)")
            }
            return pool
        }
    }

    private static func leave(_ pool: JobPool, domain: UInt) {
        groups.withLock { groups in
            guard let membership = groups[domain] else { return }
            membership.requests[ObjectIdentifier(pool)] = nil
            if let largest = membership.requests.values.max() {
                try? membership.group.resize(threadCount: largest)  // shrinking starts no thread
            } else {
                membership.group.stop()
                groups[domain] = nil
            }
        }
    }

    /// The helpers of the process's group for `domain` (0 when there is none). For statistics and tests.
    public static func threadCount(domain: UInt = 0) -> Int {
        groups.withLock { $0[domain]?.group.threadCount ?? 0 }
    }
}
