import CPipeWire
import Foundation

/// Loads and unloads the convolver module by name in this test process, on a `pw_thread_loop`,
/// the way a `pipewire -c` client process does (pw-cli 0.3.65 has no `unload-module`, and a
/// daemon cannot be told to load a module). The module's own `pw_context_connect` reaches the
/// private daemon through XDG_RUNTIME_DIR, set for this process before the context exists.
final class ModuleHost {
    private let threadLoop: OpaquePointer
    private let context: OpaquePointer

    init(daemon: PrivatePipeWire) throws {
        setenv("XDG_RUNTIME_DIR", daemon.runtimeDirectory, 1)
        setenv("PIPEWIRE_MODULE_DIR", PipeWireInstallation.moduleSearchPath, 1)
        unsetenv("PIPEWIRE_REMOTE")
        pw_init(nil, nil)
        guard let threadLoop = pw_thread_loop_new("swconv-host", nil) else { throw TestFailure("pw_thread_loop_new failed") }
        self.threadLoop = threadLoop
        guard let context = pw_context_new(pw_thread_loop_get_loop(threadLoop), nil, 0) else {
            pw_thread_loop_destroy(threadLoop)
            throw TestFailure("pw_context_new failed")
        }
        self.context = context
        guard pw_thread_loop_start(threadLoop) == 0 else { throw TestFailure("pw_thread_loop_start failed") }
    }

    deinit {
        pw_thread_loop_stop(threadLoop)
        pw_context_destroy(context)
        pw_thread_loop_destroy(threadLoop)
    }

    /// `pw_context_load_module`; nil and errno when the module refused to load.
    func load(arguments: String) -> (module: OpaquePointer?, errno: Int32) {
        pw_thread_loop_lock(threadLoop)
        defer { pw_thread_loop_unlock(threadLoop) }
        let module = pw_context_load_module(context, "libpipewire-module-swift-convolver", arguments, nil)
        return (module, module == nil ? errno : 0)
    }

    func unload(_ module: OpaquePointer) {
        pw_thread_loop_lock(threadLoop)
        defer { pw_thread_loop_unlock(threadLoop) }
        pw_impl_module_destroy(module)
    }
}
