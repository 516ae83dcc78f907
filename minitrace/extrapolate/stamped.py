"""The call signatures of an extrapolated trace without hashing every action of it.

:func:`.build.build` stamps each rank class's program out once per rank of the class; the
signature of an action (``compress.signatures``: every column but the volume and the times,
peers rank-relative, request ids as tokens) is then the same on every rank of the class,
unless a stamped column differs between them beyond a rank-relative shift (a communicator
per grid row, a torus's wrapped peers).  Encoding a few ranks of each class -- the first,
the middle and the last, where a wrap or an edge would show -- gives every rank's ids and
new request ids; a class whose samples differ makes the whole trace fall back to
``compress``'s own encoding of every action.  At 16,384 ranks that encoding hashed 80 M
actions; the samples are a few hundred thousand.
"""
from __future__ import annotations

import numpy as np

from ..compress import signatures as SG
from ..model import NONE, TraceColumns


def samples(ranks: np.ndarray) -> np.ndarray:
    """Which of a class's ranks (positions in ``ranks``) are encoded: first, middle, last."""
    return np.unique([0, len(ranks) // 2, len(ranks) - 1])


def signatures(copies: list, owners: list[np.ndarray], which: np.ndarray,
               nranks: int) -> SG.Signatures | None:
    """Every rank's signatures, stamped from its class's sampled ranks; None when a class's
    samples differ (then every action must be encoded).

    Parameters
    ----------
    copies : list
        Per class, ``(actions, peers, vectors)``: the class program's actions (its
        rank-independent columns), and the peer column and vector entries of each of its
        ranks, (ranks, actions) and (ranks, entries).
    owners : list of ndarray
        Per class, its ranks at the target (ascending).
    which : ndarray
        The class (index into ``copies``) of each rank.
    nranks : int
        Ranks of the trace.

    Returns
    -------
    Signatures or None
        The signature table, every action's id in rank-major order and the ranks' new
        request ids, as :func:`compress.signatures.encode` would give them up to the order
        of the table's rows and of the vector contents.
    """
    picked = []                                    # (rank, class, position in its class)
    for k, r in enumerate(owners):
        if len(r):                                 # (a class no rank of the target has)
            picked += [(int(r[i]), k, int(i)) for i in samples(r)]
    picked.sort()
    parts, vecs, lengths = [], [], np.zeros(nranks, np.int64)
    for rank, k, i in picked:
        a = copies[k][0].copy()
        a["peer"] = copies[k][1][i]
        vec = np.asarray(copies[k][2][i], np.int64)
        local = np.cumsum(a["vec_len"]) - a["vec_len"]
        a["vec_off"] = np.where(a["vec_len"] > 0, local + sum(len(v) for v in vecs), NONE)
        parts.append(a)
        vecs.append(vec)
        lengths[rank] = len(a)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    sample = TraceColumns(np.concatenate(parts), offsets,
                          np.concatenate(vecs + [np.zeros(0, np.int64)]))
    sig = SG.encode(sample)
    new_counts = np.diff(sig.new_request_offsets)
    ids, news = {}, {}
    for rank, k, _ in picked:
        mine = sig.ids[offsets[rank]:offsets[rank + 1]]
        new = sig.new_requests[sig.new_request_offsets[rank]:
                               sig.new_request_offsets[rank] + new_counts[rank]]
        if k in ids and not (np.array_equal(ids[k], mine) and np.array_equal(news[k], new)):
            return None
        ids.setdefault(k, mine)
        news.setdefault(k, new)
    order = which.tolist()
    counts = np.array([len(news.get(k, ())) for k in range(len(owners))], np.int64)[which]
    return SG.Signatures(
        sig.table, np.concatenate([ids[k] for k in order]).astype(np.int64, copy=False),
        sig.vec_offsets, sig.vec_values,
        np.concatenate([news[k] for k in order] + [np.zeros(0, np.int64)]),
        np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
