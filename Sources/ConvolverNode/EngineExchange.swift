import CConvolverShims
import Synchronization

/// The hand-over of engines between the main loop and the data thread, without locks. Every
/// retain and release of an `EngineSlot` that crosses the two threads is in this file.
///
/// The main loop `offer`s a new slot. At the start of a call the data thread `claim`s it, but only
/// while no slot waits in `retired`; the slot it replaces goes to `retire`, and the main loop
/// (woken by an event) takes it from `takeRetired` and `release`s it. So a slot is released only
/// after the data thread let go of it, and no call sees a half-made one. The data thread holds its
/// slots as `Unmanaged<EngineSlot>`: no reference counting on the real-time path.
///
/// An offer can be marked to be taken only in silence (a re-plan for the running quantum): the
/// data thread then claims it only once the engine in use holds nothing but zeros.
final class EngineExchange {
    /// The offered slot, retained, not yet claimed; bit 0 marks an offer for silence (slots are at
    /// least 16-byte aligned, so the bit is free).
    private let offered = Atomic<UnsafeMutableRawPointer?>(nil)
    /// A slot the data thread let go of, retained, for the main loop to release.
    private let retired = Atomic<UnsafeMutableRawPointer?>(nil)

    /// What the data thread sees on offer before it claims it.
    struct Offer {
        fileprivate let marked: UnsafeMutableRawPointer
        var inSilence: Bool { Int(bitPattern: marked) & 1 == 1 }
    }

    /// Main loop: `slot`, retained for a thread that will hold it as `Unmanaged` (the engine in
    /// use before the first connect).
    static func retain(_ slot: EngineSlot) -> Unmanaged<EngineSlot> { .passRetained(slot) }

    /// Main loop: releases a slot no thread holds any more, stopping its helpers first, and gives
    /// the freed pages back to the system: an engine's megabytes freed amid the heap otherwise
    /// stay resident in the user's PipeWire process (docs/facts.md: 9 MB after one re-plan).
    static func release(_ slot: Unmanaged<EngineSlot>) {
        slot.takeRetainedValue().stop()
        malloc_trim(0)
    }

    /// Main loop: offers `slot` for the data thread's next call (or, `inSilence`, for its first
    /// call after silence). Returns the offer it replaces, never claimed, to `release`.
    func offer(_ slot: EngineSlot, inSilence: Bool) -> Unmanaged<EngineSlot>? {
        let pointer = Self.retain(slot).toOpaque()
        return Self.slot(offered.exchange(inSilence ? pointer + 1 : pointer, ordering: .acquiringAndReleasing))
    }

    /// Main loop, after the data thread stopped: the offer nobody claimed.
    func takeUnclaimedOffer() -> Unmanaged<EngineSlot>? {
        Self.slot(offered.exchange(nil, ordering: .acquiring))
    }

    /// Main loop: the slot the data thread retired, if any.
    func takeRetired() -> Unmanaged<EngineSlot>? {
        Self.slot(retired.exchange(nil, ordering: .acquiringAndReleasing))
    }

    /// Data thread: whether a retired slot still waits for the main loop. Real-time safe.
    var hasRetired: Bool { retired.load(ordering: .acquiring) != nil }

    /// Data thread: what is on offer. Only the pointer is looked at: until `claim` the main loop
    /// may still replace and release it. Real-time safe.
    func peekOffer() -> Offer? { offered.load(ordering: .acquiring).map(Offer.init) }

    /// Data thread: takes `offer` if it is still the one on offer. Real-time safe.
    func claim(_ offer: Offer) -> Unmanaged<EngineSlot>? {
        guard offered.compareExchange(expected: offer.marked, desired: nil, ordering: .acquiringAndReleasing).exchanged else {
            return nil
        }
        return Self.slot(offer.marked)
    }

    /// Data thread: hands a slot it let go of to the main loop (which must be woken). Real-time safe.
    func retire(_ slot: Unmanaged<EngineSlot>) {
        retired.store(slot.toOpaque(), ordering: .releasing)
    }

    private static func slot(_ pointer: UnsafeMutableRawPointer?) -> Unmanaged<EngineSlot>? {
        pointer.map { .fromOpaque(UnsafeMutableRawPointer(bitPattern: Int(bitPattern: $0) & ~1)!) }
    }
}
