// Lock-free statistics of the data thread, read once a second by the main loop.
import FixedMemory
import Synchronization
import Workgroup

/// Written only by the data thread, read by the main loop. Per-call busy times go into a ring
/// the reader drains; counters are plain atomics.
final class ProcessStatistics {
    /// Calls kept between two reads: ~1 s at 1500 calls/s (q=32 at 48 kHz) fits with room.
    static let ringCapacity = 8192

    let calls = Atomic<Int>(0)
    /// Cycles where the node finished after the cycle's end (`clock.next_nsec`).
    let lateCycles = Atomic<Int>(0)
    /// Late cycles whose call took less than the cycle's period: it would have finished in time had
    /// it started with the cycle; it started too late (the nodes before it or the machine delayed it).
    let lateCyclesStartedLate = Atomic<Int>(0)
    /// Late cycles the node's own work made late: its CPU time plus its waits for helper results
    /// took more than the period, stalls of the machine taken out (`StallGauge`).
    let lateCyclesOwn = Atomic<Int>(0)
    /// Late cycles that the CPU time would count as the node's own, but a stage of the call (a
    /// data-thread job, or the rest of the call) ran many times its usual length: the virtual machine
    /// held the CPU and the guest charged it as the thread's CPU time (docs/facts.md).
    let lateCyclesStalled = Atomic<Int>(0)
    /// Cycles the graph's clock moved past between two calls of the node: a machine stall delayed
    /// the graph or the node. In stalls reproduced and traced here the node's input mostly stayed
    /// continuous (the player skipped the cycle too); now and then the player's block of a stalled
    /// cycle reached no one, a dropout the output carries for an IR length. After a jump PipeWire
    /// 0.3.65 sometimes runs the node twice at one clock position (the second time with silence when
    /// the player did not run again); the node convolves what it gets. The late-cycle count misses
    /// these: the driver rewrites the clock before a late call reads it.
    let missedCycles = Atomic<Int>(0)
    // The previous call's clock (data thread only).
    private var previousPosition: UInt64 = 0
    private var previousDuration: UInt64 = 0
    /// The call's time outside its data-thread jobs and waits, at the quantum it was gauged at
    /// (data thread only).
    private var restGauge = StallGauge()
    private var gaugedFrameCount = 0
    private let busyNanosRing: FixedBuffer<UInt32>
    /// Busy times written so far; the ring index is this modulo the capacity.
    private let busyWriteCount = Atomic<Int>(0)
    /// Reader-side position (main loop only).
    private var busyReadCount = 0

    init() throws(ResourceError) {
        busyNanosRing = try FixedBuffer(repeating: 0, count: Self.ringCapacity)
    }

    /// Records one call of `frameCount` frames. Real-time safe: arithmetic, atomic increments and
    /// one store into preallocated memory.
    func record(_ call: CallTimes, frameCount: Int, periodNanos: UInt64, late: Bool) {
        let count = busyWriteCount.load(ordering: .relaxed)
        busyNanosRing[count % Self.ringCapacity] = UInt32(clamping: call.busy)
        busyWriteCount.store(count + 1, ordering: .releasing)
        calls.wrappingAdd(1, ordering: .relaxed)

        if frameCount != gaugedFrameCount {
            restGauge = StallGauge()
            gaugedFrameCount = frameCount
        }
        let outside = call.wait &+ call.jobs
        let stalled = call.stalledInJobs &+ restGauge.stalledNanos(ofRun: call.busy > outside ? call.busy &- outside : 0)
        let worked = call.cpu &+ call.wait
        // A stall is wall time; where the guest preempted the thread instead, the CPU clock never counted it.
        let own = worked &- min(stalled, call.cpu)
        guard late else { return }
        lateCycles.wrappingAdd(1, ordering: .relaxed)
        if call.busy < periodNanos {
            lateCyclesStartedLate.wrappingAdd(1, ordering: .relaxed)
        } else if own > periodNanos {
            lateCyclesOwn.wrappingAdd(1, ordering: .relaxed)
        } else if worked > periodNanos {
            lateCyclesStalled.wrappingAdd(1, ordering: .relaxed)
        }
    }

    /// Counts the cycles skipped since the previous call. `position`, `duration`: this cycle's
    /// graph clock (`spa_io_clock`), in frames; `rate`: frames a second. Real-time safe.
    func recordClock(position: UInt64, duration: UInt64, rate: UInt64) {
        let skipped = Self.skippedCycles(
            previousPosition: previousPosition, previousDuration: previousDuration,
            position: position, rate: rate)
        if skipped > 0 { missedCycles.wrappingAdd(skipped, ordering: .relaxed) }
        previousPosition = position
        previousDuration = duration
    }

    /// Cycles between two calls that the node did not see: the clock moved further than the previous
    /// cycle's duration. A jump back, or of more than a second (a new driver), is not counted.
    static func skippedCycles(previousPosition: UInt64, previousDuration: UInt64, position: UInt64, rate: UInt64) -> Int {
        guard previousDuration > 0, position > previousPosition else { return 0 }
        let step = position - previousPosition
        guard step > previousDuration, step <= max(rate, previousDuration) else { return 0 }
        return Int((step - 1) / previousDuration)  // the whole cycles past the previous one, a partial one counted
    }

    /// Busy times since the last call (main loop only): p99 and max in nanoseconds; nil if none.
    func drainBusy() -> (p99: UInt32, max: UInt32, count: Int)? {
        let written = busyWriteCount.load(ordering: .acquiring)
        // If the reader fell behind by more than the ring, the oldest entries were overwritten.
        let start = max(busyReadCount, written - Self.ringCapacity + 64)
        busyReadCount = written
        guard written > start else { return nil }
        var samples: [UInt32] = []
        samples.reserveCapacity(written - start)
        for index in start..<written { samples.append(busyNanosRing[index % Self.ringCapacity]) }
        samples.sort()
        let p99Index = min(samples.count - 1, Int((Double(samples.count) * 0.99).rounded(.up)) - 1)
        return (samples[max(0, p99Index)], samples[samples.count - 1], samples.count)
    }
}

/// One call's times, ns: its wall time (`busy`), its thread's CPU time, and within the wall time its
/// waits for helper results and its data-thread jobs, with the part of those jobs that was a stall.
struct CallTimes {
    var busy: UInt64 = 0
    var cpu: UInt64 = 0
    var wait: UInt64 = 0
    var jobs: UInt64 = 0
    var stalledInJobs: UInt64 = 0
}
