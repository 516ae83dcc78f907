"""r per kernel, the fraction of a task's compute its memory traffic overlaps in the COMM and
CACHE models (T = Tc + max(0, Tm - r*Tc)), fitted from the recording.

One recording cannot tell compute from memory time apart in tasks that all move the same
data, but an L3 replays them differently: replayed in recorded start order through one L3
(the recording thread's), a kernel's tasks whose data was all cached moved nothing (Tm = 0:
D = Tc), those that missed moved Tm (their misses' time alone on the platform).  Tasks of
one kernel are taken to do the same work (equal tiles: its Tc), so, per kernel,

    Tc = median D of its tasks that moved nothing,
    r  = median over the others of (Tm - (D - Tc)) / Tc, clipped to 0..1

(a task that took Tm longer than a cached one overlapped nothing: r = 0; one that took no
longer overlapped all: r = 1).  A kernel without both kinds of tasks keeps the default r,
and says so.  The r found is only as good as the platform's bandwidths (Tm): with the
placeholder ones it says how the recording and the platform agree, not how the kernel
behaves."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .memory import L3Caches, comm_flows
from .numa_platform import PlatformInfo

MIN_TASKS = 2      # of each kind (cached, missed) to fit a kernel's r


@dataclass
class KernelOverlap:
    r: float
    fitted: bool
    tasks_cached: int
    tasks_missed: int
    tc: float = float("nan")


def memory_times(order: list, deps: dict, size: dict, node_of, info: PlatformInfo,
                 cached: bool) -> dict:
    """Tm per task, run alone on the platform's first core in ``order``: every dependence's
    data moved (COMM), or only what one LRU L3 misses (CACHE, ``cached``)."""
    core = info.cores[0]
    caches = L3Caches({0: info.l3_size.get(info.l3[core], 0)}) if cached else None
    mem, out = info.memories, {}
    for t in order:
        if caches is None:
            reads, writes = comm_flows(deps.get(t, []), size)
        else:
            reads, writes = [], []
            for h, m in deps.get(t, []):
                r, ev = caches.access(0, h, size[h], m)
                reads += [(h, r)] if r else []
                writes += ev
        out[t] = info.time_alone([(mem[node_of(h)], core, b) for h, b in reads] +
                                 [(core, mem[node_of(h)], b) for h, b in writes])
    return out


def fit_overlap(kernel: dict, duration: dict, tm_cached: dict,
                default: float = 0.0) -> dict[str, KernelOverlap]:
    """Per kernel, r from its tasks that moved nothing and those that missed (module doc);
    ``tm_cached``: memory_times(..., cached=True) of the tasks."""
    by_kernel: dict[str, list] = {}
    for t, tm in tm_cached.items():
        if duration.get(t, 0.0) > 0:
            by_kernel.setdefault(kernel.get(t, ""), []).append((tm, duration[t]))
    out = {}
    for k, rows in by_kernel.items():
        tm, d = np.array(rows).T
        hit, miss = tm == 0, tm > 0
        if hit.sum() < MIN_TASKS or miss.sum() < MIN_TASKS:
            out[k] = KernelOverlap(default, False, int(hit.sum()), int(miss.sum()))
            continue
        tc = float(np.median(d[hit]))
        r = float(np.clip(np.median((tm[miss] - (d[miss] - tc)) / tc), 0.0, 1.0))
        out[k] = KernelOverlap(r, True, int(hit.sum()), int(miss.sum()), tc)
    return out


def describe(fits: dict[str, KernelOverlap]) -> list[str]:
    """One note per kernel on its r."""
    notes = []
    for k, f in sorted(fits.items()):
        if f.fitted:
            notes.append(f"r = {f.r:.2f} for kernel {k or '?'} (fitted: {f.tasks_cached} "
                         f"tasks cached, {f.tasks_missed} missed, Tc {f.tc:.3g} s)")
        else:
            notes.append(f"r = {f.r:g} for kernel {k or '?'} (not fitted: {f.tasks_cached} "
                         f"tasks cached, {f.tasks_missed} missed; {MIN_TASKS} of each needed)")
    return notes
