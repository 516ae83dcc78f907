"""Project the per-iteration maximum (the slowest rank) of a variability run to more ranks.

The target is E[max over S ranks] of one iteration; the run time at S ranks is iterations x
that.  Each method gives a point estimate and a bootstrap confidence interval (CI):

* ``non-parametric``: the measured per-iteration maxima (over all ``n`` ranks) are resampled
  ``k = S / n`` at a time and the max kept; over the empirical distribution that expectation
  is ``sum_i x_(i) [(i/N)^k - ((i-1)/N)^k]`` (real k).  It cannot exceed the largest measured
  value, so it is biased low as k grows, and the ordinary bootstrap hides that bias.  The CI is
  an m-out-of-n bootstrap at the same extrapolation ratio k/N: resamples of m = N/4 maxima
  at k m/N show how far the estimator misses at that ratio, scaled by (N/m)^xi (xi the tail
  index of the maxima's PWM fit, clipped to [-0.5, 0.5]), and the interval is the estimate
  minus those misses.  It is flagged above k/N = ``NONPARAM_MAX_RATIO`` (coverage study).
* ``inter-node`` (parametric): the unit is a node; each node's per-iteration maximum over its
  ranks is fitted with a GEV F_g.  ``intra-node``: the unit is a rank; each local-rank slot's
  per-iteration times (all nodes pooled) are fitted with a GEV F_g.  Either way the run at S
  ranks is S/n copies of the measured one, so its maximum has the distribution
  F(x) = prod_g F_g(x)^(units_g S/n) (one joint model of the whole run), whose mean is
  integrated numerically.  The CI is a joint parametric bootstrap: every replica draws a
  sample of each group from its fit, refits every group and projects the whole product.
* ``stragglers`` (parametric, unit rank): the inter-node model of the iterations without an
  excursion plus the run's rare excursions (``stragglers.detect``: rate, GPD sizes), E[max]
  of the mixture (``mixture``); the same numbers as inter-node when the run has none.  Every
  other model is flagged when it has some.

CI bounds are the replica distribution at 1-based positions floor(N (1-ci)/2) and
ceil(N (1+ci)/2) (clamped to 1..N); infinite replicas (shape <= -1) stay in, so a bound or
the estimate may be inf.  Every row carries ``flags`` ("; " between flags): an empty string
means nothing is known to be wrong with the interval.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special
from tqdm import tqdm

from . import genpareto, gev, stragglers
from .emma import PRODUCT_GRID, expected_max_gev_product, expected_max_sample
from .gev_defaults import DEFAULT_NONPARAM_REPLICAS, DEFAULT_REPLICAS
from ..errors import MinitraceError
from ..trace import open as mt_open

MIN_SAMPLES = 30                # fewer values per fitted group is flagged
SUBSAMPLE = 4                   # non-parametric m-out-of-n bootstrap: m = N / SUBSAMPLE
NONPARAM_MAX_RATIO = 0.02       # k / N above this: the non-parametric CI under-covers
GOF_LEVEL = 0.01                # bootstrap goodness-of-fit p-value below this is flagged
INFINITE_VARIANCE, INFINITE_MEAN = -0.5, -1.0   # GEV shape at and below which they diverge
MODELS = {"nonparam": ("non-parametric",), "pwm": ("inter-node", "intra-node", "stragglers"),
          "mom": ("inter-node", "intra-node", "stragglers"),
          "mle": ("inter-node", "intra-node", "stragglers")}
UNITS = {"non-parametric": "run", "inter-node": "node", "intra-node": "rank", "stragglers": "rank"}
_CHUNK = 2_000_000              # array elements per block of the product integration


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

    def ranks(self, keep) -> "Variability":
        """The run restricted to the ranks where ``keep`` is True (a back-test subset)."""
        keep = np.asarray(keep, dtype=bool)
        return Variability(self.times[:, keep], self.node[keep], self.local_rank[keep],
                           self.path, self.attrs)

    def iterations_kept(self, keep) -> "Variability":
        """The run restricted to the iterations where ``keep`` is True (the body, without
        the iterations that hold an excursion)."""
        return Variability(self.times[np.asarray(keep, dtype=bool)], self.node,
                           self.local_rank, self.path, self.attrs)

    def groups(self, model: str) -> tuple[list[str], list[np.ndarray], np.ndarray]:
        """(labels, samples, units in the run) of the fitted groups of a parametric model:
        inter-node, one group per node (its per-iteration max, one unit); intra-node, one
        per local-rank slot (its ranks' times, all nodes pooled; one unit per rank)."""
        if model == "inter-node":
            ids = np.unique(self.node)
            return ([f"node {j}" for j in ids],
                    [self.times[:, self.node == j].max(axis=1) for j in ids], np.ones(len(ids)))
        ids = np.unique(self.local_rank)
        return ([f"slot {s}" for s in ids],
                [self.times[:, self.local_rank == s].ravel() for s in ids],
                np.array([(self.local_rank == s).sum() for s in ids], dtype=float))


def load_variability(path: str) -> Variability:
    """Read the bench ``variability`` suite of a minitrace file, checking its shapes."""
    with mt_open(path) as t:
        b = t.bench("variability")
    for name in ("times", "node", "local_rank"):
        if name not in b:
            raise MinitraceError(f"variability results lack the {name!r} column", path)
    times = np.asarray(b["times"], dtype=float)
    if times.ndim != 2 or times.shape[0] < 3 or times.shape[1] < 1:   # (a GEV fit needs 3)
        raise MinitraceError(f"variability 'times' must be [iterations, nranks] with at least "
                             f"3 iterations, got shape {times.shape}", path)
    if not np.all(np.isfinite(times)):
        raise MinitraceError("variability 'times' holds NaN or infinite values", path)
    node, local = np.asarray(b["node"]), np.asarray(b["local_rank"])
    if node.shape != (times.shape[1],) or local.shape != (times.shape[1],):
        raise MinitraceError("variability 'node'/'local_rank' do not match the ranks of "
                             "'times'", path)
    return Variability(times, node, local, path, b.attrs)


def percentile_ci(values, ci: float) -> tuple[float, float, float]:
    """(median, lower, upper) of replicas, infinities included; bounds at positions
    N(1-ci)/2 and N(1+ci)/2."""
    v = np.sort(np.asarray(values, dtype=float))
    n = len(v)
    if n == 0:
        return math.nan, math.nan, math.nan
    lo = min(max(math.floor(n * (1 - ci) / 2), 1), n)
    hi = min(max(math.ceil(n * (1 + ci) / 2), 1), n)
    return float(np.median(v)), float(v[lo - 1]), float(v[hi - 1])


@dataclass
class Projection:
    """One method and model at every scale: the point ``estimate`` [scales], ``replicas``
    [replicas, scales] whose percentiles are the CI, flags for every scale and per scale;
    ``gumbel`` [scales]: the projection with every group's tail made Gumbel (parametric);
    ``fits`` (parametric): the groups' base fits [groups, 3] (loc, scale, shape), their
    replicas (loc, scale, shape, each [replicas, groups]) and the units per group at each
    scale [scales, groups], as projected (shapes shrunk)."""
    estimate: np.ndarray
    replicas: np.ndarray
    flags: list[str]
    scale_flags: list[list[str]]
    gumbel: np.ndarray | None = None
    fits: tuple | None = None


def nonparametric(maxima, factors, replicas: int, rng: np.random.Generator) -> Projection:
    """Empirical E[max of k maxima] with an m-out-of-n bootstrap CI at the same k/N ratio
    (module docstring).  The estimate is the median of the corrected replicas: the plug-in
    value minus the median miss of the estimator at that ratio."""
    x = np.asarray(maxima, dtype=float)
    n = len(x)
    m = max(n // SUBSAMPLE, min(n, 8))
    fit = gev.pwm(x)
    xi = float(np.clip(-fit.shape, -0.5, 0.5)) if fit.ok else 0.0
    boot = x[rng.integers(0, n, size=(replicas, m))]
    reps = np.empty((replicas, len(factors)))
    for j, k in enumerate(factors):
        miss = expected_max_sample(boot, k * m / n) - expected_max_sample(x, k * m / n)
        reps[:, j] = expected_max_sample(x, k) - miss * (n / m) ** xi
    return Projection(np.median(reps, axis=0), reps, [],
                      [[f"scale factor above {NONPARAM_MAX_RATIO:g} x {n} iterations = "
                        f"{NONPARAM_MAX_RATIO * n:g}: the interval is known to miss low"]
                       if k > NONPARAM_MAX_RATIO * n else [] for k in factors])


def _product_mean(loc, scale, shape, counts) -> np.ndarray:
    """expected_max_gev_product of fits [replicas, groups] at counts [scales, groups]:
    [replicas, scales], in blocks of replicas to bound the memory."""
    r, g = loc.shape
    step = max(1, _CHUNK // (len(counts) * g * len(PRODUCT_GRID)))
    out = np.empty((r, len(counts)))
    for i in range(0, r, step):
        sl = slice(i, i + step)
        out[sl] = expected_max_gev_product(loc[sl, None, :], scale[sl, None, :],
                                           shape[sl, None, :], counts[None])
    return out


def _lmoment_coefficients(k):
    """(a, b) with mean = loc + scale a and L-scale = scale b for a GEV of shape k."""
    k = gev._nonzero(k)
    with np.errstate(invalid="ignore", over="ignore"):
        return -gev._gamma1m(k) / k, -np.expm1(-k * np.log(2)) * np.exp(special.gammaln(1 + k)) / k


def shrink_shapes(loc, scale, shape, noise):
    """Pull the groups' shapes (last axis) toward their precision-weighted mean by the
    random-effects factor tau^2 / (tau^2 + noise_g) (DerSimonian-Laird tau^2: the spread of
    the shapes beyond their estimation noise ``noise``), keeping each group's mean and
    L-scale (for PWM: refitting the group at the new shape).

    Why: the maximum of many groups follows the heaviest fitted tail, so independent
    estimation noise in the shapes alone biases the projection up (+3% of the variability
    cost at 64x, 8 slots, in the coverage study); groups whose tails really differ (a noisy
    node) keep their own shape because tau^2 is then large."""
    k = np.asarray(shape, dtype=float)
    w = 1 / np.asarray(noise, dtype=float)
    if k.shape[-1] < 2 or not np.all(np.isfinite(w)):
        return loc, scale, shape
    mean = (w * k).sum(axis=-1, keepdims=True) / w.sum()
    q = (w * (k - mean) ** 2).sum(axis=-1, keepdims=True)
    tau2 = np.maximum(0.0, (q - (k.shape[-1] - 1)) / (w.sum() - (w * w).sum() / w.sum()))
    k2 = mean + tau2 / (tau2 + 1 / w) * (k - mean)
    return with_shape(loc, scale, k, k2)


def with_shape(loc, scale, shape, new_shape):
    """The GEVs of the same mean and L-scale with another shape (for a PWM fit: the refit
    at that shape); unchanged where either shape has no mean (<= -1)."""
    k, k2 = np.broadcast_arrays(np.asarray(shape, dtype=float), np.asarray(new_shape, float))
    a, b = _lmoment_coefficients(k)
    a2, b2 = _lmoment_coefficients(k2)
    scale2 = scale * b / b2
    keep = (k <= INFINITE_MEAN) | (k2 <= INFINITE_MEAN)
    return (np.where(keep, loc, loc + scale * a - scale2 * a2), np.where(keep, scale, scale2),
            np.where(keep, k, k2))


def _bootstrap_p(stat, null) -> float:
    """One-sided bootstrap p-value of ``stat`` against replicated ``null`` statistics."""
    return (1 + np.count_nonzero(null >= stat)) / (1 + len(null))


def parametric(var: Variability, model: str, method: str, scales, replicas: int,
               rng: np.random.Generator) -> Projection:
    """Joint GEV model of the whole run and its joint parametric bootstrap (module
    docstring).  Flags: base fits with an infinite mean or variance, a poor fit (bootstrap
    Anderson-Darling p-value, Bonferroni over the groups), failed fits, small groups."""
    labels, samples, units = var.groups(model)
    counts = np.outer(np.asarray(scales, dtype=float) / var.nranks, units)
    base = [gev.fit(s, method) for s in samples]
    flags = []
    if not all(bool(b.ok) for b in base):
        bad = [lab for lab, b in zip(labels, base) if not b.ok]
        return Projection(np.full(len(scales), np.nan), np.empty((0, len(scales))),
                          [f"the {method} fit failed for {', '.join(bad)}: no projection"],
                          [[] for _ in scales])
    par = np.array([[float(b.loc), float(b.scale), float(b.shape)] for b in base])
    loc, scale, shape = (np.empty((replicas, len(samples))) for _ in range(3))
    ok = np.ones(replicas, dtype=bool)
    p_gof = []
    for g, (s, b) in enumerate(zip(samples, base)):
        draws = gev.rvs((replicas, len(s)), b.loc, b.scale, b.shape, rng, ordered=True)
        f = gev.fit(draws, method)
        loc[:, g], scale[:, g], shape[:, g] = f.loc, f.scale, f.shape
        ok &= f.ok
        null = gev.goodness_of_fit(draws[f.ok], f.loc[f.ok], f.scale[f.ok], f.shape[f.ok])["ad"]
        p_gof.append(_bootstrap_p(gev.goodness_of_fit(s, b.loc, b.scale, b.shape)["ad"], null))
    noise = np.array([np.var(shape[ok, g]) if ok.sum() > 2 else np.inf
                      for g in range(len(samples))])
    if np.all(noise > 0):
        par = np.stack(shrink_shapes(par[:, 0], par[:, 1], par[:, 2], noise), axis=-1)
        loc, scale, shape = shrink_shapes(loc, scale, shape, noise)
    estimate = _product_mean(par[None, :, 0], par[None, :, 1], par[None, :, 2], counts)[0]
    gumbel = _product_mean(*(a[None] for a in with_shape(par[:, 0], par[:, 1], par[:, 2], 0.0)),
                           counts)[0]
    reps = _product_mean(loc[ok], scale[ok], shape[ok], counts)
    k = np.array([float(b.shape) for b in base])
    for limit, what in ((INFINITE_MEAN, "infinite mean"), (INFINITE_VARIANCE, "infinite variance")):
        if (k <= limit).any():
            worst = int(np.argmin(k))
            flags.append(f"{what}: fitted shape {k[worst]:.2f} <= {limit:g} ({labels[worst]})")
            break
    p_min = min(1.0, min(p_gof) * len(samples))
    if p_min < GOF_LEVEL:
        flags.append(f"poor GEV fit of {labels[int(np.argmin(p_gof))]} (bootstrap "
                     f"Anderson-Darling p = {p_min:.3g}" +
                     (f", Bonferroni over {len(samples)} groups)" if len(samples) > 1 else ")"))
    if method == "mom":
        flags.append("method of moments: its shape comes from the sample skewness, biased "
                     "low for heavy and Gumbel-like tails, and its intervals held the truth in "
                     "only 74-91% of the coverage study's runs (docs/GEV.md): prefer pwm or mle")
    if (~ok).any():
        flags.append(f"{int((~ok).sum())} of {replicas} replicas failed a refit (dropped)")
    n_min = min(len(s) for s in samples)
    if n_min < MIN_SAMPLES:
        flags.append(f"too few samples ({n_min} < {MIN_SAMPLES})")
    return Projection(estimate, reps, flags, [[] for _ in scales], gumbel,
                      (par, (loc[ok], scale[ok], shape[ok]), counts))


def mixture(var: Variability, method: str, scales, replicas: int, rng: np.random.Generator,
            exc: stragglers.Excursions) -> Projection:
    """The body-plus-excursions model (``stragglers``): the inter-node GEV model of the
    iterations without an excursion, excursions at rate p per rank-iteration with GPD sizes
    over the detection threshold, E[max over S ranks] of the mixture.

    Parameters
    ----------
    var : Variability
        The run.
    method : str
        GEV estimator of the body ('pwm', 'mom' or 'mle').
    scales : sequence of int
        Ranks of the projected runs.
    replicas : int
        Joint replicas of the body (the excursion parts get one draw per body replica).
    rng : numpy.random.Generator
    exc : stragglers.Excursions
        The run's excursions (at least one).

    Returns
    -------
    Projection
        Each replica joins a joint parametric replica of the body, a rate drawn from the
        Jeffreys posterior Beta(k + 1/2, n - k + 1/2) (k excursions in n rank-iterations: a
        handful of events gives a wide interval, as it should) and a GPD refitted to the k
        excesses resampled with replacement.  The estimate uses the base fits and k/n.
    """
    if (~exc.iterations).sum() < 3:
        return Projection(np.full(len(scales), np.nan), np.empty((0, len(scales))),
                          ["excursions in nearly every iteration: no body left to fit"],
                          [[] for _ in scales])
    body = parametric(var.iterations_kept(~exc.iterations), "inter-node", method, scales,
                      replicas, rng)
    if body.fits is None:
        return body
    par, (loc, scale, shape), counts = body.fits
    n = len(loc)
    rate = rng.beta(exc.count + 0.5, exc.cells - exc.count + 0.5, size=n)
    gpd = genpareto.fit_lmoments(exc.excess)
    boot = genpareto.fit_lmoments(exc.excess[rng.integers(0, exc.count, size=(n, exc.count))])
    g_loc, g_scale, g_shape = with_shape(par[:, 0], par[:, 1], par[:, 2], 0.0)
    estimate, gumbel = np.empty(len(scales)), np.empty(len(scales))
    reps = np.empty((n, len(scales)))
    for j, s in enumerate(scales):
        args = (s, exc.threshold)
        estimate[j] = stragglers.expected_max_mixture(
            par[:, 0], par[:, 1], par[:, 2], counts[j], exc.count / exc.cells, *args, *gpd,
            body.estimate[j])
        gumbel[j] = stragglers.expected_max_mixture(
            g_loc, g_scale, g_shape, counts[j], exc.count / exc.cells, *args, *gpd,
            body.gumbel[j])
        reps[:, j] = stragglers.expected_max_mixture(loc, scale, shape, counts[j], rate, *args,
                                                     *boot, body.replicas[:, j])
    per_iteration = np.asarray(scales, dtype=float) * exc.count / exc.cells
    flags = [f + ([f"an iteration at {s} ranks holds {lam:.2g} excursions on average: the "
                   f"maximum then rests on the upper tail of their sizes, which "
                   f"{exc.count} excursion(s) do not pin down (coverage 0.82 for 15 "
                   f"excursions at 3.3 per iteration in the coverage study)"]
                  if lam > stragglers.MAX_EXPECTED else [])
             for f, s, lam in zip(body.scale_flags, scales, per_iteration)]
    return Projection(estimate, reps, body.flags, flags, gumbel, body.fits)


def excursion_flag(exc: stragglers.Excursions) -> str:
    """The flag of every model that ignores the run's excursions."""
    return (f"{exc.count} excursion(s) in {int(exc.iterations.sum())} iteration(s) far beyond "
            f"the tail of the other times (block test p = {exc.p_value:.2g}): this model does "
            f"not explain them, and at more ranks they touch more iterations (the 'stragglers' "
            f"row models them)")


def project(var: Variability, scales, methods=("pwm",), replicas: int | None = None,
            ci: float = 0.95, seed: int | None = 0, progress: bool | None = False,
            models=None) -> pd.DataFrame:
    """Projected per-iteration maximum (seconds) and run time at each scale (ranks), one row
    per (method, model, scale): ``unit`` and ``factor`` (units the model extrapolates to:
    runs of n ranks, nodes, or ranks), ``estimate``, CI ``lo``/``hi``, ``runtime*`` (x
    iterations), ``replicas``, ``gumbel`` (parametric: the projection with every group's
    tail made Gumbel, same mean and L-scale) and ``flags``."""
    scales = sorted({int(s) for s in scales})
    if not scales or scales[0] < 1:
        raise ValueError("scales must be positive rank counts")
    if not 0 < ci < 1:
        raise ValueError(f"ci must be between 0 and 1, got {ci}")
    rng = np.random.default_rng(seed)
    jobs = [(m, mod) for m in methods for mod in MODELS[m] if models is None or mod in models]
    return pd.DataFrame(_rows(var, scales, jobs, replicas, ci, rng, progress))


def _rows(var: Variability, scales, jobs, replicas, ci, rng, progress) -> list[dict]:
    """The rows of ``project``, one (method, model) job after the other."""
    rows = []
    exc = stragglers.detect(var.times)
    inter = {}                  # method -> inter-node projection (the body without excursions)
    for method, model in tqdm(jobs, desc="bootstrap", unit="model", disable=progress is False,
                              leave=False):
        units = float(var.nranks)
        if model == "non-parametric":
            factors = [s / var.nranks for s in scales]
            p = nonparametric(var.maxima, factors, replicas or DEFAULT_NONPARAM_REPLICAS, rng)
            units = 1.0
            if var.iterations < MIN_SAMPLES:
                p.flags.append(f"too few samples ({var.iterations} < {MIN_SAMPLES})")
        elif model == "stragglers" and exc.count:
            p = mixture(var, method, scales, replicas or DEFAULT_REPLICAS, rng, exc)
        elif model == "stragglers":           # nothing to add to the body: inter-node's numbers
            if method not in inter:
                inter[method] = parametric(var, "inter-node", method, scales,
                                           replicas or DEFAULT_REPLICAS, rng)
            p = inter[method]
        else:
            p = parametric(var, model, method, scales, replicas or DEFAULT_REPLICAS, rng)
            units = float(var.groups(model)[2].sum())
            if model == "inter-node":
                inter[method] = p
        flags_all = p.flags + ([excursion_flag(exc)] if exc.count and model != "stragglers"
                               else [])
        for j, scale in enumerate(scales):
            col = p.replicas[:, j]
            _, lo, hi = percentile_ci(col, ci)
            f = flags_all + p.scale_flags[j]
            n_inf = int(np.isinf(col).sum())
            if n_inf:
                f.append(f"{n_inf} of {len(col)} replicas have an infinite mean (shape <= -1)")
            if np.isfinite(lo) and lo < 0:
                f.append("negative projected time")
            gumbel = math.nan if p.gumbel is None else float(p.gumbel[j])
            if gumbel > hi:
                f.append("bounded tail: with Gumbel tails of the same mean and spread (column "
                         "'gumbel') the projection is above the interval: light but unbounded "
                         "(normal-like) times look bounded at small scale, and are then "
                         "projected low")
            est = float(p.estimate[j])
            rows.append(dict(method=method, model=model, unit=UNITS[model], scale=scale,
                             factor=units * scale / var.nranks, estimate=est, lo=lo, hi=hi,
                             runtime=var.iterations * est, runtime_lo=var.iterations * lo,
                             runtime_hi=var.iterations * hi, replicas=len(col),
                             gumbel=gumbel, flags="; ".join(f)))
    return rows


def base_fits(var: Variability, methods=gev.METHODS, tol: float = gev.TYPE_TOLERANCE,
              replicas: int = DEFAULT_REPLICAS, seed: int | None = 0) -> pd.DataFrame:
    """The GEV fit of the measured per-iteration maxima by each estimator: type, goodness of
    fit (KS D, Anderson-Darling A^2 and its parametric-bootstrap p-value ``p_ad``).
    ``attrs['flags']``: estimators disagree on the type, infinite mean (shape <= -1) or
    variance (<= -0.5), a poor fit (p_ad < GOF_LEVEL)."""
    rng = np.random.default_rng(seed)
    rows, flags = [], []
    for m in methods:
        f = gev.fit(var.maxima, m)
        g = gev.goodness_of_fit(var.maxima, f.loc, f.scale, f.shape)
        p = math.nan
        if f.ok:
            draws = gev.rvs((replicas, var.iterations), f.loc, f.scale, f.shape, rng,
                           ordered=True)
            r = gev.fit(draws, m)
            null = gev.goodness_of_fit(draws[r.ok], r.loc[r.ok], r.scale[r.ok], r.shape[r.ok])
            p = _bootstrap_p(float(g["ad"]), null["ad"])
            k = float(f.shape)
            if k <= INFINITE_MEAN:
                flags.append(f"{m}: fitted shape {k:.2f} <= -1: the maxima have no finite mean")
            elif k <= INFINITE_VARIANCE:
                flags.append(f"{m}: fitted shape {k:.2f} <= -0.5: the maxima have no finite "
                             f"variance")
            if p < GOF_LEVEL:
                flags.append(f"{m}: poor GEV fit (KS D {float(g['ks']):.3f}, bootstrap "
                             f"Anderson-Darling p = {p:.3g})")
        rows.append(dict(method=m, loc=float(f.loc), scale=float(f.scale),
                         shape=float(f.shape), xi=float(f.xi), type=gev.gev_type(f.shape, tol),
                         ok=bool(f.ok), ks=float(g["ks"]), ad=float(g["ad"]), p_ad=p))
    df = pd.DataFrame(rows)
    good = df[df.ok]
    if good.type.nunique() > 1:
        flags.insert(0, "estimators disagree on the GEV type: " + ", ".join(
            f"{r.method}={r.type}" for r in good.itertuples()))
    df.attrs["flags"] = flags
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
