// Thin C wrappers for the PipeWire API that Swift cannot import: function-like macros and varargs
// (and the one libc header, malloc.h, that Swift's Glibc module leaves out).
// Each function is the smallest wrapper around one macro or call; no logic lives here.
// They could go if Swift learns to import function-like macros (or PipeWire turns them into
// static inline functions, as newer releases do for some of them).
#pragma once
#include <malloc.h>   // malloc_trim: Swift's Glibc module leaves malloc.h out
#include <stdbool.h>
#include <pipewire/pipewire.h>

/// `pw_loop_add_timer` is a macro over `spa_loop_utils_add_timer(loop->utils, ...)`.
struct spa_source *cpw_loop_add_timer(struct pw_loop *loop, spa_source_timer_func_t func, void *data);

/// `pw_loop_update_timer` is a macro. `value`/`interval` NULL disarm; `absolute` as in timerfd.
int cpw_loop_update_timer(struct pw_loop *loop, struct spa_source *source,
                          struct timespec *value, struct timespec *interval, bool absolute);

/// `pw_loop_add_signal` is a macro (signalfd-based: the callback runs on the loop, not in a handler).
struct spa_source *cpw_loop_add_signal(struct pw_loop *loop, int signal_number,
                                       spa_source_signal_func_t func, void *data);

/// `pw_loop_add_event` is a macro: an eventfd source, signalled from any thread.
struct spa_source *cpw_loop_add_event(struct pw_loop *loop, spa_source_event_func_t func, void *data);

/// `pw_loop_signal_event` is a macro: writes the eventfd. Real-time safe (one write syscall).
int cpw_loop_signal_event(struct pw_loop *loop, struct spa_source *source);

/// `pw_loop_destroy_source` is a macro.
void cpw_loop_destroy_source(struct pw_loop *loop, struct spa_source *source);

/// `pw_core_add_listener` is a macro over the core proxy's method table.
int cpw_core_add_listener(struct pw_core *core, struct spa_hook *listener,
                          const struct pw_core_events *events, void *data);

/// `pw_node_set_param` is a macro over the node proxy's method table (flags 0).
int cpw_node_set_param(struct pw_node *node, uint32_t id, const struct spa_pod *param);

/// `pw_node_enum_params` is a macro: every param `id` of the node, answered by `param` events.
int cpw_node_enum_params(struct pw_node *node, int seq, uint32_t id);

/// `pw_log_*` are macros over the varargs `pw_log_logt`: logs one preformatted message.
void cpw_log(enum spa_log_level level, const char *message);

/// `PW_STREAM_FLAG_ASYNC` (a stream whose buffers another stream's process callback dequeues: a
/// sink's capture side) when the running libpipewire has it (0.3.73 and newer), else 0, whatever
/// headers the module was built against.
uint32_t cpw_stream_flag_async(void);

/// The channel position SPA names `name` ("FL", "LFE", "AUX7" …: the short names of
/// `spa_type_audio_channel`, as filter-chain reads `audio.position`), or SPA_ID_INVALID. The table
/// is a static array in a header, which Swift does not import.
uint32_t cpw_audio_channel_from_name(const char *name);

/// The value of an object's property (`&prop->value`: Swift sees the field only as a copy).
const struct spa_pod *cpw_pod_prop_value(const struct spa_pod_prop *prop);
