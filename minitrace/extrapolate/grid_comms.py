"""Sub-communicators of a grid: the rows, columns or planes ``MPI_Cart_sub`` makes.  Each
has its own id in a trace, so ranks of different rows would have different programs; here a
``cart_sub`` communicator is named by what it is, a label the same on every rank and at every
scale (its ``remain_dims`` and which such ``cart_sub`` of the rank it is), and at the target
each label becomes one communicator per row of the target grid."""
from __future__ import annotations

import numpy as np

from .. import kinds as K
from ..errors import MinitraceError

#: labels are above every communicator id a trace holds
LABEL_BASE = 1 << 28
_ROOTED = K.mask(K.ROOTED)


def labels(data, path: str) -> dict:
    """{communicator id: label} for the trace's cart_sub communicators; MinitraceError for a
    rooted collective on one (its root is a world rank, different in every row)."""
    a = data.actions
    rows = np.flatnonzero(a["kind"] == K.CODE["cart_sub"])
    out = {}
    if not len(rows):
        return out
    rank = data.rank_of(rows)
    seen: dict = {}
    for row, r in zip(rows.tolist(), rank.tolist()):
        mask = int(sum(int(x) << k for k, x in enumerate(data.vector(row))))
        n = seen.get((r, mask), 0)
        seen[(r, mask)] = n + 1
        cid = int(a["request"][row])
        if cid >= 0:
            out[cid] = LABEL_BASE + mask * 64 + n
    rooted = np.flatnonzero(_ROOTED[a["kind"]] & np.isin(a["comm"], list(out)))
    if len(rooted):
        raise MinitraceError(f"{path}: {K.NAME[int(a['kind'][rooted[0]])]} on a cart_sub "
                             "communicator: rooted collectives on sub-communicators are not "
                             "extrapolated (their root is a world rank, another in each row)")
    return out


def relabel(column: np.ndarray, mapping: dict) -> np.ndarray:
    """``column`` (communicator ids) with the cart_sub ones replaced by their labels."""
    if not mapping:
        return column
    keys = np.array(list(mapping), np.int64)
    order = np.argsort(keys)
    keys, vals = keys[order], np.array(list(mapping.values()), np.int64)[order]
    col = column.astype(np.int64)
    at = np.clip(np.searchsorted(keys, col), 0, len(keys) - 1)
    return np.where(keys[at] == col, vals[at], col).astype(column.dtype)


def is_label(values) -> np.ndarray:
    return np.asarray(values) >= LABEL_BASE


def target(grid, used: list, first_id: int):
    """The communicators at the target for each label used: ({label: id of each rank's},
    {id: members})."""
    ranks = np.arange(grid.size)
    coords = grid.coords(ranks)
    ids, comms, next_id = {}, {}, first_id
    for label in sorted(used):
        remain = [(((label - LABEL_BASE) // 64) >> k) & 1 for k in range(grid.ndims)]
        dropped = [k for k in range(grid.ndims) if not remain[k]]
        key = np.ravel_multi_index(tuple(coords[:, k] for k in dropped),
                                   tuple(grid.dims[k] for k in dropped)) if dropped else \
            np.zeros(grid.size, np.int64)
        groups, inverse = np.unique(key, return_inverse=True)
        ids[label] = next_id + inverse
        for g in range(len(groups)):
            comms[next_id + g] = ranks[inverse == g].astype(np.int32)
        next_id += len(groups)
    return ids, comms
