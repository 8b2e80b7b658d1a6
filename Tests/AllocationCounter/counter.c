// See AllocationCounter.h. Forwarding uses glibc's exported __libc_* entry points, which never
// allocate through us again, so there is no recursion.
#define _GNU_SOURCE
#include "AllocationCounter.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_int armed;
static atomic_llong allocations;
static atomic_llong mutex_locks;
static char watched_prefix[16];
static atomic_int watched_prefix_set;

// 0: not decided yet, 1: watched, 2: not watched (by name).
static __thread int thread_watched_explicitly;
static __thread int thread_name_verdict;

static int current_thread_is_watched(void) {
    if (thread_watched_explicitly) return 1;
    if (!atomic_load_explicit(&watched_prefix_set, memory_order_acquire)) return 0;
    if (thread_name_verdict == 0) {
        char name[17] = {0};
        prctl(PR_GET_NAME, name, 0, 0, 0);
        thread_name_verdict = strncmp(name, watched_prefix, strlen(watched_prefix)) == 0 ? 1 : 2;
    }
    return thread_name_verdict == 1;
}

static inline void count_allocation(void) {
    if (atomic_load_explicit(&armed, memory_order_relaxed) && current_thread_is_watched())
        atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
}

void allocation_counter_watch_current_thread(int watch) { thread_watched_explicitly = watch; }
void allocation_counter_watch_threads_named(const char *prefix) {
    strncpy(watched_prefix, prefix, sizeof watched_prefix - 1);
    atomic_store_explicit(&watched_prefix_set, 1, memory_order_release);
}
void allocation_counter_arm(int on) { atomic_store(&armed, on); }
void allocation_counter_reset(void) { atomic_store(&allocations, 0); atomic_store(&mutex_locks, 0); }
int64_t allocation_counter_allocations(void) { return atomic_load(&allocations); }
int64_t allocation_counter_mutex_locks(void) { return atomic_load(&mutex_locks); }

void *malloc(size_t size) { count_allocation(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count_allocation(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { count_allocation(); return __libc_realloc(p, size); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t alignment, size_t size) { count_allocation(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count_allocation(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    count_allocation();
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

typedef int (*mutex_lock_fn)(pthread_mutex_t *);
static _Atomic(mutex_lock_fn) real_mutex_lock;

int pthread_mutex_lock(pthread_mutex_t *m) {
    if (atomic_load_explicit(&armed, memory_order_relaxed) && current_thread_is_watched())
        atomic_fetch_add_explicit(&mutex_locks, 1, memory_order_relaxed);
    mutex_lock_fn real = atomic_load_explicit(&real_mutex_lock, memory_order_acquire);
    if (!real) {  // resolved on first use: the Swift runtime locks before any constructor runs
        real = (mutex_lock_fn)dlsym(RTLD_NEXT, "pthread_mutex_lock");
        atomic_store_explicit(&real_mutex_lock, real, memory_order_release);
    }
    return real(m);
}
