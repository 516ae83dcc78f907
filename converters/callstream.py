"""Per-rank assembly of MPI actions from an enter/leave event stream, record by record: the TAU
reader's path for what its column decoder (tau_vector.py) does not take (the OTF2 reader works
on whole columns instead: otf2_columns.py).

TAU records a call as a region entered and left, with message events in between.  A
``RankStream`` turns the outermost MPI region into one action row, counts MPI functions the model
has no kind for, turns the time spent outside MPI calls between ``init`` and ``finalize`` into
``compute`` actions (volume in seconds) and optionally keeps user regions as markers.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

import numpy as np

from minitrace import kinds as K
from minitrace.errors import MinitraceError
from minitrace.model import ACTION_DTYPE, EMPTY_ROW, TraceBuilder, TraceColumns

# Positions in a row (a mutable list in ACTION_DTYPE field order, turned into an action by
# TraceBuilder.extend at the end).
KIND, FLAGS, PEER, TAG, COMM, BSENT, BRECV, VOLUME, REQUEST, T0, T1 = map(
    ACTION_DTYPE.names.index, ("kind", "flags", "peer", "tag", "comm", "bytes_sent",
                               "bytes_recv", "volume", "request", "t_start", "t_end"))
#: MPI functions that do not become actions: communicator management, because TAU does not
#: record its arguments (the OTF2 reader keeps the constructors: ``mpi_kind(name, True)``), and
#: names of minitrace's own non-MPI kinds (``MPI_Compute`` is no MPI call).
_NOT_CALLS = K.COMM_KINDS | K.NON_MPI
_C = K.CODE


def _row(kind: str, t0: float, t1: float = np.nan) -> list:
    row = list(EMPTY_ROW)
    row[KIND], row[T0], row[T1] = _C[kind], t0, t1
    return row


@lru_cache(maxsize=4096)
def mpi_kind(name: str, comm_calls: bool = False) -> str | None:
    """Kind of an MPI function name (``MPI_Isend``, ``MPI_Isend()``, ``MPI_Allreduce_c``), or
    None when the model has no action for it (``MPI_Comm_rank``, ``MPI_Wtime``...).
    Communicator constructors (``MPI_Comm_split``...), ``MPI_Comm_free`` and ``MPI_Comm_size``
    (calls the recorder keeps) have a kind only with ``comm_calls``."""
    base = name.strip()
    if base.endswith("()"):
        base = base[:-2].rstrip()
    if not base.upper().startswith("MPI_"):
        return None
    base = base[4:].lower()
    if base.endswith("_c") and base[:-2] in _C:
        base = base[:-2]
    base = {"init_thread": "init"}.get(base, base)
    if comm_calls and (base in K.NEW_COMM_KINDS or base in ("comm_free", "comm_size")):
        return base
    return base if base in _C and base not in _NOT_CALLS else None


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
        row = _row(kind, t)
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
        row = _row("region_begin" if begin else "region_end", t, t)
        row[TAG] = idx
        self.rows.append(row)
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
            t0, t1, seconds = self._gap
            row = _row("compute", t0, t1)
            row[VOLUME] = seconds
            self.rows.append(row)
            self._gap = None


def build(streams: list[RankStream], comms: dict, strings: list[str], meta: dict) -> TraceColumns:
    """One TraceColumns from the ranks' streams, with what was dropped on the way in ``meta``
    (``volume_unit`` seconds)."""
    dropped = Counter()
    for s in streams:
        dropped.update(s.dropped)
    if dropped:
        meta["dropped_mpi_calls"] = dict(sorted(dropped.items()))
    meta.setdefault("volume_unit", "seconds")
    b = TraceBuilder(len(streams), meta)
    for r, s in enumerate(streams):
        try:
            b.extend(r, s.rows, s.vecs)
        except OverflowError:   # e.g. a message length or request id near 2**64
            raise MinitraceError(f"rank {r}: a value beyond its column's range (a corrupt "
                                 f"event?)") from None
    for cid, members in comms.items():
        b.add_comm(cid, members)
    for name in strings:
        b.string(name)
    return b.build()
