"""The cost of an MPI call that follows a compute: a machine property the ping-pongs miss.

The calibration's ping-pongs call MPI in a tight loop, with the library's code, its request
structures and the shared-memory queues in the caches.  An application calls MPI after a
compute that evicted them: on the 2-core VM an 8-byte exchange took 0.8 us in a loop and 4 us
after 2 ms of register-only arithmetic, 12 us after 2 ms of streaming through memory
(benchmarks/RESULTS.md, issue 35).  Every same-machine prediction was low by about that much per
compute segment.

Measured (:func:`measure`, in ``minitrace calibrate``): pairs of ranks, all at once, compute for
D seconds (each kernel of :data:`KERNELS`), then exchange S bytes each way (irecv, isend,
waitall; S in :data:`BYTES`); the median exchange time at each (D, S) (of each repetition's later
rank: the two stop computing up to a kernel step apart) less the median of the same exchange
without a compute before it is the penalty, less what the same calls on
MPI_PROC_NULL lose after the same compute (the interpreter's and mpi4py's own cold paths: 6-12
us of the 12-28 us measured after 2 ms here, which a compiled application does not pay; as the
ping-pongs' fit subtracts the Python loops' warm costs).  The penalty grows with S: the
message goes through the shared-memory cells and buffers that the compute evicted too (after
500 us of streaming, 12 us for 8 bytes, 26 us for 8 KiB, 34 us for 64 KiB in a C program here,
against 1, 3 and 5 us in a loop; benchmarks/RESULTS.md, issue 35, session 10).

Applied (:func:`add_to_compute`): each compute segment that an MPI call follows gets the penalty
at its own duration, interpolated in log D (none below the first point, the last point's beyond
it), and at the bytes its stretch of calls moves (until the next compute long enough to evict
anything), interpolated linearly in S (held beyond the measured sizes), as more compute: a
time-independent trace holds no footprint, so the penalty is the mean of the kernels' curves,
and the two curves are its range; on the machine a trace was recorded on, the kernels' mix its
own exchanges after a compute show (:mod:`.character`, session 15).  The part of it above the
8-byte value (the message's cells and buffers) is taken at the compute since the rank last
moved a message at least half as large (:func:`since_warm`): a CG's 32 KiB halo after a 67 us
update took 23 us in its waitall (replayed 7 us), the cost after the ~600 us of compute since
the previous halo, not after 67 us; the 8-byte allreduces in between warm only the library's
path (issue 35, session 12).
"""
from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from . import app_memory
from .. import kinds as K
from ..checked import is_int

#: compute durations measured (seconds): from below the recorder's gate to a long sweep
SECONDS = (20e-6, 100e-6, 500e-6, 2e-3)
#: bytes each way of the exchanges measured: a scalar, a halo row, a face (a larger message's
#: copies are measured cold by the large ping-pongs: beyond the last size its penalty is held)
BYTES = (8, 8192, 65536)
#: kernel -> what it stands for (its compute evicts nothing / the private caches)
KERNELS = {"registers": "multiply-add chains on registers: evicts nothing",
           "memory": "STREAM triad through 64 MiB: evicts the private caches"}
#: the run column of each measurement's exchange size (absent in runs before 2026-11-28,
#: session 10: those measured 8 bytes only)
BYTES_COLUMN = "after_compute_bytes"
REPS = 60
#: actions between a compute and the MPI call after it that take no time (the markers)
_MARKERS = K.NON_MPI - K.WORK
#: point-to-point kinds whose peer -1 is MPI_PROC_NULL (no message moves): the peer is the
#: destination of sends and sendrecvs, the source of receives; sendrecvs' source is their
#: vector's entry 0 (docs/FORMAT.md)
_SENDING = K.SENDS | K.SENDRECVS | K.NONBLOCKING_SENDRECVS
_RECEIVING = K.RECVS
_SENDRECVING = K.SENDRECVS | K.NONBLOCKING_SENDRECVS
_TIMER = time.perf_counter
_MEMORY_DOUBLES = (64 << 20) // 24       # each of the triad's three arrays
_STEP = 4096                             # doubles per triad call (96 KiB, a few us)


