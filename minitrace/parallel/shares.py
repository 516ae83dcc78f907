"""Which worker does which ranks: contiguous ranges (a trace is rank-major, so each worker's
part is one slice of every column) balanced by the work they hold (raw bytes), not by count."""
from __future__ import annotations

import numpy as np

#: Work counted for every rank besides its bytes (a file to open, a header, tables).
RANK_COST = 4096


def contiguous_shares(weights: np.ndarray, k: int) -> list[tuple[int, int]]:
    """``k`` ranges [lo, hi) covering 0..len(weights) in order, each cut where the running
    total of ``weights`` (+ RANK_COST each) is closest to an equal share (some may be empty
    when there are fewer items than ranges)."""
    w = np.asarray(weights, np.float64) + RANK_COST
    prefix = np.concatenate([[0.0], np.cumsum(w)])
    targets = prefix[-1] * np.arange(1, k) / k
    right = np.searchsorted(prefix, targets).clip(1, len(w))
    nearer_left = (targets - prefix[right - 1]) < (prefix[right] - targets)
    cuts = np.maximum.accumulate(np.where(nearer_left, right - 1, right)) if k > 1 else \
        np.zeros(0, np.int64)
    bounds = [0, *cuts.tolist(), len(w)]
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
