"""Commuting operations in a canonical order, so that rank classes follow what a rank does and
not the order a hash table returned its neighbours in (HPCCG's interior ranks post
``irecv +1, irecv -1`` or ``irecv -1, irecv +1`` depending on the rank).

Reordered, each run of consecutive rows of one of these kinds on a rank:

* non-blocking posts (``irecv`` and ``isend``, mixed): posted operations commute, the receives
  first (CloverLeaf posts a send and a receive per direction, left then right, its edge ranks
  one direction's: ordered by kind, every position's posts are one run of receives and one
  of sends, composable per direction).  Receives from MPI_ANY_SOURCE only when all of the
  run's receives are, with one tag: which message each matched was the arrival order's choice
  (HPCCG's set-up), they are sorted by the peer they resolved to; an MPI_ANY_TAG or
  unresolved receive keeps its run as recorded;
* blocking sends right after a run of receives (the receives a code posts before it sends, so
  that the sends cannot wait on one another);
* single waits whose requests were all posted by one reordered run (HPCCG waits in the order
  it posted): sorted by where their requests now are; a ``waitall``'s or a ``testall``'s list
  likewise (it completes all its requests or none: its order means nothing);
* runs of ``waitany`` whose completed requests were all posted by one reordered run, likewise
  (miniGhost completes a dimension's sends and receives with one waitany each: which request
  each returned was the arrival order's choice, 2 to 4 orders among the ranks of a position).

The order is by kind (receives before sends), tag, then signed peer offset (``-1`` before
``+1`` at every scale; tag first because on 2 ranks both neighbours are one peer, and a code
that tags its directions keeps their order there too); a stable sort, so two operations of
one kind with the same peer and tag keep their recorded order (MPI's non-overtaking rule).
Rows carrying vectors are never moved, and timestamps stay where they were (each row slot
keeps its times: the trace's clock still runs forward).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import kinds as K
from ..model import TraceColumns
from . import grid as GR

_POSTS = (K.code("irecv"), K.code("isend"))
_SEND, _WAIT = K.code("send"), K.code("wait")
_ALL_OR_NONE = K.mask(K.ALL_OR_NONE_COMPLETIONS)
_WAITANY = K.code("waitany")
_KEPT_IN_PLACE = ("t_start", "t_end")
_VECTOR_COMPLETION = K.mask(K.MULTI_COMPLETIONS)
_COMPLETION = K.mask(K.COMPLETIONS)
_CREATES = K.mask(K.REQUEST_KINDS)


def _runs(cls: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and stop rows of each maximal run of equal non-zero ``cls`` on one rank."""
    edge = np.r_[True, (cls[1:] != cls[:-1]) | (rank[1:] != rank[:-1])]
    starts = np.flatnonzero(edge)
    stops = np.r_[starts[1:], len(cls)]
    keep = (cls[starts] != 0) & (stops - starts > 1)
    return starts[keep], stops[keep]


