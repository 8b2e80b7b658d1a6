import Synchronization

/// Counters and a fixed histogram of deadline margins, written by any number of threads and
/// readable at any time without locks.
///
/// The histogram has logarithmic buckets over microseconds (16 per octave, ≤ 6.25% wide), one
/// set for margins ≥ 0 and one for late finishes, so quantiles on both sides are kept without
/// allocation.
public final class IntervalStatistics: @unchecked Sendable {
    /// Buckets per octave = 2^subBucketBits; magnitudes below that are exact.
    static let subBucketBits = 4
    static let subBuckets = 1 << subBucketBits
    /// Buckets per sign: magnitudes up to 2^40 µs (12.7 days).
    static let bucketCount = subBuckets + (40 - subBucketBits) * subBuckets

    /// Intervals finished.
    public let intervals = Atomic<Int>(0)
    /// Intervals that finished after their deadline.
    public let lateIntervals = Atomic<Int>(0)
    /// Sum of the time from work start to finish, ns.
    public let busyNanos = Atomic<Int64>(0)
    /// Longest single busy time, ns.
    public let maxBusyNanos = Atomic<Int64>(0)
    /// Smallest margin to the deadline seen, ns (negative: late). `Int64.max` before any interval.
    public let minMarginNanos = Atomic<Int64>(.max)

    // SAFETY: allocated and initialised in init for `bucketCount` elements each, deinitialised in
    // deinit; only ever accessed through Atomic operations.
    private let onTimeBuckets: UnsafeMutablePointer<Atomic<Int>>
    private let lateBuckets: UnsafeMutablePointer<Atomic<Int>>

    public init() {
        onTimeBuckets = .allocate(capacity: Self.bucketCount)
        lateBuckets = .allocate(capacity: Self.bucketCount)
        for index in 0..<Self.bucketCount {
            (onTimeBuckets + index).initialize(to: Atomic(0))
            (lateBuckets + index).initialize(to: Atomic(0))
        }
    }

    deinit {
        onTimeBuckets.deinitialize(count: Self.bucketCount)
        lateBuckets.deinitialize(count: Self.bucketCount)
        onTimeBuckets.deallocate()
        lateBuckets.deallocate()
    }

    /// Records one finished interval. Real-time safe: relaxed atomics only.
    public func record(marginNanos: Int64, busyNanos busy: Int64) {
        intervals.wrappingAdd(1, ordering: .relaxed)
        if marginNanos < 0 { lateIntervals.wrappingAdd(1, ordering: .relaxed) }
        busyNanos.wrappingAdd(busy, ordering: .relaxed)
        var longest = maxBusyNanos.load(ordering: .relaxed)
        while busy > longest {
            let (exchanged, original) = maxBusyNanos.compareExchange(
                expected: longest, desired: busy, ordering: .relaxed)
            if exchanged { break }
            longest = original
        }
        var smallest = minMarginNanos.load(ordering: .relaxed)
        while marginNanos < smallest {
            let (exchanged, original) = minMarginNanos.compareExchange(
                expected: smallest, desired: marginNanos, ordering: .relaxed)
            if exchanged { break }
            smallest = original
        }
        if marginNanos >= 0 {
            onTimeBuckets[Self.bucket(forMagnitude: UInt64(marginNanos / 1000))]
                .wrappingAdd(1, ordering: .relaxed)
        } else {
            lateBuckets[Self.bucket(forMagnitude: UInt64(-(marginNanos / 1000)))]
                .wrappingAdd(1, ordering: .relaxed)
        }
    }

    /// Bucket of a magnitude in µs: below `subBuckets` exact, then `subBuckets` per octave.
    static func bucket(forMagnitude magnitude: UInt64) -> Int {
        if magnitude < UInt64(subBuckets) { return Int(magnitude) }
        let exponent = 63 - magnitude.leadingZeroBitCount  // >= subBucketBits
        let mantissa = Int((magnitude >> UInt64(exponent - subBucketBits)) & UInt64(subBuckets - 1))
        return min(subBuckets + (exponent - subBucketBits) * subBuckets + mantissa, bucketCount - 1)
    }

