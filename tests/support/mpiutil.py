"""Launching real MPI jobs from tests: the environment's own mpiexec, always with a timeout."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import minitrace
from minitrace.mpitools import mpi_tool

#: What Open MPI's launcher (prterun) needs here: tests run as root in containers, with up to
#: 4 ranks on 2 cores.
OPEN_MPI_LAUNCH_ENV = {"PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
                       **({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
                          if os.geteuid() == 0 else {})}


def tool(name: str) -> str:
    """Path of an MPI tool (mpiexec, mpicc) of this environment; a missing one fails the test."""
    found = mpi_tool(name)
    if not found:
        raise FileNotFoundError(f"{name} not found next to {sys.executable} nor on PATH")
    return found


def is_open_mpi(mpiexec: str) -> bool:
    """Whether ``mpiexec`` is Open MPI's (else MPICH's Hydra, here)."""
    try:
        p = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in p.stdout


def run_mpi(n: int, argv: list[str], *, timeout: float = 300, env: dict | None = None,
            cwd: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``mpiexec -n N argv...``; a hang becomes a test failure after ``timeout`` seconds
    (as long as pytest's own default: a loaded machine runs MPI jobs many times slower)."""
    e = dict(os.environ)
    e.update(env or {})
    cmd = [tool("mpiexec"), "-n", str(n), *argv]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"MPI job timed out after {timeout}s: {' '.join(cmd)}\n"
                             f"{exc.stdout}\n{exc.stderr}") from None
    if check and p.returncode != 0:
        raise AssertionError(f"MPI job failed ({p.returncode}): {' '.join(cmd)}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def run_python_mpi(n: int, script: str, *args: str, **kw) -> subprocess.CompletedProcess:
    """Run a Python script (path) under mpiexec with this interpreter."""
    return run_mpi(n, [sys.executable, script, *args], **kw)


def mpicc(src: Path, out: Path, *extra: str) -> Path:
    """Compile a C MPI program with the environment's mpicc."""
    subprocess.run([tool("mpicc"), "-O1", "-o", str(out), str(src), *extra], check=True,
                   capture_output=True, text=True, timeout=120)
    return out


ROOT_META = ("mpi_library", "mpi_version", "mpi4py_version", "hosts", "rank_to_node",
             "cpu_model", "command_line", "producer", "nranks")


def bench(n: int, suite: str, out, *opts: str, timeout: float = 300):
    """Run bench ``suite`` on ``n`` ranks into ``out`` and return its group, after checking the
    run metadata every bench file carries."""
    run_mpi(n, [sys.executable, "-m", "minitrace.bench", suite, "-o", str(out), "--quiet",
                *opts], timeout=timeout)
    t = minitrace.open(str(out))
    for k in ROOT_META:
        assert k in t.meta, k
    assert len(t.meta["hosts"]) == n and t.meta["rank_to_node"] == [0] * n
    assert t.meta["mpi_library"].startswith("MPICH")
    return t.bench(suite)
