"""Rare large excursions (stragglers) beside the GEV of the body: detection, rate, size, and
the expected maximum over many ranks of the mixture.

Operating-system noise and slow nodes make a few rank-iterations far slower than the rest.  At
16 ranks they touch 1% of the iterations and a GEV of the per-iteration maxima absorbs them
badly (or not at all); at 1,024 ranks they touch 47% and dominate the cost.  The model here:
each rank-iteration is, independently, an excursion with probability ``p``; an excursion's
time is ``u + Z`` with ``u`` the detection threshold and ``Z`` generalized Pareto (GPD,
peaks over threshold); the other times are the body, fitted by the GEV models of
``projection``.  The maximum over M ranks then has the distribution
``G_M(x) (1 - p sf_Z(x - u))^M`` (``G_M``: the body's maximum), so the probability that at
least one of M ranks straggles is ``1 - (1 - p)^M``.

The GPD is fitted and given in scipy's ``genpareto`` convention (:mod:`.genpareto`: shape
``c`` = xi, c > 0 heavy); the GEV of the body in Hosking's k, as everywhere in ``analysis``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from . import gev

DETECTION_LEVEL = 0.01   # family-wise false-detection level of the block test
MAX_SHARE = 0.01         # at most this share of the rank-iterations can be excursions
MIN_CANDIDATES = 5       # ... and at least this many are tested
REFERENCE = 100          # spacings below a candidate block that set the local tail scale
MAX_EXPECTED = 1.0       # excursions per iteration above which the sizes' upper tail rules
UNSEEN_SHARE = 0.10      # no recommendation where unseeable excursions could hit more iterations
_T_GRID = np.linspace(0.0, 1.0, 401) ** 2   # GPD survival grid: t = -log sf, scaled per case


@dataclass
class Excursions:
    """Rank-iterations detected far beyond the tail of the other times.

    Attributes
    ----------
    mask : ndarray of bool, shape (iterations, ranks)
        True for the excursions.
    threshold : float
        ``u``: the largest time not counted as an excursion; excursion sizes are excesses
        over it.
    p_value : float
        Bonferroni-adjusted p-value of the block test (1 when nothing was tested).
    xi : float
        Tail index used to take out the trend of the top spacings (``max(0, -shape)`` of the
        PWM GEV fit of all times).
    excess : ndarray
        Excursion sizes over the threshold.
    """
    mask: np.ndarray
    threshold: float
    p_value: float
    xi: float
    excess: np.ndarray

    @property
    def count(self) -> int:
        """Number of excursions (rank-iterations)."""
        return int(self.mask.sum())

    @property
    def cells(self) -> int:
        """Rank-iterations examined (iterations x ranks)."""
        return int(self.mask.size)

    @property
    def iterations(self) -> np.ndarray:
        """True for the iterations holding at least one excursion."""
        return self.mask.any(axis=1)

    def rate(self, ci: float = 0.95) -> tuple[float, float, float]:
        """Excursions per rank-iteration: (maximum-likelihood estimate, lower, upper) of the
        Jeffreys interval (``jeffreys_interval``)."""
        lo, hi = jeffreys_interval(self.count, self.cells, ci)
        return self.count / self.cells, float(lo), float(hi)


def jeffreys_interval(events, trials, ci: float = 0.95):
    """Equal-tailed Jeffreys interval of a binomial proportion.

    Parameters
    ----------
    events, trials : array_like of int
        Observed successes and trials.
    ci : float, optional
        Confidence level.

    Returns
    -------
    lo, hi : ndarray
        The ``(1 - ci)/2`` and ``(1 + ci)/2`` quantiles of Beta(events + 1/2, trials - events
        + 1/2); ``lo`` is 0 when there are no events, ``hi`` 1 when every trial is one.

    Notes
    -----
    Why Jeffreys: for a handful of events (the usual case for stragglers) its coverage stays
    near the nominal level (Brown, Cai & DasGupta 2001), where the Wald interval collapses;
    three events in 4,800 trials give 1.7e-4 - 1.7e-3 at 95%, a ten-fold range, which is what
    three events say.
    """
    k = np.asarray(events, dtype=float)
    n = np.asarray(trials, dtype=float)
    a, b = k + 0.5, n - k + 0.5
    lo = np.where(k > 0, stats.beta.ppf((1 - ci) / 2, a, b), 0.0)
    hi = np.where(k < n, stats.beta.ppf((1 + ci) / 2, a, b), 1.0)
    return lo, hi


def touched_share(rate, ranks):
    """Share of the iterations in which at least one of ``ranks`` ranks has an excursion:
    ``1 - (1 - rate)^ranks`` (1% of the iterations at 16 ranks is 47% at 1,024)."""
    return -np.expm1(np.asarray(ranks, dtype=float) * np.log1p(-np.asarray(rate, dtype=float)))


def table(exc: Excursions, scales, ci: float = 0.95) -> pd.DataFrame:
    """Per scale: the share of the iterations touched by an excursion (estimate and the
    Jeffreys interval of the rate carried through ``touched_share``) and the share that
    excursions too rare to be seen in this run could still touch (``unseen_share``).

    Returns
    -------
    pandas.DataFrame
        Columns ``scale``, ``touched``, ``touched_lo``, ``touched_hi``, ``unseen``.
    """
    p, lo, hi = exc.rate(ci)
    s = np.asarray(scales, dtype=float)
    return pd.DataFrame({"scale": np.asarray(scales, dtype=int), "touched": touched_share(p, s),
                         "touched_lo": touched_share(lo, s), "touched_hi": touched_share(hi, s),
                         "unseen": unseen_share(exc.cells, s, ci)})


def unseen_share(cells: int, ranks, ci: float = 0.95):
    """Share of the iterations at ``ranks`` that excursions too rare to show up in ``cells``
    rank-iterations could still touch: ``1 - (1 - p_hi)^ranks`` with ``p_hi`` the upper
    Jeffreys bound of the rate for 0 events.  No projection from the run can be checked
    against such events; ``UNSEEN_SHARE`` bounds where a projection is recommended."""
    return touched_share(jeffreys_interval(0, cells, ci)[1], ranks)


def detect(times, level: float = DETECTION_LEVEL, max_share: float = MAX_SHARE,
           reference: int = REFERENCE) -> Excursions:
    """Find the rank-iterations far beyond the tail of all the others.

    Parameters
    ----------
    times : array_like, shape (iterations, ranks)
        Per-rank, per-iteration times.
    level : float, optional
        Family-wise level: the chance of a detection in data without excursions (measured
        0-3% at 0.01 for normal, lognormal, Gumbel, GEV and Frechet times, docs/GEV.md).
    max_share : float, optional
        Largest share of the rank-iterations tested as excursions (at least
        ``MIN_CANDIDATES``); more frequent slow events are part of the body.
    reference : int, optional
        Number of spacings below a candidate block that estimate the local tail scale.

    Returns
    -------
    Excursions

    Notes
    -----
    With the pooled times sorted downwards, y_1 >= y_2 >= ..., the normalized spacings
    D_j = j (y_j - y_{j+1}) of a tail in the Gumbel domain are independent exponentials of
    one local scale (Renyi); in a heavy tail of index xi their scale grows like j^-xi, taken
    out by multiplying D_j by j^xi (xi from the PWM GEV fit of all times, 0 for light tails:
    conservative, since their spacings shrink towards the top).  For each candidate block of
    the r largest values, r = 1..R, the sum of its r spacings over the mean of the
    ``reference`` spacings below it is F(2r, 2 reference) distributed without excursions;
    the smallest p-value, Bonferroni over R, is the test.  The block found is the r with the
    largest single normalized gap (the split between the excursions and the body): the sum
    says whether there are excursions, the gap where they start.  Spacings (not a fitted tail
    law) are used because the excursions themselves cannot then mask the reference: a normal
    body fitted by a GEV or GPD gets a bounded tail whose end lies inside its own top values,
    a Gumbel tail fitted to the bulk is too heavy, and both are pulled by the outliers.
    """
    x = np.asarray(times, dtype=float)
    v = x.ravel()
    cells = v.size
    fit = gev.pwm(v) if cells >= 3 else None
    xi = max(0.0, -float(fit.shape)) if fit is not None and fit.ok else 0.0
    r_max = max(MIN_CANDIDATES, int(np.ceil(max_share * cells)))
    if cells < r_max + 10:
        return _excursions(x, np.inf, 1.0, xi)
    top = min(cells - 1, r_max + reference)
    y = np.sort(np.partition(v, cells - top - 1)[cells - top - 1:])[::-1]   # top + 1, down
    j = np.arange(1, top + 1, dtype=float)
    d = j * (y[:-1] - y[1:]) * j ** xi
    cum = np.concatenate([[0.0], np.cumsum(d)])
    r = np.arange(1, r_max + 1)
    below = np.minimum(r + reference, top) - r
    scale = (cum[r + below] - cum[r]) / below
    with np.errstate(divide="ignore", invalid="ignore"):
        p = stats.f.sf(cum[r] / scale / r, 2 * r, 2 * below)
        gap = d[:r_max] / scale
    p = np.where(scale > 0, p, 1.0)
    p_min = float(min(1.0, np.nanmin(p) * r_max))
    if not p_min < level:
        return _excursions(x, np.inf, p_min, xi)
    block = int(np.nanargmax(np.where(scale > 0, gap, -np.inf))) + 1
    return _excursions(x, float(y[block]), p_min, xi)


def _excursions(x, threshold: float, p_value: float, xi: float) -> Excursions:
    mask = x > threshold
    return Excursions(mask, threshold, p_value, xi, x[mask] - threshold)


def _log_body_cdf(x, loc, scale, shape, counts):
    """log G(x) of the body's maximum: sum_g counts_g log F_g(x); x (..., grid), parameters
    (..., groups)."""
    y = (x[..., None] - loc[..., None, :]) / scale[..., None, :]
    k = gev._nonzero(shape)[..., None, :]
    with np.errstate(divide="ignore", over="ignore"):
        t = np.exp(np.log1p(np.maximum(-k * y, -1.0)) / k)      # -log F_g(x)
    return -(counts[..., None, :] * t).sum(axis=-1)


def expected_max_mixture(loc, scale, shape, counts, rate, ranks, threshold, gpd_c, gpd_scale,
                         body_mean):
    """Expected maximum over ``ranks`` ranks of the body-plus-excursions mixture.

    Parameters
    ----------
    loc, scale, shape : array_like, shape (..., groups)
        GEV fits of the body's groups (``projection``'s joint model).
    counts : array_like, shape (..., groups)
        Units of each group at this scale: the body's maximum is
        ``G(x) = prod_g F_g(x)^counts_g``.
    rate : array_like, shape (...)
        Excursion probability per rank-iteration ``p``.
    ranks : float
        M, the ranks of the projected run.
    threshold : float
        ``u``; an excursion's time is ``u + Z``.
    gpd_c, gpd_scale : array_like, shape (...)
        GPD of the excess ``Z`` (:func:`.genpareto.fit_lmoments`: scipy's ``c``).
    body_mean : array_like, shape (...)
        E[max of the body] (``expected_max_gev_product`` of the same fits and counts).

    Returns
    -------
    ndarray, shape (...)
        ``E[max] = E[B] + int G(x) (1 - H(x)) dx`` with ``H`` the law of the largest
        excursion time (``(1 - p)^M`` of no excursion): the part below ``u`` is
        ``(1 - (1-p)^M) E[(u - B)^+]``; the part above is integrated in ``t = -log sf(z)``
        (``z = scale (e^{c t} - 1) / c``), plus its tail beyond the grid in closed form.
        Infinite where the GPD mean is (c >= 1) or the body's is.

    Notes
    -----
    The maximum of the ranks' times is the larger of the body's maximum and the largest
    excursion because an excursion is above ``u``, and a rank that straggles has no body
    time of its own that could be larger: exact for the model, no approximation in M.
    """
    loc, scale, shape, counts = (np.asarray(a, dtype=float) for a in (loc, scale, shape,
                                                                       counts))
    rate, gc, gs, body_mean = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in
                                                    (rate, gpd_c, gpd_scale, body_mean)))
    gk = -gc                                                    # Hosking's k of the GPD
    m = float(ranks)
    u = float(threshold)
    hit = touched_share(rate, m)                                # P(at least one excursion)
    # below u: E[(u - B)^+] = int_{-inf}^u G, on a grid from where G < 1e-12
    k = gev._nonzero(shape)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        lo_g = loc - scale * np.expm1(k * np.log(-np.log(1e-12) / counts)) / k
    x_lo = np.minimum(np.nanmax(lo_g, axis=-1), u)
    s = np.linspace(0.0, 1.0, 513)
    xs = x_lo[..., None] + (u - x_lo)[..., None] * s
    g = np.exp(_log_body_cdf(xs, loc, scale, shape, counts))
    below = ((g[..., 1:] + g[..., :-1]) / 2).sum(axis=-1) * (u - x_lo) / (len(s) - 1)
    # above u: z(t), t = -log sf(z) from 0 to where M p e^-t is negligible
    t_end = np.log1p(m * rate) + 30.0
    t = t_end[..., None] * _T_GRID
    kk = gev._nonzero(gk)[..., None]
    with np.errstate(over="ignore", invalid="ignore"):
        z = -gs[..., None] * np.expm1(-kk * t) / kk
        dz = gs[..., None] * np.exp(-kk * t)
        some = -np.expm1(m * np.log1p(-rate[..., None] * np.exp(-t)))
        f = np.exp(_log_body_cdf(u + z, loc, scale, shape, counts)) * some * dz
        above = ((f[..., 1:] + f[..., :-1]) * np.diff(t, axis=-1)).sum(axis=-1) / 2
        tail = m * rate * gs * np.exp(-(1 + gk) * t_end) / (1 + gk)
        e = body_mean + hit * below + above + tail
    return np.where((gk <= -1) | ~np.isfinite(body_mean), np.inf, e)
