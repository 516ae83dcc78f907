"""Message sizes that follow the grid rather than p: under strong scaling a halo face
perpendicular to dimension k holds the local block's extents along the other dimensions,
so its size is ``c * d_k / p`` (``d_k`` the grid's extent along k).  With grids that are
not similar from one scale to the next (2x1, 2x2, 4x2, 4x4) no law of p fits it; this one
is exact.  It is tried, for a call whose peer is along one dimension, before the fits of
p (:mod:`.fit`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import grid as GR

#: largest relative spread of ``size * p / d_k`` over the runs for the law to hold
TOLERANCE = 0.005


@dataclass(frozen=True)
class FaceLaw:
    """``c * d_k / p``, the size of a face perpendicular to dimension k; its value at the
    target is fixed by the target grid's extent (``target_extent``)."""

    c: float
    axis: int
    target_extent: int
    loo_error: float
    threshold: float

    @property
    def flagged(self) -> bool:
        return not self.loo_error <= self.threshold

    @property
    def constant(self) -> bool:
        return False

    def __call__(self, p) -> float:
        return self.c * self.target_extent / float(p)

    def interval(self, p: float) -> tuple[float, float]:
        value = self(p)
        return value * (1 - self.loo_error), value * (1 + self.loo_error)

    def __str__(self) -> str:
        return f"{self.c:.6g} * d{self.axis} / p"


def axes(table_rows: np.ndarray, ndims: int) -> np.ndarray:
    """The dimension each leaf's peer is along (-1: none, several, or an absolute peer)."""
    off = GR.decode(table_rows["peer"], ndims)
    along = (off != 0).sum(axis=1) == 1
    return np.where((table_rows["peer_mode"] == 1) & along, np.argmax(off != 0, axis=1), -1)


def face_law(values: np.ndarray, runs: list, axis: int, target: GR.Grid,
             threshold: float) -> FaceLaw | None:
    """The face law of ``values`` (one per run) along ``axis``, or None when it does not
    hold within TOLERANCE."""
    if axis < 0:
        return None
    c = np.asarray(values, float) * np.array([r.nranks / r.grid.dims[axis] for r in runs])
    if c.mean() <= 0:
        return None
    spread = float(np.abs(c - c.mean()).max() / c.mean())
    if spread > TOLERANCE:
        return None
    return FaceLaw(float(c.mean()), axis, target.dims[axis], spread, threshold)