def columns() -> list[str]:
    """The run columns :func:`measure` writes that a run has all or none of (one row per
    (size, duration), sizes outer; :data:`BYTES_COLUMN` beside them says each row's size)."""
    return ["after_compute_seconds", *(f"after_compute_{k}" for k in KERNELS)]


def measure(comm, spent: dict | None = None) -> dict | None:
    """Penalty of an exchange of each size of :data:`BYTES` after each kernel at each
    duration; every rank computes, rank 2i exchanges with 2i+1.  Rank 0 gets ``{column:
    array}`` (the median over the ranks that exchanged), the others None.  ``spent``, if
    given, gets this rank's ``{"after_<kernel>": (thread CPU s, wall s)}`` of each kernel's
    measurements: windows of the machine's background (calibration.background)."""
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
    send, recv = app_memory.array(max(BYTES)), app_memory.array(max(BYTES))   # (as malloc's)
    requests = [MPI.REQUEST_NULL, MPI.REQUEST_NULL]

    def exchange_after(step, seconds: float, peer: int, nbytes: int) -> float:
        t = np.empty(REPS)
        for i in range(REPS + 2):           # (the first two warm the path)
            comm.Barrier()
            t0 = _TIMER()
            while step is not None and _TIMER() - t0 < seconds:
                step()
            if not pairs:
                continue
            t1 = _TIMER()
            requests[0] = comm.Irecv([recv, nbytes, MPI.BYTE], peer, 23)
            requests[1] = comm.Isend([send, nbytes, MPI.BYTE], peer, 23)
            MPI.Request.Waitall(requests)
            if i >= 2:
                t[i - 2] = _TIMER() - t1
        if not pairs:
            return np.nan
        if peer != MPI.PROC_NULL:
            # each repetition's later rank: the other one also waited for it (the two stop
            # computing up to a kernel step apart), which the replay draws from the trace
            t = np.minimum(t, comm.sendrecv(t, comm.rank ^ 1))
        return float(np.median(t))

    base = {s: exchange_after(None, 0.0, comm.rank ^ 1, s) for s in BYTES}
    null = exchange_after(None, 0.0, MPI.PROC_NULL, 0)
    mine = {}
    for k, step in steps.items():
        c0, w0 = time.thread_time(), _TIMER()
        # the same calls on MPI_PROC_NULL after the same compute: what the interpreter's and
        # mpi4py's own cold paths cost, which a compiled application does not pay
        own = [max(exchange_after(step, d, MPI.PROC_NULL, 0) - null, 0.0) for d in SECONDS]
        mine[k] = [exchange_after(step, d, comm.rank ^ 1, s) - base[s] - own[j]
                   for s in BYTES for j, d in enumerate(SECONDS)]
        if spent is not None:
            spent[f"after_{k}"] = (time.thread_time() - c0, _TIMER() - w0)
    got = comm.gather(mine, root=0)
    if got is None:
        return None
    out = {"after_compute_seconds": np.tile(SECONDS, len(BYTES)),
           BYTES_COLUMN: np.repeat(BYTES, len(SECONDS))}
    for k in KERNELS:
        rows = np.array([g[k] for g in got])
        out[f"after_compute_{k}"] = np.maximum(np.nanmedian(rows, axis=0), 0.0)
    return out


