"""Piecewise-linear fits of time against message size with automatic breakpoints.

Network times change slope and jump where the MPI library switches protocol (eager, rendezvous,
pipelining...), so a calibration fits ``t = a_i + b_i x`` on segments whose boundaries it finds
itself (seed 001, ch. 4).  Two searches, both scored by the Bayesian information criterion
``BIC = K log S + S log RSS`` with ``K = 4N + 3`` parameters for N breakpoints and S points:

* top-down: split the segment whose best split lowers the residual most, recursively, until no
  segment can be split (minimum segment size); keep the BIC-best model of that sequence;
* bottom-up: start from segments of the minimum size, merge the neighbours whose merge costs the
  least, until one segment is left; keep the BIC-best model of that sequence.

Objectives: ``ls`` (least squares), ``weighted`` (weights 1/x, small sizes count more) and
``log`` (relative error: weights 1/y^2, the first-order form of least squares on logarithms,
for noise proportional to the time).  Every segment's residual comes from running sums of the
weighted moments, so scoring a split is O(1) and every split of a segment is scored at once.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import MinitraceError

OBJECTIVES = ("ls", "weighted", "log")
METHODS = ("top-down", "bottom-up")


@dataclass
class Segment:
    """``y = intercept + slope * x`` for ``lo <= x <= hi`` (the segment's own data range)."""

    lo: float
    hi: float
    intercept: float
    slope: float
    n: int

    def to_dict(self) -> dict:
        return {"lo": self.lo, "hi": self.hi, "intercept": self.intercept,
                "slope": self.slope, "n": self.n}


@dataclass
class PiecewiseFit:
    """Segments in increasing x; ``breakpoints[i]`` is the first x of segment i + 1."""

    segments: list[Segment]
    breakpoints: list[float]
    rss: float
    bic: float
    objective: str
    method: str

    def predict(self, x) -> np.ndarray:
        """Fitted y at ``x`` (the first / last segment extrapolates outside the data)."""
        x = np.asarray(x, dtype=float)
        i = np.searchsorted(np.asarray(self.breakpoints, dtype=float), x, side="right")
        a = np.array([s.intercept for s in self.segments])[i]
        b = np.array([s.slope for s in self.segments])[i]
        return a + b * x


class _Moments:
    """Prefix sums of the weighted moments of points sorted by x: residual of the weighted
    least-squares line through any run of points [i, j) in O(1), vectorized over i and j."""

    def __init__(self, x: np.ndarray, y: np.ndarray, w: np.ndarray):
        z = lambda v: np.concatenate([[0.0], np.cumsum(v)])
        self.W, self.X, self.Y = z(w), z(w * x), z(w * y)
        self.XX, self.XY, self.YY = z(w * x * x), z(w * x * y), z(w * y * y)

    def line(self, i, j):
        """(intercept, slope, rss) of points [i, j) (arrays of the same shape)."""
        W = self.W[j] - self.W[i]
        X, Y = self.X[j] - self.X[i], self.Y[j] - self.Y[i]
        with np.errstate(divide="ignore", invalid="ignore"):
            cxx = (self.XX[j] - self.XX[i]) - X * X / W
            cxy = (self.XY[j] - self.XY[i]) - X * Y / W
            cyy = (self.YY[j] - self.YY[i]) - Y * Y / W
            flat = cxx <= 1e-12 * np.maximum(self.XX[j] - self.XX[i], 1e-300)
            slope = np.where(flat, 0.0, cxy / cxx)
            rss = np.where(flat, cyy, cyy - slope * cxy)
            intercept = (Y - slope * X) / W
        return intercept, slope, np.maximum(rss, 0.0)

    def rss(self, i, j):
        return self.line(i, j)[2]


def bic(rss: float, npoints: int, nbreaks: int, floor: float) -> float:
    """``K log S + S log RSS`` with ``K = 4N + 3``; ``floor`` keeps an exact fit finite."""
    return (4 * nbreaks + 3) * np.log(npoints) + npoints * np.log(max(rss, floor))


def fit(x, y, *, objective: str = "log", method: str = "top-down",
        min_points: int = 5, max_breaks: int = 10) -> PiecewiseFit:
    """Fit ``y`` against ``x`` piecewise-linearly with automatic breakpoints.

    ``min_points``: fewest points of a segment (at least 3); segments only break between
    distinct x values.  ``max_breaks``: most breakpoints considered (an MPI library has a few
    protocols; the cap bounds the search's cost)."""
    if objective not in OBJECTIVES:
        raise MinitraceError(f"unknown objective {objective!r} (choose from "
                             f"{', '.join(OBJECTIVES)})")
    if method not in METHODS:
        raise MinitraceError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    m = max(3, int(min_points))
    if len(x) < m:
        raise MinitraceError(f"a piecewise fit needs at least {m} points, got {len(x)}")
    if objective == "ls":
        w = np.ones_like(x)
    elif objective == "weighted":
        if (x <= 0).any():
            raise MinitraceError("the weighted objective (w = 1/x) needs positive x")
        w = 1.0 / x
    else:
        if (y <= 0).any():
            raise MinitraceError("the log objective needs positive y")
        w = 1.0 / (y * y)
    mom = _Moments(x, y, w)
    # possible cuts: index k starts a segment only where x changes
    cut_ok = np.zeros(len(x) + 1, bool)
    cut_ok[1:-1] = x[1:] > x[:-1]
    n = len(x)
    # residuals below a relative RMS of 1e-5 are rounding in the running sums, not signal
    floor = 1e-10 * (float(mom.YY[-1]) or 1.0)
    search = _top_down if method == "top-down" else _bottom_up
    cuts = search(mom, cut_ok, n, m, floor, max_breaks)
    bounds = [0, *cuts, n]
    segs = []
    total = 0.0
    for i, j in zip(bounds[:-1], bounds[1:]):
        a, b, r = mom.line(np.array(i), np.array(j))
        total += float(r)
        segs.append(Segment(float(x[i]), float(x[j - 1]), float(a), float(b), j - i))
    return PiecewiseFit(segs, [float(x[k]) for k in cuts], total,
                        float(bic(total, n, len(cuts), floor)), objective, method)


def _best_split(mom: _Moments, cut_ok, i: int, j: int, m: int):
    """(residual, cut) of the best split of points [i, j) into two segments of >= m points,
    or None."""
    ks = np.arange(i + m, j - m + 1)
    ks = ks[cut_ok[ks]] if len(ks) else ks
    if not len(ks):
        return None
    cost = mom.rss(np.full(len(ks), i), ks) + mom.rss(ks, np.full(len(ks), j))
    b = int(np.argmin(cost))
    return float(cost[b]), int(ks[b])


def _refine(mom, cut_ok, n, m, cuts: list[int], which=None) -> list[int]:
    """Move each cut (or those at indices ``which``) to the best place between its neighbours
    until none moves: a greedy search places a cut before it knows the next one, and a merge
    can only remove cuts."""
    cuts = list(cuts)
    for _ in range(10):
        moved = False
        for c in (range(len(cuts)) if which is None else which):
            if not 0 <= c < len(cuts):
                continue
            lo = cuts[c - 1] if c else 0
            hi = cuts[c + 1] if c + 1 < len(cuts) else n
            best = _best_split(mom, cut_ok, lo, hi, m)
            if best is not None and best[1] != cuts[c]:
                cur = float(mom.rss(lo, cuts[c]) + mom.rss(cuts[c], hi))
                if best[0] < cur:
                    cuts[c], moved = best[1], True
        if not moved:
            break
    return cuts


def _score(mom, n, cuts, floor) -> float:
    bounds = np.array([0, *cuts, n])
    return bic(float(mom.rss(bounds[:-1], bounds[1:]).sum()), n, len(cuts), floor)


def _top_down(mom, cut_ok, n, m, floor, max_breaks):
    """Split the segment whose best split lowers the residual most, refine, repeat; the
    BIC-best cut set along the way."""
    cuts: list[int] = []
    best = (_score(mom, n, cuts, floor), [])
    while len(cuts) < max_breaks:
        bounds = [0, *cuts, n]
        options = []
        for i, j in zip(bounds[:-1], bounds[1:]):
            sp = _best_split(mom, cut_ok, i, j, m)
            if sp is not None:
                options.append((float(mom.rss(i, j)) - sp[0], sp[1]))
        if not options:
            break
        cuts = _refine(mom, cut_ok, n, m, sorted(cuts + [max(options)[1]]))
        score = _score(mom, n, cuts, floor)
        if score < best[0]:
            best = (score, list(cuts))
    return best[1]


def _bottom_up(mom, cut_ok, n, m, floor, max_breaks):
    """Merge the neighbours whose merge costs least, from the finest segmentation, refining the
    cuts left; the BIC-best cut set along the way."""
    cuts = []
    last = 0
    for k in range(m, n - m + 1):
        if cut_ok[k] and k - last >= m and n - k >= m:
            cuts.append(k)
            last = k
    best = None
    while True:
        if len(cuts) <= max_breaks:
            score = _score(mom, n, cuts, floor)
            if best is None or score < best[0]:
                best = (score, list(cuts))
        if not cuts:
            break
        if len(cuts) > 2 * max_breaks:
            bounds = np.array([0, *cuts, n])
            rss = mom.rss(bounds[:-1], bounds[1:])
            cost = mom.rss(bounds[:-2], bounds[2:]) - rss[:-1] - rss[1:]
            gone = int(np.argmin(cost))
            del cuts[gone]
            cuts = _refine(mom, cut_ok, n, m, cuts, (gone - 1, gone))
        else:
            # near the answer, a removal is judged after its neighbours moved: two cuts
            # straddling one breakpoint must not outlive a real one
            options = []
            for c in range(len(cuts)):
                trial = _refine(mom, cut_ok, n, m, cuts[:c] + cuts[c + 1:], (c - 1, c))
                options.append((_score(mom, n, trial, floor), trial))
            cuts = _refine(mom, cut_ok, n, m, min(options)[1])
    return best[1]
