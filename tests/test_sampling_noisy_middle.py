"""A pipelined sweep whose compute's jitter is small at the ends of the run and large in its
middle (public NPB LU W at 2 ranks: its replayed start and tail the quietest iterations, -0.53%
from the full replay against a printed bound of 0.21%): the time's relation to the compute
changes with the jitter, so the line fitted to the replayed ends is off in the middle.  Where
the line of the static cost and that of the compute critical path put the skipped time apart
beyond a bound, ``auto`` replays a window in the middle of what it skips (issue 38)."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.replay import replay
from minitrace.replay.sampling import GAIN, sampled_replay
from tests.support.synthetic_loops import Step, _prologue, _tail, build

RATE = "1Gf"


def _wavefront(seed: int, iterations: int = 300, stages: int = 8, compute: float = 1e-4,
               quiet: float = 0.01, noisy: float = 0.3, nbytes: int = 4096):
    """Two ranks in a pipeline: a lower sweep of ``stages`` computes each passed on to the
    other rank, then an upper sweep the other way; each compute's relative jitter is
    ``quiet`` in about the first and last tenths of the iterations, ``noisy`` in the middle."""
    rng = np.random.default_rng(seed)
    i = np.arange(iterations)
    mid = np.clip(np.minimum(i, iterations - 1 - i) / (0.15 * iterations) - 0.3, 0, 1)
    sigma = quiet + (noisy - quiet) * mid

    def volumes():
        return compute * np.clip(1 + sigma * rng.standard_normal(iterations), 0.2, None)

    def body(r):
        other, steps = 1 - r, []
        for first, tag in ((0, 1), (1, 100)):          # lower sweep, then upper
            for k in range(stages):
                if r == first:
                    steps += [Step("compute", volume=volumes()),
                              Step("send", other, tag + k, nbytes)]
                else:
                    steps += [Step("recv", other, tag + k, nbytes),
                              Step("compute", volume=volumes())]
        return steps
    return build(2, iterations, body, _prologue(2), _tail())


@pytest.mark.parametrize("seed", [0, 2])
def test_the_bound_holds_over_a_noisier_middle(seed):
    """Seed 0 printed +0.86% against a bound of 0.81% (its ends replayed alone), seed 2 -1.01%
    against 0.90%: with a window in the middle, the printed bound holds, and the replay stays
    GAIN times smaller than the trace."""
    data, _ = _wavefront(seed)
    s = sampled_replay(data, None, "auto", compute_rate=RATE)
    full = replay(data, compute_rate=RATE).simulated_time
    assert abs(s.simulated_time - full) <= s.bound
    assert s.replayed_share * GAIN <= 1
    assert any("window in the middle" in n for n in s.notes)
