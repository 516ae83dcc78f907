"""Performance non-regression statistics over a history of runs (Cornebize, ch. 8).

A history is a matrix ``values[run, metric]`` (NaN where a run lacks a metric).  Three pieces:

* ``chew_statistic`` / ``chew_threshold``: Chew's (1966) test of a new observation vector m
  (the mean of r new runs) of p metrics against a reference set of n runs with mean x and
  covariance S:  T = n r (n - p) / ((n + r)(n - 1) p) (m - x)' S^-1 (m - x),  flagged when
  T > F.ppf(gamma, p, n - p).  With p = 1 it is the two-sided t prediction interval
  x +- t((1 + gamma) / 2, n - 1) s sqrt(1/n + 1/r).
* ``change_points``: E-divisive means (Matteson & James 2014) with the distance exponent 2
  (ecp's ``alpha``), which compares means only: the divergence of two samples is then
  2 ||mean_1 - mean_2||^2 (V-statistic form), so a split's statistic
  Q(k) = 2 n / (k (n - k)) ||C_k||^2 (C_k: sum of the first k centred runs, as clipped robust
  z-scores) costs one cumsum for all k.  Binary segmentation: the best split of a segment is
  kept when a permutation test (``permutations`` shuffles of the segment's runs, generator
  seeded by (seed, start, end): deterministic) gives p <= ``alpha``; then both halves are
  searched.  Departures from the R package ``ecp``: exponent 2 instead of 1 (linear time; a
  performance history needs mean shifts), the second sample always runs to the segment's end
  (no search over its end), and a segment longer than GRID splits is tested on every g-th
  split (observed and shuffled alike, so the test stays exact).
* ``assess``: tests each run against the runs before it since the last change point, leaving
  flagged runs out of later references.  Per metric the test has p = 1 (its sign gives
  regression or improvement); per group of metrics (the metrics whose names differ only in
  their last component, e.g. a size's mean and spread) the joint test has p = the group's size.
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special  # (F and normal quantiles; scipy.stats takes ~0.5 s to import)

from ..errors import MinitraceError

# Verdict codes (the index into VERDICTS).
NO_REFERENCE, OK, REGRESSION, IMPROVEMENT, CHANGED, MISSING = range(6)
VERDICTS = ("no reference", "ok", "regression", "improvement", "changed", "missing")


def chew_statistic(n, r, d, cov) -> np.ndarray:
    """Chew's statistic for batches: ``n`` reference sizes (...), ``r`` new runs averaged,
    ``d`` = m - x (..., p), ``cov`` reference covariances (..., p, p).  A zero variance gives
    0 when d is 0 and inf otherwise (a constant metric that moved)."""
    n = np.asarray(n, dtype=float)
    d = np.asarray(d, dtype=float)
    p = d.shape[-1]
    if p == 1:
        var = np.asarray(cov, dtype=float)[..., 0, 0]
        dd = d[..., 0] ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(var > 0, dd / np.where(var > 0, var, 1.0), np.where(dd > 0, np.inf, 0.0))
    else:
        q = np.einsum("...i,...i->...", d, np.linalg.solve(cov, d[..., None])[..., 0])
    with np.errstate(divide="ignore", invalid="ignore"):
        return n * r * (n - p) / ((n + r) * (n - 1) * p) * q


def chew_threshold(n, p: int, gamma: float) -> np.ndarray:
    """F.ppf(gamma, p, n - p): the statistic's critical value (NaN when n <= p)."""
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(n > p, special.fdtri(p, np.maximum(n - p, 1), gamma), np.nan)


# -- change points --------------------------------------------------------------------------

CLIP = 3.0  # robust z-scores beyond this are clipped before the change-point search


