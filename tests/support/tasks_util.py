"""Helpers for the task-graph tests: build an OpenMP program with clang, record it with
``minitrace record --openmp``."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


def clang_openmp(name: str, outdir: Path) -> str:
    """tests/programs/NAME.c built with clang -fopenmp (LLVM's libomp)."""
    if not shutil.which("clang"):
        pytest.fail("clang is not installed (scripts/setup.sh installs it)")
    out = outdir / name
    subprocess.run(["clang", "-fopenmp", "-O2", str(PROGRAMS / f"{name}.c"), "-o", str(out)],
                   check=True, capture_output=True)
    return str(out)


def record_openmp(out: Path, argv: list[str], threads: int, timeout: float = 300,
                  extra: list[str] = ()) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    return subprocess.run([sys.executable, "-m", "minitrace", "record", "--openmp", "-o",
                           str(out), *extra, "--", *argv], capture_output=True, text=True,
                          timeout=timeout, env=env)


def mpicc_openmp(src: Path, outdir: Path) -> str:
    """An MPI+OpenMP C program built with the environment's mpicc driving clang (LLVM's
    libomp: the OMPT tool needs it), as ``MPICH_CC=clang mpicc -fopenmp`` (OMPI_CC for Open
    MPI's wrapper)."""
    from tests.support.mpiutil import tool
    if not shutil.which("clang"):
        pytest.fail("clang is not installed (scripts/setup.sh installs it)")
    out = outdir / src.stem
    env = dict(os.environ, MPICH_CC="clang", OMPI_CC="clang")
    subprocess.run([tool("mpicc"), "-fopenmp", "-O2", str(src), "-o", str(out)], check=True,
                   capture_output=True, env=env, timeout=120)
    return str(out)
