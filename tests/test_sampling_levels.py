"""Iteration sampling where a loop's iterations move different bytes (their sizes set aside)
and its replayed start and tail sit at different levels: public Intel MPI Benchmarks IMB-MPI1
at 2 ranks sweeps message sizes, its first 24 of 150 iterations at 0.70 ms, the rest at 0.50
ms; a start of 20 at the first level and a tail of 5 at the second predicted the skipped ones
between the two, +16.2% from the full replay against a bound of 7.46%.  The bound now covers
the skipped iterations lying at either level, and the note says why it is wide."""
from __future__ import annotations

import numpy as np

from minitrace.replay import replay
from minitrace.replay.sampling import loop_window, sampled_replay
from tests.support.synthetic_loops import scaled_halos, stencil

RATE = "1Gf"
N = 150


def _big_first(scale: float, first: int, sigma: float = 0.0):
    """A stencil of ``N`` iterations whose halo messages (over 1000 bytes) are ``scale`` times
    larger in its first ``first`` iterations (the same calls, the same compute, more bytes)
    and, in those, scaled by a seeded factor uniform in 1 +- ``sigma`` each (alike on every
    rank: the messages still match): IMB's first level, noisier than the rest."""
    data, bounds = stencil(2, N, halo=65536)
    first_ones = np.arange(N) < first
    factor = np.where(first_ones, scale, 1.0) * \
        (1 + sigma * (2 * np.random.default_rng(7).random(N) - 1) * first_ones)
    return scaled_halos(data, bounds, factor), bounds


def test_a_start_and_a_tail_at_different_levels_widen_the_bound():
    """The first 24 iterations move 1.3x the halo bytes, +-20%: the start (4 windows) is all
    at their level, the tail at the rest's.  The line through both put the skipped ones
    between the two, and the bound of its residuals alone missed the full replay by 1.6x; now
    it covers it, and the note says the start and the tail sit at levels apart."""
    data, bounds = _big_first(1.3, 24, 0.2)
    s = sampled_replay(data, [bounds], "auto", compute_rate=RATE)
    full = replay(data, compute_rate=RATE).simulated_time
    assert abs(s.simulated_time - full) <= s.bound
    (p,) = s.phases
    assert p.sized and p.skipped and p.replayed < 24 and p.level > 0
    assert any("sit at levels apart" in n for n in s.notes)


def test_alike_bytes_leave_the_bound_as_it_was():
    """The same bytes in every iteration: the phase is not ``sized``, no level is added."""
    data, bounds = _big_first(1, 30)
    s = sampled_replay(data, [bounds], "auto", compute_rate=RATE)
    (p,) = s.phases
    assert not p.sized and p.level == 0
    assert p.replayed == 4 * loop_window(N)


def test_the_phase_table_shows_the_level_in_its_bound():
    """The phase's row in the table bounds its skipped time with the level added, as the
    trace's bound does."""
    data, bounds = _big_first(1.3, 24, 0.2)
    s = sampled_replay(data, [bounds], "auto", compute_rate=RATE)
    (p,) = s.phases
    (row,) = s.table().to_dict(orient="records")
    assert row["bound"] > p.level > 0
