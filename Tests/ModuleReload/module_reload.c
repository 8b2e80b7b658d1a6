/* A PipeWire client in C that loads the convolver module by name and unloads it again, COUNT
 * times, each load held HOLD_MS milliseconds while the main loop runs: a host with no Swift
 * runtime of its own, as the user's PipeWire processes are (PackageTests runs it on the
 * installed package with the toolchain hidden). Its node connects to the daemon of
 * XDG_RUNTIME_DIR. Prints "loaded N" after each load; exit status 1 if a load fails.
 *   module_reload COUNT HOLD_MS 'MODULE ARGUMENTS' */
#include <pipewire/impl.h>
#include <pipewire/pipewire.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void run_for(struct pw_loop *loop, int ms)
{
	double end = now_ms() + ms;
	while (now_ms() < end)
		pw_loop_iterate(loop, 10);
}

int main(int argc, char *argv[])
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s COUNT HOLD_MS 'MODULE ARGUMENTS'\n", argv[0]);
		return 2;
	}
	int count = atoi(argv[1]), hold = atoi(argv[2]);
	pw_init(NULL, NULL);
	struct pw_main_loop *main_loop = pw_main_loop_new(NULL);
	struct pw_loop *loop = pw_main_loop_get_loop(main_loop);
	/* client.conf: protocol-native, client-node, adapter, as `pipewire -c` clients have. */
	struct pw_context *context = pw_context_new(loop, NULL, 0);
	int status = 0;
	for (int i = 1; i <= count && status == 0; i++) {
		struct pw_impl_module *module =
			pw_context_load_module(context, "libpipewire-module-swift-convolver", argv[3], NULL);
		if (module == NULL) {
			fprintf(stderr, "load %d failed: %m\n", i);
			status = 1;
			break;
		}
		printf("loaded %d\n", i);
		fflush(stdout);
		run_for(loop, hold);
		pw_impl_module_destroy(module);
		run_for(loop, 50);
	}
	pw_context_destroy(context);
	pw_main_loop_destroy(main_loop);
	pw_deinit();
	return status;
}
