"""The bytes a collective copies within a rank (its own block), by kind and root, with vectors
and sub-communicators; none in place."""
from __future__ import annotations

import numpy as np

from minitrace import kinds as K
from minitrace.replay.work import own_block_bytes
from minitrace.model import TraceBuilder


def test_own_block_by_kind():
    b = TraceBuilder(3)
    b.add_comm(5, [2, 0])                     # a sub-communicator: world 2 is its rank 0
    want = {0: [], 1: [], 2: []}
    for r in range(3):
        root = r == 0
        b.add(r, "alltoall", bytes_sent=300, bytes_recv=300); want[r].append(100)
        b.add(r, "ialltoall", bytes_sent=30, bytes_recv=30, request=1); want[r].append(10)
        b.add(r, "allgather", bytes_sent=7, bytes_recv=21); want[r].append(7)
        b.add(r, "gather", peer=0, bytes_sent=4, bytes_recv=12 if root else 0)
        want[r].append(4 if root else 0)
        b.add(r, "scatter", peer=0, bytes_sent=12 if root else 0, bytes_recv=4)
        want[r].append(4 if root else 0)
        b.add(r, "allgather", bytes_sent=7, bytes_recv=21, flags=K.FLAG_IN_PLACE)
        want[r].append(0)
        b.add(r, "alltoallv", bytes_sent=6, bytes_recv=6,
              vector=[10 * r + i for i in range(3)] + [1, 1, 1])
        want[r].append(11 * r)               # what rank r sends to itself: entry r
        b.add(r, "allgatherv", bytes_sent=2, bytes_recv=6, vector=[1, 2, 3])
        want[r].append([1, 2, 3][r])
        b.add(r, "gatherv", peer=0, bytes_sent=5, bytes_recv=9 if root else 0,
              vector=[5, 2, 2] if root else None)
        want[r].append(5 if root else 0)
        b.add(r, "allreduce", bytes_sent=8, bytes_recv=8); want[r].append(0)
        b.add(r, "send", peer=(r + 1) % 3, bytes_sent=64); want[r].append(0)
        if r != 1:                            # world ranks 2 and 0 on communicator 5
            b.add(r, "allgatherv", comm=5, bytes_sent=1, bytes_recv=3, vector=[1, 2])
            want[r].append({2: 1, 0: 2}[r])
            b.add(r, "alltoall", comm=5, bytes_sent=40, bytes_recv=40); want[r].append(20)
    data = b.build()
    got = own_block_bytes(data)
    for r in range(3):
        assert got[data.rank_slice(r)].tolist() == want[r], r
    assert got.dtype == np.int64
