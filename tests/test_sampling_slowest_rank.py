"""Which rank is the slowest in an iteration (issue 38): what an iteration takes beyond its
compute critical path depends on it (the last arrival at a collective climbs its tree), so the
line of the skipped iterations takes each slowest rank's at a level of its own
(``sampling._by_slowest``), and a phase is cut where a rank that no fitted iteration shows
the slowest clearly becomes it (``sampling._unseen_slowest``)."""
from __future__ import annotations

import numpy as np

from minitrace.replay.sampling import Phase, _unseen_slowest, loops_of, slowest_rank
from tests.support.ring_loops import ring_trace


def test_equal_computes_have_no_slowest_rank():
    """Their sums, rounded apart, would name one rank in some iterations and another in the
    rest (a generated loop's start and tail then at 'levels' of their own)."""
    n = 300
    work = np.full((3, n), 3e-4)
    work[2, 200:] *= 1.1
    data = ring_trace(3, work, np.full(n, 65536))
    (b,), _ = loops_of(data)
    got = slowest_rank(data, b)
    assert (got[-90:] == 2).all() and (got[10:190] == -1).all(), got


def _phase(n: int = 600, w: int = 12) -> Phase:
    return Phase(0, 0, n, w, replayed=4 * w, tail=w)


def test_a_block_clearly_of_an_unseen_slowest_rank_is_cut_before():
    rng = np.random.default_rng(0)
    comp = 1 + 0.01 * rng.standard_normal((3, 600))
    comp[0] += 0.1                       # rank 0 the slowest in the start and the tail
    comp[2, 300:340] += 0.2              # rank 2 in 300-339
    assert _unseen_slowest(_phase(), comp) == 300


def test_a_rank_the_start_shows_or_no_clear_block_cuts_nothing():
    rng = np.random.default_rng(0)
    even = 1 + 0.01 * rng.standard_normal((3, 600))     # ranks even: the slowest by chance
    assert _unseen_slowest(_phase(), even) is None
    comp = even.copy()
    comp[0] += 0.1
    comp[2, 300:340] += 0.2
    comp[2, 10:20] += 0.2                # the start shows rank 2 the slowest
    assert _unseen_slowest(_phase(), comp) is None
