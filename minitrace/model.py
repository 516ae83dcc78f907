"""The in-memory trace: all ranks' actions in one columnar table, plus side tables.

A ``TraceData`` is what readers produce and writers consume.  Actions of rank ``r`` are the rows
``rank_offsets[r]:rank_offsets[r+1]`` of ``actions`` in program order.  Per-peer vectors live in
one int64 array ``vectors``; an action's vector is ``vectors[vec_off:vec_off+vec_len]``.
Communicators map an id to the world ranks of their members, in communicator-rank order
(id 0 is MPI_COMM_WORLD).  Region names are in ``strings`` (the ``tag`` of a region action).
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
VOLUME_UNITS = ("instructions", "flops", "seconds")


def empty_actions(n: int) -> np.ndarray:
    """``n`` actions with every optional field set to its 'none' value."""
    a = np.zeros(n, dtype=ACTION_DTYPE)
    for f in ("peer", "tag", "request", "vec_off"):
        a[f] = NONE
    a["t_start"] = np.nan
    a["t_end"] = np.nan
    return a


@dataclass
class TraceData:
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

    def __post_init__(self):
        self.rank_offsets = np.asarray(self.rank_offsets, dtype=np.int64)
        if 0 not in self.comms:
            self.comms[0] = np.arange(self.nranks, dtype=np.int32)
        self.meta.setdefault("volume_unit", "seconds")
        self.meta.setdefault("nranks", self.nranks)


class TraceBuilder:
    """Collects actions rank by rank (for importers and tests; the recorder builds arrays directly).

    ``add(rank, "send", peer=1, tag=0, bytes_sent=8)``; vectors are passed as ``vector=[...]``.
    """

    def __init__(self, nranks: int, meta: dict | None = None):
        self.nranks = nranks
        self.rows: list[list[tuple]] = [[] for _ in range(nranks)]
        self.vecs: list[list[np.ndarray]] = [[] for _ in range(nranks)]
        self.comms: dict[int, np.ndarray] = {0: np.arange(nranks, dtype=np.int32)}
        self.strings: list[str] = []
        self.meta = dict(meta or {})

    def add(self, rank: int, kind: str, *, peer: int = NONE, tag: int = NONE, comm: int = 0,
            bytes_sent: int = 0, bytes_recv: int = 0, volume: float = 0.0, request: int = NONE,
            flags: int = 0, vector=None, t_start: float = np.nan, t_end: float = np.nan) -> None:
        """Append one action to ``rank``'s program order (fields as in docs/FORMAT.md)."""
        vec_len = 0
        if vector is not None:
            v = np.asarray(vector, dtype=np.int64)
            self.vecs[rank].append(v)
            vec_len = len(v)
        self.rows[rank].append((K.code(kind), flags, peer, tag, comm, bytes_sent, bytes_recv,
                                volume, request, NONE, vec_len, t_start, t_end))

    def add_comm(self, comm_id: int, world_ranks) -> None:
        """Declare a communicator: its id and its members' world ranks, in its rank order."""
        self.comms[comm_id] = np.asarray(world_ranks, dtype=np.int32)

    def string(self, s: str) -> int:
        """Index of ``s`` in the string table (added if new)."""
        try:
            return self.strings.index(s)
        except ValueError:
            self.strings.append(s)
            return len(self.strings) - 1

    def build(self) -> TraceData:
        """The collected actions as one rank-major TraceData."""
        counts = [len(r) for r in self.rows]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        actions = np.array([row for r in self.rows for row in r], dtype=ACTION_DTYPE) \
            if offsets[-1] else np.zeros(0, ACTION_DTYPE)
        vec_parts = [v for r in self.vecs for v in r]
        vectors = np.concatenate(vec_parts) if vec_parts else np.zeros(0, np.int64)
        assign_vec_offsets(actions)
        return TraceData(actions, offsets, vectors, dict(self.comms), list(self.strings),
                         dict(self.meta))


def assign_vec_offsets(actions: np.ndarray) -> None:
    """Vectors are stored in action order, so offsets follow from the lengths alone."""
    lens = actions["vec_len"].astype(np.int64)
    off = np.cumsum(lens) - lens
    actions["vec_off"] = np.where(lens > 0, off, NONE)
