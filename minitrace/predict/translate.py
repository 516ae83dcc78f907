"""Compute recorded on machine A, replayed as machine B would run it.

A trace timed in CPU seconds holds A's seconds: replayed with B's calibration alone, B's rate
turns them into flops and B's speed back into the same seconds, and the prediction is A's run
time.  Two ways to translate them, from what a user has:

* **rates** (``--recorded-on A.h5``): every compute CPU second of A becomes
  ``rate_A / (speed_B * share_B)`` seconds of B, the two calibrations' matrix-product kernels
  (flops per CPU second) and the share of a core B's ranks got during its kernel (a CPU quota,
  a co-runner: B's wall time per CPU second).  One kernel: right for compute-bound code, wrong
  by the memory system's ratio for streaming code;
* **a probe** (``--probe B_RUN.h5``): a short run of the same program on B (same size per rank,
  fewer iterations), recorded as usual.  Each call site (the kind and bytes of the MPI calls
  around a compute segment) gets its own ratio: B's mean wall time there (the probe's
  timestamps; its CPU time when untimed) over A's mean CPU time, what the replay of A's trace
  holds; sites the probe did not see take the probe's compute-weighted mean ratio (the
  program's own mix, within the range of its ratios), and are counted; a probe that saw none
  leaves the rates.
  The spread of the ratios gives the translation's interval (each site at the bounds of its
  ratio's 95% interval).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .. import kinds as K
from ..errors import MinitraceError

_COMPUTE = K.CODE["compute"]


def recording_hosts(data) -> list[str]:
    """The hosts a recorded trace's ranks ran on (empty when the trace does not say)."""
    return [str(h) for h in (data.meta.get("hosts") or []) if str(h) != "?"]


def same_machine(data, hostname: str) -> bool | None:
    """Whether a calibration of ``hostname`` is of a machine the trace was recorded on (None:
    one of them does not say)."""
    hosts = recording_hosts(data)
    if not hosts or not hostname:
        return None
    return hostname in hosts


def _site_keys(data) -> tuple[np.ndarray, np.ndarray]:
    """For every compute action: its row and a key of its call site (kind and bytes of the MPI
    calls around it), the same on every rank and in every run of the program."""
    a = data.actions
    kind = a["kind"].astype(np.int64)
    rows = np.flatnonzero(kind == _COMPUTE)
    n = len(a)
    call = kind != _COMPUTE
    idx = np.arange(n)
    nxt = np.minimum.accumulate(np.where(call, idx, n)[::-1])[::-1]
    prv = np.maximum.accumulate(np.where(call, idx, -1))
    size = (a["bytes_sent"] + a["bytes_recv"]).astype(np.int64)
    rank = data.rank_of(rows)
    lo, hi = data.rank_offsets[rank], data.rank_offsets[rank + 1]

    def code(q, ok):
        at = np.clip(q, 0, n - 1)
        return np.where(ok, kind[at] * (1 << 40) + size[at], -1)
    before = code(prv[rows], prv[rows] >= lo)
    after = code(nxt[rows], nxt[rows] < hi)
    return rows, before * 1_000_003 + after


@dataclass
class Translation:
    """Per compute row of the trace, B's seconds per second of A."""

    factor: np.ndarray
    low: np.ndarray                       # the factor at each site's lower 95% bound
    high: np.ndarray
    notes: list[str] = field(default_factory=list)

    def apply(self, data, which: str = "factor"):
        """``data`` with its compute volumes in B's seconds."""
        actions = data.actions.copy()
        rows = np.flatnonzero(actions["kind"] == _COMPUTE)
        actions["volume"][rows] = actions["volume"][rows] * getattr(self, which)
        return replace(data, actions=actions)


def by_rates(data, rate_a: float, speed_b: float, where: str) -> Translation:
    """Every compute second of A as ``rate_a / speed_b`` seconds of B (``speed_b``: flops per
    wall second of B, its kernel's rate times its core share)."""
    rows = np.flatnonzero(data.actions["kind"] == _COMPUTE)
    f = np.full(len(rows), rate_a / speed_b)
    return Translation(f, f, f, [f"compute translated {where} by the calibrations' "
                                 f"matrix-product rates: x{rate_a / speed_b:.3f} (one kernel; "
                                 f"a probe run on the target gives each call site its own)"])


def by_probe(data, probe, rate_a: float, speed_b: float, where: str,
             source: str | None = None) -> Translation:
    """Each call site's CPU seconds on A scaled by its mean wall time on B (``probe``) over its
    mean CPU time on A; sites the probe did not see by the rates."""
    if data.meta.get("volume_unit") != "seconds" or probe.meta.get("volume_unit") != "seconds":
        raise MinitraceError("a probe translates compute timed in CPU seconds: record both runs "
                             "with --volume cputime", source)
    rows, key = _site_keys(data)
    prow, pkey = _site_keys(probe)
    vol = data.actions["volume"][rows]
    pa = probe.actions[prow]
    wall = pa["t_end"] - pa["t_start"]
    pvol = wall if np.isfinite(wall).all() and len(wall) else pa["volume"]
    rates = rate_a / speed_b
    factor = np.full(len(rows), rates)
    low, high = factor.copy(), factor.copy()
    seen = np.zeros(len(rows), bool)
    ratios = []
    for k in np.unique(key):
        mine, theirs = key == k, pkey == k
        a, b = vol[mine], pvol[theirs]
        if len(b) < 2 or a.mean() <= 0 or b.mean() <= 0:
            continue
        r = b.mean() / a.mean()
        se = r * np.sqrt((b.std(ddof=1) / b.mean()) ** 2 / len(b)
                         + ((a.std(ddof=1) / a.mean()) ** 2 / len(a) if len(a) > 1 else 0.0))
        factor[mine], low[mine], high[mine] = r, max(r - 1.96 * se, 0.0), r + 1.96 * se
        seen |= mine
        ratios.append((r, a.sum()))
    total = vol.sum()
    share = vol[seen].sum() / total if total > 0 else 0.0
    notes = [f"compute translated {where} per call site by a probe run: {len(ratios)} sites, "
             f"{share:.0%} of the compute"]
    if ratios:
        r = np.array(ratios)
        mean = float(np.average(r[:, 0], weights=r[:, 1]))
        notes.append(f"probe ratios B/A: {r[:, 0].min():.3f} .. {r[:, 0].max():.3f} "
                     f"(compute-weighted mean {mean:.3f})")
        if not seen.all():      # the program's own mix as the probe saw it, with its range
            factor[~seen], low[~seen], high[~seen] = mean, r[:, 0].min(), r[:, 0].max()
            notes.append(f"call sites the probe did not see ({1 - share:.0%} of the compute): "
                         f"its compute-weighted mean ratio, their interval its range of ratios")
    else:
        notes.append(f"the probe saw none of the call sites: the matrix-product rates "
                     f"(x{rates:.3f}, one kernel) translate all of the compute")
    return Translation(factor, low, high, notes)
