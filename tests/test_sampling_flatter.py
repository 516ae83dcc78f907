"""Flattening an outer loop (sampling._flatter, issue 38) where the loops found already grew
over the outer loop's short output step: the step loop of every outer iteration is already one
loop, and the flattened one (the same steps, the outputs cut apart) must not make sampling skip
less than the loops it replaces."""
from __future__ import annotations

import pytest

from minitrace.replay import sampling
from minitrace.replay.sampling import sampled_replay
from tests.support.synthetic_loops import Step, build

pytestmark = pytest.mark.timeout(600)


def _trace(nranks: int, outer: int, steps: int):
    """An output, then ``outer`` x (``steps`` steps and an output), the output shorter than
    twice a step (extend_loop grows the step loop over it)."""
    def output(r):
        return [Step("compute", volume=2e-5), Step("allreduce", nbytes=8), Step("barrier")]

    def step(r):
        return [Step("compute", volume=3e-4), Step("allreduce", nbytes=16)]

    return build(nranks, [(1, output)] + [p for _ in range(outer)
                                          for p in ((steps, step), (1, output))])[0]


@pytest.mark.parametrize("nranks,outer,steps", [(1, 3, 150), (2, 4, 300), (2, 2, 500)])
def test_flattening_does_not_skip_less(monkeypatch, nranks, outer, steps):
    d = _trace(nranks, outer, steps)
    flattened = sampled_replay(d, None, "auto", compute_rate="1Gf").skipped_share
    monkeypatch.setattr(sampling, "_flatter", lambda levels, loops, total, longer=True: loops)
    kept = sampled_replay(d, None, "auto", compute_rate="1Gf").skipped_share
    assert flattened >= kept
