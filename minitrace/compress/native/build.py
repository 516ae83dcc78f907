"""cffi build of the adaptive context coder (adaptive.c) into
``minitrace.compress.native._adaptive``, at install time (setup.py names ``ffibuilder`` in
``cffi_modules``; scripts/setup.sh hashes this folder to decide when to rebuild): the system C
compiler, no MPI."""
from __future__ import annotations

from pathlib import Path

from cffi import FFI

ffibuilder = FFI()
ffibuilder.cdef("""
int64_t mt_adaptive_encode(const int64_t *values, const int64_t *fine, const int64_t *coarse,
                           int64_t n, int flags, uint8_t *out, int64_t cap);
int mt_adaptive_decode(const uint8_t *in, int64_t len, const int64_t *fine,
                       const int64_t *coarse, int64_t n, int flags, int64_t *values);
""")
ffibuilder.set_source("minitrace.compress.native._adaptive",
                      (Path(__file__).resolve().parent / "adaptive.c").read_text(),
                      extra_compile_args=["-O2"], libraries=["pthread"])

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
