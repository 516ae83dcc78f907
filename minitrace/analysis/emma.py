"""Expected maximum of m independent units (EMMA), approximate and exact.

EMMA: E[max of m draws of F] ~= F^-1(p^(1/m)) with p = exp(-exp(-gamma)) = 0.570376002, the
Gumbel CDF at its own mean; it is exact for a Gumbel and works for any distribution with a
quantile function, for real m >= 1.  For a GEV the exact value has a closed form too (the
maximum of m GEV units is a GEV: max-stability), and for any distribution it can be
integrated numerically; both are here to measure the approximation.
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
