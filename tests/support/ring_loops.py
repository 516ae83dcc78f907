"""A loop of halo exchanges, the compute between, an allreduce and now and then a convergence
check: the random traces of benchmarks/bench_sampling_sweep.py and the sampling tests that
reproduce their failures, built by one function so that a seed's trace is the same in both."""
from __future__ import annotations

import numpy as np

from minitrace.model import TraceBuilder


def ring_trace(nranks: int, work: np.ndarray, size: np.ndarray, checks=None,
               overlap: bool = True):
    """``work[r, i]``: rank r's compute in iteration i; ``size[i]``: its halo's bytes;
    ``checks[i]``: a convergence check (a compute and an allreduce) after it (None: none)."""
    b = TraceBuilder(nranks)
    for r in range(nranks):
        b.add(r, "init")
        b.add(r, "compute", volume=1e-3)
    for i in range(work.shape[1]):
        for r in range(nranks):
            left, right, s = (r - 1) % nranks, (r + 1) % nranks, int(size[i])
            if nranks == 2:
                b.add(r, "irecv", peer=1 - r, tag=7, bytes_recv=s, request=1)
                b.add(r, "isend", peer=1 - r, tag=7, bytes_sent=s, request=0)
                reqs = [0, 1]
            else:
                b.add(r, "irecv", peer=left, tag=7, bytes_recv=s, request=1)
                b.add(r, "irecv", peer=right, tag=8, bytes_recv=s, request=2)
                b.add(r, "isend", peer=right, tag=7, bytes_sent=s, request=3)
                b.add(r, "isend", peer=left, tag=8, bytes_sent=s, request=4)
                reqs = [1, 2, 3, 4]
            steps = [("compute", {"volume": float(work[r, i])}), ("waitall", {"vector": reqs})]
            for kind, kw in steps if overlap else steps[::-1]:
                b.add(r, kind, **kw)
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
            if checks is not None and checks[i]:
                b.add(r, "compute", volume=2e-5)
                b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    for r in range(nranks):
        b.add(r, "finalize")
    return b.build()
