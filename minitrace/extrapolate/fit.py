"""How a quantity grows with the process count p: the Extra-P normal form, one term.

f(p) = c0 + c1 * p^i * log2(p)^j, the hypothesis (i, j) chosen by leave-one-scale-out
cross-validation rather than by the fit at the recorded scales: with three to five scales a
fit that interpolates them says little, its error on the scale it did not see says how far it
can be trusted.  Every hypothesis is fitted at once (numpy, no loop over hypotheses), and so
is every draw of the bootstrap that gives a prediction its interval: the search itself is
redone on perturbed values, so the interval holds the uncertainty of choosing the law, which
at 64x the largest scale dominates that of its coefficients.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from minitrace.errors import MinitraceError

#: exponents of p in Extra-P's search space (Calotoiu et al., SC'13)
EXPONENTS = tuple(Fraction(f) for f in (
    "0", "1/4", "1/3", "1/2", "2/3", "3/4", "4/5", "1", "5/4", "4/3", "3/2", "5/3", "7/4", "2",
    "9/4", "7/3", "5/2", "8/3", "11/4", "3"))
#: exponents of log2(p)
LOG_EXPONENTS = (0, 1, 2)
#: leave-one-out SMAPE above which a model is flagged (not trusted for extrapolation)
DEFAULT_THRESHOLD = 0.05
#: a null law (a constant; with strong scaling also a fixed total shared by p) whose LOO
#: error is below this is chosen unless a term fits decisively better: with 3-5 scales, noise
#: around a null law fits some steep term "exactly" (recorded volumes carry 1-5 % of it).
#: 5 % (the flagging threshold): strong-scaling laws found within 25 % at 64 ranks from
#: 4, 8, 16 in 77 % of noisy draws (28 % with 1 % and no second null), weak ones as before
#: (benchmarks/bench_extrapolate_fit.py)
DEFAULT_TOLERANCE = 0.05
#: how many times lower a term's LOO error must be than a tolerated null law's to replace it,
#: from 4 scales on: a real trend under the tolerance (500000 + 1000 * log2(p)) is fitted
#: almost exactly, noise is not (with 4-6 scales, 1 of 2,700 constants with +-0.1-0.9 %
#: noise turned into a term; with 3 scales, where each left-out fit passes through 2 points,
#: 15-19 % did at a factor of 10: never there)
DECISIVE = 100.0
#: two hypotheses whose LOO errors differ by less than this are equally good: the simpler wins
_TIE = 1e-9


@dataclass(frozen=True)
class Model:
    """A fitted single-term model c0 + c1 * p^i * log2(p)^j.

    ``loo_error`` is the mean SMAPE (0..2) of the predictions at each recorded scale by the
    fit on the others; ``flagged`` says it exceeds ``threshold``.  ``p``, ``values`` and
    ``noise`` (the relative noise assumed at each scale) are kept for :meth:`interval`.
    """

    c0: float
    c1: float
    i: Fraction
    j: int
    loo_error: float
    threshold: float
    p: np.ndarray
    values: np.ndarray
    noise: np.ndarray
    scaling: str = "weak"
    tolerance: float = DEFAULT_TOLERANCE
    null_only: bool = False

    @property
    def flagged(self) -> bool:
        return not self.loo_error <= self.threshold

    @property
    def constant(self) -> bool:
        return self.i == 0 and self.j == 0

    def turns_between(self, lo: float, hi: float) -> bool:
        """Whether the law's term turns (rises, then falls) between process counts ``lo`` and
        ``hi``: p^-a * log2(p)^j peaks at p = e^(j / a), and a law fitted below its peak
        reverses its trend beyond the recorded scales (public NPB EP at 2, 3, 4 ranks: rank
        0's p^(-5/4) * log2(p)^2 passed through its three points and rose back to 7.5x the
        other ranks' compute at 16)."""
        return _turns(self.i, self.j, lo, hi)

    def term(self, p) -> np.ndarray:
        return _term(np.asarray(p, dtype=float), self.i, self.j)

    def __call__(self, p) -> np.ndarray | float:
        value = self.c0 + self.c1 * self.term(p)
        return float(value) if np.ndim(value) == 0 else value

    def interval(self, p: float, level: float = 0.95, draws: int = 400,
                 seed: int = 0) -> tuple[float, float]:
        """Bootstrap interval of the prediction at ``p``.

        Each draw perturbs every recorded value by its relative ``noise`` (Gaussian), redoes
        the whole hypothesis search and predicts at ``p``; the interval holds the central
        ``level`` of those predictions.  Values without noise (loop counts, sizes that follow
        their law exactly) give a zero-width interval.

        Parameters
        ----------
        p : float
            The target process count.
        level : float
            Central share of the draws the interval holds.
        draws : int
            Bootstrap draws.
        seed : int
            Seed of the draws (the interval is reproducible).

        Returns
        -------
        (float, float)
            Lowest and highest prediction of the central ``level`` of the draws.
        """
        if not np.any(self.noise > 0):
            value = self(p)
            return value, value
        rng = np.random.default_rng(seed)
        perturbed = self.values * (1 + self.noise * rng.standard_normal((draws, len(self.p))))
        pairs, choice, c0, c1, _ = _search(self.p, perturbed, self.scaling, self.tolerance,
                                           self.null_only)
        target = np.array([float(_term(np.float64(p), *pairs[k])) for k in range(len(pairs))])
        predictions = c0 + c1 * target[choice]
        tail = (1 - level) / 2
        low, high = np.quantile(predictions, [tail, 1 - tail])
        return float(low), float(high)

    def __str__(self) -> str:
        if self.constant:
            return f"{self.c0:.6g}"
        factors = []
        if self.i == 1:
            factors.append("p")
        elif self.i != 0:
            factors.append(f"p^({self.i})")
        if self.j:
            factors.append("log2(p)" + (f"^{self.j}" if self.j > 1 else ""))
        sign = "-" if self.c1 < 0 else "+"
        return f"{self.c0:.6g} {sign} {abs(self.c1):.6g} * {' * '.join(factors)}"


def hypotheses(scaling: str = "weak") -> list[tuple[Fraction, int]]:
    """The (i, j) pairs searched, simplest first: the constant, then growing terms; strong
    scaling adds the decreasing ones (p^-i * log2(p)^j, a share of a fixed total)."""
    growing = [(i, j) for i in EXPONENTS for j in LOG_EXPONENTS if (i, j) != (0, 0)]
    pairs = [(Fraction(0), 0)] + growing
    if scaling == "strong":
        pairs += [(-i, j) for i in EXPONENTS if i != 0 for j in LOG_EXPONENTS]
    elif scaling != "weak":
        raise MinitraceError(f"scaling {scaling!r}: weak or strong")
    return pairs


def _nulls(pairs: list, scaling: str) -> list[int]:
    """The laws a search prefers when they fit within the tolerance, simplest first: a
    constant; with strong scaling, then a fixed total shared by p (c0 + c1 / p)."""
    return [0] + ([pairs.index((Fraction(-1), 0))] if scaling == "strong" else [])


def _term(p: np.ndarray, i: Fraction, j: int) -> np.ndarray:
    return p ** float(i) * np.log2(p) ** j


def _smape(predicted: np.ndarray, actual: np.ndarray) -> np.ndarray:
    scale = (np.abs(predicted) + np.abs(actual)) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, np.abs(predicted - actual) / np.where(scale > 0, scale, 1), 0.0)


