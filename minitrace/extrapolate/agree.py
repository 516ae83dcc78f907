"""One size per message at the target.  A send's size is its class's law and the matching
receive's is the receiving class's, fitted apart: where the classes' typical sizes differ (a
class's sizes are its ranks' lower median; a block of n cells over P ranks is one cell wider
at the low ranks) their laws round to other sizes: from 4, 6, 8 ranks to 16, rank 1 received
496 B of rank 0's 509 B send (tests/test_extrapolate_bytes.py).  The messages of a few ranks
of each class and their partners are matched at the target as the validator matches them
(the n-th send of a (source, destination, tag, communicator) stream meets its n-th receive);
the calls so linked, in every class, take one size: the one most of their messages carry."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .. import kinds as K
from ..validate import point_to_point as VP
from . import grid_comms as GC

_SENDS = K.mask(K.SENDS)
_RECVS = K.mask(K.RECVS)
_BOTH = K.mask(K.SENDRECVS | K.NONBLOCKING_SENDRECVS)


def _columns(c) -> tuple:
    """(sends, receives, sendrecvs): a class's point-to-point actions on a world-like
    communicator (a row or column's peers are ranks of that communicator)."""
    a = c.actions
    plain = ~GC.is_label(a["comm"])
    return (np.flatnonzero(_SENDS[a["kind"]] & plain), np.flatnonzero(_RECVS[a["kind"]] & plain),
            np.flatnonzero(_BOTH[a["kind"]] & plain & (a["vec_len"] >= 2)))


def _sample(progs, which: np.ndarray) -> np.ndarray:
    """A rank of each class per distinct set of its partners' classes (an interior rank
    next to an edge has other partners than one in the middle) and the partners of those;
    each class's peers placed for its distinct peer entries only (a large target's every
    action at every rank would be the trace)."""
    picked = []
    for c in progs.classes:
        s, r, sr = _columns(c)
        cols = np.concatenate([s, r, sr])
        if not len(cols):
            continue
        _, one = np.unique(np.stack([c.actions["peer"][cols], c.peer_rel[cols]], axis=1),
                           axis=0, return_index=True)
        view = replace(c, actions=c.actions[cols[one]], peer_rel=c.peer_rel[cols[one]])
        peers = view.peers(np.arange(len(c.ranks)), progs.nranks, progs.grid)
        nb = np.where(peers >= 0, which[np.clip(peers, 0, progs.nranks - 1)], -1)
        _, first = np.unique(nb, axis=0, return_index=True)
        picked += [c.ranks[first], peers[first][peers[first] >= 0]]
        if len(sr):                      # a sendrecv's source: its vector's first entry
            vstart = np.cumsum(c.actions["vec_len"]) - c.actions["vec_len"]
            src = c.vector_rows(first, progs.nranks, progs.grid)[:, vstart[sr]]
            picked.append(src[src >= 0])
    return np.unique(np.concatenate(picked)) if picked else np.zeros(0, np.int64)


def _halves(progs, which: np.ndarray, ranks: np.ndarray, starts: np.ndarray):
    """(sends, receives) of ``ranks`` as frames: stream, order in the rank's program, node
    (the class program's call, :func:`agree`) and bytes."""
    sends, recvs = [], []
    place = np.zeros(progs.nranks, np.int64)
    for c in progs.classes:
        place[c.ranks] = np.arange(len(c.ranks))
    for k, c in enumerate(progs.classes):
        mine = ranks[which[ranks] == k]
        s, r, sr = _columns(c)
        if not len(mine) or not (len(s) + len(r) + len(sr)):
            continue
        a = c.actions
        peers = c.peers(place[mine], progs.nranks, progs.grid)
        vstart = np.cumsum(a["vec_len"]) - a["vec_len"]

        def frame(cols, src, dst, tag, field, node):
            def full(x):
                return np.broadcast_to(x, (len(mine), len(cols))).ravel()
            return pd.DataFrame({"src": full(src), "dst": full(dst), "tag": full(tag),
                                 "comm": full(a["comm"][cols]), "order": full(cols),
                                 "node": full(node + cols), "bytes": full(a[field][cols])})
        me = mine[:, None]
        for cols in (s, sr):
            sends.append(frame(cols, me, peers[:, cols], a["tag"][cols], "bytes_sent",
                               starts[k]))
        recvs.append(frame(r, peers[:, r], me, a["tag"][r], "bytes_recv", starts[k] + len(a)))
        if len(sr):             # the receive half: vector [source, tag]
            vec = c.vector_rows(place[mine], progs.nranks, progs.grid)
            recvs.append(frame(sr, vec[:, vstart[sr]], me, c.vectors[vstart[sr] + 1],
                               "bytes_recv", starts[k] + len(a)))
    return pd.concat(sends, ignore_index=True), pd.concat(recvs, ignore_index=True)


def agree(progs) -> int:
    """Give each send and its matching receive in ``progs`` (:class:`.build.Programs`) one
    size, the class programs' ``bytes_sent`` and ``bytes_recv`` changed in place; how many
    of their calls changed."""
    which = progs.which()
    ranks = _sample(progs, which)
    sizes = np.array([len(c.actions) for c in progs.classes], np.int64)
    starts = np.concatenate([[0], np.cumsum(2 * sizes)[:-1]])     # bytes_sent, then _recv
    if not len(ranks):
        return 0
    sends, recvs = _halves(progs, which, ranks, starts)
    sends, recvs = sends[sends["dst"] >= 0], recvs[(recvs["src"] >= 0) & (recvs["tag"] >= 0)]
    m = VP.paired(sends, recvs)
    if not len(m):
        return 0
    total = int(2 * sizes.sum())
    links = np.unique(m[["node_s", "node_r"]].to_numpy(np.int64), axis=0)
    graph = coo_matrix((np.ones(len(links)), (links[:, 0], links[:, 1])), (total, total))
    _, comp = connected_components(graph, directed=False)
    votes = pd.DataFrame({"comp": comp[m["node_s"].to_numpy()], "bytes": m["bytes_s"]})
    counted = votes.groupby(["comp", "bytes"]).size().reset_index(name="n")
    best = counted.sort_values(["comp", "n", "bytes"]).groupby("comp").last()["bytes"]
    changed = 0
    for k, c in enumerate(progs.classes):
        n = len(c.actions)
        for field, base in (("bytes_sent", starts[k]), ("bytes_recv", starts[k] + n)):
            nodes = base + np.arange(n)
            linked = np.isin(nodes, links)
            value = best.reindex(comp[nodes[linked]]).to_numpy()
            col = np.flatnonzero(linked)
            differ = c.actions[field][col] != value
            c.actions[field][col[differ]] = value[differ]
            changed += int(differ.sum())
    return changed
