/* A stand-in for a thread that loses its core as the recorder reads its CPU clock: preloaded
 * after the shim, it makes every 4th read of CLOCK_THREAD_CPUTIME_ID wait 3 ms first (wall time
 * passes, CPU time does not).  Built as a shared library by tests/test_record_cputime.py. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>

int clock_gettime(clockid_t id, struct timespec *ts) {
    static int (*real)(clockid_t, struct timespec *);
    static __thread unsigned reads;
    if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    if (id == CLOCK_THREAD_CPUTIME_ID && ++reads % 4 == 0) {
        struct timespec nap = {0, 3000000};
        nanosleep(&nap, NULL);
    }
    return real(id, ts);
}
