"""The calibration's kernel set: four kinds of work, each measured as a rate on every machine, so
that a trace recorded on one machine can be translated to another by more than one number.

A program's compute moves between two machines by the speed of what it spends its time on:
arithmetic, streaming through memory, working in the caches, or waiting on dependent loads.
One kernel per kind (compiled C, minitrace/bench/native/machine_kernels.c, so that the machine
is measured and not the interpreter or a BLAS):

* ``fma``: compute-bound, 8 independent multiply-add chains on registers (flop/s);
* ``triad_memory``: streaming memory-bound, STREAM's triad ``a = b + s c`` over three arrays
  twice the last-level cache between the ranks of a node (bytes/s, 24 per element);
* ``triad_cache``: cache-resident, the same triad over half of a core's L2 (bytes/s);
* ``chase``: latency-bound, dependent loads along one random cycle over cache lines of the
  memory-bound kernel's arrays (loads/s).

Every rank runs each kernel at once (as an application's ranks do), for ``seconds``; each
gives its work, its thread CPU seconds and its wall seconds.  A translation from machine A to
machine B takes A's rate per CPU second (what A's trace holds) and B's per wall second (a B
whose ranks lose their cores runs slower by that too).

``VERSION`` is stored with every run that measured them (``kernels_version``); runs and fits
made before have none, and a translation then has the matrix product alone.
"""
from __future__ import annotations

import time

import numpy as np

from ..provenance import cache_bytes

VERSION = 1
#: name -> (unit of its work, what it stands for)
KERNELS = {"fma": ("flop", "compute-bound: multiply-add chains on registers"),
           "triad_memory": ("B", "streaming memory-bound: STREAM triad over twice the "
                                 "last-level cache"),
           "triad_cache": ("B", "cache-resident: STREAM triad over half of L2"),
           "chase": ("load", "latency-bound: dependent loads along a random cycle out of the "
                             "caches")}
_TIMER = time.perf_counter
_LINE = 8                       # words per 64-byte cache line


def sizes(ranks_on_node: int) -> tuple[int, int]:
    """(doubles per array of the memory-bound triad, of the cache-resident one): three arrays
    of the first total twice the last-level cache shared by the node's ranks (at least 64 MiB
    a rank, at most 1 GiB); three of the second, half of L2."""
    llc = cache_bytes("L3") or cache_bytes("L2") or 32 << 20
    per_rank = min(max(2 * llc // max(ranks_on_node, 1), 64 << 20), 1 << 30)
    l2 = cache_bytes("L2") or 256 << 10
    return per_rank // 24, max(l2 // 48, 512)


def _timed(step, seconds: float) -> tuple[float, float, float]:
    """(steps, thread CPU seconds, wall seconds) of calling ``step`` until ``seconds``."""
    n, c0, w0 = 0, time.thread_time(), _TIMER()
    while True:
        step()
        n += 1
        if _TIMER() - w0 >= seconds:
            return n, time.thread_time() - c0, _TIMER() - w0


def measure(comm, ranks_on_node: int, seconds: float = 0.25) -> dict | None:
    """Every rank's work, CPU and wall seconds of each kernel, all ranks at once; rank 0 gets
    ``{"kernel_<name>_<work|cpu|wall>": per-rank array}``, the others None."""
    from cffi import FFI
    from ..bench import native
    lib, ffi = native.load(), FFI()
    n_mem, n_cache = sizes(ranks_on_node)
    mem = np.ones(3 * n_mem)              # pages touched here, not inside the timed loop
    a, b, c = mem[:n_mem], mem[n_mem:2 * n_mem], mem[2 * n_mem:]
    small = np.ones(3 * n_cache)
    ptr = lambda x: ffi.cast("double *", x.ctypes.data)       # noqa: E731
    out = {}

    def run(name, step, work_per_step, warm=None):
        (warm or step)()
        comm.Barrier()
        steps, cpu, wall = _timed(step, seconds)
        out[name] = (steps * work_per_step, cpu, wall)

    fma_n = 1 << 20
    run("fma", lambda: lib.minitrace_fma(fma_n), 16.0 * fma_n)
    pa, pb, pc = ptr(a), ptr(b), ptr(c)
    run("triad_memory", lambda: lib.minitrace_triad(pa, pb, pc, n_mem, 1.0001, 1),
        24.0 * n_mem)
    sa, sb, sc = ptr(small[:n_cache]), ptr(small[n_cache:2 * n_cache]), ptr(small[2 * n_cache:])
    reps = max((1 << 22) // n_cache, 1)
    run("triad_cache", lambda: lib.minitrace_triad(sa, sb, sc, n_cache, 1.0001, reps),
        24.0 * n_cache * reps)
    words = mem.view(np.uint64)
    lines = len(words) // _LINE
    order = np.empty(lines, np.uint64)
    lib.minitrace_chase_build(ffi.cast("uint64_t *", words.ctypes.data),
                              ffi.cast("uint64_t *", order.ctypes.data), lines,
                              0x9E3779B97F4A7C15 + comm.rank)
    del order
    at, chase_n = [0], 1 << 16
    pw = ffi.cast("uint64_t *", words.ctypes.data)

    def chase():
        at[0] = lib.minitrace_chase(pw, at[0], chase_n)
    run("chase", chase, float(chase_n))
    got = comm.gather(out, root=0)
    if got is None:
        return None
    return {f"kernel_{k}_{q}": np.array([g[k][i] for g in got])
            for k in KERNELS for i, q in enumerate(("work", "cpu", "wall"))}


def columns() -> list[str]:
    """The per-rank run columns the kernel set writes."""
    return [f"kernel_{k}_{q}" for k in KERNELS for q in ("work", "cpu", "wall")]


def fit(runs: list[dict]) -> dict:
    """Per kernel, from every run that measured it: ``{"unit", "cpu_rate", "wall_rate"}``,
    the median over ranks and runs of work per CPU second and per wall second (empty when no
    run has the kernel set)."""
    out = {}
    for k, (unit, _) in KERNELS.items():
        have = [r["columns"] for r in runs if f"kernel_{k}_work" in r["columns"]]
        if not have:
            continue
        work = np.concatenate([c[f"kernel_{k}_work"] for c in have])
        cpu = np.concatenate([c[f"kernel_{k}_cpu"] for c in have])
        wall = np.concatenate([c[f"kernel_{k}_wall"] for c in have])
        out[k] = {"unit": unit, "cpu_rate": float(np.median(work / cpu)),
                  "wall_rate": float(np.median(work / wall))}
    return out
