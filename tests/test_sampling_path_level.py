"""The level term of a drift's phase (issue 38): where the balance between ranks drifts, the
skipped iterations are predicted as their compute critical path at slope 1 plus the line of
what the replayed ones took beyond it, an intercept alone.  What an iteration
takes beyond its path (the waits a balance leaves) moves with the balance: random traces of 3
and 4 ranks, one rank's share drifting by 16-27%, had their start and tail at levels apart
beyond chance, the skipped iterations near the tail's, and were 1.3-1.7 times their bound off
the full replay.  The intercept has no cost to tell the levels apart by, so the gap counts
whatever the costs: the skipped iterations may lie at either level."""
from __future__ import annotations

import numpy as np

from minitrace.replay.sampling import Phase, _level, _solved


def _gapped(path, drift: bool):
    """A phase of 400 iterations, a start of 40 and a tail of 10, its fitted iterations' time
    beyond the path one level in the start and another 1.5 standard deviations of theirs above
    in the tail; and the terms :func:`_level` is given."""
    rng = np.random.default_rng(3)
    start, tail = 40, 9
    y = np.r_[7e-6 + 1e-6 * rng.standard_normal(start), 8.5e-6 + 1e-6 * rng.standard_normal(tail)]
    X = np.ones((start + tail, 1))               # an intercept: the calls do not vary
    lead = np.arange(start + tail) < start
    p = Phase(loop=0, first=0, stop=400, replayed=start, tail=tail + 1,
              path=None if path is None else np.full(400, path), drift=drift)
    return p, X, y, lead, ~lead, *_solved(X, y)


def test_a_drifts_phase_takes_the_gap_between_start_and_tail():
    """Its start and tail at levels apart: the bound takes the skipped iterations at the
    farther one."""
    p, X, y, start, tail, beta, inv = _gapped(1e-4, True)
    far = max(abs(y[start].mean() - beta[0]), abs(y[tail].mean() - beta[0]))
    assert np.isclose(_level(p, X, y, start, tail, beta, inv), p.skipped * far)


def test_a_line_within_its_costs_leaves_the_gap_to_its_variance():
    """The same gap on a phase on its line, or on its path chosen for the smaller bound (no
    drift), the start's and tail's costs alike: no term (public PENNANT and miniGhost, where
    it only widened bounds that held)."""
    for path in (None, 1e-4):
        p, X, y, start, tail, beta, inv = _gapped(path, False)
        assert _level(p, X, y, start, tail, beta, inv) == 0.0
