"""The generalized Pareto law (GPD) of excesses over a threshold, peaks over threshold: its two
estimators and its survival and quantile functions, in one convention, scipy's
``genpareto``: shape ``c`` (= xi), ``sf(z) = (1 + c z / scale)^(-1/c)``; c > 0 a heavy tail,
c = 0 the exponential, c < 0 a tail bounded at ``scale / -c``.  (The GEV modules use Hosking's
k = -c.)  ``analysis.stragglers`` fits the excursions' sizes by L-moments, ``replay.volume_law``
the tails of compute volumes by maximum likelihood.
"""
from __future__ import annotations

import numpy as np

from .gev import _nonzero


def fit_lmoments(excess) -> tuple[np.ndarray, np.ndarray]:
    """Generalized Pareto fit of excesses over a known threshold by L-moments.

    Parameters
    ----------
    excess : array_like, shape (..., m)
        Excesses (> 0); vectorized over leading axes (bootstrap samples).

    Returns
    -------
    c, scale : ndarray, shape (...)
        Hosking & Wallis (1987): ``c = 2 - l1 / l2``, ``scale = (1 - c) l1``.  A sample
        without spread (one excess, or all equal) gets the exponential of its mean (c = 0).

    Notes
    -----
    L-moments rather than maximum likelihood: closed form, defined from two points on, and
    the mean of the fit is the sample mean whatever the shape, which is what the expected
    maximum of a few excursions depends on.
    """
    z = np.sort(np.asarray(excess, dtype=float), axis=-1)
    m = z.shape[-1]
    l1 = z.mean(axis=-1)
    if m < 2:
        return -np.zeros_like(l1), l1
    l2 = 2 * (z @ (np.arange(m) / (m - 1))) / m - l1
    flat = l2 <= 1e-12 * np.abs(l1)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.where(flat, 0.0, l1 / np.where(flat, 1.0, l2) - 2)
    return -k, (1 + k) * l1


def fit_mle(y: np.ndarray) -> tuple[float, float]:
    """Maximum-likelihood generalized Pareto fit of excesses (location 0).

    Parameters
    ----------
    y : numpy.ndarray
        The excesses.

    Returns
    -------
    c, scale : float
        NaN when the excesses are equal or c <= -1/2 (outside the MLE's regular range).

    Notes
    -----
    Through the profile likelihood in ``theta = c / scale`` over c > -1 (Grimshaw 1993: for
    a given theta the MLE of c is ``mean(log(1 + theta y))`` and the log-likelihood
    ``-k (log(c / theta) + c + 1)``), maximised on a grid refined twice around its best point
    (numpy only: no optimiser); agrees with ``scipy.stats.genpareto.fit``.
    """
    y = np.asarray(y, float)
    top = y.max()
    if top <= 0 or np.ptp(y) == 0:
        return np.nan, np.nan
    y = y / top                                   # theta in units of 1 / max(y): t > -1

    def profile(t):
        c = np.log1p(np.outer(t, y)).mean(axis=1)
        with np.errstate(invalid="ignore"):
            ll = -(np.log(c / t) + c + 1)
        return np.where(c > -1, ll, -np.inf), c     # unbounded for c < -1: excluded
    t = np.r_[-1 + np.geomspace(1e-8, 1, 400)[:-1], np.geomspace(1e-6, 1e6, 600)]
    for _ in range(3):
        ll, c = profile(t)
        i = int(np.nanargmax(ll))
        lo, hi = t[max(i - 1, 0)], t[min(i + 1, len(t) - 1)]
        t = np.linspace(lo, hi, 201)
        t = t[(t > -1) & (t != 0)]
    ll, c = profile(t)
    i = int(np.nanargmax(ll))
    exp_ll = -(np.log(y.mean()) + 1)              # c = 0: the exponential law
    if exp_ll >= ll[i]:
        c_hat, scale = 0.0, float(y.mean() * top)
    else:
        c_hat, scale = float(c[i]), float(c[i] / t[i] * top)
    if not (np.isfinite(c_hat) and np.isfinite(scale) and scale > 0 and c_hat > -0.5):
        return np.nan, np.nan
    return c_hat, scale


def sf(z, c, scale):
    """Survival function: 1 below 0, 0 beyond a bounded tail's end.

    Parameters
    ----------
    z : array_like
        Excesses.
    c, scale : array_like
        The law (broadcast with ``z``).

    Returns
    -------
    ndarray
        ``scipy.stats.genpareto.sf(z, c, scale=scale)``.
    """
    k = _nonzero(-np.asarray(c, dtype=float))
    zc = np.maximum(np.asarray(z, dtype=float), 0.0)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.exp(np.log1p(np.maximum(-k * zc / scale, -1.0)) / k)


def ppf(q, c, scale):
    """Quantile function.

    Parameters
    ----------
    q : array_like
        Probabilities in [0, 1).
    c, scale : array_like
        The law (broadcast with ``q``).

    Returns
    -------
    ndarray
        ``scipy.stats.genpareto.ppf(q, c, scale=scale)``.
    """
    small = np.abs(c) < 1e-9
    return np.where(small, -scale * np.log1p(-q),
                    scale / np.where(small, 1.0, c) * ((1 - q) ** -c - 1))
