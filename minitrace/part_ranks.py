"""A trace over part files (a parallel merge's ``OUT.h5``, minitrace/parallel/parts.py) reads
each part's rows where the part's ranks lie: a part file swapped with another, or a virtual
dataset pointing at the wrong one, would give ranks the actions of others.  Each part names its
ranks (attribute ``ranks``: first, last + 1); the reader checks them against the rows the
action columns' virtual datasets map to it."""
from __future__ import annotations

import os

import h5py
import numpy as np

from .errors import MinitraceError

RANKS = "ranks"


def check(columns: dict, offsets: np.ndarray, path: str) -> None:
    """Refuse ``path`` (one line) when an action column reads a part at rows other than its
    ranks' (``offsets``: the trace's rank offsets); plain columns pass."""
    base = os.path.dirname(os.path.abspath(path))
    reads: dict[str, set] = {}
    for ds in columns.values():
        if isinstance(ds, h5py.Dataset) and ds.is_virtual:
            for m in ds.virtual_sources():
                start, stride, count, block = m.vspace.get_regular_hyperslab()
                reads.setdefault(m.file_name, set()).add(
                    (int(start[0]), int(count[0]) * int(block[0])))
    nranks = len(offsets) - 1
    for name, rows in sorted(reads.items()):
        with h5py.File(os.path.join(base, name), "r") as part:
            r = np.asarray(part.attrs.get(RANKS, []))
        ok = r.shape == (2,) and r.dtype.kind in "iu" and 0 <= r[0] < r[1] <= nranks
        want = (int(offsets[r[0]]), int(offsets[r[1]] - offsets[r[0]])) if ok else None
        if rows != {want}:
            held = f"ranks {r[0]}-{r[1] - 1}" if ok else "no rank range"
            raise MinitraceError(f"part file {name} holds {held} but is read at rows "
                                 f"{sorted(rows)} (parts swapped or damaged)", path)
