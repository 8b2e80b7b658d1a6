// The process's one lilv world, as filter-chain's lv2 plugin keeps one: every installed bundle's
// manifest read once (LV2_PATH, else lilv's default directories; plugin data is read when a plugin
// is first asked about), and the table of URIs mapped to numbers that every instance is given.
import CLilv
import Glibc
import Synchronization

/// Made on first use, off the data thread; never freed: instances anywhere in the process keep
/// pointers into it (the URID map, the plugins' descriptions).
final class LV2World: @unchecked Sendable {
    // @unchecked Sendable: lilv is used only while building graphs, on one thread at a time (the
    // main loop or a build), and the URID table has its own lock.
    static let shared = LV2World()

    let world: OpaquePointer
    /// Port and plugin classes, as lilv nodes.
    let inputPort, outputPort, audioPort, controlPort, atomPort: OpaquePointer
    /// The features every instance gets (urid:map and unmap, and buf-size's promises).
    let sharedFeatures: [UnsafePointer<LV2_Feature>]
    /// The options feature's URI (each instance gives its own options).
    let optionsURI = permanentCString("http://lv2plug.in/ns/ext/options#options")

    private let uris = URIDTable()

    private init() {
        // SAFETY: lilv_world_new fails only when out of memory, which Swift does not survive either.
        let world = lilv_world_new()!
        lilv_world_load_all(world)
        self.world = world
        func uri(_ text: String) -> OpaquePointer { lilv_new_uri(world, text)! }
        inputPort = uri("http://lv2plug.in/ns/lv2core#InputPort")
        outputPort = uri("http://lv2plug.in/ns/lv2core#OutputPort")
        audioPort = uri("http://lv2plug.in/ns/lv2core#AudioPort")
        controlPort = uri("http://lv2plug.in/ns/lv2core#ControlPort")
        atomPort = uri("http://lv2plug.in/ns/ext/atom#AtomPort")

        var features: [UnsafePointer<LV2_Feature>] = []
        func feature(_ uri: String, _ data: UnsafeMutableRawPointer?) {
            let feature = UnsafeMutablePointer<LV2_Feature>.allocate(capacity: 1)
            feature.initialize(to: LV2_Feature(URI: permanentCString(uri), data: data))
            features.append(UnsafePointer(feature))
        }
        let handle = Unmanaged.passUnretained(uris).toOpaque()
        let map = UnsafeMutablePointer<LV2_URID_Map>.allocate(capacity: 1)
        map.initialize(
            to: LV2_URID_Map(
                handle: handle,
                map: { handle, uri in
                    // SAFETY: the handle is the world's table, which is never freed.
                    guard let handle, let uri else { return 0 }
                    return Unmanaged<URIDTable>.fromOpaque(handle).takeUnretainedValue().map(String(cString: uri))
                }))
        let unmap = UnsafeMutablePointer<LV2_URID_Unmap>.allocate(capacity: 1)
        unmap.initialize(
            to: LV2_URID_Unmap(
                handle: handle,
                unmap: { handle, urid in
                    guard let handle else { return nil }
                    return Unmanaged<URIDTable>.fromOpaque(handle).takeUnretainedValue().unmap(urid)
                }))
        feature("http://lv2plug.in/ns/ext/urid#map", UnsafeMutableRawPointer(map))
        feature("http://lv2plug.in/ns/ext/urid#unmap", UnsafeMutableRawPointer(unmap))
        // What the graph promises about block lengths: at most 8192 frames a call (StagedGraph's pieces).
        for promise in ["powerOf2BlockLength", "fixedBlockLength", "boundedBlockLength"] {
            feature("http://lv2plug.in/ns/ext/buf-size#" + promise, nil)
        }
        sharedFeatures = features
    }

    /// The URIs of the features an instance is given (`sharedFeatures`, then options).
    static let supportedFeatures: Set<String> = [
        "http://lv2plug.in/ns/ext/urid#map", "http://lv2plug.in/ns/ext/urid#unmap",
        "http://lv2plug.in/ns/ext/buf-size#powerOf2BlockLength", "http://lv2plug.in/ns/ext/buf-size#fixedBlockLength",
        "http://lv2plug.in/ns/ext/buf-size#boundedBlockLength", "http://lv2plug.in/ns/ext/options#options",
        "http://lv2plug.in/ns/lv2core#hardRTCapable", "http://lv2plug.in/ns/lv2core#isLive",
    ]

    /// `uri`'s number (urid:map): the same for the same URI, for the life of the process.
    func map(_ uri: String) -> LV2_URID { uris.map(uri) }

    /// Every installed plugin's URI.
    var pluginURIs: [String] {
        let plugins = lilv_world_get_all_plugins(world)
        var uris: [String] = []
        var iterator = lilv_plugins_begin(plugins)
        while !lilv_plugins_is_end(plugins, iterator) {
            if let plugin = lilv_plugins_get(plugins, iterator) { uris.append(String(cString: lilv_node_as_uri(lilv_plugin_get_uri(plugin)))) }
            iterator = lilv_plugins_next(plugins, iterator)
        }
        return uris
    }
}

/// URIs and their numbers, kept for the life of the process (plugins keep both).
private final class URIDTable: Sendable {
    private struct Entries {
        var ids: [String: LV2_URID] = [:]
        var strings: [UnsafePointer<CChar>] = []
    }
    private let entries = Mutex(Entries())

    func map(_ uri: String) -> LV2_URID {
        entries.withLock { entries in
            if let known = entries.ids[uri] { return known }
            entries.strings.append(permanentCString(uri))
            let id = LV2_URID(entries.strings.count)
            entries.ids[uri] = id
            return id
        }
    }

    func unmap(_ urid: LV2_URID) -> UnsafePointer<CChar>? {
        entries.withLock { entries in
            urid >= 1 && Int(urid) <= entries.strings.count ? entries.strings[Int(urid) - 1] : nil
        }
    }
}

/// A C string that is never freed (plugins keep the URIs they are given).
private func permanentCString(_ text: String) -> UnsafePointer<CChar> {
    // SAFETY: strdup fails only when out of memory, which Swift does not survive either.
    UnsafePointer(strdup(text)!)
}