def standardize(values: np.ndarray) -> np.ndarray:
    """Robust z-scores clipped at +-CLIP: each metric less its median, over its MAD (normal-
    consistent; a metric whose MAD is 0 falls back to its standard deviation, a constant one
    to 1).  Median and MAD do not depend on the runs' order, so the permutation test stays
    exact; the clip bounds what one outlying run (which the test flags anyway) weighs in a
    split, so that it does not pass for a change point, while a lasting shift still moves the
    mean.  NaN stays NaN."""
    v = np.asarray(values, dtype=float)
    if not len(v):
        return v
    with np.errstate(invalid="ignore"), _quiet_nan_warnings():
        center = np.nanmedian(v, axis=0)
        scale = np.nanmedian(np.abs(v - center), axis=0) / special.ndtri(0.75)
        sd = np.nanstd(v, axis=0)
    scale = np.where(np.isfinite(scale) & (scale > 0), scale,
                     np.where(np.isfinite(sd) & (sd > 0), sd, 1.0))
    return np.clip((v - center) / scale, -CLIP, CLIP)


@contextlib.contextmanager
def _quiet_nan_warnings():
    """numpy's 'All-NaN slice' / 'Mean of empty slice' warnings: a metric absent from a
    segment is expected, not an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


GRID = 1000  # splits scored per shuffle at most (module docstring)


def _split_statistic(y: np.ndarray, first: int, step: int, count: int) -> np.ndarray:
    """2 n / (k (n - k)) ||C_k||^2 at the splits k = first + step * i (i < count) of each
    stacked (..., n, M) segment (rows already centred): the cumsum of the sum of the first
    ``first`` runs and of the blocks of ``step`` runs after them."""
    n, m = y.shape[-2:]
    if step == 1:
        c = np.cumsum(y[..., :first + count - 1, :], axis=-2)[..., first - 1:, :]
    else:
        head = y[..., :first, :].sum(axis=-2, keepdims=True)
        body = y[..., first:first + step * (count - 1), :]
        body = body.reshape(*y.shape[:-2], count - 1, step, m).sum(axis=-2)
        c = np.cumsum(np.concatenate([head, body], axis=-2), axis=-2)
    k = first + step * np.arange(count)
    return np.einsum("...km,...km->...k", c, c) * (2 * n / (k * (n - k))).astype(y.dtype)


def _segment_test(z: np.ndarray, min_size: int, alpha: float, permutations: int,
                  rng: np.random.Generator) -> int | None:
    """The split of one segment, or None when the permutation test does not reject at alpha.
    The tested statistic is the largest Q(k) over every g-th split (g = ceil(n / GRID): every
    split up to GRID runs), for the observed and the shuffled runs alike, so the test stays
    exact while a shuffle of a long segment costs a gather and a sum; the split returned is
    the best of all.  Stops as soon as the p-value can no longer reach alpha (most of a
    no-change segment's shuffles are then never drawn)."""
    y = z - np.nanmean(z, axis=0)
    y = np.where(np.isfinite(y), y, 0.0).astype(np.float32)  # half the memory traffic
    n = len(y)
    splits = n - 2 * min_size + 1  # k = min_size .. n - min_size
    step = -(-splits // GRID)
    q = _split_statistic(y, min_size, 1, splits)
    grid = (min_size, step, -(-splits // step))
    observed = _split_statistic(y, *grid).max()
    if not observed > 0:
        return None
    allowed = int(np.floor(alpha * (permutations + 1))) - 1  # exceedances that keep p <= alpha
    batch = max(1, min(16, (1 << 22) // max(1, y.size)))
    exceed = done = 0
    while done < permutations:
        b = min(batch, permutations - done)
        perms = rng.permuted(np.broadcast_to(np.arange(n), (b, n)), axis=1)
        exceed += int((_split_statistic(y[perms], *grid).max(axis=-1) >= observed).sum())
        done += b
        if exceed > allowed:
            return None
    return min_size + int(np.argmax(q))


def change_points(values: np.ndarray, min_size: int = 5, alpha: float = 0.01,
                  permutations: int = 199, seed: int = 0) -> list[int]:
    """Rows where a new normal starts (sorted), found jointly over all metrics by E-divisive
    means (module docstring).  Deterministic for a given ``seed``."""
    if min_size < 2:
        raise MinitraceError("the minimum segment size must be at least 2 runs")
    if np.floor(alpha * (permutations + 1)) < 1:
        raise MinitraceError(f"{permutations} permutations cannot give p <= {alpha}: use at "
                             f"least {int(np.ceil(1 / alpha)) - 1}")
    z = standardize(values)
    found: list[int] = []
    todo = [(0, len(z))]
    while todo:
        a, b = todo.pop()
        if b - a < 2 * min_size:
            continue
        rng = np.random.default_rng([seed, a, b])
        k = _segment_test(z[a:b], min_size, alpha, permutations, rng)
        if k is not None:
            found.append(a + k)
            todo += [(a, a + k), (a + k, b)]
    return sorted(found)


# -- assessing every run -------------------------------------------------------------------

def metric_groups(names: list[str]) -> list[np.ndarray]:
    """Indices of the metrics sharing a name up to the last '/' (only groups of >= 2)."""
    by: dict[str, list[int]] = {}
    for j, name in enumerate(names):
        by.setdefault(name.rsplit("/", 1)[0], []).append(j)
    return [np.array(ix) for ix in by.values() if len(ix) > 1]


class _Thresholds:
    """chew_threshold(n, p, gamma) looked up in a table over integer n: scipy's F quantile
    costs far more than the rest of a test."""

    def __init__(self, gamma: float):
        self.gamma = gamma
        self.table: dict[int, np.ndarray] = {}

    def __call__(self, n: np.ndarray, p: int) -> np.ndarray:
        top = int(np.max(n, initial=0))
        t = self.table.get(p, np.zeros(0))
        if top >= len(t):
            t = self.table[p] = chew_threshold(np.arange(max(2 * top, 64)), p, self.gamma)
        return t[np.asarray(n).astype(np.intp)]


_VERDICT_OF_SIGN = np.array([IMPROVEMENT, CHANGED, REGRESSION], np.int8)


def _verdicts(flagged, signed, missing, ready) -> np.ndarray:
    """Flagged: worse (+) is a regression, better (-) an improvement, neither a change."""
    shift = _VERDICT_OF_SIGN[np.nan_to_num(np.sign(signed)).astype(np.intp) + 1]
    base = np.where(missing, MISSING, np.where(ready, OK, NO_REFERENCE))
    return np.where(flagged, shift, base).astype(np.int8)


def _metric_test(n, mean, var, m, r, thresholds, nmin, directions) -> dict:
    """The p = 1 test of ``m`` against references (n, mean, var), any matching shapes."""
    ready = n >= nmin
    d = m - mean
    thr = np.where(ready, thresholds(n, 1), np.nan)
    q = np.where(var > 0, d * d / var, np.where(d != 0, np.inf, 0.0))
    stat = np.where(ready & ~np.isnan(m), n * r / (n + r) * q, np.nan)
    flagged = stat > thr
    return dict(stat=stat, threshold=thr, flagged=flagged,
                ref_mean=np.where(n > 0, mean, np.nan),
                half_width=np.sqrt(thr * var * (1 / n + 1 / r)),
                verdict=_verdicts(flagged, d * directions, np.isnan(m), ready))


def _group_test(n, mean, cov, x, r, thresholds, nmin, directions) -> dict:
    """The joint test of the (..., G, p) metrics ``x`` against references (n, mean, cov).  A
    flagged group is a regression when its shifts, each in units of its metric's standard
    deviation and signed by its metric's direction, sum to more than 0 (worse on balance)."""
    p = x.shape[-1]
    d = x - mean
    q = _quadratic_form(cov, d)
    ready = (n >= max(nmin, p + 2)) & np.isfinite(q)
    thr = np.where(ready, thresholds(n, p), np.nan)
    stat = np.where(ready, n * r * (n - p) / ((n + r) * (n - 1) * p) * q, np.nan)
    z = d / np.sqrt(np.einsum("...ii->...i", cov)) * directions
    balance = np.where(np.isfinite(z), z, 0).sum(axis=-1)
    flagged = stat > thr
    return dict(stat=stat, threshold=thr, flagged=flagged,
                verdict=_verdicts(flagged, balance, np.isnan(x).any(axis=-1), ready))


def _quadratic_form(cov: np.ndarray, d: np.ndarray) -> np.ndarray:
    """d' cov^-1 d over stacks of small matrices; NaN where cov is singular relative to its
    diagonal (a group with a constant or collinear metric is left to the per-metric tests)."""
    diag = np.einsum("...ii->...i", cov)
    if cov.shape[-1] == 2:  # the usual (mean, spread) pair: closed form
        a, b, c = cov[..., 0, 0], cov[..., 0, 1], cov[..., 1, 1]
        det = a * c - b * b
        q = (d[..., 0] ** 2 * c - 2 * d[..., 0] * d[..., 1] * b + d[..., 1] ** 2 * a) / det
    else:
        det = np.linalg.det(cov)
        safe = np.where((det > 0)[..., None, None], cov, np.eye(cov.shape[-1]))
        q = np.einsum("...i,...i->...", d, np.linalg.solve(safe, d[..., None])[..., 0])
    return np.where(det / np.prod(diag, axis=-1) > 1e-12, q, np.nan)


def _running(a: np.ndarray) -> np.ndarray:
    """Sums over the runs before each run (the first gets 0), then the total: len(a) + 1 rows."""
    out = np.zeros((len(a) + 1,) + a.shape[1:])
    np.cumsum(a, axis=0, out=out[1:])
    return out


@dataclass
class Reference:
    """A reference state: per metric (n, mean, var); per bucket of equal-size groups
    (group ids, member indices, n, mean, cov).  ``test`` tests new runs against it."""
    n: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    buckets: list[tuple]
    ngroups: int
    gamma: float
    min_reference: int

    def test(self, m: np.ndarray, r: int, directions: np.ndarray) -> dict:
        """Test the mean ``m`` of ``r`` new runs (NaN = metric absent; ``r`` may differ per
        metric, a group takes its smallest): per metric and per group, statistic, threshold
        and verdict (codes into VERDICTS)."""
        thresholds = _Thresholds(self.gamma)
        nmin = max(self.min_reference, 2)
        r = np.broadcast_to(np.asarray(r, dtype=float), np.shape(m))
        with np.errstate(all="ignore"):
            out = _metric_test(self.n, self.mean, self.var, m, r, thresholds, nmin, directions)
            out["n_ref"] = self.n.copy()
            out.update(group_stat=np.full(self.ngroups, np.nan),
                       group_threshold=np.full(self.ngroups, np.nan),
                       group_verdict=np.full(self.ngroups, NO_REFERENCE, np.int8))
            for gid, ix, n, mean, cov in self.buckets:
                g = _group_test(n, mean, cov, m[ix], r[ix].min(axis=-1), thresholds, nmin,
                                directions[ix])
                out["group_stat"][gid] = g["stat"]
                out["group_threshold"][gid] = g["threshold"]
                out["group_verdict"][gid] = g["verdict"]
        return out


@dataclass
class Assessment:
    """Every run tested against its reference.  Arrays are [run, metric] (``group_*``:
    [run, group]); ``verdict`` holds codes into VERDICTS; ``final`` is the reference the next
    run will be tested against."""
    stat: np.ndarray
    threshold: np.ndarray
    ref_mean: np.ndarray
    half_width: np.ndarray
    n_ref: np.ndarray
    verdict: np.ndarray
    groups: list[np.ndarray]
    group_stat: np.ndarray
    group_threshold: np.ndarray
    group_verdict: np.ndarray
    final: Reference


def _level(x: np.ndarray) -> np.ndarray:
    """Each metric's mean over a segment (0 where absent): running sums of values less it do
    not cancel when the spread is tiny against the level."""
    with _quiet_nan_warnings():
        level = np.nanmean(x, axis=0)
    return np.where(np.isfinite(level), level, 0.0)


def _references(x: np.ndarray, include: np.ndarray):
    """For every run of a segment, (n, mean, var) of the included runs before it, from
    running sums (of values less their ``_level``), plus the same after the last run."""
    y = np.where(include, x - _level(x), 0.0)
    w = include.astype(float)
    n, s1, s2 = (_running(a) for a in (w, y, y * y))
    mean = s1 / n
    var = (s2 - s1 * mean) / (n - 1)
    return n, mean + _level(x), np.maximum(var, 0.0)


def _group_references(x: np.ndarray, include: np.ndarray):
    """As _references for groups: x (runs, G, p), include (runs, G)."""
    y = np.where(include[..., None], x - _level(x), 0.0)
    w = include.astype(float)
    outer = y[..., :, None] * y[..., None, :]
    n, s1, s2 = (_running(a) for a in (w, y, outer))
    mean = s1 / n[..., None]
    cov = (s2 - s1[..., :, None] * mean[..., None, :]) / (n - 1)[..., None, None]
    return n, mean + _level(x), cov


def _fixed_point(step, shape) -> tuple:
    """Iterate flags -> step(flags) from no flags until they repeat.  Run i's flag depends only
    on the flags of runs before it, so the first run where the iterate differs from the
    sequential answer moves forward every iteration: this ends, at that answer."""
    flags = np.zeros(shape, bool)
    while True:
        result = step(flags)
        if np.array_equal(result["flagged"], flags):
            return result
        flags = result["flagged"]


def assess(values: np.ndarray, names: list[str], directions: np.ndarray, starts=(),
           gamma: float = 0.9999, min_reference: int = 8) -> Assessment:
    """Test every run (r = 1) against the runs before it since the last of ``starts`` (change
    points), leaving flagged runs out of later references: per metric, a run flagged on that
    metric; per group, a run flagged jointly or on any of the group's metrics.  Computed
    segment by segment with running sums (vectorized over runs and metrics; ``_fixed_point``
    gives the same flags as testing the runs one after the other)."""
    v = np.asarray(values, dtype=float)
    nruns, nm = v.shape
    directions = np.asarray(directions, dtype=float)
    groups = metric_groups(names)
    thresholds = _Thresholds(gamma)
    nmin = max(min_reference, 2)
    sizes = sorted({len(ix) for ix in groups})
    buckets = [(np.array([g for g, ix in enumerate(groups) if len(ix) == p], np.intp),
                np.array([ix for ix in groups if len(ix) == p]).reshape(-1, p)) for p in sizes]
    out = {k: np.full((nruns, nm), np.nan) for k in ("stat", "threshold", "ref_mean",
                                                     "half_width", "n_ref")}
    out["verdict"] = np.zeros((nruns, nm), np.int8)
    out.update({k: np.full((nruns, len(groups)), np.nan) for k in ("group_stat",
                                                                   "group_threshold")})
    out["group_verdict"] = np.zeros((nruns, len(groups)), np.int8)
    bounds = [0] + sorted({int(s) for s in starts if 0 < int(s) < nruns}) + [nruns]
    final = None
    with np.errstate(all="ignore"):
        for a, b in zip(bounds[:-1], bounds[1:]):
            if a == b:
                continue
            x = v[a:b]

            def metric_step(flags):
                n, mean, var = _references(x, np.isfinite(x) & ~flags)
                res = _metric_test(n[:-1], mean[:-1], var[:-1], x, 1, thresholds, nmin,
                                   directions)
                res["last"] = (n[-1], mean[-1], var[-1])
                res["n_ref"] = n[:-1]
                return res

            res = _fixed_point(metric_step, x.shape)
            for k in ("stat", "threshold", "ref_mean", "half_width", "verdict", "n_ref"):
                out[k][a:b] = res[k]
            member_ok = np.isfinite(x) & ~res["flagged"]
            last_buckets = []
            for gid, ix in buckets:
                gx = x[:, ix]

                def group_step(flags):
                    n, mean, cov = _group_references(gx, member_ok[:, ix].all(axis=-1) & ~flags)
                    g = _group_test(n[:-1], mean[:-1], cov[:-1], gx, 1, thresholds, nmin,
                                    directions[ix])
                    g["last"] = (n[-1], mean[-1], cov[-1])
                    return g

                g = _fixed_point(group_step, gx.shape[:2])
                out["group_stat"][a:b, gid] = g["stat"]
                out["group_threshold"][a:b, gid] = g["threshold"]
                out["group_verdict"][a:b, gid] = g["verdict"]
                last_buckets.append((gid, ix, *g["last"]))
            final = Reference(*res["last"], last_buckets, len(groups), gamma, min_reference)
    if final is None:  # an empty history
        final = Reference(np.zeros(nm), np.zeros(nm), np.full(nm, np.nan), [], len(groups),
                          gamma, min_reference)
    return Assessment(groups=groups, final=final, **out)
