"""Project the per-iteration maximum (the slowest rank) of a variability run to more ranks.

Three projections of the expected per-iteration maximum at ``scale`` ranks, each with a
percentile bootstrap confidence interval (CI):

* ``non-parametric``: the measured per-iteration maxima (over all ``n`` ranks) are resampled
  ``k = scale / n`` at a time and the max kept; its expectation over the empirical
  distribution is ``sum_i x_(i) [(i/n)^k - ((i-1)/n)^k]`` (real k), computed on each bootstrap
  resample of the maxima (no Monte Carlo noise).  It cannot exceed the largest measured value.
* ``inter-node`` (parametric): the unit is a node.  For each node, the per-iteration maximum
  over its ranks is fitted with a GEV; ``replicas`` samples of the same size are drawn from
  the fit and refitted (parametric bootstrap); each refit projects to ``scale / ranks on that
  node`` units with the exact GEV expected maximum.  Replicas of all nodes are pooled.
* ``intra-node`` (parametric): the unit is one rank.  For each local-rank slot, the
  per-iteration times of the ranks in that slot (all nodes pooled) are fitted, replicated and
  refitted the same way, and each refit projects to ``scale`` units.

The CI bounds are the sorted replicas at 1-based positions floor(N (1-ci)/2) and
ceil(N (1+ci)/2) (clamped to 1..N).  Run time at scale = iterations x per-iteration maximum.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from tqdm import tqdm

from . import gev
from .emma import expected_max_gev, expected_max_sample
from ..errors import MinitraceError

DEFAULT_REPLICAS = 50           # parametric: per node / per slot
DEFAULT_NONPARAM_REPLICAS = 1000
MIN_SAMPLES = 30                # fewer values per fitted group is flagged
MODELS = {"nonparam": ("non-parametric",), "pwm": ("inter-node", "intra-node"),
          "mom": ("inter-node", "intra-node"), "mle": ("inter-node", "intra-node")}


@dataclass
class Variability:
    """One variability run: ``times`` [iterations, nranks] seconds, ``node`` and
    ``local_rank`` per rank."""
    times: np.ndarray
    node: np.ndarray
    local_rank: np.ndarray
    path: str = ""
    attrs: dict = field(default_factory=dict)

    @property
    def iterations(self) -> int:
        """Number of measured iterations (rows of ``times``)."""
        return self.times.shape[0]

    @property
    def nranks(self) -> int:
        """Number of ranks of the run (columns of ``times``)."""
        return self.times.shape[1]

    @property
    def maxima(self) -> np.ndarray:
        """Per-iteration maximum over all ranks: the slowest rank sets each iteration's time."""
        return self.times.max(axis=1)

    def node_maxima(self) -> list[tuple[np.ndarray, int]]:
        """(per-iteration max over the node's ranks, ranks on the node) per node."""
        return [(self.times[:, self.node == j].max(axis=1), int((self.node == j).sum()))
                for j in np.unique(self.node)]

    def slot_samples(self) -> list[np.ndarray]:
        """Per local-rank slot: the per-iteration times of its ranks, all nodes pooled."""
        return [self.times[:, self.local_rank == s].ravel() for s in np.unique(self.local_rank)]


def load_variability(path: str) -> Variability:
    """Read the bench ``variability`` suite of a minitrace file, checking its shapes."""
    from .. import open as mt_open
    with mt_open(path) as t:
        b = t.bench("variability")
    for name in ("times", "node", "local_rank"):
        if name not in b:
            raise MinitraceError(f"variability results lack the {name!r} column", path)
    times = np.asarray(b["times"], dtype=float)
    if times.ndim != 2 or times.shape[0] < 2 or times.shape[1] < 1:
        raise MinitraceError(f"variability 'times' must be [iterations, nranks] with at least "
                             f"2 iterations, got shape {times.shape}", path)
    if not np.all(np.isfinite(times)):
        raise MinitraceError("variability 'times' holds NaN or infinite values", path)
    node, local = np.asarray(b["node"]), np.asarray(b["local_rank"])
    if node.shape != (times.shape[1],) or local.shape != (times.shape[1],):
        raise MinitraceError("variability 'node'/'local_rank' do not match the ranks of "
                             "'times'", path)
    return Variability(times, node, local, path, b.attrs)


def percentile_ci(values, ci: float) -> tuple[float, float, float]:
    """(median, lower, upper) of replicas; bounds at positions N(1-ci)/2 and N(1+ci)/2."""
    v = np.sort(np.asarray(values, dtype=float))
    n = len(v)
    if n == 0:
        return math.nan, math.nan, math.nan
    lo = min(max(math.floor(n * (1 - ci) / 2), 1), n)
    hi = min(max(math.ceil(n * (1 + ci) / 2), 1), n)
    return float(np.median(v)), float(v[lo - 1]), float(v[hi - 1])


def nonparametric_replicas(maxima, factors, replicas: int, rng: np.random.Generator):
    """Bootstrap replicas [replicas, len(factors)] of the empirical E[max of k maxima]."""
    x = np.asarray(maxima, dtype=float)
    boot = x[rng.integers(0, len(x), size=(replicas, len(x)))]
    return np.stack([expected_max_sample(boot, k) for k in factors], axis=-1)


