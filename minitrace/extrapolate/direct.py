"""The compressed file of an extrapolated trace written from its rank classes' programs
(:class:`.build.Programs`), no rank's actions made.

A compressed file (docs/FORMAT.md) holds the signature table, one grammar per distinct rank
stream, each rank's new request ids and, per action of a signature that has volumes, its
volume.  Every rank of a class runs the class's program: its signatures are stamped from a
few sampled ranks (:mod:`.stamped`), its grammar is that of the class's first rank, and only
the volumes (each rank's own, spread from the recorded ranks) are made per rank, a block of
ranks at a time, gathered from each class's table of the values its ranks can have (each
value quantized once, not once per action).  The file is the one :func:`.build.write` writes of the trace in memory
(tests/test_extrapolate_direct.py); where the signatures cannot be stamped (a communicator
per grid row, a torus's wrapped peers) it is that one, the trace built in memory.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

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
    unit = progs.meta.get("volume_unit", "seconds")
    tables = [_Volumes.of(p, drawn) for p, drawn in zip(progs.classes, progs.draws())]
    has_volume, totals = _volumes_present(progs, stamps, tables)
    volume, vol_offsets = _stored_volumes(progs, stamps, tables, has_volume, which, unit)
    meta = dict(progs.meta)
    meta["extrapolated"] = json.dumps(meta["extrapolated"])
    c = store.Compressed(stamps.table, stamps.vec_offsets, stamps.vec_values,
                         *stamps.requests(which), _grammar(stamps, which), has_volume,
                         offsets, "exact", comms=dict(progs.comms), meta=content_meta(meta))
    _exact_untimed(c, volume, vol_offsets, totals)
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


@dataclass
class _Volumes:
    """A class's volumes as a table of the values its ranks can have (:meth:`.build.
    ClassProgram.table`) and each rank's draws: a rank's volumes are gathered from the table
    without a product; which values some rank takes (``used``) is known without them."""

    values: np.ndarray           # (pool rows, actions)
    column: np.ndarray           # draw column of each action
    drawn: np.ndarray            # (ranks, draw columns): the pool row of each
    used: np.ndarray             # (pool rows, actions): some rank takes that value

    @classmethod
    def of(cls, p: B.ClassProgram, drawn: np.ndarray | None) -> "_Volumes":
        values, column = p.table()
        if drawn is None:                           # the means: every rank takes row 0
            drawn = np.zeros((len(p.ranks), 1), np.int64)
        taken = np.zeros((len(values), drawn.shape[1]), bool)
        taken[drawn, np.arange(drawn.shape[1])] = True
        return cls(values, column, drawn, taken[:, column])

    def blocks(self, table: np.ndarray, columns: np.ndarray):
        """(positions of the class's ranks, their values of ``table`` (pool rows,
        len(columns)) at the actions ``columns``, (ranks, len(columns)) in memory order: a
        rank's sum is the one of its row in the trace), a block of ranks at a time."""
        step = max(1, BLOCK_ACTIONS // max(len(columns), 1))
        at = np.arange(len(columns))
        flat = table.ravel()
        for lo in range(0, len(self.drawn), step):
            rows = self.drawn[lo:lo + step][:, self.column[columns]]   # (may be F-ordered)
            yield slice(lo, lo + step), flat[np.ascontiguousarray(rows * len(columns) + at)]


def _volumes_present(progs: B.Programs, stamps: SS.Stamps, tables: list):
    """(per signature: some action of it has a volume other than +0.0, as
    :func:`.volumes.volume_rows` finds them; each rank's total volume)."""
    has_volume = np.zeros(len(stamps.table), bool)
    totals = np.zeros(progs.nranks, np.float64)
    for p, t, ids in zip(progs.classes, tables, stamps.ids):
        nonzero = (V.volume_rows(t.values.ravel()).reshape(t.values.shape) & t.used).any(axis=0)
        has_volume[ids[nonzero]] = True
        for at, v in t.blocks(t.values, np.arange(len(t.column))):
            totals[p.ranks[at]] = v.sum(axis=1)
    return has_volume, totals


def _stored_volumes(progs: B.Programs, stamps: SS.Stamps, tables: list,
                    has_volume: np.ndarray, which: np.ndarray, unit: str):
    """(the volumes of the actions of signatures with volumes, rank-major, stored as
    :func:`.volumes.quantize` stores them, its divisor and scale; each rank's offset into
    them).  Quantized once per value a rank takes: its choice is that of every value."""
    columns = [np.flatnonzero(has_volume[ids]) for ids in stamps.ids]
    taken = [t.used[:, c] for t, c in zip(tables, columns)]
    stored, divisor, scale = V.quantize(np.concatenate(
        [t.values[:, c][u] for t, c, u in zip(tables, columns, taken)] + [np.zeros(0)]), unit)
    counts = np.array([len(c) for c in columns], np.int64)[which]
    vol_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    out = np.empty(int(vol_offsets[-1]), stored.dtype)
    first = 0
    for p, t, cols, u in zip(progs.classes, tables, columns, taken):
        codes = np.zeros(u.shape, stored.dtype)
        codes[u] = stored[first:first + int(u.sum())]
        first += int(u.sum())
        for at, v in t.blocks(codes, cols):
            out[(vol_offsets[p.ranks[at]][:, None] + np.arange(len(cols))).ravel()] = \
                v.ravel()
    return (out, divisor, scale), vol_offsets


def _exact_untimed(c: store.Compressed, volume: tuple, vol_offsets: np.ndarray,
                   totals: np.ndarray) -> None:
    """``c``'s side arrays and attributes as :func:`.store.compress` makes them of an
    untimed trace (an extrapolated one has no times) with exact volumes, ``volume`` as
    :func:`.volumes.quantize` gives it."""
    stored, divisor, scale = volume
    c.side = {"volume_offsets": vol_offsets, "volume_totals": totals, "volume": stored}
    coded, in_ns = V.quantized_attrs(divisor, scale)
    c.attrs = {"volumes": "exact", "precision": 0.01, **coded}
    if in_ns:
        c.attrs["duration_less_volume"] = True
    c.attrs.update({"time_encoding": "untimed", "t0": 0.0})
