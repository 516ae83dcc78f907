"""Review of the flattened outer loop (sampling._flatter, session 27), the reverse shape: a long
outer loop whose iterations each hold a short inner run (a CG iteration's dot products, two
allreduces) stays the main loop, its iterations the outer ones; made one loop of the inner
runs, each outer iteration's other calls would be a variant of their own, a third of its
iterations."""
from __future__ import annotations

import pytest

from minitrace.replay.sampling import loops_of, top_level
from tests.support.synthetic_loops import Step, build

pytestmark = pytest.mark.timeout(600)
OUTER = 200


def _trace(nranks: int = 2):
    """``OUTER`` x (a halo exchange and compute, then 2 allreduces), nested by the grammar."""
    def halo(r):
        return [Step("compute", volume=1e-4), Step("irecv", (r - 1) % nranks, 1, 40000),
                Step("isend", (r + 1) % nranks, 1, 40000), Step("waitall", waits=(1, 2))]

    def dots(r):
        return [Step("compute", volume=2e-5), Step("allreduce", nbytes=8)]

    return build(nranks, [p for _ in range(OUTER) for p in ((1, halo), (2, dots))])[0]


@pytest.mark.parametrize("nranks", [2, 4])
def test_a_long_outer_loop_of_short_inner_runs_stays_the_main_loop(nranks):
    main = max(top_level(loops_of(_trace(nranks))[0]), key=lambda b: b.shape[1])
    assert main.shape[1] - 1 == OUTER
