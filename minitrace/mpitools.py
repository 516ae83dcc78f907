"""Where this environment's MPI tools are (the MPI wheels put mpiexec and mpicc next to the
interpreter, which need not be on PATH: a venv used without activating it), and how a Python
job runs on another MPI library of the same ABI (a program's own: ``calibrate --libmpi``)."""
from __future__ import annotations

import os
import shutil
import sys

from .errors import MinitraceError


def mpi_tool(name: str) -> str | None:
    """Path of ``name`` (mpiexec, mpicc, ...) next to this Python, else on PATH, else None."""
    local = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(local, os.X_OK):
        return local
    return shutil.which(name)


#: the library name mpi4py's extension for each MPI ABI is linked against
_ABI_SONAMES = {"mpich": "libmpi.so.12", "openmpi": "libmpi.so.40"}


def abi_of(library: str) -> str:
    """The MPI ABI of a libmpi by its file name: MPICH's (libmpi.so.12, Debian's libmpich.so.12,
    Intel MPI's) or Open MPI's (libmpi.so.40)."""
    name = os.path.basename(os.path.realpath(library))
    if name.startswith("libmpich.so.12") or name.startswith("libmpi.so.12"):
        return "mpich"
    if name.startswith("libmpi.so.40"):
        return "openmpi"
    raise MinitraceError(f"not an MPI library of a known ABI ({name}: MPICH's libmpi.so.12 or "
                         "libmpich.so.12, Open MPI's libmpi.so.40)", library)


def mpi4py_env(library: str, scratch: str) -> dict[str, str]:
    """What to add to a job's environment so that its mpi4py runs on ``library`` rather than
    this environment's MPI: mpi4py opens ``MPI4PY_LIBMPI`` as the ABI ``MPI4PY_MPIABI`` says
    (set: a value in the caller's environment would override its detection); its extension,
    linked against the ABI's name (libmpi.so.12 for MPICH's, which Debian calls
    libmpich.so.12), finds a link of that name in ``scratch`` (a directory the caller keeps
    while the job runs)."""
    abi = abi_of(library)
    link = os.path.join(scratch, _ABI_SONAMES[abi])
    if not os.path.lexists(link):
        os.symlink(os.path.realpath(library), link)
    path = os.environ.get("LD_LIBRARY_PATH")
    return {"MPI4PY_LIBMPI": os.path.realpath(library), "MPI4PY_MPIABI": abi,
            "LD_LIBRARY_PATH": scratch + (os.pathsep + path if path else "")}
