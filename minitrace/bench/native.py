"""Compiled work kernels (FWQ integer work, busy spin) so that the workload is machine code,
not the Python interpreter, and so that threads run it without holding the GIL (ctypes
releases it).  Built with the system C compiler at first use into a per-user cache."""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import MinitraceError

SOURCE = r"""
#include <stdint.h>
#include <time.h>

/* n units of fixed integer work (one xorshift step each); the result defeats
   dead-code elimination. */
uint64_t minitrace_fwq(uint64_t n, uint64_t x) {
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
double minitrace_spin(double seconds) {
    double t0 = now(), t;
    do { t = now(); } while (t - t0 < seconds);
    return t - t0;
}
"""

_lib = None


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "minitrace"


def load() -> ctypes.CDLL:
    """The kernel library, compiled on first use (atomic rename: concurrent ranks are safe)."""
    global _lib
    if _lib is not None:
        return _lib
    tag = hashlib.sha256(SOURCE.encode()).hexdigest()[:16]
    d = cache_dir()
    so = d / f"kernels-{tag}.so"
    if not so.exists():
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not cc:
            raise MinitraceError("no C compiler (cc) found to build the FWQ kernel; set CC")
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=d) as tmp:
            src = Path(tmp) / "kernels.c"
            src.write_text(SOURCE)
            out = Path(tmp) / "kernels.so"
            p = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(out), str(src)],
                               capture_output=True, text=True)
            if p.returncode != 0:
                raise MinitraceError(f"building the FWQ kernel failed: {p.stderr.strip()}", cc)
            os.replace(out, so)
    lib = ctypes.CDLL(str(so))
    lib.minitrace_fwq.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
    lib.minitrace_fwq.restype = ctypes.c_uint64
    lib.minitrace_spin.argtypes = [ctypes.c_double]
    lib.minitrace_spin.restype = ctypes.c_double
    _lib = lib
    return lib