def canonical(data: TraceColumns, grid=None) -> tuple[TraceColumns, int]:
    """``data`` with its commuting operations in canonical order, and how many rows moved.
    On a process ``grid`` (:class:`.grid.Grid`) the order is by grid offset, dimension 0
    first (the signed rank offset of a neighbour changes its order with the extents, and
    wraps past half the world: ``+9`` of 18 ranks is read ``-9``).
    Compute rows are not operations: they keep their slots (the work between two calls stays
    between the n-th and the n+1-th call), the calls move among the calls' slots.  A reordered
    run's request ids are renamed to increase with the new order, up to each one's completion,
    so that the waits that follow name them alike on every rank."""
    a = data.actions
    if not len(a):
        return data, 0
    calls = np.flatnonzero(a["kind"] != K.code("compute"))
    c = a[calls]
    rank = data.rank_of(calls)
    kind, peer = c["kind"], c["peer"].astype(np.int64)
    P = data.nranks
    offset = np.where(peer >= 0, (peer - rank + P // 2) % P - P // 2, peer)
    if grid is not None:
        known = (peer >= 0) & (peer < P)
        steps = grid.offsets(rank[known], peer[known])
        weights = (2 * GR.REACH + 1) ** np.arange(grid.ndims - 1, -1, -1)
        offset[known] = ((steps + GR.REACH) * weights).sum(axis=1)
    plain = c["vec_len"] <= 0
    cls = np.zeros(len(c), np.int8)
    for code, value in ((_POSTS[0], 1), (_POSTS[1], 1), (_SEND, 3), (_WAIT, 4), (_WAITANY, 5)):
        cls[(kind == code) & plain] = value
    receive = kind == _POSTS[0]
    any_source = (c["flags"] & K.FLAG_ANY_SOURCE) != 0
    unknown = (c["flags"] & (K.FLAG_ANY_TAG | K.FLAG_UNRESOLVED)) != 0
    order = np.arange(len(c))
    request = c["request"].copy()
    vectors = data.vectors.copy()
    rank_end = np.searchsorted(rank, rank, side="right")
    posted: dict = {}            # (rank, request) -> the index of the call that now posts it
    for s, e in zip(*(x.tolist() for x in _runs(cls, rank))):
        kind_of_run, r = int(cls[s]), int(rank[s])
        if kind_of_run == 3 and not (s > 0 and receive[s - 1] and rank[s - 1] == r):
            continue            # blocking sends only after a run of receives
        wild, tags = any_source[s:e][receive[s:e]], c["tag"][s:e][receive[s:e]]
        if kind_of_run == 1 and (unknown[s:e].any() or wild.any() and not (
                wild.all() and (tags == tags[0]).all())):
            continue            # wildcards only when they are all alike (interchangeable)
        if kind_of_run in (4, 5):
            where = [posted.get((r, int(q))) for q in request[s:e].tolist()]
            if None not in where:
                order[s:e] = s + np.argsort(where, kind="stable")
            continue
        order[s:e] = s + np.lexsort((offset[s:e], c["tag"][s:e], ~receive[s:e]))
        if kind_of_run == 1:
            old = request[order[s:e]]
            new = np.sort(request[s:e])
            _rename(dict(zip(old.tolist(), new.tolist())), request, vectors, c, calls, e,
                    int(rank_end[s]))
            request[order[s:e]] = new
            posted.update({(r, q): s + i for i, q in enumerate(new.tolist())})
    moved = int((order != np.arange(len(c))).sum())
    if not moved:
        return data, 0
    c["request"] = request
    out = a.copy()
    out[calls] = c[order]
    for f in _KEPT_IN_PLACE:
        out[f] = a[f]
    return replace(data, actions=out, vectors=_sorted_request_lists(out, vectors,
                                                                    data.rank_of(), posted)), \
        moved


def _rename(names: dict, request: np.ndarray, vectors: np.ndarray, c: np.ndarray,
            calls: np.ndarray, start: int, stop: int) -> None:
    """Rename requests ``names`` (old -> new id) in the calls ``start:stop`` of one rank, each up
    to the first completion that names it or a new request that takes its id."""
    names = {o: n for o, n in names.items() if o != n}
    for j in range(start, stop):
        if not names:
            return
        k = int(c["kind"][j])
        if _VECTOR_COMPLETION[k] and c["vec_len"][j] > 0:
            off = int(c["vec_off"][j])
            span = vectors[off:off + int(c["vec_len"][j])]
            hit = [q for q in span.tolist() if q in names]
            vectors[off:off + len(span)] = [names.get(q, q) for q in span.tolist()]
            for q in hit:
                names.pop(q, None)
            continue
        q = int(request[j])
        if q in names:
            request[j] = names[q]
            if _COMPLETION[k]:
                names.pop(q)
        elif _CREATES[k]:
            names.pop(q, None)


def _sorted_request_lists(actions: np.ndarray, vectors: np.ndarray, rank: np.ndarray,
                          posted: dict) -> np.ndarray:
    """Each waitall's and testall's request list in the order its requests are now posted
    (only lists whose every request was posted by a reordered run)."""
    if not posted:
        return vectors
    for i in np.flatnonzero(_ALL_OR_NONE[actions["kind"]] & (actions["vec_len"] > 0)).tolist():
        off, ln = int(actions["vec_off"][i]), int(actions["vec_len"][i])
        reqs = vectors[off:off + ln]
        where = [posted.get((int(rank[i]), int(q))) for q in reqs.tolist()]
        if None not in where:
            vectors[off:off + ln] = reqs[np.argsort(where, kind="stable")]
    return vectors
