"""Generalized extreme value (GEV) fits of per-iteration maxima: PWM, MOM and MLE estimators.

Sign convention (one, everywhere in minitrace): ``shape`` is Hosking's ``k``, which equals
scipy's ``c`` in ``scipy.stats.genextreme`` and equals ``-xi`` of the usual form
``F(x) = exp(-(1 + xi (x - loc)/scale)^(-1/xi))``.  So ``shape < 0`` is a heavy (Frechet,
type II) upper tail, ``shape > 0`` a bounded (Weibull, type III) one, ``shape == 0`` Gumbel
(type I).  Results carry both ``shape`` and ``xi``.

The estimators are vectorized: they take arrays shaped ``(..., n)`` (many samples at once, as
in a bootstrap) and return ``loc``, ``scale``, ``shape`` shaped ``(...)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from .gev_defaults import TYPE_TOLERANCE

EULER_GAMMA = float(np.euler_gamma)
GUMBEL_SKEWNESS = 12 * np.sqrt(6) * special.zeta(3) / np.pi ** 3  # 1.1395...
MOM_SHAPE_MIN = -1.0 / 3.0     # the third moment (skewness) exists only for shape > -1/3
MOM_SHAPE_MAX = 2.0            # skewness(2) = -6.6: no real sample is more left-skewed
METHODS = ("pwm", "mom", "mle")
_SMALL = 1e-8                  # |shape| below this uses the Gumbel limit of the formulas
_TINY = 1e-12                  # log1p/expm1 forms: |shape| below this is moved to it


@dataclass
class GevFit:
    """Fitted parameters (arrays of any shape, scalars for one sample); ``ok`` is False where
    the estimator failed (MLE did not converge, MOM skewness out of the GEV range)."""
    method: str
    loc: np.ndarray
    scale: np.ndarray
    shape: np.ndarray
    ok: np.ndarray

    @property
    def xi(self) -> np.ndarray:
        """The shape in the ``xi`` convention (``-shape``)."""
        return -self.shape

    @property
    def scipy_c(self) -> np.ndarray:
        """The shape as scipy's ``genextreme`` ``c`` (equal to Hosking's k; for scipy users)."""
        return self.shape

    def frozen(self):
        """scipy frozen distribution (only for a single fit)."""
        return stats.genextreme(float(self.shape), loc=float(self.loc), scale=float(self.scale))

    def type(self, tol: float = TYPE_TOLERANCE):
        """GEV type ('I', 'II', 'III') of the fitted shape, ``tol`` wide around Gumbel."""
        return gev_type(self.shape, tol)


def gev_type(shape, tol: float = TYPE_TOLERANCE):
    """'I' (Gumbel) where |shape| <= tol, 'II' (Frechet, heavy tail) where shape < -tol,
    'III' (Weibull, bounded) where shape > tol."""
    s = np.asarray(shape, dtype=float)
    out = np.where(np.abs(s) <= tol, "I", np.where(s < 0, "II", "III"))
    return str(out) if out.ndim == 0 else out


def _gamma1m(k):
    """Gamma(1 + k) - 1 without cancellation for small k."""
    return np.expm1(special.gammaln(1 + k))


def _sorted(x) -> np.ndarray:
    """The samples sorted along the last axis (not sorted again when they already are, as
    ``rvs(..., ordered=True)`` draws them)."""
    x = np.asarray(x, dtype=float)
    if x.shape[-1] < 3:
        raise ValueError(f"a GEV fit needs at least 3 values per sample, got {x.shape[-1]}")
    return x if np.all(x[..., 1:] >= x[..., :-1]) else np.sort(x, axis=-1)


def degenerate(x) -> np.ndarray:
    """True for samples whose values are all equal: no spread, so no GEV to fit (estimators
    would return a rounding-noise scale and a meaningless shape)."""
    return np.ptp(np.asarray(x, dtype=float), axis=-1) == 0


def pwm_moments(x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unbiased sample probability-weighted moments b0, b1, b2 (Hosking et al. 1985)."""
    xs = _sorted(x)
    n = xs.shape[-1]
    j = np.arange(n, dtype=float)                      # j - 1 for j = 1..n
    w1 = j / (n - 1)
    w2 = j * (j - 1) / ((n - 1) * (n - 2))
    return xs.mean(axis=-1), xs @ w1 / n, xs @ w2 / n


