"""Each replica's law of the compute volumes of every call site, drawn with its estimation
uncertainty, and with a heavy tail that may go past the largest recorded volume.

A recording holds n draws per (rank, call site) of an unknown law.  Bootstrapping those n
values gives replicas scattered around *this* recording's draws, never above its maximum: a
recording whose draws missed the law's tail gives intervals too narrow and too low (the
coverage study of benchmarks/RESULTS.md).  So every replica first draws the law itself, then
its volumes from it (a draw of the posterior predictive law):

* **Body**: Rubin's Bayesian bootstrap: weights ``w ~ Dirichlet(1, ..., 1)`` on the site's
  recorded volumes (one draw per replica and site); the body is their weighted empirical law,
  the tail's probability ``p`` the weight of the volumes above the threshold.
* **Tail** (peaks over threshold): above the site's ``1 - TAIL_SHARE`` quantile ``u`` (its
  top 10% of volumes, at least ``MIN_EXCEEDANCES`` of them), the law is a generalized Pareto
  ``GPD(xi, sigma)`` (xi: scipy's ``genpareto`` c; Pickands-Balkema-de Haan: the limit law of excesses over a high
  threshold), fitted once to the recorded excesses ``x - u`` by maximum likelihood
  (:func:`minitrace.analysis.genpareto.fit_mle`); each
  replica draws its ``(xi, sigma)`` from the MLE's asymptotic normal law, covariance ``(1 + xi) / k [[1 + xi, -sigma], [-sigma, 2 sigma^2]]``
  for k excesses (Smith 1985; valid for xi > -1/2), so a tail the recording barely saw may
  be heavier in a replica.  ``xi`` is capped at ``MAX_SHAPE`` (0.9: a law with a mean), sigma
  kept positive.  A site whose fit fails or gives xi <= -1/2 keeps its bootstrap tail.
* A site with fewer than ``MIN_TAIL_SITE`` volumes gets no tail: its replicas never go past
  its recorded maximum (the model's notes say how many such sites there are).

Volumes are drawn by the quantile function of the replica's law at a uniform ``v`` given by the
caller (the noise copula, which keeps correlations between ranks).  On 150 simulated
recordings of 2 x 300 Pareto(2.5) draws, the 95% interval of 100 replicas of the sum of the
per-iteration maxima covered 94% of the other recordings' sums (a plain bootstrap: 79%, widened
by sqrt(2): 91%; benchmarks/bench_volume_law.py)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.genpareto import fit_mle, ppf

#: Share of a site's volumes above the tail threshold.
TAIL_SHARE = 0.10
#: A site with fewer volumes than this gets no fitted tail (10 excesses are too few to fit).
MIN_TAIL_SITE = 100
#: Fewest excesses a tail is fitted to.
MIN_EXCEEDANCES = 10
#: Largest tail shape a replica draws (xi >= 1: a law without a mean).
MAX_SHAPE = 0.9


@dataclass
class SiteVolumes:
    """The recorded volumes of every site, sorted within each site, where its tail starts and
    the tail's maximum-likelihood GPD fit."""
    sorted_volumes: np.ndarray     # grouped by site, ascending within each
    start: np.ndarray              # first index of each site
    count: np.ndarray              # volumes of each site
    tail_from: np.ndarray          # index (within the site) of its first excess; count: no tail
    tail_ok: np.ndarray            # sites that were allowed a tail (see ``of``)
    u: np.ndarray                  # threshold: the largest volume below the excesses
    xi: np.ndarray                 # MLE shape of the excesses (NaN: no tail)
    sigma: np.ndarray              # MLE scale

    @classmethod
    def of(cls, sorted_volumes: np.ndarray, start: np.ndarray, count: np.ndarray,
           tail_ok: np.ndarray | None = None):
        """``tail_ok``: sites that may get a fitted tail (default all with MIN_TAIL_SITE
        volumes)."""
        k = np.maximum(np.ceil(TAIL_SHARE * count).astype(np.int64), MIN_EXCEEDANCES)
        ok = count >= MIN_TAIL_SITE
        if tail_ok is not None:
            ok &= tail_ok
        tail_from = np.where(ok, count - k, count)
        # the threshold: the largest volume below the excesses (0 for a site that holds no
        # volume, all of its rows replayed as recorded)
        u = np.zeros(len(count))
        has = count > 0
        u[has] = sorted_volumes[start[has] + np.maximum(tail_from[has] - 1, 0)]
        xi = np.full(len(count), np.nan)
        sigma = np.full(len(count), np.nan)
        for s in np.flatnonzero(tail_from < count):
            y = sorted_volumes[start[s] + tail_from[s]:start[s] + count[s]] - u[s]
            xi[s], sigma[s] = fit_mle(y)
        tail_from = np.where(np.isfinite(xi), tail_from, count)
        return cls(sorted_volumes, start, count, tail_from,
                   np.ones(len(count), bool) if tail_ok is None else tail_ok, u, xi, sigma)

    @property
    def tailed(self) -> np.ndarray:
        """Sites with a fitted tail."""
        return self.tail_from < self.count

    def law(self, rng: np.random.Generator) -> "SiteLaw":
        """One replica's law of every site: Dirichlet weights on the volumes, tail parameters
        drawn from the fit's uncertainty."""
        n = len(self.sorted_volumes)
        site = np.repeat(np.arange(len(self.count)), self.count)
        g = rng.standard_exponential(n)
        w = g / np.bincount(site, g, minlength=len(self.count))[site]
        c = np.cumsum(w)
        cum = c - np.r_[0.0, c][self.start][site]           # within each site, ending at 1
        exc = np.arange(n) - self.start[site] >= self.tail_from[site]
        p = np.bincount(site[exc], w[exc], minlength=len(self.count))
        xi, sigma = np.zeros(len(self.count)), np.zeros(len(self.count))
        t = np.flatnonzero(self.tailed)
        if len(t):
            k = (self.count - self.tail_from)[t]
            x, s = self.xi[t], self.sigma[t]
            # the MLE's asymptotic normal law, a Cholesky factor of
            # (1+xi)/k [[1+xi, -s], [-s, 2s^2]]
            z = rng.standard_normal((2, len(t)))
            f = np.sqrt((1 + x) / k)
            xi[t] = np.minimum(x + f * np.sqrt(1 + x) * z[0], MAX_SHAPE)
            sd_s = f * s * np.sqrt(2)
            r = -1 / np.sqrt(2 * (1 + x))                     # correlation of (xi, sigma)
            sigma[t] = np.maximum(s + sd_s * (r * z[0] + np.sqrt(1 - r * r) * z[1]), 1e-3 * s)
        return SiteLaw(self, site + np.minimum(cum, 1.0), xi, sigma, np.where(self.tailed, p, 0))


@dataclass
class SiteLaw:
    """One replica's law of every site's volumes: the Dirichlet-weighted body and the drawn
    tail."""
    volumes: SiteVolumes
    cumulative: np.ndarray   # site + cumulative weight within the site (increasing)
    xi: np.ndarray
    sigma: np.ndarray
    p: np.ndarray            # probability of the tail (0: none)

    def quantile(self, site: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Volumes at the uniform values ``v`` (in (0, 1)) of the laws of ``site``."""
        vs = self.volumes
        idx = np.searchsorted(self.cumulative, site + v)
        idx = np.clip(idx, vs.start[site], vs.start[site] + vs.count[site] - 1)
        out = vs.sorted_volumes[idx]
        p = self.p[site]
        tail = v > 1 - p
        if tail.any():
            s = site[tail]
            q = np.clip((v[tail] - (1 - p[tail])) / p[tail], 0.0, 1 - 1e-12)
            out[tail] = vs.u[s] + ppf(q, self.xi[s], self.sigma[s])
        return out