def parametric_replicas(sample, units, method: str, replicas: int,
                        rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Fit ``sample``, draw ``replicas`` samples of its size from the fit, refit each and
    project to each entry of ``units``.  Returns ([good replicas, len(units)], failed)."""
    base = gev.fit(sample, method)
    if not base.ok:
        return np.empty((0, len(units))), replicas
    draws = gev.rvs((replicas, len(sample)), base.loc, base.scale, base.shape, rng)
    refit = gev.fit(draws, method)
    ok = refit.ok
    m = np.asarray(units, dtype=float)
    proj = expected_max_gev(refit.loc[ok, None], refit.scale[ok, None], refit.shape[ok, None], m)
    return proj, int((~ok).sum())


def _groups(var: Variability, model: str, scales):
    """(sample, units per scale) for each fitted group of a parametric model."""
    if model == "inter-node":
        return [(s, np.asarray(scales, dtype=float) / r) for s, r in var.node_maxima()]
    return [(s, np.asarray(scales, dtype=float)) for s in var.slot_samples()]


def project(var: Variability, scales, methods=("pwm",), replicas: int | None = None,
            ci: float = 0.95, seed: int | None = 0, progress: bool | None = False,
            models=None) -> pd.DataFrame:
    """Projected per-iteration maximum (seconds) and run time at each scale (ranks), one row
    per (method, model, scale): median, CI, replica count, and a ``flags`` string."""
    scales = sorted({int(s) for s in scales})
    if not scales or scales[0] < 1:
        raise ValueError("scales must be positive rank counts")
    if not 0 < ci < 1:
        raise ValueError(f"ci must be between 0 and 1, got {ci}")
    rng = np.random.default_rng(seed)
    jobs = [(m, mod) for m in methods for mod in MODELS[m] if models is None or mod in models]
    rows = []
    bar = tqdm(total=sum(1 if mod == "non-parametric" else len(_groups(var, mod, scales))
                         for _, mod in jobs),
               desc="bootstrap", unit="group", disable=progress is False, leave=False)
    try:
        for method, model in jobs:
            flags = []
            if model == "non-parametric":
                factors = [s / var.nranks for s in scales]
                reps = nonparametric_replicas(var.maxima, factors,
                                              replicas or DEFAULT_NONPARAM_REPLICAS, rng)
                failed = 0
                bar.update()
                n_min = var.iterations
                if max(factors) > var.iterations:
                    flags.append("scale factor exceeds the sample size: bounded by the "
                                 "largest measured maximum")
            else:
                parts, failed = [], 0
                groups = _groups(var, model, scales)
                for sample, units in groups:
                    p, f = parametric_replicas(sample, units, method,
                                               replicas or DEFAULT_REPLICAS, rng)
                    parts.append(p)
                    failed += f
                    bar.update()
                reps = np.concatenate(parts)
                n_min = min(len(s) for s, _ in groups)
                if failed:
                    flags.append(f"{failed} replica fits failed (dropped)")
            if n_min < MIN_SAMPLES:
                flags.append(f"too few samples ({n_min} < {MIN_SAMPLES})")
            for j, scale in enumerate(scales):
                col = reps[:, j] if len(reps) else reps.reshape(0)
                med, lo, hi = percentile_ci(col[np.isfinite(col)], ci)
                f = list(flags)
                if np.any(np.isinf(col)):
                    f.append("infinite expected maximum (shape <= -1) in some replicas")
                if np.isfinite(lo) and lo < 0:
                    f.append("negative projected time")
                if len(col) == 0:
                    f.append("no usable replicas")
                rows.append(dict(method=method, model=model, scale=scale,
                                 factor=scale / var.nranks, median=med, lo=lo, hi=hi,
                                 runtime_median=var.iterations * med,
                                 runtime_lo=var.iterations * lo,
                                 runtime_hi=var.iterations * hi, replicas=len(col),
                                 flags="; ".join(f)))
    finally:
        bar.close()
    return pd.DataFrame(rows)


def base_fits(var: Variability, methods=gev.METHODS, tol: float = gev.TYPE_TOLERANCE):
    """The GEV fit of the measured per-iteration maxima by each estimator, with type and
    goodness of fit, and a flag when the estimators disagree on the type."""
    rows = []
    for m in methods:
        f = gev.fit(var.maxima, m)
        g = gev.goodness_of_fit(var.maxima, f.loc, f.scale, f.shape)
        rows.append(dict(method=m, loc=float(f.loc), scale=float(f.scale),
                         shape=float(f.shape), xi=float(f.xi), type=gev.gev_type(f.shape, tol),
                         ok=bool(f.ok), ks=float(g["ks"]), ad=float(g["ad"])))
    df = pd.DataFrame(rows)
    good = df[df.ok]
    disagree = good.type.nunique() > 1
    df.attrs["flags"] = (["estimators disagree on the GEV type: " + ", ".join(
        f"{r.method}={r.type}" for r in good.itertuples())] if disagree else [])
    return df


def check(df: pd.DataFrame, runs: list[Variability]) -> pd.DataFrame:
    """Measured mean per-iteration maximum (and run time) of larger runs against the
    projected intervals at their scale.  The intervals are for the expected maximum, and a
    measured mean is itself noisy: ``inside`` is the strict test, ``consistent`` allows two
    standard errors (``se``) of the measured mean."""
    rows = []
    for v in runs:
        measured = float(v.maxima.mean())
        se = float(v.maxima.std(ddof=1) / np.sqrt(v.iterations))
        for r in df[df.scale == v.nranks].itertuples():
            rows.append(dict(file=v.path, scale=v.nranks, method=r.method, model=r.model,
                             measured=measured, se=se, lo=r.lo, hi=r.hi,
                             runtime=v.iterations * measured,
                             runtime_lo=v.iterations * r.lo, runtime_hi=v.iterations * r.hi,
                             inside=bool(r.lo <= measured <= r.hi),
                             consistent=bool(r.lo - 2 * se <= measured <= r.hi + 2 * se)))
    return pd.DataFrame(rows)
