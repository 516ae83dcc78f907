/* minitrace PMPI shim: the clocks.  A raw time stamp is the TSC when the kernel says it is
 * constant and does not stop (MT_HAVE_TSC: the machine has one), else CLOCK_MONOTONIC in ns.
 *
 * Not compiled on its own: a runtime file of the shim's one translation unit, after its memory
 * (shim_alloc.c; generate.py RUNTIME), so that shim_runtime.c's hot path inlines mt_now.
 */
#include "shim_runtime.h"
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define MT_HAVE_TSC 1
#endif

static int mt_use_tsc;

/* ---- clocks -------------------------------------------------------------------------- */
static int64_t mt_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t mt_now(void) {
#ifdef MT_HAVE_TSC
    if (mt_use_tsc) return (int64_t)__rdtsc();
#endif
    return mt_mono_ns();
}

/* The TSC is used only when the kernel says it is constant and does not stop. */
static void mt_clock_setup(void) {
#ifdef MT_HAVE_TSC
    const char *no = getenv("MINITRACE_NO_TSC");
    if (no && *no) return;
    /* read(), not stdio: fopen's buffer would be a block of the program's heap (shim_alloc.c) */
    static char buf[32768];          /* the first CPU's lines are what is read: its flags */
    int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = 0, r;
    while (n < (ssize_t)sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - (size_t)n)) > 0)
        n += r;
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    char *line = strncmp(buf, "flags", 5) ? strstr(buf, "\nflags") : buf;
    if (!line) return;
    char *end = strchr(line + 1, '\n');
    if (end) *end = 0;
    int constant = strstr(line, " constant_tsc") != NULL;
    int nonstop = strstr(line, " nonstop_tsc") != NULL;
    mt_use_tsc = constant && nonstop;
#endif
}
