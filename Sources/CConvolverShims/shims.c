#include "CConvolverShims.h"

#include <stdbool.h>
#include <stdio.h>

#include <spa/debug/types.h>
#include <spa/param/audio/type-info.h>

struct spa_source *cpw_loop_add_timer(struct pw_loop *loop, spa_source_timer_func_t func, void *data)
{
	return pw_loop_add_timer(loop, func, data);
}

int cpw_loop_update_timer(struct pw_loop *loop, struct spa_source *source,
                          struct timespec *value, struct timespec *interval, bool absolute)
{
	return pw_loop_update_timer(loop, source, value, interval, absolute);
}

struct spa_source *cpw_loop_add_signal(struct pw_loop *loop, int signal_number,
                                       spa_source_signal_func_t func, void *data)
{
	return pw_loop_add_signal(loop, signal_number, func, data);
}

struct spa_source *cpw_loop_add_event(struct pw_loop *loop, spa_source_event_func_t func, void *data)
{
	return pw_loop_add_event(loop, func, data);
}

int cpw_loop_signal_event(struct pw_loop *loop, struct spa_source *source)
{
	return pw_loop_signal_event(loop, source);
}

void cpw_loop_destroy_source(struct pw_loop *loop, struct spa_source *source)
{
	pw_loop_destroy_source(loop, source);
}

int cpw_core_add_listener(struct pw_core *core, struct spa_hook *listener,
                          const struct pw_core_events *events, void *data)
{
	return pw_core_add_listener(core, listener, events, data);
}

int cpw_node_set_param(struct pw_node *node, uint32_t id, const struct spa_pod *param)
{
	return pw_node_set_param(node, id, 0, param);
}

int cpw_node_enum_params(struct pw_node *node, int seq, uint32_t id)
{
	return pw_node_enum_params(node, seq, id, 0, UINT32_MAX, NULL);
}

void cpw_log(enum spa_log_level level, const char *message)
{
	pw_log(level, "%s", message);
}

uint32_t cpw_stream_flag_async(void)
{
	/* The running libpipewire decides, not the headers: the module built against 0.3.65's (the
	 * Debian 12 package) runs on 1.x too, where a sink without the flag loses half its input. */
	int major = 0, minor = 0, micro = 0;
	sscanf(pw_get_library_version(), "%d.%d.%d", &major, &minor, &micro);
	bool has_async = major > 0 || minor > 3 || (minor == 3 && micro >= 73);
	return has_async ? 1u << 10 : 0;  /* PW_STREAM_FLAG_ASYNC, which 0.3.65's headers lack */
}

uint32_t cpw_audio_channel_from_name(const char *name)
{
	return spa_debug_type_find_type_short(spa_type_audio_channel, name);
}

const struct spa_pod *cpw_pod_prop_value(const struct spa_pod_prop *prop)
{
	return &prop->value;
}
