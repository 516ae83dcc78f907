"""The cost of an MPI call that follows a compute: a machine property the ping-pongs miss.

The calibration's ping-pongs call MPI in a tight loop, with the library's code, its request
structures and the shared-memory queues in the caches.  An application calls MPI after a
compute that evicted them: on the 2-core VM an 8-byte exchange took 0.8 us in a loop and 4 us
after 2 ms of register-only arithmetic, 12 us after 2 ms of streaming through memory
(benchmarks/RESULTS.md, issue 35).  Every same-machine prediction was low by about that much per
compute segment.

Measured (:func:`measure`, in ``minitrace calibrate``): pairs of ranks, all at once, compute for
D seconds (each kernel of :data:`KERNELS`), then exchange 8 bytes (irecv, isend, waitall); the
median exchange time at each D less the median without a compute before it is the penalty,
less what the same calls on MPI_PROC_NULL lose after the same compute (the interpreter's and
mpi4py's own cold paths: 6-12 us of the 12-28 us measured after 2 ms here, which a compiled
application does not pay; as the ping-pongs' fit subtracts the Python loops' warm costs).

Applied (:func:`add_to_compute`): each compute segment that an MPI call follows gets the penalty
at its own duration, interpolated in log D (none below the first point, the last point's beyond
it), as more compute: a time-independent trace holds no footprint, so the penalty is the mean of
the kernels' curves, and the two curves are its range.
"""
from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from . import app_memory
from .. import kinds as K

#: compute durations measured (seconds): from below the recorder's gate to a long sweep
SECONDS = (20e-6, 100e-6, 500e-6, 2e-3)
#: kernel -> what it stands for (its compute evicts nothing / the private caches)
KERNELS = {"registers": "multiply-add chains on registers: evicts nothing",
           "memory": "STREAM triad through 64 MiB: evicts the private caches"}
REPS = 60
#: actions between a compute and the MPI call after it that take no time (the markers)
_MARKERS = K.NON_MPI - {"compute", "sleep"}
_TIMER = time.perf_counter
_MEMORY_DOUBLES = (64 << 20) // 24       # each of the triad's three arrays
_STEP = 4096                             # doubles per triad call (96 KiB, a few us)


def columns() -> list[str]:
    """The run columns :func:`measure` writes (one row per duration of :data:`SECONDS`)."""
    return ["after_compute_seconds", *(f"after_compute_{k}" for k in KERNELS)]


def measure(comm) -> dict | None:
    """Penalty of an 8-byte exchange after each kernel at each duration; every rank computes,
    rank 2i exchanges with 2i+1.  Rank 0 gets ``{column: array}`` (the median over the ranks
    that exchanged), the others None."""
    from cffi import FFI
    from mpi4py import MPI
    from ..bench import native
    lib, ffi = native.load(), FFI()
    mem = app_memory.array(3 * _MEMORY_DOUBLES, np.float64)
    ptr = lambda x: ffi.cast("double *", x.ctypes.data)       # noqa: E731
    a, b, c = (ptr(mem[i * _MEMORY_DOUBLES:]) for i in range(3))
    at = [0]

    def triad():
        lib.minitrace_triad(a + at[0], b + at[0], c + at[0], _STEP, 1.0001, 1)
        at[0] = (at[0] + _STEP) % (_MEMORY_DOUBLES - _STEP)
    steps = {"registers": lambda: lib.minitrace_fma(256), "memory": triad}
    pairs = comm.rank ^ 1 < comm.size
    send, recv = np.zeros(1), np.zeros(1)
    requests = [MPI.REQUEST_NULL, MPI.REQUEST_NULL]

    def exchange_after(step, seconds: float, peer: int) -> float:
        t = np.empty(REPS)
        for i in range(REPS + 2):           # (the first two warm the path)
            comm.Barrier()
            t0 = _TIMER()
            while step is not None and _TIMER() - t0 < seconds:
                step()
            if not pairs:
                continue
            t1 = _TIMER()
            requests[0] = comm.Irecv(recv, peer, 23)
            requests[1] = comm.Isend(send, peer, 23)
            MPI.Request.Waitall(requests)
            if i >= 2:
                t[i - 2] = _TIMER() - t1
        return float(np.median(t)) if pairs else np.nan

    def penalty_of(step, seconds: float) -> float:
        # the same calls on MPI_PROC_NULL after the same compute: what the interpreter's and
        # mpi4py's own cold paths cost, which a compiled application does not pay
        return (exchange_after(step, seconds, comm.rank ^ 1) - base
                - max(exchange_after(step, seconds, MPI.PROC_NULL) - null, 0.0))
    base = exchange_after(None, 0.0, comm.rank ^ 1)
    null = exchange_after(None, 0.0, MPI.PROC_NULL)
    mine = {k: [penalty_of(step, d) for d in SECONDS] for k, step in steps.items()}
    got = comm.gather(mine, root=0)
    if got is None:
        return None
    out = {"after_compute_seconds": np.array(SECONDS)}
    for k in KERNELS:
        rows = np.array([g[k] for g in got])
        out[f"after_compute_{k}"] = np.maximum(np.nanmedian(rows, axis=0), 0.0)
    return out


