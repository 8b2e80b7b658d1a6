#include "CConvolverShims.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

// Layout of the kernel's `struct sched_attr` (include/uapi/linux/sched/types.h, SCHED_ATTR_SIZE_VER0).
struct swconv_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
};
_Static_assert(sizeof(struct swconv_sched_attr) == 48, "SCHED_ATTR_SIZE_VER0");

int swconv_set_deadline_scheduling(uint64_t runtime_ns, uint64_t deadline_ns, uint64_t period_ns) {
    struct swconv_sched_attr attr = {
        .size = sizeof attr, .sched_policy = 6 /* SCHED_DEADLINE */,
        .sched_runtime = runtime_ns, .sched_deadline = deadline_ns, .sched_period = period_ns,
    };
    return syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : errno;
}
