"""Programs built with the machine's own MPIs (Debian's mpicc.mpich, mpif90.openmpi...) and the
comparison of two recordings of one program rank by rank (test_fortran, test_slurm)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from minitrace import kinds as K
from tests.support.record_util import PROGRAMS, Ranked

#: the Fortran bindings of tests/programs/halo_f.F90 and how each is compiled
BINDINGS = {"mpif.h": [], "use mpi": ["-DUSE_MPI"], "use mpi_f08": ["-DUSE_MPI_F08"]}
FIELDS = ("kind", "peer", "tag", "comm", "bytes_sent", "bytes_recv", "flags")
#: the machine's MPIs and their launchers' options (Open MPI 4.1: 4 ranks on 2 cores)
FAMILIES = {"mpich": [], "openmpi": ["--oversubscribe"]}


def missing(family: str) -> str | None:
    """Why the machine's ``family`` MPI (mpich, openmpi) cannot be used, None if it can."""
    for tool in (f"mpif90.{family}", f"mpicc.{family}", f"mpiexec.{family}"):
        if not shutil.which(tool):
            return (f"{tool} not installed (scripts/setup.sh installs gfortran, libmpich-dev, "
                    f"libopenmpi-dev)")
    return None


def record_with(family: str, argv: list[str], out: Path, env: dict,
                timeout: float = 600) -> subprocess.CompletedProcess:
    """``minitrace record`` of ``argv`` on 4 ranks by ``family``'s mpiexec; a failure fails
    the test with the command's output."""
    cmd = [sys.executable, "-m", "minitrace", "record", "-o", str(out), "--",
           f"mpiexec.{family}", *FAMILIES[family], "-n", "4", *argv]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **env})
    assert p.returncode == 0, f"{cmd} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def build_halo(family: str, binding: str | None, where: Path) -> str:
    """halo_f.F90 compiled with ``family``'s mpif90 for ``binding``, or (None) its C twin
    halo_f_twin.c with its mpicc; once per ``where``."""
    tag = (binding or "c").replace(" ", "_").replace(".", "_")
    out = where / f"halo_{family}_{tag}"
    if not out.exists():
        cmd = ([f"mpif90.{family}", *BINDINGS[binding], str(PROGRAMS / "halo_f.F90")]
               if binding else [f"mpicc.{family}", str(PROGRAMS / "halo_f_twin.c")])
        subprocess.run([*cmd, "-O1", "-o", str(out)], check=True, capture_output=True,
                       text=True, timeout=300, cwd=where)
    return str(out)


def actions(path: Path, nranks: int = 4) -> list[tuple[np.ndarray, list[int]]]:
    """Per rank, the MPI actions' fields two recordings must share, and apart the peers of
    the MPI_ANY_SOURCE receives (in the order the messages happened to arrive)."""
    r, out = Ranked(path), []
    for rank in range(nranks):
        a = np.array(r.mpi(rank)[list(FIELDS)])
        wild = (a["flags"] & K.FLAG_ANY_SOURCE) != 0
        peers = sorted(a["peer"][wild].tolist())
        a["peer"][wild] = -9
        out.append((a, peers))
    return out


def assert_same_actions(got: list, want: list) -> None:
    """Two recordings of halo_f (any binding, any launcher) hold the same actions per rank."""
    assert len(got) == len(want)
    for rank, ((a, peers), (b, want_peers)) in enumerate(zip(got, want)):
        names = [K.NAME[int(k)] for k in a["kind"]]
        assert names.count("init") == 1 and names.count("finalize") == 1, names
        assert names.count("irecv") == 10 and names.count("iallreduce") == 5, names
        assert len(a) == len(b), (rank, names)
        assert (a == b).all(), (rank, a[a != b], b[a != b])
        assert peers == want_peers == (list(range(1, len(got))) if rank == 0 else []), \
            (rank, peers)


def shim_cache_env(tmp_path_factory) -> dict:
    """The environment of a run's recordings with the machine's MPIs: one shim cache for the
    whole run (each shim is built once per run), Open MPI's launch settings."""
    from tests.support.mpiutil import OPEN_MPI_LAUNCH_ENV
    cache = tmp_path_factory.getbasetemp() / "shim-cache"
    cache.mkdir(exist_ok=True)
    return {"MINITRACE_CACHE": str(cache), **OPEN_MPI_LAUNCH_ENV}