def fit(runs: list[dict]) -> dict:
    """``{"seconds": [...], "bytes": [...], kernel: [[penalty at each duration, s] per
    size]}``: the median over the runs that measured this grid; over runs that measured 8-byte
    exchanges only (before sizes), ``{"seconds", kernel: [...]}``; empty when none did."""
    def grid(c: dict) -> str | None:
        if not np.array_equal(c.get("after_compute_seconds", ()), np.tile(SECONDS, len(BYTES))
                              if BYTES_COLUMN in c else SECONDS):
            return None
        if BYTES_COLUMN not in c:
            return "8 bytes"
        return "sizes" if np.array_equal(c[BYTES_COLUMN], np.repeat(BYTES, len(SECONDS))) \
            else None
    found = [(grid(r["columns"]), r["columns"]) for r in runs]
    sized = [c for g, c in found if g == "sizes"]
    have = sized or [c for g, c in found if g == "8 bytes"]
    if not have:
        return {}
    shape = (len(BYTES), len(SECONDS)) if sized else (len(SECONDS),)
    return {"seconds": list(SECONDS), **({"bytes": list(BYTES)} if sized else {}),
            **{k: np.median([c[f"after_compute_{k}"] for c in have], axis=0).reshape(shape)
               .tolist() for k in KERNELS}}


def valid(stored) -> bool:
    """A stored fit: empty, or increasing durations > 0 (and increasing sizes > 0) and one
    finite penalty >= 0 per duration (and size) and kernel."""
    if stored == {}:
        return True
    keys = {"seconds", *KERNELS}
    if not isinstance(stored, dict) or set(stored) - {"bytes"} != keys:
        return False
    n = len(stored["seconds"]) if isinstance(stored["seconds"], list) else -1
    if "bytes" in stored:
        sizes = stored["bytes"]
        if not isinstance(sizes, list) or not sizes or not all(
                is_int(b) and b > 0 for b in sizes) or not _increasing(sizes):
            return False
        rows = [stored[k] for k in KERNELS]
        if not all(isinstance(r, list) and len(r) == len(sizes) for r in rows):
            return False
        curves = [c for r in rows for c in r]
    else:
        curves = [stored[k] for k in KERNELS]
    ok = n > 0 and all(isinstance(v, list) and len(v) == n and all(map(_seconds, v))
                       for v in [stored["seconds"], *curves])
    return ok and stored["seconds"][0] > 0 and _increasing(stored["seconds"])


def _increasing(v: list) -> bool:
    return all(b > a for a, b in zip(v, v[1:]))


