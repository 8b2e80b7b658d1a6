// realtime_check: an LD_PRELOAD library that counts what real-time threads must never do.
//
// Built by the tests themselves (`cc -shared -fPIC -O2 -o librealtime_check.so realtime_check.c -ldl`),
// not a SwiftPM target: it goes into the process that hosts the node (`pipewire -c client.conf`).
//
// Counts, per watched thread, while armed: malloc-family calls (malloc, calloc, realloc, memalign,
// posix_memalign, aligned_alloc, valloc) and pthread_mutex_lock, each with its caller's address;
// and, on every clock_gettime (the data thread and the helpers read the clock every cycle/job),
// whether the thread's MXCSR has flush-to-zero and denormals-are-zero set.
//
// Watched threads: not the main thread, and named with one of the comma-separated prefixes in
// REALTIME_CHECK_THREADS (default "swconv,pipewire,data-loop": in a PipeWire 0.3.65 `pipewire -c`
// process the data loop's thread keeps the process name "pipewire"; our helpers are swconv-helperN).
// A thread becomes watched at its first clock_gettime after arming with a matching name, so a new
// helper's setup (naming itself, joining the workgroup) is not counted, its first job is.
//
// Dump lines: `thread TID NAME POLICY CLOCK_CALLS WITH_FLUSH FLUSH_LOST ALLOCATIONS MUTEX_LOCKS`,
// `site allocation|mutex TID 0xCALLER COUNT`, then `maps` and /proc/self/maps.
//
// Control: SIGUSR1 arms (and resets every count); SIGUSR2 writes the counts and /proc/self/maps to
// the file named by REALTIME_CHECK_OUTPUT (written to NAME.tmp, then renamed: poll for NAME).
//
// Forwarding: malloc & co. go to glibc's exported __libc_* entry points and clock_gettime to
// __clock_gettime (exported by glibc 2.36), which never come back to us: no recursion.
// pthread_mutex_lock forwards to dlsym(RTLD_NEXT) (glibc exports __pthread_mutex_lock only as a
// hidden compat version). Everything else here is lock-free and allocation-free.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void __libc_free(void *);
#include <dlfcn.h>
extern int __clock_gettime(clockid_t, struct timespec *);

#define MAX_THREADS 64
#define MAX_SITES 256
#define FLUSH_BITS 0x8040u   /* MXCSR FTZ (bit 15) | DAZ (bit 6) */

enum kind { KIND_ALLOCATION = 1, KIND_MUTEX = 2 };

struct thread_record {
    atomic_int tid;
    char name[16];
    int policy;
    atomic_llong clock_calls;
    atomic_llong clock_calls_with_flush;
    /* Calls without FTZ/DAZ after a call with them: the bits were cleared again. */
    atomic_llong flush_lost;
    atomic_llong allocations;
    atomic_llong mutex_locks;
};

struct site_record {
    atomic_uintptr_t address;   /* 0: free slot */
    int kind;
    int tid;
    atomic_llong count;
};

static struct thread_record threads[MAX_THREADS];
static atomic_int thread_count;
static struct site_record sites[MAX_SITES];
static atomic_int armed;
static atomic_int epoch = 1;
static atomic_llong lost_threads, lost_sites, armed_clock_calls;
static char prefixes[256] = "swconv,pipewire,data-loop";
static char output_path[1024];
static pid_t process_id;

/* initial-exec: the library is preloaded, so its TLS is static and first access never allocates. */
static __thread int thread_epoch __attribute__((tls_model("initial-exec")));
static __thread struct thread_record *thread_slot __attribute__((tls_model("initial-exec")));

