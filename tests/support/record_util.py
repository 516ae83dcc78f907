"""Helpers for the recorder tests: compile the C test programs, run them under
``minitrace record`` (a real mpiexec job with a timeout) and read the trace back."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import minitrace
from minitrace import kinds as K
from tests.support.mpiutil import mpicc, tool

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


def build(name: str, outdir: Path) -> str:
    out = outdir / name
    if not out.exists():
        mpicc(PROGRAMS / f"{name}.c", out, "-lpthread")
    return str(out)


def record(out: Path, n: int, argv: list[str], *, volume: str | None = None,
           env: dict | None = None, timeout: float = 300, expect_rc: int | None = 0,
           extra: list[str] = ()) -> subprocess.CompletedProcess:
    """``minitrace record -o out [--volume V] -- mpiexec -n N argv...``; ``timeout`` only
    catches a hang (a loaded machine, load 26, once took more than 120 s to record a 0.01 s
    halo)."""
    cmd = [sys.executable, "-m", "minitrace", "record", "-o", str(out), *extra]
    if volume:
        cmd += ["--volume", volume]
    cmd += ["--", tool("mpiexec"), "-n", str(n), *argv]
    e = dict(os.environ)
    e.update(env or {})
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"timed out: {cmd}\n{exc.stdout}\n{exc.stderr}") from None
    if expect_rc is not None:
        assert p.returncode == expect_rc, f"{cmd} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


class Ranked:
    """A trace's actions per rank with the compute actions dropped (MPI calls only)."""

    def __init__(self, path: Path):
        with minitrace.open(str(path)) as t:
            self.data = t.data()
        self.meta = self.data.meta

    def all(self, rank: int) -> np.ndarray:
        return self.data.actions[self.data.rank_slice(rank)]

    def mpi(self, rank: int, kind: str | None = None) -> np.ndarray:
        a = self.all(rank)
        keep = a["kind"] != K.CODE["compute"]
        if kind is not None:
            keep &= a["kind"] == K.CODE[kind]
        return a[keep]

    def names(self, rank: int, skip=("comm_size",)) -> list[str]:
        return [n for n in (K.NAME[int(k)] for k in self.mpi(rank)["kind"])
                if n not in skip]

    def vector(self, row) -> list[int]:
        off, n = int(row["vec_off"]), int(row["vec_len"])
        return self.data.vectors[off:off + n].tolist() if n > 0 else []


def first_chunk(path: Path) -> int:
    """Offset of the first chunk of thread 0 in a raw file: the helper thread may have
    extended the file before the recording thread, so it need not be the file's first."""
    from minitrace import rawlayout as L
    raw = np.fromfile(path, np.uint8)
    for off in range(L.HEADER_BYTES, len(raw), L.CHUNK_BYTES):
        ch = np.frombuffer(raw, L.CHUNK.dtype(), 1, off)[0]
        if ch["count"] and ch["thread"] == 0 and ch["seq"] == 0:
            return off
    raise AssertionError(f"{path}: no first chunk of thread 0")


def shim_stats(stderr: str) -> dict[int, dict[str, float]]:
    """The shim's MINITRACE_STATS lines per rank: {rank: {counter: value}}."""
    out = {}
    for rank, rest in re.findall(r"minitrace: rank (\d+): stats: (.*)", stderr):
        words = rest.split()
        out[int(rank)] = {words[i]: float(words[i + 1]) for i in range(0, len(words), 2)}
    return out
