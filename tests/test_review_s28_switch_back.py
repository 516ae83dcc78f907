"""Review of session 28's sampling (issue 38): another rank slowest for a while in the middle
of a loop whose balance does not otherwise drift, then the first again (a temporary switch),
with a convergence check whose period changes twice.  The loop found first is the check's
period (19 steps and a check: 77 iterations, a start of 20 and a tail of 5), the switch 8 of
its skipped iterations: no phase is cut there (fewer than a window, and ``_slowest_changes``,
ab5a486, runs only inside a drift's phases), the start and the tail see the first rank
slowest only, and the printed bound fails at 0.25 Gf (-0.236% from the full replay against a
bound of 0.054%); the same before session 28 (5776b6b)."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.model import TraceBuilder
from minitrace.replay import replay
from minitrace.replay.sampling import sampled_replay


def _trace(seed: int = 247):
    """Ring halo exchanges overlapped with the compute, then an allreduce, as
    benchmarks/bench_sampling_sweep.py builds them: rank r1 ``f`` times slower, but for L
    iterations from the middle where rank r2 is; a check (a compute and an allreduce) every
    k0, k1 then k2 iterations; 4 ranks, 1954 iterations, 0.8% jitter for seed 247."""
    g = np.random.default_rng(7000 + seed)
    nr, n = int(g.choice([2, 3, 4])), int(g.integers(400, 2000))
    w = np.full((nr, n), g.uniform(3e-4, 7e-4))
    size = int(g.choice([65536, 1 << 20, 4 << 20]))
    f = g.uniform(1.05, 1.5)
    c, length = int(n // 2 + g.integers(-30, 30)), int(g.integers(40, 200))
    r1, r2 = g.choice(nr, 2, replace=False)
    w[r1] *= f
    w[r1, c:c + length] /= f
    w[r2, c:c + length] *= f
    w *= 1 + g.uniform(0.005, 0.05) * g.standard_normal(w.shape)
    assert g.random() < 0.5
    ks = [int(x) for x in g.integers(5, 60, 3)]
    cs = sorted(int(x) for x in g.integers(n // 5, 4 * n // 5, 2))
    i = np.arange(n)
    checks = np.where(i < cs[0], i % ks[0] == 0,
                      np.where(i < cs[1], i % ks[1] == 0, i % ks[2] == 0))
    assert nr == 4 and g.random() < 0.7         # (overlapped, a ring of 4)
    b = TraceBuilder(nr)
    for r in range(nr):
        b.add(r, "init")
        b.add(r, "compute", volume=1e-3)
    for k in range(n):
        for r in range(nr):
            left, right = (r - 1) % nr, (r + 1) % nr
            b.add(r, "irecv", peer=left, tag=7, bytes_recv=size, request=1)
            b.add(r, "irecv", peer=right, tag=8, bytes_recv=size, request=2)
            b.add(r, "isend", peer=right, tag=7, bytes_sent=size, request=3)
            b.add(r, "isend", peer=left, tag=8, bytes_sent=size, request=4)
            b.add(r, "compute", volume=float(abs(w[r, k])))
            b.add(r, "waitall", vector=[1, 2, 3, 4])
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
            if checks[k]:
                b.add(r, "compute", volume=2e-5)
                b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    for r in range(nr):
        b.add(r, "finalize")
    return b.build()


@pytest.mark.xfail(strict=True, reason="review s28: a temporary switch of the slowest rank "
                   "outside any drift is not cut: -0.236% against a bound of 0.054%")
def test_the_bound_holds_over_a_temporary_switch_of_the_slowest_rank():
    data = _trace()
    s = sampled_replay(data, None, "auto", compute_rate="0.25Gf")
    full = replay(data, compute_rate="0.25Gf").simulated_time
    assert s.skipped_share > 0, s.notes
    assert abs(s.simulated_time - full) <= s.bound, (s.simulated_time - full, s.bound)
