"""Per-rank assembly of MPI actions from an enter/leave event stream (shared by the OTF2 and TAU
readers, which differ only in how they decode records).

Both formats record a call as a region entered and left, with message events in between.  A
``RankStream`` turns the outermost MPI region into one action row, counts MPI functions the model
has no kind for, turns the time spent outside MPI calls between ``init`` and ``finalize`` into
``compute`` actions (volume in seconds) and optionally keeps user regions as markers.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

import numpy as np

from minitrace import kinds as K
from minitrace.model import ACTION_DTYPE, NONE, TraceData, assign_vec_offsets

# Row layout (a mutable list per action, turned into ACTION_DTYPE at the end).
KIND, FLAGS, PEER, TAG, COMM, BSENT, BRECV, VOLUME, REQUEST, VECLEN, T0, T1 = range(12)
_FIELDS = ("kind", "flags", "peer", "tag", "comm", "bytes_sent", "bytes_recv", "volume",
           "request", "vec_len", "t_start", "t_end")
#: MPI-call categories that become actions; communicator management is dropped because neither
#: format records its arguments (the new communicator only appears as a definition).
_KEPT = {"meta", "send", "recv", "p2p", "persist", "complete", "coll", "icoll"}
_C = K.CODE


@lru_cache(maxsize=4096)
def mpi_kind(name: str) -> str | None:
    """Kind of an MPI function name (``MPI_Isend``, ``MPI_Isend()``, ``MPI_Allreduce_c``), or
    None when the model has no action for it (``MPI_Comm_rank``, ``MPI_Wtime``...)."""
    base = name.strip()
    if base.endswith("()"):
        base = base[:-2].rstrip()
    if not base.upper().startswith("MPI_"):
        return None
    base = base[4:].lower()
    if base.endswith("_c") and base[:-2] in _C:
        base = base[:-2]
    base = {"init_thread": "init"}.get(base, base)
    if base in ("compute", "sleep", "abort", "region_begin", "region_end", "pause", "resume"):
        return None
    kind = base if base in _C else None
    return kind if kind and K.CATEGORY[kind] in _KEPT else None


class RankStream:
    """Actions of one rank, built as its events arrive in time order."""

    def __init__(self, strings: list[str] | None = None):
        self.rows: list[list] = []
        self.vecs: dict[int, list[int]] = {}       # row index -> vector entries
        self.strings = strings                     # None: user regions are dropped
        self.dropped: Counter = Counter()          # MPI functions without a kind
        self.depth = 0                             # nesting of MPI regions
        self.current: list | None = None           # row of the open outermost MPI call
        self.current_index = -1
        self._last_t: float | None = None          # end of the last call (None: not tracking)
        self._gap = None                           # pending compute [t0, t1, seconds]
        self._finalized = False

    # -- calls -----------------------------------------------------------------------------
    def enter_mpi(self, name: str, t: float) -> list | None:
        """An MPI region was entered; returns the new action row (None when nested/dropped)."""
        self.depth += 1
        if self.depth > 1:
            return None
        self._note_gap(t)
        kind = mpi_kind(name)
        if kind is None:
            self.dropped[name.strip().removesuffix("()").strip()] += 1
            self.current, self.current_index = None, -1
            return None
        self._flush_gap()
        row = [_C[kind], 0, NONE, NONE, 0, 0, 0, 0.0, NONE, 0, t, np.nan]
        self.rows.append(row)
        self.current, self.current_index = row, len(self.rows) - 1
        if kind == "finalize":
            self._finalized = True
        return row

    def leave_mpi(self, t: float) -> None:
        """Close the MPI call being recorded (the outermost leave of nested ones) at time ``t``."""
        if self.depth == 0:
            return                                 # a leave without its enter (cut trace)
        self.depth -= 1
        if self.depth:
            return
        if self.current is not None:
            self.current[T1] = t
            if self.current[KIND] == _C["init"]:
                self._last_t = t
        if self._finalized:
            self._last_t = None
        elif self._last_t is not None:
            self._last_t = t
        self.current, self.current_index = None, -1

    def vector(self, row_index: int) -> list[int]:
        """The (mutable) per-action vector of a row, created empty."""
        return self.vecs.setdefault(row_index, [])

    # -- user regions ----------------------------------------------------------------------
    def region(self, name: str, t: float, begin: bool) -> None:
        """Record a user region's begin or end as a marker (only when regions are kept and
        outside MPI calls)."""
        if self.strings is None or self.depth:
            return
        self._note_gap(t)
        self._flush_gap()
        try:
            idx = self.strings.index(name)
        except ValueError:
            self.strings.append(name)
            idx = len(self.strings) - 1
        self.rows.append([_C["region_begin" if begin else "region_end"], 0, NONE, idx, 0, 0, 0,
                          0.0, NONE, 0, t, t])
        if self._last_t is not None:
            self._last_t = t

    # -- compute gaps ----------------------------------------------------------------------
    def _note_gap(self, t: float) -> None:
        if self._last_t is None or not t > self._last_t:
            return
        if self._gap is None:
            self._gap = [self._last_t, t, t - self._last_t]
        else:
            self._gap[1] = t
            self._gap[2] += t - self._last_t
        self._last_t = t

    def _flush_gap(self) -> None:
        if self._gap is not None:
            t0, t1, vol = self._gap
            self.rows.append([_C["compute"], 0, NONE, NONE, 0, 0, 0, vol, NONE, 0, t0, t1])
            self._gap = None


def build(streams: list[RankStream], comms: dict, strings: list[str], meta: dict) -> TraceData:
    """One TraceData from the ranks' streams (rank-major rows, vectors in action order)."""
    counts = [len(s.rows) for s in streams]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    actions = np.zeros(int(offsets[-1]), dtype=ACTION_DTYPE)
    vec_parts: list[list[int]] = []
    base = 0
    for s in streams:
        for i, v in sorted(s.vecs.items()):
            s.rows[i][VECLEN] = len(v)
            if v:
                vec_parts.append(v)
        if s.rows:
            cols = list(zip(*s.rows))
            sl = slice(base, base + len(s.rows))
            for j, f in enumerate(_FIELDS):
                actions[f][sl] = cols[j]
        base += len(s.rows)
    assign_vec_offsets(actions)
    vectors = np.array([x for v in vec_parts for x in v], dtype=np.int64)
    dropped = Counter()
    for s in streams:
        dropped.update(s.dropped)
    if dropped:
        meta["dropped_mpi_calls"] = dict(sorted(dropped.items()))
    meta["volume_unit"] = "seconds"
    meta["nranks"] = len(streams)
    return TraceData(actions, offsets, vectors, comms, strings, meta)
