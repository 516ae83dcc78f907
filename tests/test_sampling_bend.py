"""A time that bends between the start's cost and the tail's (issue 38): an iteration's time is
a maximum of sums of its computes and messages, so where the compute overlapped with a halo
falls under the halo's time, the time stays flat.  The line's slope is then the long start's
own, and the skipped iterations at the tail's cost lie at the tail's level, off the line,
which its residuals' variance does not see: the bound takes the gap between the start's and
the tail's mean residuals (:func:`minitrace.replay.sampling._level`), bytes moved alike."""
from __future__ import annotations

import numpy as np

from minitrace.model import TraceBuilder
from minitrace.replay import replay
from minitrace.replay.sampling import sampled_replay

HALO = 4 << 20
N = 612
START = 120


def _falls_under_the_halo():
    """2 ranks, per iteration a 4 MB exchange overlapped with a compute about the halo's time
    (2% jitter), then an allreduce; from iteration 200 the compute a tenth less, under it."""
    work = np.full((2, N), 5e-4)
    work[:, 200:] *= 0.9
    work *= 1 + 0.02 * np.random.default_rng(3).standard_normal(work.shape)
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    for i in range(N):
        for r in range(2):
            b.add(r, "irecv", peer=1 - r, tag=7, bytes_recv=HALO, request=1)
            b.add(r, "isend", peer=1 - r, tag=7, bytes_sent=HALO, request=0)
            b.add(r, "compute", volume=float(work[r, i]))
            b.add(r, "waitall", vector=[0, 1])
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    for r in range(2):
        b.add(r, "finalize")
    return b.build()


def test_the_bound_covers_a_tail_off_the_line_of_a_long_start():
    """A start of 120 iterations before the compute falls (as ``auto`` grows one where the
    bound is wide), a tail and most skipped iterations after it."""
    data = _falls_under_the_halo()
    s = sampled_replay(data, None, START, compute_rate="1Gf")
    (p,) = s.phases
    assert not p.sized and p.replayed == START and p.tail and p.skipped, s.notes
    full = replay(data, compute_rate="1Gf")
    assert abs(s.simulated_time - full.simulated_time) <= s.bound, s.notes
