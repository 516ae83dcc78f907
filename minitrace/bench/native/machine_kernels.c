/* The calibration's kernel set (minitrace/predict/kernels.py): four kinds of work whose speed
   ratio between two machines brackets how a program's compute moves between them.  Compiled
   into the same cffi module as kernels.c (build.py); each returns a value that depends on all
   of its work, so that none of it is optimised out. */
#include <stdint.h>

/* Compute-bound: `n` rounds of 8 independent multiply-add chains on registers (16 flops per
   round, no memory traffic); the chains keep the floating-point units busy, not waiting on
   each other's latency. */
static double minitrace_fma(uint64_t n) {
    double x0 = 1.0, x1 = 1.1, x2 = 1.2, x3 = 1.3, x4 = 1.4, x5 = 1.5, x6 = 1.6, x7 = 1.7;
    const double m = 0.999999, c = 1e-6;
    for (uint64_t i = 0; i < n; i++) {
        x0 = x0 * m + c; x1 = x1 * m + c; x2 = x2 * m + c; x3 = x3 * m + c;
        x4 = x4 * m + c; x5 = x5 * m + c; x6 = x6 * m + c; x7 = x7 * m + c;
    }
    return x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}

/* STREAM triad a = b + s c over `n` doubles, `reps` passes (24 bytes per element and pass);
   streaming or cache-resident by the caller's choice of n. */
static double minitrace_triad(double *a, const double *b, const double *c, uint64_t n,
                              double s, int reps) {
    for (int r = 0; r < reps; r++)
        for (uint64_t i = 0; i < n; i++)
            a[i] = b[i] + s * c[i];
    return a[n / 2];
}

/* Link `lines` cache lines of 64 bytes (8 words each) of `buf` into one random cycle
   (Sattolo's shuffle of the line order, a xorshift generator from `seed`): each line's first
   word holds the word index of the next.  `order` is scratch of `lines` words. */
static void minitrace_chase_build(uint64_t *buf, uint64_t *order, uint64_t lines,
                                  uint64_t seed) {
    uint64_t x = seed | 1;
    for (uint64_t i = 0; i < lines; i++) order[i] = i;
    for (uint64_t i = lines - 1; i > 0; i--) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint64_t j = x % i, t = order[i];
        order[i] = order[j]; order[j] = t;
    }
    for (uint64_t i = 0; i < lines; i++)
        buf[order[i] * 8] = order[(i + 1) % lines] * 8;
}

/* Latency-bound: `steps` dependent loads along the cycle from word `at`; returns where it
   stopped (the next call goes on from there). */
static uint64_t minitrace_chase(const uint64_t *buf, uint64_t at, uint64_t steps) {
    for (uint64_t i = 0; i < steps; i++) at = buf[at];
    return at;
}
