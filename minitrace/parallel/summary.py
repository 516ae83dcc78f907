"""The per-rank summary (``minitrace info``, the end of ``minitrace merge``) under ``mpiexec
-n K``: each worker reads and sums its consecutive ranks, worker 0 gathers the rows."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace import open as open_trace
from .shares import contiguous_shares
from .world import World


def summary_parallel(world: World, path: str) -> pd.DataFrame | None:
    """Trace.summary() of ``path``, on worker 0 (None on the others)."""
    def mine():
        with open_trace(path) as t:
            shares = contiguous_shares(np.diff(t.rank_offsets) * 80, world.size)
            return t.summary(range(*shares[world.rank]))
    parts = world.gather(world.step(mine, f"summarizing {path}"))
    return pd.concat(parts) if world.root else None
