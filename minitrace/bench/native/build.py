"""cffi build of the benchmark kernels (kernels.c; machine_kernels.c: the calibration's kernel
set) into ``minitrace.bench.native._kernels``.

Compiled at install time (setup.py names ``ffibuilder`` in ``cffi_modules``; scripts/setup.sh
hashes this folder to decide when to rebuild) because compute nodes may have no C compiler.
The kernels are machine code so that the variability workloads measure the machine, not the
Python interpreter, and cffi releases the GIL during the calls so that the partitioned suite's
threads spin in parallel."""
from __future__ import annotations

from pathlib import Path

from cffi import FFI

ffibuilder = FFI()
ffibuilder.cdef("""
uint64_t minitrace_fwq(uint64_t n, uint64_t x);
double minitrace_spin(double seconds);
double minitrace_stream(int kind, double *a, double *b, uint64_t n, int reps, double *sink);
double minitrace_fma(uint64_t n);
double minitrace_triad(double *a, const double *b, const double *c, uint64_t n, double s,
                       int reps);
void minitrace_chase_build(uint64_t *buf, uint64_t *order, uint64_t lines, uint64_t seed);
uint64_t minitrace_chase(const uint64_t *buf, uint64_t at, uint64_t steps);
""")
ffibuilder.set_source("minitrace.bench.native._kernels",
                      "".join((Path(__file__).resolve().parent / name).read_text()
                              for name in ("kernels.c", "machine_kernels.c")),
                      extra_compile_args=["-O2"])

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
