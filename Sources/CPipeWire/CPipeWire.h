// The PipeWire and SPA headers swift-convolver uses.
#include <pipewire/pipewire.h>
#include <pipewire/filter.h>
#include <pipewire/impl-module.h>
#include <pipewire/thread.h>
#include <pipewire/extensions/profiler.h>
#include <spa/param/audio/format-utils.h>
#include <spa/param/latency-utils.h>
#include <spa/param/props.h>
#include <spa/param/profiler.h>
#include <spa/pod/builder.h>
#include <spa/pod/parser.h>
#include <spa/pod/iter.h>
#include <spa/utils/json.h>
#include <spa/utils/result.h>
#include <spa/support/thread.h>
