"""Where this environment's MPI tools are: the MPI wheels put mpiexec and mpicc next to the
interpreter, which need not be on PATH (a venv used without activating it)."""
from __future__ import annotations

import os
import shutil
import sys


def mpi_tool(name: str) -> str | None:
    """Path of ``name`` (mpiexec, mpicc, ...) next to this Python, else on PATH, else None."""
    local = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(local, os.X_OK):
        return local
    return shutil.which(name)
