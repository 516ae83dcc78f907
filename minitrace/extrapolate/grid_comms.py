"""Sub-communicators of a grid: the rows, columns or planes ``MPI_Cart_sub`` makes.  Each
has its own id in a trace, so ranks of different rows would have different programs; here a
``cart_sub`` communicator is named by what it is, a label the same on every rank and at every
scale (its ``remain_dims`` and which such ``cart_sub`` of the rank it is), and at the target
each label becomes one communicator per row of the target grid.  The root of a rooted
collective on one (a world rank, another in each row) is named by its place in the row: its
coordinates along the kept dimensions, counted from both ends (0 the first, -1 the last)."""
from __future__ import annotations

import numpy as np

from .. import kinds as K
from . import grid as G

#: labels are above every communicator id a trace holds
LABEL_BASE = 1 << 28
#: roots on cart_sub communicators: ROOT_BASE + (remain mask << 22) + encoded coordinates
ROOT_BASE = 1 << 29
_ROOTED = K.mask(K.ROOTED)


def labels(data) -> dict:
    """{communicator id: label} for the trace's cart_sub communicators."""
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
    return out


def _remain(label: int, ndims: int) -> np.ndarray:
    return np.array([(((label - LABEL_BASE) // 64) >> k) & 1 for k in range(ndims)], bool)


def roots(grid, labelled_comm: np.ndarray, kind: np.ndarray, peer: np.ndarray):
    """(rows, codes): the rooted collectives on cart_sub communicators (``labelled_comm``:
    each action's communicator, labels in place of cart_sub ids) and their roots as places
    in the row."""
    rows = np.flatnonzero(_ROOTED[kind] & is_label(labelled_comm) & (peer >= 0))
    codes = np.zeros(len(rows), np.int64)
    for label in np.unique(labelled_comm[rows]):
        at = labelled_comm[rows] == label
        keep = _remain(int(label), grid.ndims)
        c = grid.coords(peer[rows[at]])
        dims = np.array(grid.dims)
        place = np.where(keep, np.where(c < (dims + 1) // 2, c, c - dims), 0)
        mask = int(sum(int(x) << k for k, x in enumerate(keep)))
        codes[at] = ROOT_BASE + (mask << 22) + G.encode(place)
    return rows, codes


def place_roots(peers: np.ndarray, ranks: np.ndarray, grid) -> np.ndarray:
    """``peers`` (len(ranks), actions) with each root code made the world rank of that place
    in the rank's row of the target grid."""
    coded = peers >= ROOT_BASE
    if not coded.any():
        return peers
    rank = np.broadcast_to(ranks[:, None], peers.shape)[coded]
    code = peers[coded] - ROOT_BASE
    keep = ((code >> 22)[:, None] >> np.arange(grid.ndims)) & 1
    place = G.decode(code & ((1 << 22) - 1), grid.ndims)
    c = np.where(keep == 1, place % np.array(grid.dims), grid.coords(rank))
    out = peers.copy()
    out[coded] = grid.rank(c)
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
        dropped = list(np.flatnonzero(~_remain(label, grid.ndims)))
        key = np.ravel_multi_index(tuple(coords[:, k] for k in dropped),
                                   tuple(grid.dims[k] for k in dropped)) if dropped else \
            np.zeros(grid.size, np.int64)
        groups, inverse = np.unique(key, return_inverse=True)
        ids[label] = next_id + inverse
        for g in range(len(groups)):
            comms[next_id + g] = ranks[inverse == g].astype(np.int32)
        next_id += len(groups)
    return ids, comms
