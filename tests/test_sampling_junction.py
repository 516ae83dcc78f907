"""The tail's first iteration follows the skip (issue 38): in the reduced replay it follows the
start's last iteration, in the full replay a skipped one.  Where a loop's iterations start at
a collective, a rank's arrival there follows its compute in the iteration before, so that
iteration's time takes the difference of the two: the line predicts it as it does the skipped
ones (:func:`minitrace.replay.sampling._predicted_end`)."""
from __future__ import annotations

import numpy as np

from minitrace.model import TraceBuilder
from minitrace.replay import replay
from minitrace.replay.sampling import sampled_replay

N = 600


def _rotated():
    """2 ranks, each iteration an allreduce then a compute: rank 0's constant (the longest),
    rank 1's growing from a tenth of it to nine tenths (1% jitter); and the loop's bounds at
    the allreduces (a loop found from another call than the main loop's first, as a stored
    grammar may give it)."""
    work = np.vstack([np.full(N, 1e-3), 1e-4 + 8e-4 * np.arange(N) / N])
    work *= 1 + 0.01 * np.random.default_rng(5).standard_normal(work.shape)
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "compute", volume=float(work[r, 0]))
    for i in range(1, N):
        for r in range(2):
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
            b.add(r, "compute", volume=float(work[r, i]))
    for r in range(2):
        b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
        b.add(r, "finalize")
    data = b.build()
    bounds = np.vstack([data.rank_slice(r).start + 2 + 2 * np.arange(N) for r in range(2)])
    return data, bounds


def test_the_tails_first_iteration_is_predicted_not_taken_from_the_junction():
    data, bounds = _rotated()
    s = sampled_replay(data, [bounds], "auto", compute_rate="1Gf")
    assert s.phases and all(p.tail for p in s.phases if p.skipped), s.notes
    full = replay(data, compute_rate="1Gf")
    assert abs(s.simulated_time - full.simulated_time) <= s.bound, s.notes
