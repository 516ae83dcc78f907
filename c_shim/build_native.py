"""cffi build of the benchmark kernels into the extension module ``minitrace.bench._native``.

Compiled at install time (setup.py names ``ffibuilder`` in ``cffi_modules``) because compute
nodes may have no C compiler.  The kernels are machine code so that the variability workloads
measure the machine, not the Python interpreter, and cffi releases the GIL during the calls so
that the partitioned suite's threads spin in parallel.  It lives in c_shim/ because
scripts/setup.sh hashes that directory to decide when to rebuild."""
from __future__ import annotations

from cffi import FFI

SOURCE = r"""
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
"""

ffibuilder = FFI()
ffibuilder.cdef("""
uint64_t minitrace_fwq(uint64_t n, uint64_t x);
double minitrace_spin(double seconds);
""")
ffibuilder.set_source("minitrace.bench._native", SOURCE, extra_compile_args=["-O2"])

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
