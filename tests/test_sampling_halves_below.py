"""The half before a middle cut (``_middle_windows``) whose skipped compute lies below its own
fitted compute keeps ``_outside``'s term for it, the slope there anything in 0-1, whatever the
other half's fitted iterations show.  Session 28 tried a floor on the time's fall there from
the other half's iterations below (PENNANT at 4 ranks: its bound 1.62% -> 0.61%) and withdrew
it: it takes the halves for one line, an intercept each, and where the time flattens below
the first half's range at a level the second half's does not, nothing the first half replays
shows it (8 of 10 seeds failed, -6.4e-4 s against 1.0e-4 s).  Both cases hold without it."""
from __future__ import annotations

import numpy as np
import pytest

from tests.test_sampling_halves_kink import fitted_halves


def _halves(seed: int, kink: float, other: float | None = None):
    """(the halves' predicted skipped time less the truth, their bound): a loop of 200
    iterations cut at 100 (windows of 5); time ``max(compute, kink) + 2e-5`` s, 0.2% jitter;
    the first half's fitted iterations at compute 2.0-2.4e-4, its skipped ones at 1.6-2.4e-4;
    the second half's all at 1.5-2.4e-4, its time kinked at ``other`` (None: ``kink``)."""
    rng = np.random.default_rng(seed)
    n, cut, w = 200, 100, 5
    c = np.empty(n)
    fitted = np.r_[np.arange(4 * w), np.arange(cut - w, cut)]
    c[:cut] = rng.uniform(1.6e-4, 2.4e-4, cut)
    c[fitted] = rng.uniform(2.0e-4 if other is None else 2.1e-4, 2.4e-4, len(fitted))
    c[cut:] = rng.uniform(1.5e-4, 2.4e-4, n - cut)
    level = np.r_[np.full(cut, kink), np.full(n - cut, kink if other is None else other)]
    t = (np.maximum(c, level) + 2e-5) * (1 + 0.002 * rng.standard_normal(n))
    return fitted_halves(c, t, cut, w)


@pytest.mark.parametrize("seed", range(10))
def test_a_flat_stretch_below_the_half_s_range_is_bounded(seed):
    err, bound = _halves(seed, kink=1.9e-4)
    assert abs(err) <= bound


@pytest.mark.parametrize("seed", range(10))
def test_a_flat_stretch_the_other_half_does_not_share_is_bounded(seed):
    err, bound = _halves(seed, kink=2e-4, other=0.0)
    assert abs(err) <= bound
