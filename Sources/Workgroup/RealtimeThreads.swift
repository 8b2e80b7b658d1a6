import Glibc

/// How many helper threads: `auto` = online cores − 1 (at least 1), a fixed count, or
/// `perLevel`: one dedicated helper per level (queue), with SCHED_FIFO priority falling by one per
/// level (zita-convolver's layout), so a longer level's job never delays a shorter one's.
public enum ThreadCount: Sendable, Equatable, CustomStringConvertible {
    case auto
    case fixed(Int)
    case perLevel

    /// Parses `auto`, `levels` or a positive integer (the `--threads` / `workgroup.threads` value).
    public init?(argument: String) {
        if argument == "auto" { self = .auto; return }
        if argument == "levels" { self = .perLevel; return }
        guard let count = Int(argument), count >= 1 else { return nil }
        self = .fixed(count)
    }

    /// The number of helpers for `levelCount` levels.
    public func resolved(levelCount: Int) -> Int {
        switch self {
        case .auto: max(sysconf(Int32(_SC_NPROCESSORS_ONLN)) - 1, 1)
        case .fixed(let count): max(count, 1)
        case .perLevel: max(levelCount, 1)
        }
    }

    public var description: String {
        switch self {
        case .auto: "auto"
        case .fixed(let count): "\(count)"
        case .perLevel: "levels"
        }
    }
}

/// A thread made by a `ThreadFactory`: the `pthread_t` (PipeWire's `struct spa_thread *` is one too).
public struct SpawnedThread: Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
}

public enum ThreadError: Error, Equatable, CustomStringConvertible {
    case createFailed(name: String, errno: Int32)

    public var description: String {
        switch self {
        case let .createFailed(name, code):
            "cannot create thread '\(name)': \(String(cString: strerror(code)))"
        }
    }
}

/// Creates helper threads and makes them real-time. The default uses pthreads directly;
/// ConvolverNode's `PipeWireThreadFactory` goes through PipeWire's thread utils so PipeWire's RT
/// policy (module-rt, RTKit) applies.
public protocol ThreadFactory: AnyObject, Sendable {
    /// Starts a joinable thread running `body`.
    func createThread(name: String, body: @escaping @Sendable () -> Void) throws(ThreadError) -> SpawnedThread
    /// Asks for SCHED_FIFO at `priority` for `thread`. Returns 0 or an errno value.
    func acquireRealtime(_ thread: SpawnedThread, priority: Int32) -> Int32
    /// Waits for `thread` to end.
    func joinThread(_ thread: SpawnedThread)
    /// Factories with the same domain make interchangeable threads: pools of one domain may
    /// share helpers (`ProcessWorkgroup`). 0: plain pthreads.
    var domain: UInt { get }
}

extension ThreadFactory {
    public var domain: UInt { 0 }
}

/// Helper threads straight from pthreads; SCHED_FIFO by `pthread_setschedparam` (needs root,
/// CAP_SYS_NICE or RLIMIT_RTPRIO).
public final class PthreadThreadFactory: ThreadFactory {
    public init() {}

    public func createThread(name: String, body: @escaping @Sendable () -> Void) throws(ThreadError) -> SpawnedThread {
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { argument in
                // SAFETY: `argument` is the retained ThreadBody passed below; released here, once.
                let body = Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue()
                body.run()
                return nil
            }, box)
        if result != 0 {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            throw .createFailed(name: name, errno: result)
        }
        return SpawnedThread(rawValue: UInt(thread))
    }

    public func acquireRealtime(_ thread: SpawnedThread, priority: Int32) -> Int32 {
        var parameters = sched_param()
        parameters.sched_priority = priority
        return pthread_setschedparam(pthread_t(thread.rawValue), SCHED_FIFO, &parameters)
    }

    public func joinThread(_ thread: SpawnedThread) {
        pthread_join(pthread_t(thread.rawValue), nil)
    }
}

/// A thread's entry point, boxed so it can pass through a C `void *`.
public final class ThreadBody {
    public let run: @Sendable () -> Void
    public init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// The calling thread's scheduling policy and priority (e.g. the data thread's, to place helpers below it).
public func currentThreadScheduling() -> (policy: Int32, priority: Int32) {
    var policy: Int32 = 0
    var parameters = sched_param()
    pthread_getschedparam(pthread_self(), &policy, &parameters)
    return (policy, parameters.sched_priority)
}

/// Names the calling thread (at most 15 bytes are kept by Linux), for `ps -L`, `top -H`.
public func nameCurrentThread(_ name: String) {
    // Swift's Glibc module hides the _GNU_SOURCE `pthread_setname_np` (and `prctl` is variadic),
    // so it is looked up once; it is an ordinary non-variadic C function, so the cast is exact.
    typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32
    guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "pthread_setname_np") else { return }
    let setName = unsafeBitCast(symbol, to: SetName.self)
    _ = String(name.utf8.prefix(15))!.withCString { setName(pthread_self(), $0) }
}
