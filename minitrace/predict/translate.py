"""Compute recorded on machine A, replayed as machine B would run it.

A trace timed in CPU seconds holds A's seconds: replayed with B's calibration alone, B's rate
turns them into flops and B's speed back into the same seconds, and the prediction is A's run
time.  Every translation multiplies each compute segment's CPU seconds on A by a ratio, B's
wall seconds per CPU second of A, from what a user has:

* **the kernel set** (``--recorded-on A.h5``; :mod:`.kernels`): each kernel's ratio is A's
  rate per CPU second over B's per wall second (a B whose ranks lose part of their cores is
  slower by that too).  Without hardware counters the trace does not say which kernel a segment
  resembles, so every segment takes the kernels' geometric mean ratio, and the interval is
  their range [min, max]: flagged as such.  Calibrations made before the kernel set (either
  one) have the matrix-product rate alone: ``rate_A / (speed_B * share_B)``, no interval;
* **a probe** (``--probe B_RUN.h5``): a short run of the same program on B (same size per rank,
  fewer iterations), recorded as usual.  Each call site (the kind and bytes of the MPI calls
  around a compute segment) gets its own ratio: B's wall time there (the probe's timestamps;
  its CPU time when untimed) over A's CPU time, what the replay of A's trace holds, over the
  *same occurrences* on each rank (the probe's n-th segment at a site against the trace's
  n-th): the first ones are the start-up (page faults, cold caches: several times a warm
  iteration, and B need not pay them as A does), a larger share of a short probe than of the
  long run.  So the trace's occurrences the probe's first half matches take the ratio of that
  half, and all the later ones the ratio of the probe's second half to the same occurrences
  of the trace (the steady state); its interval the bounds of the steady ratio's 95%
  interval (from the matched pairs' spread around it).  Segments whose site the probe did
  not see at its bytes take the ratio of the site of the same kinds of calls, bytes aside
  (messages whose size depends on the data, as CoMD's atoms crossing a boundary, make a new
  site at nearly every occurrence; 82% of its compute went unseen by bytes).  Sites the
  probe did not see either way take **the kernel
  mix that best fits the seen sites**: the convex mix of the kernels' ratios (nonnegative
  weights summing to 1: a segment's time on B is the sum of its parts' times, each part
  moving as its kernel) nearest, in compute-weighted least squares, to the seen sites'
  ratios.  That best fit is the seen sites' compute-weighted mean ratio when the kernels'
  ratios bracket it (reported as the two kernels whose ratios bracket it, the sparsest such
  mix), else the nearest kernel's ratio (the probe moves beyond every kernel: said); their
  interval spans the seen sites' range of ratios and the mix.  Without a kernel set the mean
  ratio itself; a probe that saw no site leaves the kernel set's rule.
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


def _occurrences(key: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Each row's index among the rows of its call site on its rank (0: the first), rows in
    program order within a rank."""
    n = len(key)
    order = np.lexsort((np.arange(n), key, rank))
    k, r = key[order], rank[order]
    first = np.r_[True, (k[1:] != k[:-1]) | (r[1:] != r[:-1])] if n else np.zeros(0, bool)
    out = np.empty(n, np.int64)
    out[order] = np.arange(n) - np.maximum.accumulate(np.where(first, np.arange(n), 0))
    return out


