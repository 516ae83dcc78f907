"""The half before a middle cut (``_middle_windows``) whose skipped compute lies below its own
fitted compute takes a floor on the time's fall there from the other half's fitted
iterations below it (``sampling._fell``): public PENNANT at 4 ranks, its bound 1.62% from
the full replay (the error +0.11%), over the 1% tolerance, where the slope below the half's
range could have been anything in 0-1.  Where the time flattens below a level (the compute
hidden behind a halo), the other half shows it, and the floor goes with it.  The floor takes
the halves for one kind of iteration, one line an intercept each (as their joint fit does):
where the time flattens below the first half's range at a level the second half's time does
not (its halo faster, the same bytes), nothing the first half replays shows it, and the
bound fails (a strict xfail: 8 of 10 seeds, -6.4e-4 s against 1.0e-4 s)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from minitrace.replay.sampling import Phase, _fit, _spread


def _halves(seed: int, kink: float, halved: bool = True, other: float | None = None):
    """(the first half, the halves' predicted skipped time less the truth, their bound): a
    loop of 200 iterations cut at 100 (windows of 5); time ``max(compute, kink) + 2e-5`` s,
    0.2% jitter; the first half's fitted iterations at compute 2.0-2.4e-4, its skipped ones
    at 1.6-2.4e-4; the second half's all at 1.5-2.4e-4, its time kinked at ``other`` (None:
    ``kink``)."""
    rng = np.random.default_rng(seed)
    n, cut, w = 200, 100, 5
    c = np.empty(n)
    fitted = np.r_[np.arange(4 * w), np.arange(cut - w, cut)]
    c[:cut] = rng.uniform(1.6e-4, 2.4e-4, cut)
    c[fitted] = rng.uniform(2.0e-4 if other is None else 2.1e-4, 2.4e-4, len(fitted))
    c[cut:] = rng.uniform(1.5e-4, 2.4e-4, n - cut)
    level = np.r_[np.full(cut, kink), np.full(n - cut, kink if other is None else other)]
    t = (np.maximum(c, level) + 2e-5) * (1 + 0.002 * rng.standard_normal(n))
    a = Phase(0, 0, cut, w, replayed=4 * w, tail=w, steady_from=0, halved=halved)
    b = replace(a, first=cut, stop=n, replayed=w, joint=True)
    xs = [(t[:4 * w], t[cut - w:cut]), (t[cut:cut + w], t[n - w:])]
    _fit([a, b], xs, [c[:cut, None], c[cut:, None]], scale=1.0)
    # skipped iterations (each tail's first is predicted, less its replayed time: _fit)
    true = t[a.replayed:cut - w].sum() + t[cut + w:n - w].sum()
    return a, a.skipped_time + b.skipped_time - true, _spread([a, b])


@pytest.mark.parametrize("seed", range(10))
def test_the_other_half_s_iterations_below_bound_the_slope_there(seed):
    a, err, bound = _halves(seed, kink=0.0)
    alone, _, _ = _halves(seed, kink=0.0, halved=False)
    assert abs(err) <= bound
    assert a.outside < alone.outside / 2


@pytest.mark.parametrize("seed", range(10))
def test_a_flat_stretch_below_the_half_s_range_keeps_its_term(seed):
    a, err, bound = _halves(seed, kink=1.9e-4)
    assert abs(err) <= bound


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="the floor takes the halves for one line; not seen, not bounded")
def test_a_flat_stretch_the_other_half_does_not_share_is_not_seen():
    fails = 0
    for seed in range(10):
        _, err, bound = _halves(seed, kink=2e-4, other=0.0)
        fails += abs(err) > bound
    assert fails == 0
