/// Every input's recent samples, one power-of-two ring per channel; level jobs read their
/// windows from here.
final class InputHistory {
    let capacity: Int
    private let mask: Int
    private let storage: AlignedFloats

    init(channelCount: Int, minimumCapacity: Int) throws {
        var capacity = 1
        while capacity < minimumCapacity { capacity <<= 1 }
        self.capacity = capacity
        mask = capacity - 1
        storage = try AlignedFloats(count: capacity * channelCount)
    }

    /// Real-time safe. `source == nil` writes silence.
    @inline(__always)
    func write(channel: Int, from source: UnsafePointer<Float>?, count: Int, at position: Int) {
        let ring = storage.pointer + channel * capacity
        var done = 0
        while done < count {
            let start = (position + done) & mask
            let run = min(count - done, capacity - start)
            if let source { (ring + start).update(from: source + done, count: run) } else { (ring + start).update(repeating: 0, count: run) }
            done += run
        }
    }

    /// Real-time safe. Negative positions (before the start) read as silence: the ring starts zeroed.
    @inline(__always)
    func read(channel: Int, from position: Int, count: Int, into destination: UnsafeMutablePointer<Float>) {
        let ring = storage.pointer + channel * capacity
        var done = 0
        while done < count {
            let start = (position + done) & mask
            let run = min(count - done, capacity - start)
            (destination + done).update(from: ring + start, count: run)
            done += run
        }
    }

    func reset() { storage.zero() }
}
