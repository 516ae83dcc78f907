"""cffi build of the benchmark kernels (kernels.c) into ``minitrace.bench.native._kernels``.

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
""")
ffibuilder.set_source("minitrace.bench.native._kernels",
                      (Path(__file__).resolve().parent / "kernels.c").read_text(),
                      extra_compile_args=["-O2"])

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
