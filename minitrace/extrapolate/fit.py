"""How a quantity grows with the process count p: the Extra-P normal form, one term.

f(p) = c0 + c1 * p^i * log2(p)^j, the hypothesis (i, j) chosen by leave-one-scale-out
cross-validation rather than by the fit at the recorded scales: with three to five scales a
fit that interpolates them says little, its error on the scale it did not see says how far it
can be trusted.  Every hypothesis is fitted at once (numpy, no loop over hypotheses).
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
#: a constant whose LOO error is below this is chosen whatever else fits (with 3-5 scales,
#: noise around a constant fits some fast-growing term "exactly")
DEFAULT_TOLERANCE = 0.01
#: two hypotheses whose LOO errors differ by less than this are equally good: the simpler wins
_TIE = 1e-9


@dataclass(frozen=True)
class Model:
    """A fitted single-term model c0 + c1 * p^i * log2(p)^j.

    ``loo_error`` is the mean SMAPE (0..2) of the predictions at each recorded scale by the
    fit on the others; ``flagged`` says it exceeds ``threshold``.  ``loo_coefficients``
    holds the leave-one-out fits' (c0, c1), one row per scale left out: their predictions at
    a target say how much the model's depends on each scale (:meth:`interval`).
    """

    c0: float
    c1: float
    i: Fraction
    j: int
    loo_error: float
    threshold: float
    loo_coefficients: np.ndarray

    @property
    def flagged(self) -> bool:
        return not self.loo_error <= self.threshold

    @property
    def constant(self) -> bool:
        return self.i == 0 and self.j == 0

    def term(self, p) -> np.ndarray:
        return _term(np.asarray(p, dtype=float), self.i, self.j)

    def __call__(self, p) -> np.ndarray | float:
        value = self.c0 + self.c1 * self.term(p)
        return float(value) if np.ndim(value) == 0 else value

    def interval(self, p: float) -> tuple[float, float]:
        """The lowest and highest prediction at ``p`` of the leave-one-out fits."""
        values = self.loo_coefficients[:, 0] + self.loo_coefficients[:, 1] * float(self.term(p))
        return float(values.min()), float(values.max())

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


def _term(p: np.ndarray, i: Fraction, j: int) -> np.ndarray:
    return p ** float(i) * np.log2(p) ** j


def _smape(predicted: np.ndarray, actual: np.ndarray) -> np.ndarray:
    scale = (np.abs(predicted) + np.abs(actual)) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, np.abs(predicted - actual) / np.where(scale > 0, scale, 1), 0.0)


def _line_fits(x: np.ndarray, y: np.ndarray, weights: np.ndarray):
    """Least-squares intercept and slope of y on each row of x, for each row of ``weights``
    (0/1: the points a fit sees).  x: (H, n), weights: (K, n) -> intercept, slope: (H, K).
    A constant x (the constant hypothesis) gets slope 0: intercept is the mean."""
    count = weights.sum(axis=1)
    sx, sy = x @ weights.T, weights @ y
    sxx, sxy = (x * x) @ weights.T, (x * y) @ weights.T
    denominator = count * sxx - sx * sx
    spread = np.abs(count * sxx) + 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(np.abs(denominator) > 1e-12 * spread,
                         (count * sxy - sx * sy) / denominator, 0.0)
    intercept = (sy - slope * sx) / count
    return intercept, slope


def fit(p, values, scaling: str = "weak", threshold: float = DEFAULT_THRESHOLD,
        tolerance: float = DEFAULT_TOLERANCE) -> Model:
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
        The constant is chosen when its leave-one-out SMAPE is below this: values that vary
        less than that are noise around a constant.

    Returns
    -------
    Model
        The constant if it is within ``tolerance``, else the hypothesis with the lowest
        leave-one-scale-out SMAPE (the simplest among equals),
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
    pairs = hypotheses(scaling)
    x = np.stack([_term(p, i, j) for i, j in pairs])                 # (H, n)
    n = len(p)
    leave_out = 1.0 - np.eye(n)                                      # row k: all scales but k
    intercept, slope = _line_fits(x, y, leave_out)                   # (H, n)
    predicted = intercept + slope * x                                # at the scale left out
    errors = _smape(predicted, y[None, :]).mean(axis=1)
    errors[~np.all(np.isfinite(predicted), axis=1)] = np.inf
    best = 0 if errors[0] <= tolerance else \
        int(np.flatnonzero(errors <= errors.min() + _TIE)[0])
    c0, c1 = _line_fits(x[best:best + 1], y, np.ones((1, n)))
    i, j = pairs[best]
    loo = np.stack([intercept[best], slope[best]], axis=1)
    return Model(float(c0[0, 0]), float(c1[0, 0]), i, j, float(errors[best]), threshold, loo)
