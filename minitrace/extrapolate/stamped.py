"""The call signatures of an extrapolated trace without hashing every action of it.

:func:`.build.materialize` stamps each rank class's program out once per rank of the class; the
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

from dataclasses import dataclass

import numpy as np

from ..compress import signatures as SG
from ..model import NONE, TraceColumns


def samples(ranks: np.ndarray) -> np.ndarray:
    """Which of a class's ranks (positions in ``ranks``) are encoded: first, middle, last
    (none of a class without ranks)."""
    if not len(ranks):
        return np.zeros(0, np.int64)
    return np.unique([0, len(ranks) // 2, len(ranks) - 1])


@dataclass
class Stamps:
    """The signature table of the sampled ranks, and per class the ids of its ranks' actions
    and their new request ids (the same for each of its ranks; empty for a class without
    ranks)."""

    table: np.ndarray
    vec_offsets: np.ndarray
    vec_values: np.ndarray
    ids: list
    news: list

    def signatures(self, which: np.ndarray) -> SG.Signatures:
        """Every rank's, ``which`` the class of each rank: every action's id in rank-major
        order and the ranks' new request ids."""
        ids = np.concatenate([self.ids[k] for k in which.tolist()] + [np.zeros(0, np.int64)])
        return SG.Signatures(self.table, ids.astype(np.int64, copy=False), self.vec_offsets,
                             self.vec_values, *self.requests(which))

    def requests(self, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(every rank's new request ids, rank-major; each rank's offset into them)."""
        counts = np.array([len(n) for n in self.news], np.int64)[which]
        return (np.concatenate([self.news[k] for k in which.tolist()] +
                               [np.zeros(0, np.int64)]),
                np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))


def stamp(sampled: list, owners: list[np.ndarray], nranks: int) -> Stamps | None:
    """Each class's signatures from its sampled ranks; None when they differ (then every
    action must be encoded).

    Parameters
    ----------
    sampled : list
        Per class, ``(actions, peers, vectors)``: the class program's actions (its
        rank-independent columns), and the peer column and vector entries of its sampled
        ranks (:func:`samples`), (samples, actions) and (samples, entries).
    owners : list of ndarray
        Per class, its ranks at the target (ascending).
    nranks : int
        Ranks of the trace.

    Returns
    -------
    Stamps or None
        The signature table as :func:`compress.signatures.encode` would give it up to the
        order of its rows and of the vector contents, and each class's ids and new request
        ids.
    """
    picked = []                                    # (rank, class, row in its samples)
    for k, r in enumerate(owners):
        picked += [(int(r[i]), k, j) for j, i in enumerate(samples(r))]
    picked.sort()
    parts, vecs, lengths = [], [], np.zeros(nranks, np.int64)
    for rank, k, j in picked:
        a = sampled[k][0].copy()
        a["peer"] = sampled[k][1][j]
        vec = np.asarray(sampled[k][2][j], np.int64)
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
    empty = np.zeros(0, np.int64)
    return Stamps(sig.table, sig.vec_offsets, sig.vec_values,
                  [ids.get(k, empty) for k in range(len(owners))],
                  [news.get(k, empty) for k in range(len(owners))])


def signatures(copies: list, owners: list[np.ndarray], which: np.ndarray,
               nranks: int) -> SG.Signatures | None:
    """Every rank's signatures (:meth:`Stamps.signatures`), stamped from its class's sampled
    ranks (:func:`stamp`); ``copies``: per class, ``(actions, peers, vectors)`` with the peer
    column and vector entries of each of its ranks, (ranks, actions) and (ranks, entries);
    ``which``: the class of each rank.  None when a class's samples differ."""
    stamps = stamp([(a, peers[samples(r)], vec[samples(r)])
                    for (a, peers, vec), r in zip(copies, owners)], owners, nranks)
    return None if stamps is None else stamps.signatures(which)
