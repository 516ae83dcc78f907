"""Iteration sampling of a step loop inside a short outer repetition (issue 38): public miniMD
at 2 ranks of 400 steps writes its thermo output before the first step and every 100 steps
(allreduces and a barrier, longer than twice a step, so no variant of the step loop), and the
grammar finds an outer loop of 3 iterations (the steps between outputs, then the output) and
the last steps as a loop beside it.  That loop already left sampling something to skip, so the
outer loop was kept and replayed whole (1.3x); the steps of every outer iteration are the main
loop, cut before each output into phases that share one line."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.replay.sampling import loops_of, sampled_replay, top_level
from tests.support.synthetic_loops import Step, build

pytestmark = pytest.mark.timeout(600)
STEPS, OUTER, LAST = 150, 3, 140


def _trace(seed: int = 0):
    """An output, ``OUTER`` x (``STEPS`` steps and an output), then ``LAST`` steps, on 2
    ranks."""
    rng = np.random.default_rng(seed)

    def step(n):
        def body(r):
            return [Step("compute", volume=1e-4 * (1 + 0.01 * rng.standard_normal(n))),
                    Step("irecv", 1 - r, 1, 40000), Step("isend", 1 - r, 1, 40000),
                    Step("waitall", waits=(1, 2))]
        return n, body

    def output(r):
        return [x for _ in range(4) for x in (Step("compute", volume=2e-5),
                                               Step("allreduce", nbytes=8))] + \
            [Step("barrier"), Step("compute", volume=1e-5)]

    loops = [(1, output)] + \
        [part for _ in range(OUTER) for part in (step(STEPS), (1, output))] + [step(LAST)]
    return build(2, loops)[0]


def test_the_steps_of_every_outer_iteration_are_the_main_loop():
    """The top-level loop of most iterations holds the steps of all outer iterations, not 3."""
    main = max(top_level(loops_of(_trace())[0]), key=lambda b: b.shape[1])
    assert main.shape[1] - 1 >= OUTER * STEPS


def test_the_steps_are_skipped():
    """Most actions are skipped: the outer iterations are not replayed whole, and the phases
    cut before an output follow the first one's line (a start of one window each)."""
    s = sampled_replay(_trace(), None, "auto", compute_rate="1Gf")
    assert s.skipped_share > 0.6, s.notes
    main = [pi for pi, p in enumerate(s.phases) if p.loop == 0]
    assert len(main) == OUTER
    assert all(s.phases[pi].like == main[0] for pi in main[1:])
    assert all(p.replayed == p.window for p in s.phases[main[1]:main[-1] + 1])