    /// Smallest magnitude (µs) that falls into `bucket`.
    static func lowerMagnitude(ofBucket bucket: Int) -> UInt64 {
        if bucket < subBuckets { return UInt64(bucket) }
        let exponent = (bucket - subBuckets) / subBuckets + subBucketBits
        let mantissa = UInt64((bucket - subBuckets) % subBuckets)
        return (UInt64(subBuckets) + mantissa) << UInt64(exponent - subBucketBits)
    }

    /// The margin (ns, at bucket resolution, rounded towards late but never below the smallest
    /// margin seen) below which a fraction `fraction` of intervals finished: `marginQuantile(0.01)`
    /// means "99% of intervals finished with at least this margin" (the p99 margin).
    /// nil before any interval.
    /// Not real-time safe (allocates); counters may move while it reads.
    public func marginQuantile(_ fraction: Double) -> Int64? {
        var histogram: [(margin: Int64, count: Int)] = []
        // Latest first: late buckets from the largest magnitude down, then on-time ascending.
        for bucket in stride(from: Self.bucketCount - 1, through: 0, by: -1) {
            let count = lateBuckets[bucket].load(ordering: .relaxed)
            if count > 0 {
                let upper =
                    bucket + 1 < Self.bucketCount
                    ? Self.lowerMagnitude(ofBucket: bucket + 1) : Self.lowerMagnitude(ofBucket: bucket) * 2
                histogram.append((-Int64(upper) * 1000, count))
            }
        }
        for bucket in 0..<Self.bucketCount {
            let count = onTimeBuckets[bucket].load(ordering: .relaxed)
            if count > 0 { histogram.append((Int64(Self.lowerMagnitude(ofBucket: bucket)) * 1000, count)) }
        }
        let total = histogram.reduce(0) { $0 + $1.count }
        if total == 0 { return nil }
        let rank = Int((fraction * Double(total)).rounded(.down))
        let smallest = minMarginNanos.load(ordering: .relaxed)
        var seen = 0
        for entry in histogram {
            seen += entry.count
            if seen > rank { return max(entry.margin, smallest) }
        }
        return histogram.last.map { max($0.margin, smallest) }
    }

    /// A copy for reporting. Not real-time safe (allocates).
    public func snapshot() -> IntervalStatisticsSnapshot {
        let minimum = minMarginNanos.load(ordering: .relaxed)
        return IntervalStatisticsSnapshot(
            intervals: intervals.load(ordering: .relaxed),
            lateIntervals: lateIntervals.load(ordering: .relaxed),
            busyNanos: busyNanos.load(ordering: .relaxed),
            maxBusyNanos: maxBusyNanos.load(ordering: .relaxed),
            minMarginNanos: minimum == .max ? nil : minimum,
            p50MarginNanos: marginQuantile(0.5),
            p99MarginNanos: marginQuantile(0.01))
    }
}

public struct IntervalStatisticsSnapshot: Sendable, Equatable, CustomStringConvertible {
    public var intervals: Int
    public var lateIntervals: Int
    public var busyNanos: Int64
    public var maxBusyNanos: Int64
    /// Margins to the deadline, ns; negative means late. nil before any interval.
    public var minMarginNanos: Int64?
    public var p50MarginNanos: Int64?
    /// 99% of intervals finished with at least this margin.
    public var p99MarginNanos: Int64?

    public var description: String {
        func micros(_ value: Int64?) -> String { value.map { "\($0 / 1000) µs" } ?? "-" }
        return "intervals \(intervals), late \(lateIntervals), margin min \(micros(minMarginNanos)) "
            + "p50 \(micros(p50MarginNanos)) p99 \(micros(p99MarginNanos)), busy \(busyNanos / 1000) µs "
            + "(max \(maxBusyNanos / 1000) µs)"
    }
}
