"""Where phases like another are fitted alone (``_apart``), with a fixed number of iterations a
phase (``--sample K``) too, each of them covers the variants of its own skipped iterations
(its tail grows, as ``--sample K``'s phases do): the session's review found them skipped
unbounded on the trace of tests/test_sampling_apart_variants.py (a convergence check every 37
then 57 iterations, four loops of one solve): K=5 +0.882% from the full replay against a bound
of 0.063%, K=2 +0.884% against 0.125%."""
from __future__ import annotations

import pytest

from minitrace.replay import replay
from minitrace.replay.sampling import sampled_replay
from tests.test_sampling_apart_variants import _checked


@pytest.mark.parametrize("k", [5, 2])
def test_the_bound_holds_with_a_fixed_sample_where_phases_are_fitted_alone(k):
    data = _checked()
    s = sampled_replay(data, None, k, compute_rate="1Gf")
    full = replay(data, compute_rate="1Gf").simulated_time
    assert any("fitted alone" in n for n in s.notes), s.notes
    assert abs(s.simulated_time - full) <= s.bound, (s.simulated_time - full, s.bound)
