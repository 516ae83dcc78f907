"""Message sizes that follow the grid rather than p: under strong scaling a halo face
perpendicular to dimension k holds the local block's extents along the other dimensions,
so its size is ``c * d_k / p`` (``d_k`` the grid's extent along k), or ``a + c * d_k / p``
when the face carries a fixed rim too (UK-MAC CloverLeaf's halos hold the block's edge plus
its corner cells: 8 * (240 / d_y + 5) bytes).  With grids that are not similar from one scale
to the next (2x1, 2x2, 4x2, 4x4) no law of p fits it; this one is exact.  It is tried, for a
call whose peer is along one dimension, before the fits of p (:mod:`.fit`)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import grid as GR

#: largest relative spread of ``size * p / d_k`` over the runs for the law to hold
TOLERANCE = 0.005


@dataclass(frozen=True)
class FaceLaw:
    """``a + c * d_k / p``, the size of a face perpendicular to dimension k (and of a rim,
    ``a``); its value at the target is fixed by the target grid's extent
    (``target_extent``)."""

    c: float
    axis: int
    target_extent: int
    loo_error: float
    threshold: float
    a: float = 0.0               # the fixed rim (0: the face alone)

    @property
    def flagged(self) -> bool:
        return not self.loo_error <= self.threshold

    @property
    def constant(self) -> bool:
        return False

    def __call__(self, p) -> float:
        return self.a + self.c * self.target_extent / float(p)

    def interval(self, p: float) -> tuple[float, float]:
        value = self(p)
        return value * (1 - self.loo_error), value * (1 + self.loo_error)

    def __str__(self) -> str:
        face = f"{self.c:.6g} * d{self.axis} / p"
        return f"{self.a:.6g} + {face}" if self.a else face


def axes(table_rows: np.ndarray, ndims: int) -> np.ndarray:
    """The dimension each leaf's peer is along (-1: none, several, or an absolute peer)."""
    off = GR.decode(table_rows["peer"], ndims)
    along = (off != 0).sum(axis=1) == 1
    return np.where((table_rows["peer_mode"] == 1) & along, np.argmax(off != 0, axis=1), -1)


def face_law(values: np.ndarray, runs: list, axis: int, target: GR.Grid,
             threshold: float, rims: list | None = None) -> FaceLaw | None:
    """The face law of ``values`` (one per run) along ``axis``: ``c * d_k / p`` where it holds
    within TOLERANCE, else ``a + c * d_k / p`` where at least three distinct faces fit it, each
    predicted within TOLERANCE by the line through the others (leave one out), and appended
    to ``rims``; else a law of ``rims`` along ``axis`` that gives every value within
    TOLERANCE (the same message seen in another rank class, recorded at more grids: an
    interior rank exists at fewer scales than a corner); else None."""
    if axis < 0:
        return None
    v = np.asarray(values, float)
    x = np.array([r.grid.dims[axis] / r.nranks for r in runs])
    c = v / x
    if c.mean() <= 0:
        return None
    spread = float(np.abs(c - c.mean()).max() / c.mean())
    if spread <= TOLERANCE:
        return FaceLaw(float(c.mean()), axis, target.dims[axis], spread, threshold)
    law = _rimmed(v, x, axis, target, threshold)
    if law is not None:
        if rims is not None:
            rims.append(law)
        return law
    for known in rims or ():
        if known.axis == axis and (v > 0).all():
            off = float((np.abs(known.a + known.c * x - v) / v).max())
            if off <= TOLERANCE:
                return replace(known, loo_error=max(off, known.loo_error), threshold=threshold)
    return None


def _rimmed(v: np.ndarray, x: np.ndarray, axis: int, target: GR.Grid,
            threshold: float) -> FaceLaw | None:
    """``a + c * x`` through the runs' (x = d_k / p, size) when every run left out is
    predicted within TOLERANCE by the fit on the others (which must span two faces)."""
    if len(np.unique(x)) < 3 or (v <= 0).any():
        return None
    worst = 0.0
    for i in range(len(v)):
        keep = np.arange(len(v)) != i
        if len(np.unique(x[keep])) < 2:
            return None
        c, a = np.polyfit(x[keep], v[keep], 1)
        worst = max(worst, abs(a + c * x[i] - v[i]) / v[i])
    if worst > TOLERANCE:
        return None
    c, a = np.polyfit(x, v, 1)
    if c <= 0:
        return None
    return FaceLaw(float(c), axis, target.dims[axis], worst, threshold, float(a))