def fit(runs: list[dict]) -> dict:
    """``{"seconds": [...], kernel: [penalty at each, s]}``: the median over the runs that
    measured it (empty when none did: calibrations made before)."""
    have = [r["columns"] for r in runs if "after_compute_seconds" in r["columns"]
            and np.array_equal(r["columns"]["after_compute_seconds"], SECONDS)]
    if not have:
        return {}
    return {"seconds": list(SECONDS),
            **{k: np.median([c[f"after_compute_{k}"] for c in have], axis=0).tolist()
               for k in KERNELS}}


def valid(stored) -> bool:
    """A stored fit: empty, or increasing durations > 0 and one finite penalty >= 0 per
    duration and kernel."""
    if stored == {}:
        return True
    if not isinstance(stored, dict) or set(stored) != {"seconds", *KERNELS}:
        return False
    n = len(stored["seconds"]) if isinstance(stored["seconds"], list) else -1
    ok = n > 0 and all(isinstance(v, list) and len(v) == n and all(map(_seconds, v))
                       for v in stored.values())
    return ok and stored["seconds"][0] > 0 and all(
        b > a for a, b in zip(stored["seconds"], stored["seconds"][1:]))


def _seconds(x) -> bool:
    """A JSON number that is a finite duration >= 0 (an integer too large for a float: no)."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(float(x)) and x >= 0
    except OverflowError:
        return False


def penalty(table: dict, seconds: np.ndarray, kernel: str | None = None) -> np.ndarray:
    """Seconds added to computes of ``seconds``: the ``kernel``'s curve, or the mean of the
    kernels' (``None``), interpolated in log duration; zero below the first measured duration
    (a compute that short leaves the caches as they were) and the last value beyond the last."""
    d = np.asarray(table["seconds"], float)
    curve = (np.mean([table[k] for k in KERNELS], axis=0) if kernel is None
             else np.asarray(table[kernel], float))
    x = np.log(np.maximum(np.asarray(seconds, float), 1e-12))
    return np.where(seconds < d[0], 0.0, np.interp(x, np.log(d), curve))


def add_to_compute(data, table: dict, speed: float, kernel: str | None = None):
    """(``data`` with each compute that an MPI call follows lengthened by :func:`penalty`,
    seconds added per rank).  ``speed``: flop/s of the calibrated host, for a trace whose
    compute is in flops (its seconds are volume / speed); a trace in seconds is used as is."""
    a = data.actions.copy()
    kind = a["kind"]
    seen = np.flatnonzero(~K.mask(_MARKERS)[kind])        # (markers in between do not count)
    rank = data.rank_of(seen)
    call = ~K.mask(K.NON_MPI)[kind[seen]]
    call_next = np.r_[call[1:] & (rank[1:] == rank[:-1]), False]    # (of the same rank)
    rows = seen[(kind[seen] == K.code("compute")) & call_next]
    scale = 1.0 if data.meta.get("volume_unit", "flops") == "seconds" else float(speed)
    added = penalty(table, a["volume"][rows] / scale, kernel)
    a["volume"][rows] += added * scale
    per_rank = np.bincount(data.rank_of(rows), weights=added, minlength=data.nranks)
    return replace(data, actions=a), per_rank
