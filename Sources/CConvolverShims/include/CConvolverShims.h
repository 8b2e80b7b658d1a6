// Thin C wrappers for the PipeWire API that Swift cannot import: function-like macros and varargs.
// Each function is the smallest wrapper around one macro or call; no logic lives here.
#pragma once
#include <pipewire/pipewire.h>

#include <stdint.h>

/// Puts the calling thread under SCHED_DEADLINE (runtime ≤ deadline ≤ period, ns).
/// Returns 0 or an errno value. Why C: glibc 2.36 has no `sched_setattr` wrapper and `syscall`
/// is variadic, which Swift cannot call. Can go once glibc ≥ 2.41 (`sched_setattr`) is the floor.
int swconv_set_deadline_scheduling(uint64_t runtime_ns, uint64_t deadline_ns, uint64_t period_ns);
