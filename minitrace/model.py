"""The in-memory trace: all ranks' actions in one columnar table, plus side tables.

A ``TraceColumns`` is what readers produce and writers consume.  Actions of rank ``r`` are the rows
``rank_offsets[r]:rank_offsets[r+1]`` of ``actions`` in program order.  Per-action vectors live
in one int64 array ``vectors``, in action order (docs/FORMAT.md says what each kind's holds);
``TraceColumns.vector(row)`` is an action's, ``vec_off`` follows from ``vec_len``
(``assign_vec_offsets``).  Communicators map an id to the world ranks of their members, in
communicator-rank order (id 0 is MPI_COMM_WORLD).  Region names are in ``strings`` (the ``tag``
of a region action).  ``TraceBuilder`` is the one way importers, tests and benchmarks assemble a
``TraceColumns`` action by action.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import kinds as K

ACTION_DTYPE = np.dtype([
    ("kind", "u1"), ("flags", "u1"), ("peer", "i4"), ("tag", "i4"), ("comm", "i4"),
    ("bytes_sent", "i8"), ("bytes_recv", "i8"), ("volume", "f8"), ("request", "i8"),
    ("vec_off", "i8"), ("vec_len", "i4"), ("t_start", "f8"), ("t_end", "f8"),
])
#: Value of an empty field: ``peer``/``tag``/``request``/``vec_off`` use -1, times NaN.
NONE = -1
#: A member or peer outside the recorded world (MPI_UNDEFINED: e.g. a spawned process).
UNDEFINED = -32766
VOLUME_UNITS = ("instructions", "flops", "seconds", "cycles")
#: An action with every optional field 'none', as a row in ACTION_DTYPE field order (``kind`` 0).
EMPTY_ROW = (0, 0, NONE, NONE, 0, 0, 0, 0.0, NONE, NONE, 0, np.nan, np.nan)


def empty_actions(n: int) -> np.ndarray:
    """``n`` actions with every optional field set to its 'none' value."""
    return np.full(n, np.array(EMPTY_ROW, dtype=ACTION_DTYPE))


def vec_offsets(vec_len: np.ndarray, base: int = 0) -> np.ndarray:
    """Offsets of vectors stored back to back in action order, from their lengths alone
    (``base``: where the first one starts; NONE for actions without a vector)."""
    lens = np.asarray(vec_len, dtype=np.int64)
    off = base + np.cumsum(lens) - lens
    return np.where(lens > 0, off, NONE)


def assign_vec_offsets(actions: np.ndarray) -> None:
    """Fill ``vec_off`` of a whole trace's actions from their ``vec_len``."""
    actions["vec_off"] = vec_offsets(actions["vec_len"])