def _line_fits(x: np.ndarray, y: np.ndarray, weights: np.ndarray):
    """Least-squares intercept and slope of each row of y on each row of x, for each row of
    ``weights`` (0/1: the points a fit sees).  x: (H, n), y: (B, n), weights: (K, n) ->
    intercept, slope: (B, H, K).  A constant x (the constant hypothesis) gets slope 0."""
    count = weights.sum(axis=1)                                       # (K,)
    sx, sxx = x @ weights.T, (x * x) @ weights.T                      # (H, K)
    sy = y @ weights.T                                                # (B, K)
    xw = (x[:, None, :] * weights[None, :, :]).reshape(-1, x.shape[1])  # (H K, n)
    sxy = (y @ xw.T).reshape(len(y), len(x), len(weights))            # (B, H, K)
    denominator = count * sxx - sx * sx
    spread = np.abs(count * sxx) + 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(np.abs(denominator) > 1e-12 * spread,
                         (count * sxy - sx * sy[:, None, :]) / denominator, 0.0)
    intercept = (sy[:, None, :] - slope * sx) / count
    return intercept, slope


def _turns(i: float, j: float, lo: float, hi: float) -> bool:
    """Whether the term p^i * log2(p)^j peaks between process counts ``lo`` and ``hi`` (at
    p = e^(j / -i), for i < 0 and j > 0: :meth:`Model.turns_between`)."""
    return i < 0 and j != 0 and bool(lo < np.exp(j / float(-i)) < hi)


def _turning(pairs: list, steady: tuple) -> np.ndarray:
    """Per hypothesis, whether its term turns between the process counts ``steady``."""
    return np.array([_turns(i, j, *steady) for i, j in pairs], bool)