def _seconds(x) -> bool:
    """A JSON number that is a finite duration >= 0 (an integer too large for a float: no)."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(float(x)) and x >= 0
    except OverflowError:
        return False


def penalty(table: dict, seconds: np.ndarray, nbytes=8, kernel: str | dict | None = None) \
        -> np.ndarray:
    """Seconds added to computes of ``seconds`` whose calls after them move ``nbytes`` each
    way (scalar or one per compute): the ``kernel``'s curves, the kernels' curves weighted by
    ``kernel`` (``{kernel: weight}``, weights summing to 1: a program's fitted character,
    :mod:`.character`), or the mean of the kernels' (``None``), interpolated in log duration
    and linearly in size (a message's cold copies cost per cache line); zero below the first
    measured duration (a compute that short leaves the caches as they were), the last
    duration's and the outer sizes' values beyond them.  A table of 8-byte exchanges only
    (before sizes) gives its one curve at any size."""
    d = np.asarray(table["seconds"], float)
    weights = {k: 1 / len(KERNELS) for k in KERNELS} if kernel is None else \
        {kernel: 1.0} if isinstance(kernel, str) else kernel
    curves = sum(w * np.asarray(table[k], float) for k, w in weights.items())
    sizes = np.asarray(table.get("bytes", [8]), float)
    if "bytes" not in table:
        curves = curves[None, :]
    seconds = np.asarray(seconds, float)
    x = np.log(np.maximum(seconds, 1e-12))
    at = np.array([np.interp(x, np.log(d), c) for c in curves])       # (size, compute)
    if len(sizes) == 1:
        value = at[0]
    else:
        s = np.clip(np.broadcast_to(np.asarray(nbytes, float), seconds.shape),
                    sizes[0], sizes[-1])
        j = np.clip(np.searchsorted(sizes, s, side="right") - 1, 0, len(sizes) - 2)
        w = (s - sizes[j]) / (sizes[j + 1] - sizes[j])
        cols = np.arange(len(seconds))
        value = (1 - w) * at[j, cols] + w * at[j + 1, cols]
    return np.where(seconds < d[0], 0.0, value)


def stretch_bytes(data, rows: np.ndarray, shortest: float, scale: float) -> np.ndarray:
    """Bytes each way that the calls after each compute of ``rows`` move: half the bytes sent
    and received (a message to or from MPI_PROC_NULL moves none: a send's or sendrecv's
    destination, a receive's or sendrecv's source) until the rank's next compute of at least
    ``shortest`` seconds (a shorter one leaves the caches as they were)."""
    group, moved = stretches(data, shortest, scale)
    return np.bincount(group, weights=moved.astype(float),
                       minlength=group[-1] + 1)[group[rows]] / 2


def stretch_movers(data, rows: np.ndarray, shortest: float, scale: float):
    """(first, largest): the row of the first call that moves bytes and of the call that moves
    the most in each of ``rows``' stretches (as :func:`stretch_bytes` counts them; -1 where
    none moves any): the calls whose path and whose message the penalty's 8-byte and
    size-dependent parts are the costs of (a call that moves nothing, MPI_Comm_size, pays
    neither)."""
    group, moved = stretches(data, shortest, scale)
    first = np.full(group[-1] + 1, -1, np.int64)
    largest = first.copy()
    moving = np.flatnonzero(moved > 0)
    if len(moving):
        g = group[moving]
        lead = np.r_[True, g[1:] != g[:-1]]
        first[g[lead]] = moving[lead]
        order = moving[np.lexsort((-moved[moving], g))]    # (per stretch the largest first;
        g = group[order]                                   # stable: the earliest of ties)
        lead = np.r_[True, g[1:] != g[:-1]]
        largest[g[lead]] = order[lead]
    return first[group[rows]], largest[group[rows]]


def stretches(data, shortest: float, scale: float):
    """(each action's stretch: a number that grows at each compute of at least ``shortest``
    seconds and at each rank's start; the bytes each action moves, sent plus received)."""
    a = data.actions
    kind = a["kind"]
    comp = kind == K.code("compute")
    opens = comp & (a["volume"] / scale >= shortest)      # (rows shorter get no penalty)
    rank = data.rank_of(np.arange(len(a)))
    opens |= np.r_[True, rank[1:] != rank[:-1]]
    group = np.cumsum(opens) - 1
    posted = (a["flags"] & (K.FLAG_ANY_SOURCE | K.FLAG_UNRESOLVED)) != 0   # (a wildcard: -1)
    source = np.where(K.mask(_SENDRECVING)[kind],
                      data.vector_item(np.arange(len(a)), 0, default=0), a["peer"])
    no_send = K.mask(_SENDING)[kind] & (a["peer"] < 0)
    no_recv = K.mask(_RECEIVING | _SENDRECVING)[kind] & (source < 0) & ~posted
    moved = np.where(comp | no_send, 0, a["bytes_sent"]) + np.where(comp | no_recv, 0,
                                                                    a["bytes_recv"])
    return group, moved.astype(np.int64)


def since_warm(data, rows: np.ndarray, nbytes: np.ndarray, scale: float) -> np.ndarray:
    """Seconds of compute before each compute of ``rows``' calls (this one included) since its
    rank's calls last moved a message at least half as large (``nbytes`` of each row's stretch,
    from :func:`stretch_bytes`): what evicted the cells and buffers a message of that size goes
    through.  An 8-byte call in between (an allreduce) warms the library's path, not them.  A
    stretch of 8 bytes or less, or the first of its size, gets its own compute's seconds."""
    a = data.actions
    spent = np.cumsum(np.where(a["kind"] == K.code("compute"), a["volume"] / scale, 0.0))[rows]
    out = a["volume"][rows] / scale
    rank = data.rank_of(rows)            # (rows in order: each rank's in one block)
    bounds = np.r_[0, np.flatnonzero(rank[1:] != rank[:-1]) + 1, len(rows)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):      # (a rank at a time: memory n log n)
        q = np.flatnonzero(nbytes[lo:hi] > 8)
        warm = _last_at_least(nbytes[lo:hi], q, nbytes[lo:hi][q] / 2)
        q, warm = q[warm >= 0] + lo, warm[warm >= 0] + lo
        out[q] = spent[q] - spent[warm]
    return out


def _last_at_least(values: np.ndarray, rows: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """For each of ``rows``, the last earlier index whose value is at least its ``floor``
    (-1: none), by binary lifting over running maxima of power-of-two windows: O(n log n), where
    a pass per distinct floor took HPCG's 319 halo sizes x 800 k computes 1.7 s."""
    level = [np.asarray(values, dtype=float)]
    while (1 << len(level)) <= len(values):
        w, prev = 1 << (len(level) - 1), level[-1]
        level.append(np.r_[prev[:w], np.maximum(prev[w:], prev[:-w])])
    pos = rows - 1                       # everything after pos (up to the row) is below floor
    for k in range(len(level) - 1, -1, -1):
        below = (pos >= 0) & (level[k][np.maximum(pos, 0)] < floor)
        pos[below] -= 1 << k
    return np.where(pos >= 0, pos, -1)


def add_to_compute(data, table: dict, speed: float, kernel: str | dict | None = None):
    """(``data`` with each compute that an MPI call follows lengthened by :func:`penalty`,
    seconds added per rank): see :func:`added_seconds`.  ``speed``: flop/s of the calibrated
    host, for a trace whose compute is in flops (its seconds are volume / speed); a trace in
    seconds is used as is."""
    a = data.actions.copy()
    scale = 1.0 if data.meta.get("volume_unit", "flops") == "seconds" else float(speed)
    rows, added, *_ = added_seconds(data, table, scale, kernel)
    a["volume"][rows] += added * scale
    per_rank = np.bincount(data.rank_of(rows), weights=added, minlength=data.nranks)
    return replace(data, actions=a), per_rank


def added_seconds(data, table: dict, scale: float, kernel: str | dict | None = None):
    """(rows, seconds, calls, sized): the computes of ``data`` that an MPI call follows
    (markers between skipped), the penalty each gets (the 8-byte penalty at its own duration
    plus what its stretch's bytes add at the duration :func:`since_warm` gives), the rows of
    the calls whose costs its parts are (the first call moving bytes, for the 8-byte part, and
    the call moving the most, for the size's: :func:`stretch_movers`; the call after the
    compute where none moves any) and the size-dependent part.  ``scale``: volume units per
    second."""
    kind = data.actions["kind"]
    seen = np.flatnonzero(~K.mask(_MARKERS)[kind])        # (markers in between do not count)
    rank = data.rank_of(seen)
    call = ~K.mask(K.NON_MPI)[kind[seen]]
    call_next = np.r_[call[1:] & (rank[1:] == rank[:-1]), False]    # (of the same rank)
    at = np.flatnonzero((kind[seen] == K.code("compute")) & call_next)
    rows, calls = seen[at], seen[np.minimum(at + 1, len(seen) - 1)]
    seconds = data.actions["volume"][rows] / scale
    added = penalty(table, seconds, 8, kernel)
    sized, largest = np.zeros(len(rows)), calls
    if len(rows):
        nbytes = stretch_bytes(data, rows, table["seconds"][0], scale)
        cold = since_warm(data, rows, nbytes, scale)
        sized = np.maximum(penalty(table, cold, nbytes, kernel) - penalty(table, cold, 8, kernel),
                           0.0)
        first, largest = stretch_movers(data, rows, table["seconds"][0], scale)
        calls = np.where(first >= 0, first, calls)
        largest = np.where(largest >= 0, largest, calls)
    return rows, added + sized, (calls, largest), sized
