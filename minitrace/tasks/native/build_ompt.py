"""cffi build of the OMPT tool (ompt_tool.c) into ``minitrace.tasks.native._ompt``.

As with the PMPI shim, the extension module itself is what ``minitrace record --openmp`` puts
in LD_PRELOAD: its ``ompt_start_tool`` is found by LLVM's libomp, and its libpython references
are lazy (every exported function returns int).  Needs LLVM's ``omp-tools.h`` (Debian:
libomp-dev); setup.py builds it only when that header is found (``ompt_header``)."""
from __future__ import annotations

import glob
import os
from pathlib import Path

from cffi import FFI


def ompt_header() -> str | None:
    """LLVM's omp-tools.h (OMPT_HEADER if set), or None."""
    env = os.environ.get("OMPT_HEADER")
    if env:
        return env
    found = sorted(glob.glob("/usr/lib/llvm-*/lib/clang/*/include/omp-tools.h") +
                   glob.glob("/usr/include/omp-tools.h") +
                   glob.glob("/usr/lib/llvm-*/include/omp-tools.h"))
    return found[-1] if found else None


ffibuilder = FFI()
ffibuilder.cdef("int minitrace_ompt_present(void);")
_header = ompt_header()
if _header:
    ffibuilder.set_source("minitrace.tasks.native._ompt",
                          (Path(__file__).resolve().parent / "ompt_tool.c").read_text(),
                          define_macros=[("OMPT_HEADER", f'"{_header}"')],
                          extra_compile_args=["-O2", "-std=gnu11"], libraries=["dl"])

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
