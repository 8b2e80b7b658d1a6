// libpipewire-module-swift-convolver: wiring only; the module lives in ConvolverNode.
import ConvolverNode

/// # Swift Convolver
///
/// A zero-latency partitioned convolver as a PipeWire node: live audio convolved with impulse
/// responses (reverbs, room and speaker correction FIRs, cabinets, true stereo, multichannel,
/// HRTF sets) for any IR length and any quantum. The head of the IR runs in the graph cycle; the
/// long tail runs on the process's workgroup of real-time helper threads.
///
/// docs/module.md's "Module" section (the man page) tells each option at length; this is its summary. The module's
/// `module.usage` (`pw-cli info <module id>`) is generated from the options list below at build
/// time (Plugins/ModuleUsage), so the two cannot drift apart.
///
/// ## Module Name
///
/// `libpipewire-module-swift-convolver`
///
/// ## Module Options
///
/// - `node.name=<name>`: the node's name. Default `swift-convolver`.
/// - `node.description=<text>`: its description. Default `Convolver`.
/// - `mode=<filter|sink|source|stream>`: DSP ports `input_<POS>`/`output_<POS>` routed by hand, a
///   virtual sink `<name>` with its output stream `output.<name>`, a virtual source (the output
///   stream), or two plain streams. Default `filter` (with `filter.graph`: as its streams' media.class says).
/// - `filter.graph={ nodes=[ ... ] links=[ ... ] inputs=[ ... ] outputs=[ ... ] }`: filter-chain's
///   graph of linear builtins (copy, mixer, delay, linear, invert, convolver, convolver2), compiled
///   into one matrix of IRs instead of `filename` or `impulses`.
/// - `audio.rate=<Hz>`: the rate the node runs at. Default the graph's.
/// - `audio.channels=<1..64>`: the input channel count. Default 2.
/// - `audio.position=[ <POS> ... ]`: the input channel positions. Default `[ FL FR ]`.
/// - `output.position=[ <POS> ... ]`: the output positions when they differ from the inputs'
///   (needs `impulses`; a SOFA set's ears). Default the inputs'.
/// - `filename=<path|builtin:hall|builtin:dirac|builtin:hilbert|[ <path> ... ]>`: the IR, any
///   file libsndfile reads, a built-in, a SOFA HRTF set (`.sofa`), or one IR at several rates
///   (the one closest to the graph's rate is used). filter-chain's `/dirac` and `/hilbert` work too.
/// - `impulses=[ { input output filename channel gain delay offset length } ... ]`: an N×M matrix
///   of IRs instead of `filename`.
/// - `sofa={ azimuth=<deg> elevation=<deg> radius=<m> }`: the source's direction for a SOFA set
///   (AES69: counter-clockwise from ahead, up). Default `{ azimuth=0 elevation=0 }`, the set's radius.
/// - `gain=<0..100>`: linear gain of the convolved signal. Default 1.0.
/// - `mix=<0..1>`: dry/wet, 1 = convolved only. Default 1.0.
/// - `width=<0..2>`: the convolved signal's stereo width, 1 = as it is. Default 1.0.
/// - `bypass=<bool>`: the input passes unconvolved. Default false.
/// - `delay=<samples>`: extra delay of the IR. Default 0.
/// - `offset=<samples>`: the first IR sample used. Default 0.
/// - `length=<samples>`: the IR samples used, 0 = to the end. Default 0.
/// - `resample.quality=<0..14>`, `resample_quality=<0..14>`: the IR resampler's quality, as
///   PipeWire's (the second is filter-chain's spelling). Default 4.
/// - `resample.pre-ringing=<cut|keep>`: drop the resampler's ringing before time 0, or keep it
///   and report its delay as latency. Default `cut`.
/// - `autogain=<bool>`: scale each output so that pink noise keeps its level. Default false.
/// - `latency=<samples|auto>`: the delay the IR carries, reported to the graph (filter mode);
///   `auto` is the loudest sample's frame. Default 0.
/// - `crossfade=<seconds|"50ms">`: the fade from the running engine to a new one (new IR, new
///   rate), 0..10 s. Default 50 ms.
/// - `crossfade.shape=<equal-power|linear>`: its shape. Default `equal-power` (`linear` for a
///   SOFA set).
/// - `workgroup={ threads=<auto|n> rt.prio=<0..99> split=<auto|on|off> shared=<true|false> }`: the
///   helper threads (`auto` = cores − 1), their SCHED_FIFO priority (0 = just below the data
///   thread), whether the data thread's share is split across helpers, and whether they are the
///   process's one workgroup, shared with its other nodes. Default
///   `{ threads=auto rt.prio=0 split=auto shared=true }`.
/// - `partition={ max=<256..65536> }`: the largest partition, a power of two. Default 16384.
/// - `target.object=<node name|serial>`: where a session manager sends the output.
/// - `capture.props={ ... }`, `playback.props={ ... }`: the two streams' properties, as
///   filter-chain's (`media.class=Audio/Sink` in `capture.props` makes a sink,
///   `media.class=Audio/Source` in `playback.props` a source).
/// - `filter.smart=<bool>`, `filter.smart.name=<name>`, `filter.smart.target={ ... }`,
///   `filter.smart.before=[ ... ]`, `filter.smart.after=[ ... ]`, `filter.smart.disabled=<bool>`,
///   `filter.smart.targetable=<bool>`: WirePlumber 0.5's smart filter keys, on the sink.
/// - `node.*=<value>`, `media.*=<value>`, `priority.*=<value>`: passed to the node as they are.
/// - `test.record-calls=<path>`, `test.fault=<name>`: for the project's tests only.
///
/// An unknown key is a warning in the log; a wrong value fails the load with an error naming the
/// key, and never takes the hosting process down.
///
/// ## Example configuration
///
/// ```
/// context.modules = [
///   { name = libpipewire-module-swift-convolver
///     args = {
///       node.name = "hall-reverb"  node.description = "Hall reverb"
///       mode = sink  audio.position = [ FL FR ]
///       filename = "builtin:hall"  mix = 0.3
///     } } ]
/// ```
///
/// From the shell (the node lives in pw-cli's own process while pw-cli runs):
///
/// ```
/// pw-cli load-module libpipewire-module-swift-convolver '{ filename = "builtin:hall" }'
/// ```
///
/// The Debian package puts the module in PipeWire's module directory, where it is found by name;
/// after a user-level `make install` PipeWire finds it through `PIPEWIRE_MODULE_DIR` (docs/module.md, "Installed files").
///
/// `@_cdecl`: the only way to export an unmangled C symbol from Swift; the loader looks up this one.
@_cdecl("pipewire__module_init")
public func pipewireModuleInit(_ module: OpaquePointer?, _ arguments: UnsafePointer<CChar>?) -> Int32 {
    ConvolverModuleInstance.load(module: module, arguments: arguments, usage: moduleUsage)
}
