// The live tests' recorder: a pw_filter with one DSP input port per channel (`input_<POS>`) that
// copies every cycle's buffers into memory and writes them, as raw interleaved float32 frames,
// when it gets SIGINT or SIGTERM; and beside them (FILE.times) when each cycle's copy began and
// ended (CLOCK_MONOTONIC), so that the graph judge can tell a cycle read while its producer was
// still writing the buffer (after a cycle PipeWire did not finish, it starts the next one anyway,
// and a late node then writes beside its consumer) from a node that wrote something wrong.
//
// Why not pw-record: since PipeWire 1.1.81 a stream without PW_STREAM_FLAG_RT_PROCESS (pw-cat
// sets none) runs asynchronously, reading its inputs a cycle late, so it records a sync node's
// output one cycle behind the player beside it. This filter runs in the cycle (RT_PROCESS), on
// PipeWire 0.3.65 and 1.x alike, so a zero-latency node's output lines up with its input.
//
// Usage: sync_record NODE_NAME POS[,POS...] FILE [SECONDS [LATENCY]]
//   SECONDS: capacity (default 120). LATENCY: frames of playback latency its input ports report,
//   as an audio device's do, so that the graph propagates latency upstream (default 0: none).
// Built by the tests with the system C compiler against the PipeWire under test (pkg-config).
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pipewire/filter.h>
#include <pipewire/pipewire.h>
#include <spa/param/latency-utils.h>

#define MAX_CHANNELS 64

struct recorder {
	struct pw_main_loop *loop;
	struct pw_filter *filter;
	void *ports[MAX_CHANNELS];
	unsigned channels;
	float *frames;
	size_t capacity;   /* frames */
	size_t recorded;   /* frames, written by the data thread until the filter is destroyed */
	struct cycle_time { uint64_t frames, start_ns, end_ns; } *times;
	size_t cycles;     /* entries of `times`, same owner as `recorded` */
	size_t max_cycles;
};

static uint64_t monotonic_ns(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t) now.tv_sec * 1000000000u + (uint64_t) now.tv_nsec;
}

static void on_process(void *data, struct spa_io_position *position)
{
	struct recorder *recorder = data;
	if (position == NULL)
		return;
	uint32_t count = (uint32_t) position->clock.duration;
	if (recorder->recorded + count > recorder->capacity || recorder->cycles == recorder->max_cycles)
		return;
	uint64_t start_ns = monotonic_ns();
	float *out = recorder->frames + recorder->recorded * recorder->channels;
	for (unsigned channel = 0; channel < recorder->channels; channel++) {
		const float *in = pw_filter_get_dsp_buffer(recorder->ports[channel], count);
		for (uint32_t frame = 0; frame < count; frame++)
			out[frame * recorder->channels + channel] = in ? in[frame] : 0.0f;
	}
	recorder->times[recorder->cycles++] = (struct cycle_time) { count, start_ns, monotonic_ns() };
	recorder->recorded += count;
}

static const struct pw_filter_events filter_events = {
	PW_VERSION_FILTER_EVENTS,
	.process = on_process,
};

static void on_signal(void *data, int signal_number)
{
	(void) signal_number;
	pw_main_loop_quit(((struct recorder *) data)->loop);
}

int main(int argc, char *argv[])
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s NODE_NAME POS[,POS...] FILE [SECONDS [LATENCY]]\n", argv[0]);
		return 2;
	}
	struct recorder recorder = { 0 };
	char *positions = strdup(argv[2]);
	char *names[MAX_CHANNELS];
	for (char *name = strtok(positions, ","); name && recorder.channels < MAX_CHANNELS; name = strtok(NULL, ","))
		names[recorder.channels++] = name;
	double seconds = argc > 4 ? atof(argv[4]) : 120;
	int latency = argc > 5 ? atoi(argv[5]) : 0;
	recorder.capacity = (size_t) (seconds * 48000);
	recorder.frames = calloc(recorder.capacity * recorder.channels, sizeof(float));
	recorder.max_cycles = recorder.capacity / 16 + 1;   /* quanta are 16 frames or more */
	recorder.times = calloc(recorder.max_cycles, sizeof(*recorder.times));
	if (recorder.channels == 0 || recorder.frames == NULL || recorder.times == NULL) {
		fprintf(stderr, "sync_record: no channels, or no memory for %g s\n", seconds);
		return 1;
	}

	pw_init(&argc, &argv);
	recorder.loop = pw_main_loop_new(NULL);
	struct pw_loop *loop = pw_main_loop_get_loop(recorder.loop);
	pw_loop_add_signal(loop, SIGINT, on_signal, &recorder);
	pw_loop_add_signal(loop, SIGTERM, on_signal, &recorder);
	recorder.filter = pw_filter_new_simple(loop, argv[1],
		pw_properties_new(PW_KEY_MEDIA_TYPE, "Audio", PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_MEDIA_ROLE, "DSP",
				  PW_KEY_NODE_NAME, argv[1], PW_KEY_NODE_WANT_DRIVER, "false", NULL),
		&filter_events, &recorder);
	for (unsigned channel = 0; channel < recorder.channels; channel++) {
		char port_name[80];
		snprintf(port_name, sizeof(port_name), "input_%s", names[channel]);
		recorder.ports[channel] = pw_filter_add_port(recorder.filter, PW_DIRECTION_INPUT, PW_FILTER_PORT_FLAG_MAP_BUFFERS, 0,
			pw_properties_new(PW_KEY_FORMAT_DSP, "32 bit float mono audio", PW_KEY_PORT_NAME, port_name,
					  PW_KEY_AUDIO_CHANNEL, names[channel], NULL),
			NULL, 0);
		if (latency > 0) {
			uint8_t buffer[256];
			struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, sizeof(buffer));
			struct spa_latency_info info = SPA_LATENCY_INFO(SPA_DIRECTION_INPUT,
				.min_rate = (uint32_t) latency, .max_rate = (uint32_t) latency);
			const struct spa_pod *params[1] = { spa_latency_build(&builder, SPA_PARAM_Latency, &info) };
			pw_filter_update_params(recorder.filter, recorder.ports[channel], params, 1);
		}
	}
	if (pw_filter_connect(recorder.filter, PW_FILTER_FLAG_RT_PROCESS, NULL, 0) < 0) {
		fprintf(stderr, "sync_record: pw_filter_connect failed\n");
		return 1;
	}
	pw_main_loop_run(recorder.loop);
	pw_filter_destroy(recorder.filter);   /* the data thread is done with `recorded` */

	FILE *file = fopen(argv[3], "wb");
	if (file == NULL) {
		fprintf(stderr, "sync_record: %s: %s\n", argv[3], strerror(errno));
		return 1;
	}
	fwrite(recorder.frames, sizeof(float) * recorder.channels, recorder.recorded, file);
	fclose(file);
	char times_path[4096];
	snprintf(times_path, sizeof(times_path), "%s.times", argv[3]);
	if ((file = fopen(times_path, "wb")) == NULL) {
		fprintf(stderr, "sync_record: %s: %s\n", times_path, strerror(errno));
		return 1;
	}
	fwrite(recorder.times, sizeof(*recorder.times), recorder.cycles, file);
	fclose(file);
	pw_main_loop_destroy(recorder.loop);
	pw_deinit();
	free(recorder.frames);
	free(recorder.times);
	free(positions);
	return 0;
}
