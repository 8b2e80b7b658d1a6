// libpipewire-module-swift-convolver: wiring only; the module lives in ConvolverNode.
//
// Load it from a config's `context.modules` (see pipewire-conf/swift-convolver.conf) with
// PIPEWIRE_MODULE_DIR=<dir of this .so>:/usr/lib/x86_64-linux-gnu/pipewire-0.3, or from the shell:
//   pw-cli load-module libpipewire-module-swift-convolver '{ filename = "builtin:hall" }'
import ConvolverNode

/// PipeWire's module entry point (the loader looks up this exact C symbol).
/// `@_cdecl`: the only way to export an unmangled C symbol from Swift.
@_cdecl("pipewire__module_init")
public func pipewireModuleInit(_ module: OpaquePointer?, _ arguments: UnsafePointer<CChar>?) -> Int32 {
    ConvolverModuleInstance.load(module: module, arguments: arguments)
}