def _search(p: np.ndarray, y: np.ndarray, scaling: str, tolerance: float,
            null_only: bool = False, steady: tuple | None = None):
    """The hypothesis search on each row of ``y`` (B, n): hypotheses, the chosen one per row,
    its coefficients on all scales, its leave-one-out predictions (B, n) and SMAPE (B,).
    ``steady``: among equals, the first whose term does not turn between these process
    counts, if any (at 2, 4, 8 ranks p^-2 and p^-1 * log2(p)^2 are one line's terms, the
    first through the runs' points is the second through them too)."""
    pairs = hypotheses(scaling)
    if null_only:
        pairs = [pairs[k] for k in _nulls(pairs, scaling)]
    x = np.stack([_term(p, i, j) for i, j in pairs])                 # (H, n)
    n = len(p)
    intercept, slope = _line_fits(x, y, 1.0 - np.eye(n))             # row k: all scales but k
    predicted = intercept + slope * x[None, :, :]                    # (B, H, n), at the scale left out
    errors = _smape(predicted, y[:, None, :]).mean(axis=2)           # (B, H)
    errors[~np.all(np.isfinite(predicted), axis=2)] = np.inf
    equals = errors <= errors.min(axis=1, keepdims=True) + _TIE
    if steady is not None:
        kept = equals & ~_turning(pairs, steady)[None, :]
        equals = np.where(kept.any(axis=1, keepdims=True), kept, equals)
    best = np.argmax(equals, axis=1)
    rows = np.arange(len(y))
    for null in reversed(_nulls(pairs, scaling)):     # the simplest tolerated null wins
        keep = (errors[:, null] <= tolerance) & \
            ((n < 4) | (errors[rows, best] * DECISIVE > errors[:, null]))
        best = np.where(keep, null, best)
    c0, c1 = _line_fits(x, y, np.ones((1, n)))
    return pairs, best, c0[rows, best, 0], c1[rows, best, 0], \
        (predicted[rows, best], errors[rows, best])


def fit(p, values, scaling: str = "weak", threshold: float = DEFAULT_THRESHOLD,
        tolerance: float = DEFAULT_TOLERANCE, noise=None, null_only: bool = False,
        steady: tuple | None = None) -> Model:
    """Fit the Extra-P normal form (one term) to ``values`` measured at process counts ``p``.

    Parameters
    ----------
    p : array_like of int
        Process counts, at least three distinct ones, each >= 1.
    values : array_like of float
        The quantity at each process count.
    scaling : {"weak", "strong"}
        ``strong`` also searches negative exponents of p.
    threshold : float
        Leave-one-out SMAPE above which the model is flagged.
    tolerance : float
        A null law (the constant; with ``strong``, then c0 + c1 / p) is chosen when its
        leave-one-out SMAPE is below this, unless the best term's is ``DECISIVE`` times lower
        (from 4 scales): values that vary less than that are noise around the null law,
        unless a law explains them.
    noise : array_like of float, optional
        Relative standard error of each value (e.g. of a mean over ranks and iterations).
        The noise the bootstrap of :meth:`Model.interval` assumes at each scale is the larger
        of this and the model's root-mean-square relative leave-one-out error.
    null_only : bool
        Search the null laws only: what a flagged fit falls back to (a law that does not
        predict the scales left out is not extrapolated 64x; the simplest law is, flagged).
        Its constant is the values' median.
    steady : (float, float), optional
        Process counts between which, among hypotheses that fit equally well, one whose
        term does not turn is chosen (:meth:`Model.turns_between`).

    Returns
    -------
    Model
        The simplest null law within ``tolerance`` if no term is decisively better, else
        the hypothesis with the lowest leave-one-scale-out SMAPE (the simplest among equals),
        its coefficients fitted on all scales, that error and whether it exceeds ``threshold``.
    """
    p = np.asarray(p, dtype=float)
    y = np.asarray(values, dtype=float)
    if p.ndim != 1 or p.shape != y.shape:
        raise MinitraceError("fit: one value per process count")
    if len(np.unique(p)) != len(p) or len(p) < 3:
        raise MinitraceError(f"fit: {len(np.unique(p))} distinct scales, at least 3 are needed")
    if np.any(p < 1) or not np.all(np.isfinite(y)):
        raise MinitraceError("fit: process counts must be >= 1 and values finite")
    given = np.zeros_like(y) if noise is None else np.broadcast_to(
        np.asarray(noise, dtype=float), y.shape)
    pairs, best, c0, c1, (loo_predicted, loo_error) = _search(p, y[None, :], scaling, tolerance,
                                                              null_only, steady)
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = np.where(y != 0, (loo_predicted[0] - y) / np.where(y != 0, y, 1), 0.0)
    observed = float(np.sqrt(np.mean(relative ** 2)))
    i, j = pairs[int(best[0])]
    if null_only and i == 0 and j == 0:   # a fallback constant: the runs' median, which one
        c0 = np.array([np.median(y)])      # run's spike (a one-off call slowed 100x) does not move
    return Model(float(c0[0]), float(c1[0]), i, j, float(loo_error[0]), threshold, p, y,
                 np.maximum(given, observed), scaling, tolerance, null_only)
