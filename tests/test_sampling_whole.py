"""A phase fitted once, then replayed whole (issue 38): a short solve like a longer one but
fitted alone (:func:`minitrace.replay.sampling._apart`) grows its start to four windows,
which covers its iterations; nothing of it is skipped, so nothing of it is predicted (its
first fit's skipped time stayed and was added to the prediction: +1.9e-2 s from the full
replay against a bound of 5.6e-4 s)."""
from __future__ import annotations

import numpy as np

from minitrace.model import TraceBuilder
from minitrace.replay import replay
from minitrace.replay.sampling import sampled_replay

RATE = "1Gf"


def _solves(counts: list[int]):
    """Two ranks; per size a broadcast, then a solve of ``counts[k]`` iterations: its compute
    (2% jitter) overlapped with a halo exchange (4 KB in the first, over 4 MB in the others,
    whose time the exchange's hides) and an allreduce."""
    rng = np.random.default_rng(5)
    b = TraceBuilder(2)
    for r in (0, 1):
        b.add(r, "init")
    for k, n in enumerate(counts, 1):
        for r in (0, 1):
            b.add(r, "bcast", bytes_sent=64 * k, bytes_recv=64 * k, peer=0)
        size = 4096 if k == 1 else (4 << 20) + 4096 * k
        for _ in range(n):
            work = 2e-4 * (1 + 0.02 * rng.standard_normal(2))
            for r in (0, 1):
                b.add(r, "irecv", peer=1 - r, tag=7, bytes_recv=size, request=1)
                b.add(r, "isend", peer=1 - r, tag=7, bytes_sent=size, request=0)
                b.add(r, "compute", volume=float(work[r]))
                b.add(r, "waitall", vector=[0, 1])
                b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    for r in (0, 1):
        b.add(r, "finalize")
    return b.build()


def test_a_phase_replayed_whole_after_its_fit_predicts_nothing():
    data = _solves([200, 18, 18, 18])
    s = sampled_replay(data, None, "auto", compute_rate=RATE)
    whole = [p for p in s.phases if not p.skipped]
    assert whole, s.notes
    assert all(p.skipped_time == 0 and p.variance == 0 for p in whole)
    full = replay(data, compute_rate=RATE)
    assert abs(s.simulated_time - full.simulated_time) <= s.bound, s.notes
