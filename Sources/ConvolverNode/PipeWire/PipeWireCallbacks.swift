// Every C callback PipeWire makes into the node layer, in one file: the event tables handed to
// `pw_*_add_listener`, the loop sources' functions and the helper threads' start routine. Each
// turns its `data` pointer back into the object that registered it and calls one method there;
// the objects themselves hold no C closures.
import CConvolverShims
import CPipeWire
import Glibc
import Workgroup

/// The C callbacks. `data` is an unretained reference to the object that registered the hook or
/// source, and every such object removes its hooks (or destroys its sources) before it goes away,
/// so the reference is valid in every call. The tables live at fixed addresses for the life of
/// the process, because PipeWire keeps the pointers.
enum PipeWireCallbacks {
    // MARK: - From `data` back to the object

    /// For main-loop callbacks.
    private static func object<Object: AnyObject>(_ data: UnsafeMutableRawPointer?, _: Object.Type) -> Object? {
        guard let data else { return nil }
        // SAFETY: `data` is the registering object, alive while its hook or source is (see above).
        return Unmanaged<Object>.fromOpaque(data).takeUnretainedValue()
    }

    /// For data-thread callbacks: no retain and release, which are atomic operations on an object
    /// the main loop also uses.
    @inline(__always)
    private static func withObject<Object: AnyObject>(
        _ data: UnsafeMutableRawPointer?, _: Object.Type, _ body: (Object) -> Void
    ) {
        guard let data else { return }
        // SAFETY: the transports destroy their filter or streams, which takes them off the data
        // loop by a blocking invoke, before they go away: no data-thread callback outlives them.
        Unmanaged<Object>.fromOpaque(data)._withUnsafeGuaranteedRef(body)
    }

    private static func table<Events>(_ events: Events) -> UnsafeMutablePointer<Events> {
        let pointer = UnsafeMutablePointer<Events>.allocate(capacity: 1)
        pointer.initialize(to: events)
        return pointer
    }

    // MARK: - Filter mode: FilterTransport's pw_filter

    static let filterEvents: UnsafeMutablePointer<pw_filter_events> = {
        var events = pw_filter_events()
        events.version = UInt32(PW_VERSION_FILTER_EVENTS)
        events.destroy = { data in object(data, FilterTransport.self)?.filterDestroyed() }
        events.state_changed = { data, _, state, error in
            guard state == PW_FILTER_STATE_ERROR else { return }
            object(data, FilterTransport.self)?.filterFailed(error: error)
        }
        events.param_changed = { data, portData, id, param in
            guard portData == nil, id == SPA_PARAM_Props.rawValue, let param else { return }
            object(data, FilterTransport.self)?.propsChanged(param)
        }
        events.process = { data, position in
            withObject(data, FilterTransport.self) { $0.process(position: position) }
        }
        return table(events)
    }()

    // MARK: - Sink mode: SinkTransport's two pw_streams

    static let captureStreamEvents: UnsafeMutablePointer<pw_stream_events> = {
        var events = pw_stream_events()
        events.version = UInt32(PW_VERSION_STREAM_EVENTS)
        events.destroy = { data in object(data, SinkTransport.self)?.captureDestroyed() }
        events.state_changed = { data, _, state, error in
            guard state == PW_STREAM_STATE_ERROR else { return }
            object(data, SinkTransport.self)?.streamFailed(playback: false, error: error)
        }
        events.param_changed = { data, id, param in
            guard let param else { return }
            object(data, SinkTransport.self)?.captureParamChanged(id, param)
        }
        events.process = { data in withObject(data, SinkTransport.self) { $0.captureProcess() } }
        return table(events)
    }()

    static let playbackStreamEvents: UnsafeMutablePointer<pw_stream_events> = {
        var events = pw_stream_events()
        events.version = UInt32(PW_VERSION_STREAM_EVENTS)
        events.destroy = { data in object(data, SinkTransport.self)?.playbackDestroyed() }
        events.state_changed = { data, _, state, error in
            guard state == PW_STREAM_STATE_ERROR else { return }
            object(data, SinkTransport.self)?.streamFailed(playback: true, error: error)
        }
        events.io_changed = { data, id, area, _ in
            guard id == SPA_IO_Position.rawValue else { return }
            object(data, SinkTransport.self)?.positionChanged(area)
        }
        events.process = { data in withObject(data, SinkTransport.self) { $0.playbackProcess() } }
        return table(events)
    }()

    // MARK: - The module and its core connection

