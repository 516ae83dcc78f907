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

/* STREAM-like memory kernels over n doubles, `reps` passes: 0 read (sum a), 1 write (fill a),
   2 copy (a -> b).  Returns the seconds taken; *sink keeps the read from being optimised out. */
static double minitrace_stream(int kind, double *a, double *b, uint64_t n, int reps,
                               double *sink) {
    double t0 = now(), s = 0, s1 = 0, s2 = 0, s3 = 0;   /* four sums: not latency-bound */
    for (int r = 0; r < reps; r++) {
        if (kind == 0) {
            uint64_t i = 0;
            for (; i + 4 <= n; i += 4) {
                s += a[i]; s1 += a[i + 1]; s2 += a[i + 2]; s3 += a[i + 3];
            }
            for (; i < n; i++) s += a[i];
        } else if (kind == 1) {
            for (uint64_t i = 0; i < n; i++) a[i] = (double)r;
        } else {
            for (uint64_t i = 0; i < n; i++) b[i] = a[i];
        }
    }
    *sink = s + s1 + s2 + s3;
    return now() - t0;
}