def vector_entries(vectors: np.ndarray, vec_len: np.ndarray, vec_off: np.ndarray,
                   rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, value) for every entry of the vectors of ``rows``, in order, from the actions'
    ``vec_len`` and ``vec_off`` (the table's fields, or columns of them: the compressor
    gathers from its columns, twice as fast as from the table's 80-byte rows)."""
    rows = np.asarray(rows, dtype=np.int64)
    lens = np.maximum(vec_len[rows].astype(np.int64), 0)
    total = int(lens.sum())
    if not total:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.repeat(vec_off[rows].astype(np.int64) - (np.cumsum(lens) - lens), lens)
    return np.repeat(rows, lens), vectors[starts + np.arange(total)]


@dataclass
class TraceColumns:
    """A whole trace in memory, as columns (the model layer): what producers build (the merge,
    the importers, :class:`TraceBuilder`) and consumers compute on; ``storage`` writes it,
    :class:`~minitrace.storage.HDF5TraceReader` reads it back, :class:`~minitrace.trace.Trace`
    is the user's view of a file."""

    actions: np.ndarray                      # ACTION_DTYPE, rank-major
    rank_offsets: np.ndarray                 # int64, nranks + 1
    vectors: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    comms: dict[int, np.ndarray] = field(default_factory=dict)
    strings: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    @property
    def nranks(self) -> int:
        """Size of MPI_COMM_WORLD."""
        return len(self.rank_offsets) - 1

    def rank_slice(self, rank: int) -> slice:
        """Rows of ``actions`` that belong to ``rank``."""
        return slice(int(self.rank_offsets[rank]), int(self.rank_offsets[rank + 1]))

    def rank_of(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The rank (int64) of each of ``rows`` (global row numbers), of every row by default."""
        if rows is None:
            return np.repeat(np.arange(self.nranks, dtype=np.int64), np.diff(self.rank_offsets))
        return np.searchsorted(self.rank_offsets, rows, side="right") - 1

    def vector(self, row: int) -> np.ndarray:
        """The vector of action ``row`` (a global row number), empty when it has none."""
        n = int(self.actions["vec_len"][row])
        if n <= 0:
            return np.zeros(0, np.int64)
        off = int(self.actions["vec_off"][row])
        return self.vectors[off:off + n]

    def vector_entries(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, value) for every entry of the vectors of ``rows``, in order: ``vector`` for
        many rows at once (request ids of waitalls, starts of startalls...)."""
        return vector_entries(self.vectors, self.actions["vec_len"], self.actions["vec_off"],
                              rows)

    def vector_item(self, rows: np.ndarray, i, default: int = NONE) -> np.ndarray:
        """Entry ``i`` (one index, or one per row) of each of ``rows``' vectors, ``default``
        where a vector is shorter or ``i`` is negative (e.g. the source, entry 0, of
        sendrecvs)."""
        rows = np.asarray(rows, dtype=np.int64)
        ok = (self.actions["vec_len"][rows] > i) & (np.asarray(i) >= 0)
        at = np.where(ok, self.actions["vec_off"][rows] + i, 0)
        got = self.vectors[at] if len(self.vectors) else np.zeros(len(rows), np.int64)
        return np.where(ok, got, default)

    def __post_init__(self):
        self.rank_offsets = np.asarray(self.rank_offsets, dtype=np.int64)
        if 0 not in self.comms:
            self.comms[0] = np.arange(self.nranks, dtype=np.int32)
        self.meta.setdefault("volume_unit", "seconds")
        self.meta.setdefault("nranks", self.nranks)


class TraceBuilder:
    """Collects actions rank by rank, in each rank's program order, into one TraceColumns.

    ``add(rank, "send", peer=1, tag=0, bytes_sent=8)``; a vector is passed as ``vector=[...]``.
    ``extend`` takes a block of rows an importer kept mutable while reading (OTF2, TAU).  Rows
    become numpy blocks every ``CHUNK_ROWS`` actions, so a large import holds 80 bytes per
    action, not a Python tuple.  (The recorder's merge builds its arrays directly.)
    """

    CHUNK_ROWS = 1 << 16

    def __init__(self, nranks: int, meta: dict | None = None):
        self.nranks = nranks
        self.comms: dict[int, np.ndarray] = {0: np.arange(nranks, dtype=np.int32)}
        self.strings: list[str] = []
        self.meta = dict(meta or {})
        self._rows: list[list[tuple]] = [[] for _ in range(nranks)]   # pending, EMPTY_ROW order
        self._vec: list[list[int]] = [[] for _ in range(nranks)]      # their vector entries
        self._blocks: list[list[np.ndarray]] = [[] for _ in range(nranks)]
        self._vec_blocks: list[list[np.ndarray]] = [[] for _ in range(nranks)]
        self._string_ids: dict[str, int] = {}

    def add(self, rank: int, kind: str, *, peer: int = NONE, tag: int = NONE, comm: int = 0,
            bytes_sent: int = 0, bytes_recv: int = 0, volume: float = 0.0, request: int = NONE,
            flags: int = 0, vector=None, t_start: float = np.nan, t_end: float = np.nan) -> None:
        """Append one action to ``rank``'s program order (fields as in docs/FORMAT.md)."""
        try:
            code = K.CODE[kind]
        except KeyError:
            raise KeyError(f"unknown action kind {kind!r}") from None
        vec_len = 0
        if vector is not None:
            vec_len = len(vector)
            self._vec[rank].extend(vector)
        rows = self._rows[rank]
        rows.append((code, flags, peer, tag, comm, bytes_sent, bytes_recv, volume, request, NONE,
                     vec_len, t_start, t_end))
        if len(rows) >= self.CHUNK_ROWS:
            self._flush(rank)

    def extend(self, rank: int, rows: list, vectors: dict[int, list] | None = None) -> None:
        """Append ``rows`` (sequences in EMPTY_ROW field order, ``kind`` as a code; ``vec_len``
        is ignored) to ``rank``; ``vectors`` maps a row's index in ``rows`` to its vector."""
        self._flush(rank)
        block = np.fromiter(map(tuple, rows), dtype=ACTION_DTYPE, count=len(rows))
        block["vec_len"] = 0
        if vectors:
            idx = sorted(i for i, v in vectors.items() if len(v))
            block["vec_len"][idx] = [len(vectors[i]) for i in idx]
            self._vec_blocks[rank].append(
                np.fromiter((x for i in idx for x in vectors[i]), dtype=np.int64))
        self._blocks[rank].append(block)

    def add_comm(self, comm_id: int, world_ranks) -> None:
        """Declare a communicator: its id and its members' world ranks, in its rank order."""
        self.comms[comm_id] = np.asarray(world_ranks, dtype=np.int32)

    def string(self, s: str) -> int:
        """Index of ``s`` in the string table (added if new)."""
        i = self._string_ids.get(s)
        if i is None:
            i = self._string_ids[s] = len(self.strings)
            self.strings.append(s)
        return i

    def _flush(self, rank: int) -> None:
        """Turn ``rank``'s pending rows and vector entries into numpy blocks."""
        rows, vec = self._rows[rank], self._vec[rank]
        if rows:
            self._blocks[rank].append(np.fromiter(rows, dtype=ACTION_DTYPE, count=len(rows)))
            rows.clear()
        if vec:
            self._vec_blocks[rank].append(np.array(vec, dtype=np.int64))
            vec.clear()

    def build(self) -> TraceColumns:
        """The collected actions as one rank-major TraceColumns."""
        for r in range(self.nranks):
            self._flush(r)
        counts = [sum(len(b) for b in blocks) for blocks in self._blocks]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        blocks = [b for bs in self._blocks for b in bs]
        actions = np.concatenate(blocks) if blocks else np.zeros(0, ACTION_DTYPE)
        vec_blocks = [v for vs in self._vec_blocks for v in vs]
        vectors = np.concatenate(vec_blocks) if vec_blocks else np.zeros(0, np.int64)
        assign_vec_offsets(actions)
        return TraceColumns(actions, offsets, vectors, dict(self.comms), list(self.strings),
                         dict(self.meta))
