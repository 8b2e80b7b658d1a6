// Thin C wrappers for the PipeWire API that Swift cannot import: function-like macros and varargs.
// Each function is the smallest wrapper around one macro or call; no logic lives here.
#pragma once
#include <pipewire/pipewire.h>