def _site_ratio(a, a_rank, a_occ, b, b_rank, b_occ):
    """One call site's (head factor, steady factor, its standard error, trace occurrences of
    each rank that take the head factor) from A's CPU seconds ``a`` and the probe's wall
    seconds ``b`` there (with their ranks and occurrence indices); None when the probe's
    matched occurrences do not give a positive steady ratio."""
    ranks = np.intersect1d(a_rank, b_rank)
    if not len(ranks):                # no rank at this site in both runs: one sequence each
        return _site_ratio(a, np.zeros_like(a_rank), np.arange(len(a)), b,
                           np.zeros_like(b_rank), np.arange(len(b)))
    count_a = np.bincount(a_rank, minlength=int(max(a_rank.max(), b_rank.max())) + 1)
    count_b = np.bincount(b_rank, minlength=len(count_a))
    matched = np.minimum(count_a, count_b)            # occurrences matched, per rank
    head = matched // 2                               # the probe's first half: start-up
    in_a = np.isin(a_rank, ranks) & (a_occ < matched[a_rank])
    in_b = np.isin(b_rank, ranks) & (b_occ < matched[b_rank])
    sel_a, sel_b = in_a & (a_occ >= head[a_rank]), in_b & (b_occ >= head[b_rank])
    steady_a, steady_b = a[sel_a], b[sel_b]
    if len(steady_b) < 2 or steady_a.sum() <= 0 or steady_b.sum() <= 0:
        return None
    r = steady_b.sum() / steady_a.sum()
    # the two hold the same occurrences: pairs, so the ratio estimator's error is the pairs'
    # spread around r, not each run's spread (a site's segments may differ in size from one
    # occurrence to the next, both runs alike); one pair per occurrence, its ranks summed: a
    # disturbance of B hits every rank at once, and ranks taken as independent pairs made the
    # interval too narrow
    m = int(max(a_occ[sel_a].max(), b_occ[sel_b].max())) + 1
    pair_a = np.bincount(a_occ[sel_a], weights=steady_a, minlength=m)
    pair_b = np.bincount(b_occ[sel_b], weights=steady_b, minlength=m)
    seen = (pair_a > 0) | (pair_b > 0)
    pair_a, pair_b = (pair_a[seen], pair_b[seen]) if seen.sum() >= 2 else (steady_a, steady_b)
    off = pair_b - r * pair_a
    se = np.sqrt((off ** 2).sum() / (len(off) * (len(off) - 1))) / pair_a.mean()
    head_a, head_b = a[in_a & (a_occ < head[a_rank])], b[in_b & (b_occ < head[b_rank])]
    h = head_b.sum() / head_a.sum() if head_a.sum() > 0 and head_b.sum() > 0 else r
    # ranks the probe did not run start up as its ranks did (their median head)
    head_of = np.full(len(count_a), int(np.median(head[ranks])))
    head_of[ranks] = head[ranks]
    return h, r, se, head_of