static int name_matches(const char *name) {
    const char *p = prefixes;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t length = end ? (size_t)(end - p) : strlen(p);
        if (length > 0 && strncmp(name, p, length) == 0) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

/* The current thread's record if it is watched in this arming, else NULL. */
static inline struct thread_record *watched(void) {
    if (!atomic_load_explicit(&armed, memory_order_relaxed)) return NULL;
    if (thread_epoch != atomic_load_explicit(&epoch, memory_order_acquire)) return NULL;
    return thread_slot;
}

/* Called from clock_gettime: decides (once per arming, when the name matches) to watch this thread. */
static void consider_current_thread(void) {
    int current_epoch = atomic_load_explicit(&epoch, memory_order_acquire);
    if (thread_epoch == current_epoch) return;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    if (tid == process_id) { thread_epoch = current_epoch; thread_slot = NULL; return; }
    char name[17] = {0};
    prctl(PR_GET_NAME, name, 0, 0, 0);
    if (!name_matches(name)) return;   /* not yet named (a starting helper): look again next time */
    int index = atomic_fetch_add(&thread_count, 1);
    if (index >= MAX_THREADS) { atomic_fetch_add(&lost_threads, 1); thread_epoch = current_epoch; thread_slot = NULL; return; }
    struct thread_record *record = &threads[index];
    memcpy(record->name, name, sizeof record->name);
    record->policy = sched_getscheduler(0);
    atomic_store(&record->tid, tid);
    thread_slot = record;
    thread_epoch = current_epoch;
}

static void record_site(int kind, void *caller, int tid) {
    uintptr_t key = (uintptr_t)caller;
    if (key == 0) key = 1;
    unsigned start = (unsigned)((key >> 4) * 2654435761u) % MAX_SITES;
    for (unsigned probe = 0; probe < MAX_SITES; probe++) {
        struct site_record *site = &sites[(start + probe) % MAX_SITES];
        uintptr_t current = atomic_load(&site->address);
        if (current == 0) {
            uintptr_t expected = 0;
            if (atomic_compare_exchange_strong(&site->address, &expected, key)) {
                site->kind = kind;
                site->tid = tid;
                atomic_fetch_add(&site->count, 1);
                return;
            }
            current = expected;
        }
        if (current == key && site->kind == kind) { atomic_fetch_add(&site->count, 1); return; }
    }
    atomic_fetch_add(&lost_sites, 1);
}

static inline void count_allocation(void *caller) {
    struct thread_record *record = watched();
    if (!record) return;
    atomic_fetch_add_explicit(&record->allocations, 1, memory_order_relaxed);
    record_site(KIND_ALLOCATION, caller, atomic_load(&record->tid));
}

void *malloc(size_t size) { count_allocation(__builtin_return_address(0)); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count_allocation(__builtin_return_address(0)); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { count_allocation(__builtin_return_address(0)); return __libc_realloc(p, size); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t alignment, size_t size) { count_allocation(__builtin_return_address(0)); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count_allocation(__builtin_return_address(0)); return __libc_memalign(alignment, size); }
void *valloc(size_t size) { count_allocation(__builtin_return_address(0)); return __libc_valloc(size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    count_allocation(__builtin_return_address(0));
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

typedef int (*mutex_lock_function)(pthread_mutex_t *);
static _Atomic(mutex_lock_function) real_mutex_lock;

int pthread_mutex_lock(pthread_mutex_t *mutex) {
    struct thread_record *record = watched();
    if (record) {
        atomic_fetch_add_explicit(&record->mutex_locks, 1, memory_order_relaxed);
        record_site(KIND_MUTEX, __builtin_return_address(0), atomic_load(&record->tid));
    }
    mutex_lock_function real = atomic_load_explicit(&real_mutex_lock, memory_order_acquire);
    if (!real) {   /* first use before our constructor (the Swift runtime locks early); dlsym takes no pthread mutex */
        real = (mutex_lock_function)dlsym(RTLD_NEXT, "pthread_mutex_lock");
        atomic_store_explicit(&real_mutex_lock, real, memory_order_release);
    }
    return real(mutex);
}

int clock_gettime(clockid_t clock, struct timespec *now) {
    if (atomic_load_explicit(&armed, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&armed_clock_calls, 1, memory_order_relaxed);
        consider_current_thread();
        struct thread_record *record = watched();
        if (record) {
            atomic_fetch_add_explicit(&record->clock_calls, 1, memory_order_relaxed);
            if ((__builtin_ia32_stmxcsr() & FLUSH_BITS) == FLUSH_BITS)
                atomic_fetch_add_explicit(&record->clock_calls_with_flush, 1, memory_order_relaxed);
            else if (atomic_load_explicit(&record->clock_calls_with_flush, memory_order_relaxed) > 0)
                atomic_fetch_add_explicit(&record->flush_lost, 1, memory_order_relaxed);
        }
    }
    return __clock_gettime(clock, now);
}

/* ---- dump (signal handler: only async-signal-safe calls) ---- */

struct writer { int fd; char buffer[4096]; size_t used; };

static void flush_writer(struct writer *w) {
    size_t done = 0;
    while (done < w->used) {
        ssize_t n = write(w->fd, w->buffer + done, w->used - done);
        if (n <= 0) break;
        done += (size_t)n;
    }
    w->used = 0;
}
static void put_text(struct writer *w, const char *text) {
    while (*text) {
        if (w->used == sizeof w->buffer) flush_writer(w);
        w->buffer[w->used++] = *text++;
    }
}
static void put_number(struct writer *w, unsigned long long value, int base) {
    char digits[32];
    int n = 0;
    do { digits[n++] = "0123456789abcdef"[value % (unsigned)base]; value /= (unsigned)base; } while (value);
    char text[34];
    int i = 0;
    if (base == 16) { text[i++] = '0'; text[i++] = 'x'; }
    while (n) text[i++] = digits[--n];
    text[i] = 0;
    put_text(w, text);
}

static void dump_counts(void) {
    if (!output_path[0]) return;
    char temporary[1040];
    size_t length = strlen(output_path);
    memcpy(temporary, output_path, length);
    memcpy(temporary + length, ".tmp", 5);
    struct writer w = { .fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), .used = 0 };
    if (w.fd < 0) return;
    put_text(&w, "armed "); put_number(&w, (unsigned long long)atomic_load(&armed), 10);
    put_text(&w, " lost_threads "); put_number(&w, (unsigned long long)atomic_load(&lost_threads), 10);
    put_text(&w, " lost_sites "); put_number(&w, (unsigned long long)atomic_load(&lost_sites), 10);
    put_text(&w, " clock_calls "); put_number(&w, (unsigned long long)atomic_load(&armed_clock_calls), 10);
    put_text(&w, "\n");
    int count = atomic_load(&thread_count);
    if (count > MAX_THREADS) count = MAX_THREADS;
    for (int i = 0; i < count; i++) {
        struct thread_record *t = &threads[i];
        put_text(&w, "thread "); put_number(&w, (unsigned long long)atomic_load(&t->tid), 10);
        put_text(&w, " "); put_text(&w, t->name[0] ? t->name : "?");
        put_text(&w, " "); put_number(&w, (unsigned long long)t->policy, 10);
        put_text(&w, " "); put_number(&w, (unsigned long long)atomic_load(&t->clock_calls), 10);
        put_text(&w, " "); put_number(&w, (unsigned long long)atomic_load(&t->clock_calls_with_flush), 10);
        put_text(&w, " "); put_number(&w, (unsigned long long)atomic_load(&t->flush_lost), 10);
        put_text(&w, " "); put_number(&w, (unsigned long long)atomic_load(&t->allocations), 10);
        put_text(&w, " "); put_number(&w, (unsigned long long)atomic_load(&t->mutex_locks), 10);
        put_text(&w, "\n");
    }
    for (int i = 0; i < MAX_SITES; i++) {
        struct site_record *s = &sites[i];
        uintptr_t address = atomic_load(&s->address);
        if (!address) continue;
        put_text(&w, s->kind == KIND_ALLOCATION ? "site allocation " : "site mutex ");
        put_number(&w, (unsigned long long)s->tid, 10);
        put_text(&w, " "); put_number(&w, (unsigned long long)address, 16);
        put_text(&w, " "); put_number(&w, (unsigned long long)atomic_load(&s->count), 10);
        put_text(&w, "\n");
    }
    /* The maps, so the test can name the library (and offset) of each caller address. */
    int maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (maps >= 0) {
        put_text(&w, "maps\n");
        flush_writer(&w);
        char chunk[4096];
        ssize_t n;
        while ((n = read(maps, chunk, sizeof chunk)) > 0) {
            ssize_t done = 0;
            while (done < n) { ssize_t m = write(w.fd, chunk + done, (size_t)(n - done)); if (m <= 0) break; done += m; }
        }
        close(maps);
    }
    flush_writer(&w);
    close(w.fd);
    rename(temporary, output_path);
}

static void on_signal(int signal_number) {
    int saved_errno = errno;
    if (signal_number == SIGUSR1) {
        atomic_store(&armed, 0);
        for (int i = 0; i < MAX_THREADS; i++) {
            atomic_store(&threads[i].tid, 0);
            threads[i].name[0] = 0;
            atomic_store(&threads[i].clock_calls, 0);
            atomic_store(&threads[i].clock_calls_with_flush, 0);
            atomic_store(&threads[i].flush_lost, 0);
            atomic_store(&threads[i].allocations, 0);
            atomic_store(&threads[i].mutex_locks, 0);
        }
        for (int i = 0; i < MAX_SITES; i++) { atomic_store(&sites[i].count, 0); atomic_store(&sites[i].address, 0); }
        atomic_store(&thread_count, 0);
        atomic_store(&lost_threads, 0);
        atomic_store(&lost_sites, 0);
        atomic_store(&armed_clock_calls, 0);
        atomic_fetch_add(&epoch, 1);
        atomic_store(&armed, 1);
    } else if (signal_number == SIGUSR2) {
        dump_counts();
    }
    errno = saved_errno;
}

__attribute__((constructor)) static void realtime_check_init(void) {
    process_id = getpid();
    const char *watch = getenv("REALTIME_CHECK_THREADS");
    if (watch && *watch) { strncpy(prefixes, watch, sizeof prefixes - 1); prefixes[sizeof prefixes - 1] = 0; }
    const char *output = getenv("REALTIME_CHECK_OUTPUT");
    if (output) { strncpy(output_path, output, sizeof output_path - 1); output_path[sizeof output_path - 1] = 0; }
    /* Only the process we were meant for: `env` (and any child) must not take over SIGUSR1/2. */
    const char *target = getenv("REALTIME_CHECK_PROGRAM");
    if (target && *target) {
        char self[17] = {0};
        prctl(PR_GET_NAME, self, 0, 0, 0);
        if (strncmp(self, target, 15) != 0) return;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, SIGUSR1);
    sigaddset(&action.sa_mask, SIGUSR2);
    sigaction(SIGUSR1, &action, NULL);
    sigaction(SIGUSR2, &action, NULL);
}