    static let moduleEvents: UnsafeMutablePointer<pw_impl_module_events> = {
        var events = pw_impl_module_events()
        events.version = UInt32(PW_VERSION_IMPL_MODULE_EVENTS)
        events.destroy = { data in object(data, ConvolverModuleInstance.self)?.moduleDestroyed() }
        return table(events)
    }()

    static let coreProxyEvents: UnsafeMutablePointer<pw_proxy_events> = {
        var events = pw_proxy_events()
        events.version = UInt32(PW_VERSION_PROXY_EVENTS)
        events.destroy = { data in object(data, CoreListener.self)?.proxyDestroyed() }
        return table(events)
    }()

    static let coreEvents: UnsafeMutablePointer<pw_core_events> = {
        var events = pw_core_events()
        events.version = UInt32(PW_VERSION_CORE_EVENTS)
        events.info = { data, info in
            guard let info else { return }
            object(data, CoreListener.self)?.coreInfo(info)
        }
        events.error = { data, id, _, result, message in
            object(data, CoreListener.self)?.coreError(id: id, result: result, message: message)
        }
        return table(events)
    }()

    // MARK: - The node's loop sources

    static let wakeEvent: spa_source_event_func_t = { data, _ in
        object(data, ConvolverNode.self)?.handleWakeEvent()
    }

    static let statisticsTimer: spa_source_timer_func_t = { data, _ in
        object(data, ConvolverNode.self)?.publishStatistics()
    }

    static let loopTimer: spa_source_timer_func_t = { data, _ in object(data, LoopTimer.self)?.fire() }

    /// `data` is the pw_main_loop itself.
    static let quitSignal: spa_source_signal_func_t = { data, _ in
        guard let data else { return }
        pw_main_loop_quit(OpaquePointer(data))
    }

    // MARK: - pw-convolver top's profiler client

    static let registryEvents: UnsafeMutablePointer<pw_registry_events> = {
        var events = pw_registry_events()
        events.version = UInt32(PW_VERSION_REGISTRY_EVENTS)
        events.global = { data, id, _, type, _, props in
            guard let type else { return }
            object(data, ProfilerClient.self)?.registryGlobal(id: id, type: String(cString: type), props: props)
        }
        events.global_remove = { data, id in object(data, ProfilerClient.self)?.registryGlobalRemoved(id: id) }
        return table(events)
    }()

    static let registryProxyEvents: UnsafeMutablePointer<pw_proxy_events> = {
        var events = pw_proxy_events()
        events.version = UInt32(PW_VERSION_PROXY_EVENTS)
        events.done = { data, sequence in object(data, ProfilerClient.self)?.registrySynced(sequence: sequence) }
        return table(events)
    }()

    static let profilerEvents: UnsafeMutablePointer<pw_profiler_events> = {
        var events = pw_profiler_events()
        events.version = UInt32(PW_VERSION_PROFILER_EVENTS)
        events.profile = { data, pod in
            guard let pod else { return }
            object(data, ProfilerClient.self)?.profile(pod)
        }
        return table(events)
    }()

    // MARK: - pw-convolver set and status: NodeControlClient

    static let controlRegistryEvents: UnsafeMutablePointer<pw_registry_events> = {
        var events = pw_registry_events()
        events.version = UInt32(PW_VERSION_REGISTRY_EVENTS)
        events.global = { data, id, _, type, _, _ in
            guard let type else { return }
            object(data, NodeControlClient.self)?.registryGlobal(id: id, type: String(cString: type))
        }
        events.global_remove = { data, id in object(data, NodeControlClient.self)?.registryGlobalRemoved(id: id) }
        return table(events)
    }()

    static let controlRegistryProxyEvents: UnsafeMutablePointer<pw_proxy_events> = {
        var events = pw_proxy_events()
        events.version = UInt32(PW_VERSION_PROXY_EVENTS)
        events.done = { data, sequence in object(data, NodeControlClient.self)?.synced(sequence: sequence) }
        return table(events)
    }()

    static let controlNodeEvents: UnsafeMutablePointer<pw_node_events> = {
        var events = pw_node_events()
        events.version = UInt32(PW_VERSION_NODE_EVENTS)
        events.info = { data, info in
            guard let info else { return }
            object(data, BoundNode.self)?.info(info)
        }
        events.param = { data, _, id, _, _, pod in
            guard let pod else { return }
            object(data, BoundNode.self)?.param(id: id, pod)
        }
        return table(events)
    }()

    // MARK: - Helper threads made by PipeWire's thread utils

    /// `argument` is a ThreadBody retained by its creator for this call.
    static let threadStart: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { argument in
        // SAFETY: PipeWireThreadFactory passes a retained ThreadBody; released here, once.
        let body = Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue()
        body.run()
        return nil
    }
}