def pwm(x) -> GevFit:
    """Hosking, Wallis & Wood (1985): shape from b0, b1, b2 by the rational approximation
    (error < 9e-4 for -0.5 < k < 0.5), then scale and location in closed form."""
    b0, b1, b2 = pwm_moments(x)
    l2 = 2 * b1 - b0
    flat = degenerate(x) | (l2 <= 1e-12 * np.abs(b0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c = l2 / (3 * b2 - b0) - np.log(2) / np.log(3)
        k = 7.8590 * c + 2.9554 * c * c
        small = np.abs(k) < _SMALL
        ks = np.where(small | ~np.isfinite(k) | flat, 1.0, k)
        scale = np.where(small, l2 / np.log(2),
                         l2 * ks / (special.gamma(1 + ks) * -np.expm1(-ks * np.log(2))))
        loc = b0 + scale * np.where(small, -EULER_GAMMA, _gamma1m(ks) / ks)
    return GevFit("pwm", loc, scale, k,
                  ~flat & np.isfinite(k) & np.isfinite(loc) & np.isfinite(scale) & (scale > 0))


def _skewness_exact(k):
    g1 = special.gamma(1 + k)
    g2 = special.gamma(1 + 2 * k)
    g3 = special.gamma(1 + 3 * k)
    return np.sign(k) * (-g3 + 3 * g1 * g2 - 2 * g1 ** 3) / (g2 - g1 ** 2) ** 1.5


_GUARD = 2e-3   # below this |k| the gamma differences cancel: interpolate across the Gumbel point
_G_LO, _G_HI = _skewness_exact(-_GUARD), _skewness_exact(_GUARD)


def gev_skewness(k):
    """Skewness of a GEV with Hosking shape k (> -1/3); continuous through the Gumbel limit
    k = 0 (skewness 1.1395), where the closed form is 0/0."""
    k = np.asarray(k, dtype=float)
    near = np.abs(k) < _GUARD
    exact = _skewness_exact(np.where(near, 1.0, k))
    t = (k + _GUARD) / (2 * _GUARD)
    return np.where(near, _G_LO + t * (_G_HI - _G_LO), exact)


def mom_shape(skewness, iterations: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """Shape whose GEV skewness equals ``skewness`` (vectorized bisection: the skewness falls
    monotonically from +inf at k = -1/3).  Returns (shape, ok); out-of-range skewness is
    clipped to the domain and flagged."""
    g = np.asarray(skewness, dtype=float)
    lo = np.full(g.shape, MOM_SHAPE_MIN + 1e-9)
    hi = np.full(g.shape, MOM_SHAPE_MAX)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        above = gev_skewness(mid) > g          # still too skewed: the root is at larger k
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    k = 0.5 * (lo + hi)
    ok = (np.isfinite(g) & (g < gev_skewness(MOM_SHAPE_MIN + 1e-9))
          & (g > gev_skewness(MOM_SHAPE_MAX)))
    return k, ok


def mom(x) -> GevFit:
    """Method of moments (Madsen, Rasmussen & Rosbjerg 1997): shape from the sample skewness
    (biased estimator m3/m2^1.5), scale = sigma |k| / sqrt(Gamma(1+2k) - Gamma(1+k)^2)
    (exponent 1/2: the variance is scale^2 (Gamma(1+2k) - Gamma(1+k)^2) / k^2),
    loc = mean - scale (1 - Gamma(1+k)) / k; Gumbel limit scale = sigma sqrt(6)/pi."""
    xs = np.asarray(x, dtype=float)
    if xs.shape[-1] < 3:
        raise ValueError(f"a GEV fit needs at least 3 values per sample, got {xs.shape[-1]}")
    mean = xs.mean(axis=-1)
    d = xs - mean[..., None]
    m2 = (d * d).mean(axis=-1)
    m3 = (d * d * d).mean(axis=-1)
    sigma = np.sqrt(m2)
    with np.errstate(divide="ignore", invalid="ignore"):
        k, ok = mom_shape(m3 / m2 ** 1.5)
        small = np.abs(k) < _SMALL
        ks = np.where(small, 1.0, k)
        scale = np.where(small, sigma * np.sqrt(6) / np.pi,
                         sigma * np.abs(ks) / np.sqrt(special.gamma(1 + 2 * ks)
                                                       - special.gamma(1 + ks) ** 2))
        loc = mean - scale * np.where(small, EULER_GAMMA, -_gamma1m(ks) / ks)
    return GevFit("mom", loc, scale, k, ok & (sigma > 0) & ~degenerate(xs))


def nll(x, loc, scale, shape) -> np.ndarray:
    """Negative log-likelihood of each sample (``x`` shaped (..., n)); inf outside the support."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lp = stats.genextreme.logpdf(x, np.asarray(shape)[..., None],
                                     loc=np.asarray(loc)[..., None],
                                     scale=np.asarray(scale)[..., None])
    return -np.where(np.isnan(lp), -np.inf, lp).sum(axis=-1)


_K_FLOOR = 1e-6         # MLE: |shape| below this is moved to it (the k -> 0 formulas cancel)
_MLE_ITERATIONS = 100


def _loglik(x, mu, log_sigma, k, derivatives: bool = False):
    """Log-likelihood of each standardized sample x (B, n) and, with ``derivatives``, its
    gradient (B, 3) and Hessian (B, 3, 3) in (mu, log sigma, k); -inf where a point is
    outside the support or k >= 1 (where the likelihood is unbounded).  With y = (x-mu)/sigma,
    z = 1 - k y, t = z^(1/k): log f = -log sigma + (1/k - 1) log z - t."""
    k = np.where(np.abs(k) < _K_FLOOR, np.where(k < 0, -_K_FLOOR, _K_FLOOR), k)[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        sigma = np.exp(log_sigma)[:, None]
        y = (x - mu[:, None]) / sigma
        z = 1 - k * y
        inside = (z > 0).all(axis=1) & (k[:, 0] < 1) & np.isfinite(log_sigma) & (sigma[:, 0] > 0)
        lz = np.log(np.where(z > 0, z, 1.0))
        t = np.exp(lz / k)
        ll = np.where(inside, (-log_sigma[:, None] + (1 / k - 1) * lz - t).sum(axis=1), -np.inf)
        if not derivatives:
            return ll
        a = (1 - k - t) / z                       # d log f / dz times dz/dmu * sigma / k
        dt_k = -t * (y / (k * z) + lz / k ** 2)   # dt/dk
        da_mu = -(t / (sigma * z) + a * k / sigma) / z
        da_ls = -(t * y / z + a * k * y) / z
        da_k = (-1 - dt_k + a * y) / z
        g = [a / sigma, a * y - 1, (t - 1) * lz / k ** 2 - a * y / k]
        h_kk = (dt_k * lz / k ** 2 - (t - 1) * y / (z * k ** 2) - 2 * (t - 1) * lz / k ** 3
                - y * da_k / k + a * y / k ** 2)
        h = [[da_mu / sigma, da_ls / sigma - a / sigma, da_k / sigma],
             [None, y * (da_ls - a), y * da_k], [None, None, h_kk]]
        grad = np.stack([v.sum(axis=1) for v in g], axis=1)
        hess = np.empty((len(x), 3, 3))
        for i in range(3):
            for j in range(i, 3):
                hess[:, i, j] = hess[:, j, i] = h[i][j].sum(axis=1)
    bad = ~inside
    grad[bad], hess[bad] = np.nan, np.nan
    return ll, grad, hess


def _newton(x, theta, ll):
    """Maximize the log-likelihood of each row of x from theta (B, 3): Newton steps with the
    analytic Hessian, damped Levenberg-Marquardt style where it is not negative definite; a
    step is taken only where it raises the likelihood.  Returns (theta, ll, converged)."""
    lam = np.full(len(x), 1e-6)
    done = np.zeros(len(x), dtype=bool)
    eye = np.eye(3)
    for _ in range(_MLE_ITERATIONS):
        act = np.flatnonzero(~done & np.isfinite(ll))
        if len(act) == 0:
            break
        xa, th = x[act], theta[act]
        _, g, hess = _loglik(xa, *th.T, derivatives=True)
        neg = -hess
        damp = lam[act, None, None] * (np.abs(np.diagonal(neg, axis1=1, axis2=2))[:, :, None]
                                       * eye + 1e-12 * eye)
        ok_sys = np.isfinite(neg).all(axis=(1, 2)) & np.isfinite(g).all(axis=1)
        step = np.zeros_like(th)
        if ok_sys.any():
            step[ok_sys] = np.linalg.solve(neg[ok_sys] + damp[ok_sys],
                                           g[ok_sys, :, None])[..., 0]
        new = th + step
        new_ll = _loglik(xa, *new.T)
        better = ok_sys & (new_ll > ll[act])
        small = np.abs(step).max(axis=1) < 1e-9
        theta[act[better]] = new[better]
        ll[act[better]] = new_ll[better]
        lam[act] = np.where(better, np.maximum(lam[act] / 10, 1e-12), lam[act] * 10)
        done[act] = (better & small) | (~better & (small | (lam[act] > 1e8))) | ~ok_sys
    return theta, ll, done


def mle(x) -> GevFit:
    """Maximum likelihood, vectorized: each sample is standardized by its PWM fit (the start),
    then Newton-Raphson on (loc, log scale, shape) with the analytic gradient.  A fit is
    flagged failed (``ok`` False) when it does not converge, leaves the support, or ends at
    a worse likelihood than its PWM start; the shape is kept below 1 (above it the
    likelihood is unbounded).  Agrees with ``scipy.stats.genextreme.fit`` (tested), whose
    Python loop is hundreds of times slower."""
    xs = np.asarray(x, dtype=float)
    start = pwm(xs)
    flat = xs.reshape(-1, xs.shape[-1])
    s_loc, s_scale, s_shape = (np.ravel(a).astype(float) for a in
                               (start.loc, start.scale, start.shape))
    s_ok = np.ravel(start.ok)
    out = np.full((len(flat), 3), np.nan)
    ok = np.zeros(len(flat), dtype=bool)
    rows = np.flatnonzero(s_ok)
    if len(rows):
        z = (flat[rows] - s_loc[rows, None]) / s_scale[rows, None]
        ll0 = _loglik(z, np.zeros(len(rows)), np.zeros(len(rows)), s_shape[rows])
        with np.errstate(divide="ignore"):      # a start whose support misses a point:
            lo = np.where(z.min(axis=1) < 0, 0.9 / z.min(axis=1), -np.inf)   # shape moved
            hi = np.where(z.max(axis=1) > 0, 0.9 / z.max(axis=1), np.inf)    # to cover it
        theta = np.column_stack([np.zeros(len(rows)), np.zeros(len(rows)),
                                 np.clip(s_shape[rows], lo, np.minimum(hi, 0.99))])
        theta, ll, conv = _newton(z, theta, _loglik(z, *theta.T))
        out[rows] = np.column_stack([s_loc[rows] + s_scale[rows] * theta[:, 0],
                                     s_scale[rows] * np.exp(theta[:, 1]), theta[:, 2]])
        ok[rows] = conv & np.isfinite(ll) & (~np.isfinite(ll0) | (ll >= ll0)) & \
            np.all(np.isfinite(out[rows]), axis=1)
    shp = xs.shape[:-1]
    return GevFit("mle", out[:, 0].reshape(shp), out[:, 1].reshape(shp),
                  out[:, 2].reshape(shp), ok.reshape(shp))


ESTIMATORS = {"pwm": pwm, "mom": mom, "mle": mle}


def fit(x, method: str = "pwm") -> GevFit:
    """Fit with the named estimator ('pwm', 'mom' or 'mle')."""
    try:
        return ESTIMATORS[method](x)
    except KeyError:
        raise ValueError(f"unknown GEV method {method!r} (one of {', '.join(METHODS)})") from None


def _nonzero(shape):
    """The shape with |k| < 1e-12 moved to 1e-12: log1p/expm1 then give the Gumbel limit
    (relative error ~1e-11)."""
    k = np.asarray(shape, dtype=float)
    return np.where(np.abs(k) < _TINY, _TINY, k)


def cdf(x, loc, scale, shape):
    """GEV distribution function in minitrace's (Hosking k = scipy c) convention:
    exp(-(1 - k (x - loc)/scale)^(1/k)), 0 below and 1 above the support (numpy, vectorized;
    scipy's genextreme.cdf gives the same values, slower)."""
    k = _nonzero(shape)
    y = (np.asarray(x, dtype=float) - loc) / scale
    with np.errstate(divide="ignore", over="ignore"):
        return np.exp(-np.exp(np.log1p(np.maximum(-k * y, -1.0)) / k))


def ppf(q, loc, scale, shape):
    """GEV quantile function in minitrace's (Hosking k = scipy c) convention:
    loc + scale (1 - (-log q)^k) / k."""
    k = _nonzero(shape)
    with np.errstate(divide="ignore", over="ignore"):
        return loc - scale * np.expm1(k * np.log(-np.log(q))) / k


def rvs(size, loc, scale, shape, rng: np.random.Generator, ordered: bool = False):
    """Draws by inversion, x = loc + scale (1 - E^k) / k with E standard exponential (E = -log U
    turns the GEV quantile into one power: faster than scipy's ppf in a bootstrap);
    parameters broadcast against ``size``.  ``ordered``: each sample (last axis) comes out
    sorted, as its order statistics drawn directly (Renyi: the i-th smallest of n exponentials
    is the sum of Z_j / (n - j + 1), j <= i), which spares the estimators a sort."""
    k = _nonzero(shape)
    e = rng.standard_exponential(size)
    if ordered:
        n = np.shape(e)[-1]
        e = np.cumsum(e / np.arange(n, 0, -1), axis=-1)[..., ::-1]
    return loc - scale * np.expm1(k * np.log(e)) / k


def goodness_of_fit(x, loc, scale, shape) -> dict:
    """Kolmogorov-Smirnov D and Anderson-Darling A^2 of each sample against its fit
    (vectorized over leading axes).  Note: with fitted parameters the standard KS/AD
    p-values are too optimistic; compare statistics between estimators instead."""
    xs = _sorted(x)
    n = xs.shape[-1]
    F = cdf(xs, np.asarray(loc)[..., None], np.asarray(scale)[..., None],
            np.asarray(shape)[..., None])
    i = np.arange(1, n + 1)
    ks = np.maximum((i / n - F).max(axis=-1), (F - (i - 1) / n).max(axis=-1))
    Fc = np.clip(F, 1e-300, 1 - 1e-16)
    ad = -n - ((2 * i - 1) * (np.log(Fc) + np.log1p(-Fc[..., ::-1]))).sum(axis=-1) / n
    return {"ks": ks, "ad": ad}


def qq(x, loc, scale, shape) -> tuple[np.ndarray, np.ndarray]:
    """QQ data for one sample: (theoretical quantiles at (i - 0.5)/n, sorted sample)."""
    xs = _sorted(x)
    n = xs.shape[-1]
    return ppf((np.arange(1, n + 1) - 0.5) / n, loc, scale, shape), xs
