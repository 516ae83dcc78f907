"""The two halves of a phase cut in the middle (``_middle_windows``) are each judged against
their own fitted range in ``_outside``.  Session 28 judged them against both halves' range
(328d72d, withdrawn): where the time is not linear in the compute over that range (the
compute hidden behind a halo below a level, at slope 1 above it: the kink ``_outside`` was
written for), a half whose start and middle window straddle the kink and whose skipped
iterations all lie above it, within the other half's wider range, was predicted at the shared
slope (~0.5) with no term for it: -1.72e-3 s against a bound of 1.39e-3 s at seed 0 (the review's
case).  Judged against its own range, the bound holds."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from minitrace.replay.sampling import Phase, _fit, _spread


def _group(seed: int = 0):
    """(the halves' predicted skipped time less the truth, their bound): a loop of 200
    iterations cut at 100 (windows of 5); time ``max(compute, 2e-4) + 2e-5`` s, 0.2% jitter;
    the first half's fitted iterations at compute 1.8-2.2e-4 (across the kink), its skipped
    ones at 2.5-3e-4; the second half's all at 1-3e-4."""
    rng = np.random.default_rng(seed)
    n, cut, w, kink = 200, 100, 5, 2e-4
    c = np.empty(n)
    fitted = np.r_[np.arange(4 * w), np.arange(cut - w, cut)]
    c[:cut] = rng.uniform(2.5e-4, 3e-4, cut)
    c[fitted] = rng.uniform(1.8e-4, 2.2e-4, len(fitted))
    c[cut:] = rng.uniform(1e-4, 3e-4, n - cut)
    t = (np.maximum(c, kink) + 2e-5) * (1 + 0.002 * rng.standard_normal(n))
    return fitted_halves(c, t, cut, w)


def fitted_halves(c: np.ndarray, t: np.ndarray, cut: int, w: int) -> tuple[float, float]:
    """(the halves' predicted skipped time less the truth, their bound) of a loop whose
    iterations have compute ``c`` and time ``t``, cut at ``cut`` (windows of ``w``): the first
    half fitted on a start of 4 windows and a tail of one, the second, joint to it, on a start
    and a tail of one window each."""
    n = len(c)
    a = Phase(0, 0, cut, w, replayed=4 * w, tail=w, steady_from=0)
    b = replace(a, first=cut, stop=n, replayed=w, joint=True)
    xs = [(t[:4 * w], t[cut - w:cut]), (t[cut:cut + w], t[n - w:])]
    _fit([a, b], xs, [c[:cut, None], c[cut:, None]], scale=1.0)
    # skipped iterations (each tail's first is predicted, less its replayed time: _fit)
    true = t[a.replayed:cut - w].sum() + t[cut + w:n - w].sum()
    return a.skipped_time + b.skipped_time - true, _spread([a, b])


@pytest.mark.parametrize("seed", range(10))
def test_each_half_s_bound_holds_where_the_time_kinks_inside_the_other_half_s_range(seed):
    err, bound = _group(seed)
    assert abs(err) <= bound
