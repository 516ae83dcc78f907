"""``_slowest_changes`` (issue 38) on a drift whose two slowest ranks cross: the session's
review found a bound that held before the cut failed after it (ab5a486); since blocks without
a clear slowest rank neither break nor make a run (87bbfa2) it holds again (+0.038% against
0.157%, 18.9x).  4 ranks, 1609 steps of a ring halo exchange (1 MB) then the compute
(not overlapped), an allreduce; rank 1's compute rising by 17% over the loop and rank 2's
falling by as much from 17% above (their lines cross), checks every 58, 17, then 27 steps;
4.8% jitter.  Before ab5a486: one drift phase, +0.336% from the full replay against a bound
of 0.921% at 0.25 Gf (5.0x).  Since: cut at 1224, where rank 2 is no longer the slowest, the
piece after it with a start of one window: 12.1x, +0.152% against a bound of 0.138%.  The
error (+0.13%) is there without the checks too, the bound then 0.160%."""
from __future__ import annotations

import numpy as np

from minitrace.replay import replay
from minitrace.replay.sampling import sampled_replay
from tests.support.ring_loops import ring_trace


def _crossing(seed: int = 78):
    """The random trace of that seed (two ranks' computes crossing, checks at three periods)."""
    g = np.random.default_rng(7000 + seed)
    nr, n = int(g.choice([2, 3, 4])), int(g.integers(400, 2000))
    w = np.full((nr, n), g.uniform(3e-4, 7e-4))
    size = int(g.choice([65536, 1 << 20, 4 << 20]))
    g.uniform(1.05, 1.5)                         # (the factor of the other kinds of trace)
    r1, r2 = g.choice(nr, 2, replace=False)
    amp = g.uniform(0.1, 0.5)
    i = np.arange(n)
    w[r1] *= 1 + amp * i / n
    w[r2] *= 1 + amp * (1 - i / n)
    w *= 1 + g.uniform(0.005, 0.05) * g.standard_normal(w.shape)
    if g.random() >= 0.5:
        raise ValueError(f"seed {seed}: no checks (the seed used here has)")
    ks = [int(x) for x in g.integers(5, 60, 3)]
    cs = sorted(int(x) for x in g.integers(n // 5, 4 * n // 5, 2))
    checks = np.where(i < cs[0], i % ks[0] == 0,
                      np.where(i < cs[1], i % ks[1] == 0, i % ks[2] == 0))
    if nr < 3 or g.random() < 0.7:
        raise ValueError(f"seed {seed}: not a ring without overlap (the seed used here is)")
    return ring_trace(nr, np.abs(w), np.full(n, size), checks, overlap=False)


def test_the_bound_still_holds_where_the_drift_is_cut_at_a_new_slowest_rank():
    data = _crossing()
    s = sampled_replay(data, None, "auto", compute_rate="0.25Gf")
    full = replay(data, compute_rate="0.25Gf").simulated_time
    assert s.skipped_share > 0, s.notes
    assert abs(s.simulated_time - full) <= s.bound, (s.simulated_time - full, s.bound)
