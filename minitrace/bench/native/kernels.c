/* The benchmark work kernels, compiled into a cffi module by build.py (static: reached only
   through that module). */
#include <stdint.h>
#include <time.h>

/* n units of fixed integer work (one xorshift step each); the result defeats
   dead-code elimination. */
static uint64_t minitrace_fwq(uint64_t n, uint64_t x) {
    x |= 1;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    }
    return x;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Busy-spin (no sleep) for `seconds`; returns the time actually spun. */
static double minitrace_spin(double seconds) {
    double t0 = now(), t;
    do { t = now(); } while (t - t0 < seconds);
    return t - t0;
}
