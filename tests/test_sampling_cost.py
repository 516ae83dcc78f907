"""The static cost the skipped iterations are predicted from (issue 38): an iteration's compute
critical path over its supersteps, where the slowest rank changes from one superstep to the
next (LULESH: three halo exchanges and an allreduce per iteration); and the note saying why a
sampled figure cannot be promised within the tolerance."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.replay.sampling import iteration_cost, sampled_replay, \
    slowest_compute, superstep_compute
from tests.support.synthetic_loops import Step, build, stencil

N = 40


def _two_steps(extra_wait_on_rank0: bool = False):
    """Two ranks, two supersteps an iteration (a halo exchange closed by a waitall, then an
    allreduce); rank 0 computes more in the first, rank 1 in the second, by amounts that drift
    over the iterations.  Returns (trace, bounds, per-rank volumes [2 ranks, 2 steps, N])."""
    rng = np.random.default_rng(7)
    vol = rng.uniform(1e-4, 2e-4, (2, 2, N)) + np.array([[1e-4, 0], [0, 1e-4]])[:, :, None] \
        * np.linspace(1, 2, N)

    def body(r):
        other = 1 - r
        steps = [Step("compute", volume=vol[r, 0]), Step("irecv", other, 1, 1024),
                 Step("isend", other, 1, 1024), Step("waitall", waits=(1, 2))]
        if extra_wait_on_rank0 and r == 0:     # a blocking call the other rank does not make
            steps += [Step("irecv", -1, 2, 0), Step("waitall", waits=(4,))]
        return steps + [Step("compute", volume=vol[r, 1]), Step("allreduce", nbytes=8)]
    data, bounds = build(2, N, body)
    return data, bounds, vol


def test_superstep_cost_sums_each_supersteps_slowest_rank():
    data, bounds, vol = _two_steps()
    expected = vol.max(axis=0).sum(axis=0)        # per step the slowest rank, summed
    np.testing.assert_allclose(superstep_compute(data, bounds), expected, rtol=1e-12)
    # the slowest rank's total misses what the other rank's slow superstep adds
    assert (slowest_compute(data, bounds) < expected - 1e-9).all()
    np.testing.assert_allclose(iteration_cost(data, bounds)[:, 0], expected, rtol=1e-12)


def test_calls_not_made_equally_by_every_rank_do_not_cut_supersteps():
    data, bounds, vol = _two_steps(extra_wait_on_rank0=True)
    # rank 0's extra waitall makes the waitall counts differ: only the allreduce synchronises
    np.testing.assert_allclose(superstep_compute(data, bounds), vol.sum(axis=1).max(axis=0),
                               rtol=1e-12)


@pytest.mark.parametrize("tolerance,says", [(1e-9, True), (1.0, False)])
def test_a_bound_over_the_tolerance_says_why(tolerance, says):
    """The note names the bound and the misfit when the bound exceeds the tolerance (1e-9:
    SimGrid's precision alone exceeds it), and only then (100%: nothing does)."""
    data, bounds = stencil(2, 600, jitter=0.05, seed=3)
    s = sampled_replay(data, [bounds], "auto", tolerance=tolerance, compute_rate="1Gf")
    assert s.skipped_share > 0
    why = [n for n in s.notes if n.startswith("bound ") and "exceeds the" in n]
    assert bool(why) == says == (s.bound > tolerance * s.simulated_time)
    if why:
        assert "of 600 replayed" in why[0]
