"""Expected maximum of m independent units (EMMA), approximate and exact.

EMMA: E[max of m draws of F] ~= F^-1(p^(1/m)) with p = exp(-exp(-gamma)) = 0.570376002, the
Gumbel CDF at its own mean; it is exact for a Gumbel and works for any distribution with a
quantile function, for real m >= 1.  For a GEV the exact value has a closed form too (the
maximum of m GEV units is a GEV: max-stability), and for any distribution it can be
integrated numerically; both are here to measure the approximation.  A whole run made of
units of several kinds (nodes, local-rank slots), each with its own GEV, has the maximum
F(x) = prod_g F_g(x)^count_g: ``expected_max_gev_product`` integrates it.
"""
from __future__ import annotations

import numpy as np
from scipy import integrate, special

EMMA_P = 0.570376002  # exp(-exp(-euler_gamma))
_SMALL = 1e-8


def emma(dist, m):
    """EMMA for any distribution: ``dist`` is a scipy frozen distribution (or anything with
    ``ppf``) or a quantile function; ``m`` any real >= 1 (array ok)."""
    ppf = getattr(dist, "ppf", dist)
    return ppf(EMMA_P ** (1.0 / np.asarray(m, dtype=float)))


def _gumbel_limit(loc, scale, k, small_value, general):
    k = np.asarray(k, dtype=float)
    small = np.abs(k) < _SMALL
    ks = np.where(small, 1.0, k)
    return loc + scale * np.where(small, small_value, general(ks))


def emma_gev(loc, scale, shape, m):
    """EMMA of a GEV in closed form: loc + scale (1 - (exp(-gamma)/m)^k) / k (Hosking k)."""
    lm = np.log(np.asarray(m, dtype=float))
    return _gumbel_limit(loc, scale, shape, np.euler_gamma + lm,
                         lambda k: -np.expm1(-k * (np.euler_gamma + lm)) / k)


def expected_max_gev(loc, scale, shape, m):
    """Exact E[max of m GEV units] = loc + scale (1 - m^-k Gamma(1+k)) / k; +inf for k <= -1
    (the mean does not exist)."""
    k = np.asarray(shape, dtype=float)
    lm = np.log(np.asarray(m, dtype=float))
    with np.errstate(invalid="ignore", over="ignore"):
        val = _gumbel_limit(loc, scale, k, np.euler_gamma + lm,
                            lambda ks: -np.expm1(-ks * lm + special.gammaln(1 + ks)) / ks)
    return np.where(k <= -1, np.inf, val)


# Grid of the product integration: s = -log(-log u) of the Gumbel-reduced level u, so that
# every component quantile is smooth in s; [-2.5, 8.5] leaves exp(-e^2.5) ~ 5e-6 of the mass
# below and an analytic tail above, and the step 0.25 with one Richardson step is exact to
# ~2e-4 of the variability cost (tests/test_projection.py), far below the sampling error.
PRODUCT_GRID = np.arange(-2.5, 8.5 + 1e-9, 0.25)   # odd length: the Richardson half-grid


def expected_max_gev_product(loc, scale, shape, count):
    """E[max] of independent GEV units, ``count`` units of each GEV (the last axis: groups;
    leading axes broadcast, real counts > 0): E[X] for F(x) = prod_g F_g(x)^count_g.

    Each F_g^count_g is a GEV (max-stability); the maximum of those has no closed form, so
    E = x_0 + int (1 - F) dx is integrated on the grid x(s) = max_g Q_g(exp(-e^-s)) (the
    largest component quantile at each level: it follows whichever group dominates there),
    by the trapezoid rule with one Richardson step, plus each group's analytic tail above the
    grid.  +inf where some group has shape <= -1 (its mean does not exist)."""
    loc, scale, k, count = np.broadcast_arrays(*(np.asarray(a, dtype=float)
                                                 for a in (loc, scale, shape, count)))
    ks = np.where(np.abs(k) < 1e-12, 1e-12, k)            # log1p/expm1: the Gumbel limit
    s = PRODUCT_GRID[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lc = np.log(count)
        mu = loc - scale * np.expm1(-ks * lc) / ks           # GEV of the max of count units
        sg = scale * np.exp(-ks * lc)
        kk, mu_, sg_ = ks[..., None, :], mu[..., None, :], sg[..., None, :]
        x = (mu_ - sg_ * np.expm1(-kk * s) / kk).max(axis=-1)            # (..., grid)
        u = (x[..., None] - mu_) / sg_
        t = np.exp(np.log1p(np.maximum(-kk * u, -1.0)) / kk).sum(axis=-1)  # -log F(x)
        g = -np.expm1(-t)                                                   # 1 - F(x)
        fine = (np.diff(x, axis=-1) * (g[..., 1:] + g[..., :-1])).sum(axis=-1) / 2
        x2, g2 = x[..., ::2], g[..., ::2]
        coarse = (np.diff(x2, axis=-1) * (g2[..., 1:] + g2[..., :-1])).sum(axis=-1) / 2
        z = np.maximum(1 - ks * (x[..., -1:] - mu) / sg, 0.0)
        tail = (sg * np.exp(np.log(z) * (1 + ks) / ks) / (1 + ks)).sum(axis=-1)
        e = x[..., 0] + (4 * fine - coarse) / 3 + tail
    return np.where((k <= -1).any(axis=-1), np.inf, e)


def expected_max(dist, m: float) -> float:
    """E[max of m units] of a scipy frozen distribution by numerical integration:
    c + int_c^inf (1 - F^m) dx - int_-inf^c F^m dx, centred at the EMMA value c."""
    c = float(emma(dist, m))
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        return c + _tails(dist, m, c)


def _tails(dist, m: float, c: float) -> float:
    upper, _ = integrate.quad(lambda x: -np.expm1(m * np.log(max(dist.cdf(x), 1e-300))),
                              c, np.inf, limit=200)
    lower, _ = integrate.quad(lambda x: dist.cdf(x) ** m, -np.inf, c, limit=200)
    return upper - lower


def expected_max_sample(x, k):
    """Non-parametric E[max of k draws] from the empirical distribution of ``x`` (shaped
    (..., n)), real k: sum_i x_(i) [(i/n)^k - ((i-1)/n)^k]."""
    xs = np.sort(np.asarray(x, dtype=float), axis=-1)
    n = xs.shape[-1]
    p = (np.arange(n + 1) / n) ** float(k)
    return xs @ np.diff(p)
