"""``_slowest_changes`` (issue 38) where another rank is slowest in the middle of a drift by a
lead near the noise of a block of iterations.  A block where no rank is clearly slowest
neither breaks nor makes a run (the session's review found the loop reset the run there: a
run of 14 clear blocks broken by unclear ones was never cut, and the printed bound failed,
-0.197% against 0.020%).  A lead under three standard errors of every block of the drift
is never cut there (-0.150% from the full replay against a bound of 0.017%: a strict xfail
until session 29); the start and the tail showed rank 0 the slowest only, and what an
iteration takes beyond its path is 4.1 us where it is, 8.1 us where rank 1 is.  A block it
would skip whose slowest rank is clearly so and no fitted iteration's now cuts the phase
there (``sampling._cut_at_unseen_slowest``), and the line takes each slowest rank's
iterations at a level of their own (``sampling._by_slowest``)."""
from __future__ import annotations

import numpy as np

from minitrace.replay import replay
from minitrace.replay.sampling import _slowest_changes, sampled_replay
from tests.test_sampling_slowest import _trace as slowest_trace


def _trace(seed: int):
    """Two ranks exchanging 4 MB overlapped with their compute, then an allreduce (the trace of
    tests/test_sampling_slowest.py): rank 0 ``slow`` times the base throughout, rank 1's
    compute rising in a half sine to 2-20% above rank 0's in the middle; jitter 1-6%."""
    g = np.random.default_rng(5000 + seed)
    n = int(g.integers(600, 1500))
    slow = g.uniform(1.1, 1.4)
    peak = slow - 1 + g.uniform(0.02, 0.2)
    jitter = g.uniform(0.01, 0.06)
    return slowest_trace(n, slow, peak, seed, jitter)


def _holds(data) -> None:
    s = sampled_replay(data, None, "auto", compute_rate="1Gf")
    full = replay(data, compute_rate="1Gf").simulated_time
    assert s.skipped_share > 0, s.notes
    assert abs(s.simulated_time - full) <= s.bound, (s.simulated_time - full, s.bound)


def test_an_unclear_block_neither_breaks_nor_makes_a_run():
    rng = np.random.default_rng(0)
    n, w = 40 * 12, 12
    comp = 1 + 0.01 * rng.standard_normal((2, n))
    comp[0] += 0.2
    comp[1, 15 * w:30 * w] += 0.4           # rank 1 slowest in blocks 15-29 ...
    comp[1, 22 * w:23 * w] = comp[0, 22 * w:23 * w]     # ... but for block 22: none clearly
    assert _slowest_changes(comp, w, 0) == [15 * w, 30 * w]


def test_the_bound_holds_where_the_run_has_unclear_blocks():
    """n=1169, rank 0 1.232x, rank 1 up to 1.267x, 1.7% jitter: per block of 12 iterations
    rank 1 is clearly slowest in 14 of the middle ones, unclear in those between."""
    _holds(_trace(27))


def test_the_bound_holds_where_the_lead_is_under_the_block_noise():
    """n=709, rank 0 1.331x, rank 1 up to 1.363x, 3.9% jitter: no block clear."""
    _holds(_trace(1))
