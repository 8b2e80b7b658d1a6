import CPipeWire

/// One `spa_hook` at a fixed address: PipeWire keeps a pointer to it while the listener is added.
/// Its owner removes it (`spa_hook_remove`) before the object listened to goes, or lets that
/// object's destroy event do it; the memory goes with the owner.
final class ListenerHook {
    let pointer: UnsafeMutablePointer<spa_hook>

    init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: spa_hook())
    }

    deinit { pointer.deallocate() }
}
