"""The bytes an MPI library copies within a rank in a collective: the rank's own block, from
its send buffer to its receive buffer (alltoall, allgather, a gather's or scatter's root, their
v and non-blocking forms; none with MPI_IN_PLACE).

SimGrid's replay moves only the blocks that go to other ranks, but the copy of a rank's own
block is real work: with 2 ranks an all-to-all of 4 MiB blocks out of the caches took
1.16 ms here, 0.56 ms of it the exchange (a sendrecv) and 0.51 ms the local copy (a memcpy of
the block).  :func:`minitrace.replay.replay` turns these bytes into work at the calibrated copy
rates (``Calibration.copies``)."""
from __future__ import annotations

import numpy as np

from . import kinds as K
from .model import TraceData

_BLOCK_OF = {n: K.BLOCKING_OF.get(n, n) for n in K.ALL_COLLECTIVES}
_FIXED = {"alltoall", "allgather", "gather", "scatter"}
_VECTOR = {"alltoallv", "allgatherv", "gatherv", "scatterv"}


def own_block_bytes(data: TraceData) -> np.ndarray:
    """Bytes each action copies from the rank's send buffer to its receive buffer (int64, one
    per action, 0 for every other action)."""
    a = data.actions
    kind, flags = a["kind"], a["flags"]
    out = np.zeros(len(a), np.int64)
    in_place = (flags & K.FLAG_IN_PLACE) != 0
    sent, recv = a["bytes_sent"].astype(np.int64), a["bytes_recv"].astype(np.int64)
    for name in {n for n, b in _BLOCK_OF.items() if b in _FIXED | _VECTOR}:
        rows = np.flatnonzero((kind == K.code(name)) & ~in_place)
        if not len(rows):
            continue
        rule = _BLOCK_OF[name]
        if rule == "alltoall":
            out[rows] = sent[rows] // _members(data, a["comm"][rows])
        elif rule == "allgather":
            out[rows] = sent[rows]
        elif rule == "gather":           # the root receives
            out[rows] = np.where(recv[rows] > 0, sent[rows], 0)
        elif rule == "scatter":          # the root sends
            out[rows] = np.where(sent[rows] > 0, recv[rows], 0)
        else:                            # entry of this rank's own index in the vector
            mine = _own_index(data, rows)
            has = (mine >= 0) & (a["vec_len"][rows] > mine)   # (rooted: the root's vector)
            at = np.where(has, a["vec_off"][rows] + mine, 0)
            got = data.vectors[at] if len(data.vectors) else np.zeros(len(rows), np.int64)
            out[rows] = np.where(has, np.maximum(got, 0), 0)
    return out


def _members(data: TraceData, comms: np.ndarray) -> np.ndarray:
    """Number of members of each communicator id (at least 1)."""
    sizes = {int(c): max(len(data.comms.get(int(c), ())), 1) for c in np.unique(comms)}
    return np.array([sizes[int(c)] for c in comms], np.int64)


def _own_index(data: TraceData, rows: np.ndarray) -> np.ndarray:
    """Index of the acting rank in the communicator of each of ``rows`` (-1 if not a member)."""
    rank = data.rank_of(rows)
    comm = data.actions["comm"][rows]
    out = np.full(len(rows), -1, np.int64)
    for c in np.unique(comm):
        members = np.asarray(data.comms.get(int(c), ()), np.int64)
        sel = comm == c
        where = {int(w): i for i, w in enumerate(members)}
        out[sel] = [where.get(int(r), -1) for r in rank[sel]]
    return out
