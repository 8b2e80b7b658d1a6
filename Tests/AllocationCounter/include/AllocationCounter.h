// Counts heap allocations and mutex locks made by "watched" threads of the test process.
//
// The test executable defines malloc & co. and pthread_mutex_lock, so every library in the process
// (Swift runtime, FFTW, libc) calls these first; they count and forward to glibc.
// A thread is watched when it called `allocation_counter_watch_current_thread(1)`, or when its
// name starts with the prefix given to `allocation_counter_watch_threads_named` (helper threads).
#pragma once
#include <stdint.h>

void allocation_counter_watch_current_thread(int watch);
/// Watch every thread whose name (pthread_setname_np) starts with `prefix` (at most 15 chars).
void allocation_counter_watch_threads_named(const char *prefix);
/// Start (1) or stop (0) counting; counts are kept until reset.
void allocation_counter_arm(int armed);
void allocation_counter_reset(void);
int64_t allocation_counter_allocations(void);
int64_t allocation_counter_mutex_locks(void);
