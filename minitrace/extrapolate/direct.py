"""The compressed file of an extrapolated trace written from its rank classes' programs
(:class:`.build.Programs`), no rank's actions made.

A compressed file (docs/FORMAT.md) holds the signature table, one grammar per distinct rank
stream, each rank's new request ids and, per action of a signature that has volumes, its
volume.  Every rank of a class runs the class's program: its signatures are stamped from a
few sampled ranks (:mod:`.stamped`), its grammar is that of the class's first rank, and only
the volumes (each rank's own, spread from the recorded ranks) are made per rank, a block of
ranks at a time.  The file is the one :func:`.build.write` writes of the trace in memory
(tests/test_extrapolate_direct.py); where the signatures cannot be stamped (a communicator
per grid row, a torus's wrapped peers) it is that one, the trace built in memory.
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np

from ..compress import grammar as G
from ..compress import store
from ..compress import volumes as V
from ..compress.files import content_meta
from . import build as B
from . import stamped as SS

#: Actions whose volumes are made at a time (a block of one class's ranks): 32 MB of float64.
BLOCK_ACTIONS = 1 << 22


def write(path: str, progs: B.Programs) -> int:
    """Write the trace of ``progs`` compressed to ``path`` (its provenance in the file's
    ``extrapolated``); the number of actions.

    Parameters
    ----------
    path : str
        The new file.
    progs : Programs
        The classes' programs at the target (:func:`.build.plan`).

    Returns
    -------
    int
        Actions of the trace written.
    """
    stamps = None if progs.per_rank_communicators() else SS.stamp(
        [(p.actions, p.peers(SS.samples(p.ranks), progs.nranks, progs.grid),
          p.vector_rows(SS.samples(p.ranks), progs.nranks, progs.grid))
         for p in progs.classes], [p.ranks for p in progs.classes], progs.nranks)
    if stamps is None:                             # every action encoded
        data = B.materialize(progs)
        B.write(path, data)
        return len(data.actions)
    which = progs.which()
    offsets = np.concatenate([[0], np.cumsum(progs.lengths()[0])]).astype(np.int64)
    has_volume, totals = _volumes_present(progs, stamps)
    volume, vol_offsets = _stored_volumes(progs, stamps, has_volume, which)
    meta = dict(progs.meta)
    meta["extrapolated"] = json.dumps(meta["extrapolated"])
    c = store.Compressed(stamps.table, stamps.vec_offsets, stamps.vec_values,
                         *stamps.requests(which), _grammar(stamps, which), has_volume,
                         offsets, "exact", comms=dict(progs.comms), meta=content_meta(meta))
    _exact_untimed(c, volume, vol_offsets, totals, meta.get("volume_unit", "seconds"))
    store.write(path, c)
    return int(offsets[-1])


def _grammar(stamps: SS.Stamps, which: np.ndarray) -> G.Grammar:
    """The grammar of the whole trace from the first rank of each class: ranks with the same
    stream share their grammar (:func:`.grammar.build`), so the others add nothing."""
    classes, firsts = np.unique(which, return_index=True)
    ordered = classes[np.argsort(firsts)]
    ids = [stamps.ids[k] for k in ordered.tolist()]
    gram = G.build(np.concatenate(ids + [np.zeros(0, np.int64)]),
                   np.concatenate([[0], np.cumsum([len(x) for x in ids])]).astype(np.int64),
                   len(stamps.table))
    at = np.zeros(len(stamps.ids), np.int64)
    at[ordered] = np.arange(len(ordered))
    return dataclasses.replace(gram, rank_grammar=gram.rank_grammar[at[which]])


def _blocks(p: B.ClassProgram, drawn: np.ndarray | None, columns: np.ndarray | None = None):
    """(ranks, their volumes (ranks, actions or ``columns``)) of the class ``p``, a block of
    its ranks at a time."""
    step = max(1, BLOCK_ACTIONS // max(len(p.actions), 1))
    for lo in range(0, len(p.ranks), step):
        ranks = p.ranks[lo:lo + step]
        # (rows in memory order: a rank's sum is then the one of its row in the trace)
        v = np.ascontiguousarray(p.volumes(None if drawn is None else drawn[lo:lo + step],
                                           columns))
        yield ranks, np.broadcast_to(v, (len(ranks), v.shape[1]))


def _volumes_present(progs: B.Programs, stamps: SS.Stamps):
    """(per signature: some action of it has a volume other than +0.0, as
    :func:`.volumes.volume_rows` finds them; each rank's total volume)."""
    has_volume = np.zeros(len(stamps.table), bool)
    totals = np.zeros(progs.nranks, np.float64)
    for p, drawn, ids in zip(progs.classes, progs.draws(), stamps.ids):
        nonzero = np.zeros(len(p.actions), bool)
        for ranks, v in _blocks(p, drawn):
            totals[ranks] = v.sum(axis=1)
            nonzero |= V.volume_rows(v.ravel()).reshape(v.shape).any(axis=0)
        has_volume[ids[nonzero]] = True
    return has_volume, totals


def _stored_volumes(progs: B.Programs, stamps: SS.Stamps, has_volume: np.ndarray,
                    which: np.ndarray):
    """(the volumes of the actions of signatures with volumes, rank-major; each rank's
    offset into them)."""
    columns = [np.flatnonzero(has_volume[ids]) for ids in stamps.ids]
    counts = np.array([len(c) for c in columns], np.int64)[which]
    vol_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    out = np.empty(int(vol_offsets[-1]), np.float64)
    for p, drawn, cols in zip(progs.classes, progs.draws(), columns):
        for ranks, v in _blocks(p, drawn, cols):
            out[(vol_offsets[ranks][:, None] + np.arange(len(cols))).ravel()] = v.ravel()
    return out, vol_offsets


def _exact_untimed(c: store.Compressed, volume: np.ndarray, vol_offsets: np.ndarray,
                   totals: np.ndarray, unit: str) -> None:
    """``c``'s side arrays and attributes as :func:`.store.compress` makes them of an
    untimed trace (an extrapolated one has no times) with exact volumes."""
    stored, divisor, scale = V.quantize(volume, unit)
    c.side = {"volume_offsets": vol_offsets, "volume_totals": totals, "volume": stored}
    c.attrs = {"volumes": "exact", "precision": 0.01}
    if divisor is not None:
        c.attrs["volume_divisor"] = divisor
    if scale is not None:
        c.attrs["volume_scale"] = scale
    if divisor == 1e9 or scale == 1e-9:
        c.attrs["duration_less_volume"] = True
    c.attrs.update({"time_encoding": "untimed", "t0": 0.0})
