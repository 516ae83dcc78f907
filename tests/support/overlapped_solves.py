"""One solve at several sizes, its compute overlapped with a halo exchange: the built trace
the sampling tests probe the bound with where phases alike in their calls differ in cost
(tests/test_sampling_alike.py, test_sampling_path_fit.py, test_sampling_whole.py)."""
from __future__ import annotations

import numpy as np

from minitrace.model import TraceBuilder


def overlapped_solves(counts: list[int], bump: float = 1.0, setup: float = 0.0):
    """Two ranks; per size k (1, 2, ...) a broadcast of 64 k bytes, ``setup`` k s of compute
    (none where 0), then a solve of ``counts[k - 1]`` iterations: 2e-4 s of compute (2% jitter,
    ``bump`` times it in iterations 60-139) overlapped with a halo exchange (4 KB in the first
    solve, over 4 MB in the others: their time is the exchange's), and an allreduce."""
    rng = np.random.default_rng(5)
    b = TraceBuilder(2)
    for r in (0, 1):
        b.add(r, "init")
    for k, n in enumerate(counts, 1):
        for r in (0, 1):
            b.add(r, "bcast", bytes_sent=64 * k, bytes_recv=64 * k, peer=0)
            if setup:
                b.add(r, "compute", volume=setup * k)
        size = 4096 if k == 1 else (4 << 20) + 4096 * k
        for i in range(n):
            work = 2e-4 * (bump if 60 <= i < 140 else 1.0) * (1 + 0.02 * rng.standard_normal(2))
            for r in (0, 1):
                b.add(r, "irecv", peer=1 - r, tag=7, bytes_recv=size, request=1)
                b.add(r, "isend", peer=1 - r, tag=7, bytes_sent=size, request=0)
                b.add(r, "compute", volume=float(work[r]))
                b.add(r, "waitall", vector=[0, 1])
                b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    for r in (0, 1):
        b.add(r, "finalize")
    return b.build()
