/* minitrace PMPI shim: the clocks.  A raw time stamp is the TSC when the kernel says it is
 * constant and does not stop (MT_HAVE_TSC: the machine has one), else CLOCK_MONOTONIC in ns.
 *
 * Not compiled on its own: the first runtime file of the shim's one translation unit
 * (generate.py RUNTIME), so that shim_runtime.c's hot path inlines mt_now.
 */
#include "shim_runtime.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
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
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[4096];
    int constant = 0, nonstop = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5)) continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
        break;
    }
    fclose(f);
    mt_use_tsc = constant && nonstop;
#endif
}
