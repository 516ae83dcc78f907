"""A variant fitted once (issue 38): public miniMD at 4 ranks writes its thermo output every
105 of 1,052 iterations; to fit two of them the start grew over the first and the tail back
over the last (214 replayed, 4.8x fewer actions).  Where two of each leave the replay under
GAIN times smaller than the trace, auto fits one of each, and the bound takes the skipped
ones of such a variant at that one's residual left out of the line, each."""
from __future__ import annotations

import numpy as np

from minitrace.replay import replay
from minitrace.replay.sampling import GAIN, sampled_replay
from tests.support.synthetic_loops import Step, build

RATE = "1Gf"


def _step(work):
    def body(r):
        """A step: a halo exchange, its compute (``work``: per step), an allreduce."""
        return [Step("irecv", 1 - r, 1, 8192), Step("isend", 1 - r, 1, 8192),
                Step("compute", volume=work), Step("waitall", waits=(0, 1)),
                Step("allreduce", nbytes=8)]
    return body


def _output(r):
    """A step with an output: more compute and two allreduces more."""
    return _step(6e-4)(r) + [Step("allreduce", nbytes=64), Step("allreduce", nbytes=8)]


def test_one_output_step_is_fitted_and_bounded():
    rng = np.random.default_rng(4)
    segments = [(106, _step(2e-4 * (1 + 0.02 * rng.standard_normal(106))))]
    for _ in range(9):          # an output every 105 steps, from the 107th (miniMD's 106th)
        segments += [(1, _output), (104, _step(2e-4 * (1 + 0.02 * rng.standard_normal(104))))]
    segments += [(1, _step(2e-4))]
    data, bl = build(2, segments)
    bounds = np.concatenate([b[:, :-1] for b in bl] + [bl[-1][:, -1:]], axis=1)
    assert bounds.shape[1] - 1 == 1052
    s = sampled_replay(data, [bounds], "auto", compute_rate=RATE)
    assert any("one iteration of each variant replayed, not two" in n for n in s.notes)
    assert s.skipped_share > 1 - 1 / GAIN, s.notes
    (p,) = s.phases
    assert p.once > 0 and p.replayed + p.tail < 150
    assert any(n.startswith("the bound takes the skipped iterations of a variant the line "
                            "fits once") for n in s.notes)
    full = replay(data, compute_rate=RATE)
    assert abs(s.simulated_time - full.simulated_time) <= s.bound


def test_an_output_step_that_moves_more_each_time_is_fitted_twice():
    """The output's reduction grows from 64 bytes, fourfold each time: the first output, fitted
    alone, says nothing of the others' bytes, which the line does not see (its residual put
    them within 0.11% where they were 0.61% off); its instances are variants of their own,
    too many to fit one of each, and two of each show their differences in the residuals."""
    rng = np.random.default_rng(4)
    segments = [(106, _step(2e-4 * (1 + 0.02 * rng.standard_normal(106))))]
    for k in range(9):
        def output(r, k=k):
            return _step(6e-4)(r) + [Step("allreduce", nbytes=64 << 2 * k),
                                     Step("allreduce", nbytes=8)]
        segments += [(1, output), (104, _step(2e-4 * (1 + 0.02 * rng.standard_normal(104))))]
    segments += [(1, _step(2e-4))]
    data, bl = build(2, segments)
    bounds = np.concatenate([b[:, :-1] for b in bl] + [bl[-1][:, -1:]], axis=1)
    s = sampled_replay(data, [bounds], "auto", compute_rate=RATE)
    assert not any("one iteration of each variant replayed" in n for n in s.notes)
    full = replay(data, compute_rate=RATE)
    assert abs(s.simulated_time - full.simulated_time) <= s.bound