def _site_keys(data, by_bytes: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """For every compute action: its row and a key of its call site (kind and bytes of the MPI
    calls around it; ``by_bytes`` False: their kinds alone), the same on every rank and in
    every run of the program."""
    a = data.actions
    kind = a["kind"].astype(np.int64)
    rows = np.flatnonzero(kind == _COMPUTE)
    n = len(a)
    call = kind != _COMPUTE
    idx = np.arange(n)
    nxt = np.minimum.accumulate(np.where(call, idx, n)[::-1])[::-1]
    prv = np.maximum.accumulate(np.where(call, idx, -1))
    size = (a["bytes_sent"] + a["bytes_recv"]).astype(np.int64) if by_bytes else np.zeros(n, int)
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
    """Per compute row of the trace, B's seconds per second of A, and how the compute no
    probe measured was translated (``fallback``: the rule, ``fallback_share``: its share of
    A's compute, ``mix``: kernel -> weight of the mix it used)."""

    factor: np.ndarray
    low: np.ndarray                       # the factor at each site's lower 95% bound
    high: np.ndarray
    notes: list[str] = field(default_factory=list)
    fallback: str = ""
    fallback_share: float = 0.0
    mix: dict[str, float] = field(default_factory=dict)

    def apply(self, data, which: str = "factor"):
        """``data`` with its compute volumes in B's seconds."""
        actions = data.actions.copy()
        rows = np.flatnonzero(actions["kind"] == _COMPUTE)
        actions["volume"][rows] = actions["volume"][rows] * getattr(self, which)
        return replace(data, actions=actions)

    def summary(self) -> dict:
        """What the output flags: the rule for the compute no probe measured, its share, the
        mix."""
        return {"fallback": self.fallback, "fallback_share": self.fallback_share,
                "mix": dict(self.mix)}


def kernel_ratios(src, dst) -> dict[str, float]:
    """B's (``dst``) wall seconds per CPU second of A (``src``) for each kernel both
    calibrations measured (empty when either has no kernel set)."""
    return {k: src.kernels[k]["cpu_rate"] / dst.kernels[k]["wall_rate"]
            for k in src.kernels if k in dst.kernels}


def matmul_ratio(src, dst) -> float:
    """B's wall seconds per CPU second of A on the matrix-product kernel: A's flops per CPU
    second over B's, times the share of a core B's ranks got during it."""
    share = [x for x in dst.core_share if np.isfinite(x) and x > 0]
    share_b = min(float(np.mean(share)), 1.0) if share else 1.0
    return src.compute_rate / (dst.speed * share_b)


def _kernel_rule(n: int, src, dst, where: str, why: str) -> Translation:
    """``n`` compute rows translated without a probe: the kernels' geometric mean, interval
    their range (the matrix product alone when a calibration has no kernel set)."""
    ratios = kernel_ratios(src, dst)
    if not ratios:
        r = matmul_ratio(src, dst)
        f = np.full(n, r)
        return Translation(f, f, f, [f"compute translated {where} by the calibrations' "
                                     f"matrix-product rates: x{r:.3f} ({why}; one kernel: a "
                                     f"calibration has no kernel set, calibrate again to add "
                                     f"it)"], "matrix product", 1.0, {"matmul": 1.0})
    v = np.array(list(ratios.values()))
    g = float(np.exp(np.log(v).mean()))
    listed = ", ".join(f"{k} x{x:.3f}" for k, x in ratios.items())
    return Translation(np.full(n, g), np.full(n, v.min()), np.full(n, v.max()),
                       [f"compute translated {where} by the kernel set ({why}): without "
                        f"counters the mix cannot be read from the trace, so every segment "
                        f"takes the kernels' geometric mean x{g:.3f}, interval their range "
                        f"x{v.min():.3f}..x{v.max():.3f} ({listed})"],
                       "kernels' geometric mean", 1.0, {})   # (a mean of ratios, not a mix)


def by_rates(data, src, dst, where: str) -> Translation:
    """Every compute second of A by the kernel set's rule (no probe)."""
    n = int((data.actions["kind"] == _COMPUTE).sum())
    return _kernel_rule(n, src, dst, where, "no probe")


def best_mix(ratios: np.ndarray, weights: np.ndarray, kernels: dict[str, float]):
    """(ratio, mix, inside) of the convex mix of the ``kernels``' ratios nearest, in
    ``weights``-weighted least squares, to the seen sites' ``ratios``: their weighted mean when
    the kernels bracket it, as the two kernels bracketing it (the sparsest mix); else the
    nearest kernel (``inside`` False)."""
    mean = float(np.average(ratios, weights=weights))
    names = sorted(kernels, key=kernels.get)
    values = np.array([kernels[k] for k in names])
    if mean <= values[0] or mean >= values[-1]:
        k = names[0] if mean <= values[0] else names[-1]
        return kernels[k], {k: 1.0}, bool(np.isclose(mean, kernels[k]))
    i = int(np.searchsorted(values, mean)) - 1          # values[i] < mean <= values[i + 1]
    w = float((values[i + 1] - mean) / (values[i + 1] - values[i]))
    return mean, {names[i]: w, names[i + 1]: 1.0 - w}, True


def by_probe(data, probe, src, dst, where: str, source: str | None = None) -> Translation:
    """Each call site's CPU seconds on A scaled by its wall time on B (``probe``) over its CPU
    time on A, the same occurrences (:func:`_site_ratio`: start-up and steady state apart);
    sites the probe did not see by the kernel mix that best fits the seen ones
    (:func:`best_mix`)."""
    if data.meta.get("volume_unit") != "seconds" or probe.meta.get("volume_unit") != "seconds":
        raise MinitraceError("a probe translates compute timed in CPU seconds: record both runs "
                             "with --volume cputime", source)
    rows, key = _site_keys(data)
    prow, pkey = _site_keys(probe)
    rank, prank = data.rank_of(rows), probe.rank_of(prow)
    occ, pocc = _occurrences(key, rank), _occurrences(pkey, prank)
    vol = data.actions["volume"][rows]
    pa = probe.actions[prow]
    wall = pa["t_end"] - pa["t_start"]
    pvol = wall if np.isfinite(wall).all() and len(wall) else pa["volume"]
    seen = np.zeros(len(rows), bool)
    factor, low, high = np.zeros(len(rows)), np.zeros(len(rows)), np.zeros(len(rows))
    ratios = []

    def measure(site, psite, site_occ, psite_occ, only=None):
        """Give the rows of ``site`` (those in ``only``) the probe's ratio over ``psite``."""
        mine, theirs = np.flatnonzero(site), psite
        if theirs.sum() < 2:
            return
        got = _site_ratio(vol[mine], rank[mine], site_occ[mine], pvol[theirs], prank[theirs],
                          psite_occ[theirs])
        if got is None:
            return
        h, r, se, head_of = got
        mine = mine[only[mine]] if only is not None else mine
        f = np.where(site_occ[mine] < head_of[rank[mine]], h, r)
        factor[mine] = f
        low[mine], high[mine] = f * max(1 - 1.96 * se / r, 0.0), f * (1 + 1.96 * se / r)
        seen[mine] = True
        a = vol[mine].sum()
        ratios.append(((vol[mine] * f).sum() / a if a > 0 else r, a))
    for k in np.unique(key):
        measure(key == k, pkey == k, occ, pocc)
    exact = len(ratios)
    # sites whose messages change size from one occurrence to the next (atoms crossing a
    # boundary) match few of the probe's: those rows by the kinds of the calls around them
    if not seen.all():
        kinds, pkinds = _site_keys(data, by_bytes=False)[1], _site_keys(probe, False)[1]
        kocc, pkocc = _occurrences(kinds, rank), _occurrences(pkinds, prank)
        unseen = ~seen
        for k in np.unique(kinds[unseen]):
            measure(kinds == k, pkinds == k, kocc, pkocc, only=unseen)
    total = vol.sum()
    share = vol[seen].sum() / total if total > 0 else 0.0
    notes = [f"compute translated {where} per call site by a probe run: {len(ratios)} sites, "
             f"{share:.0%} of the compute" +
             (f" ({len(ratios) - exact} of them by the kinds of the calls around them alone: "
              f"messages of sizes the probe did not send there)" if len(ratios) > exact
              else "")]
    if not ratios:
        rule = _kernel_rule(len(rows), src, dst, where, "the probe saw none of the call sites")
        rule.notes[:0] = notes
        return rule
    r = np.array(ratios)
    notes.append(f"probe ratios B/A: {r[:, 0].min():.3f} .. {r[:, 0].max():.3f} "
                 f"(compute-weighted mean {np.average(r[:, 0], weights=r[:, 1]):.3f})")
    out = Translation(factor, low, high, notes)
    if seen.all():
        return out
    kernels = kernel_ratios(src, dst)
    if kernels:
        ratio, mix, inside = best_mix(r[:, 0], r[:, 1], kernels)
        out.fallback = "kernel mix"
        text = " + ".join(f"{w:.0%} {k} (x{kernels[k]:.3f})" for k, w in mix.items())
        notes.append(f"call sites the probe did not see ({1 - share:.0%} of the compute): the "
                     f"kernel mix that best fits the seen sites, {text} = x{ratio:.3f}" +
                     ("" if inside else "; the seen sites move beyond every kernel (mean "
                      f"x{np.average(r[:, 0], weights=r[:, 1]):.3f}): the nearest kernel's"))
    else:
        ratio, mix = float(np.average(r[:, 0], weights=r[:, 1])), {}
        out.fallback = "probe's mean ratio"
        notes.append(f"call sites the probe did not see ({1 - share:.0%} of the compute): its "
                     f"compute-weighted mean ratio x{ratio:.3f} (a calibration has no kernel "
                     f"set)")
    factor[~seen] = ratio
    low[~seen], high[~seen] = min(r[:, 0].min(), ratio), max(r[:, 0].max(), ratio)
    out.fallback_share, out.mix = float(1 - share), mix
    return out
