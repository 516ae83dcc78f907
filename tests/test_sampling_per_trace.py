"""What a sampled replay computes once per trace (issue 38, its own cost): the structure ids
without sizes or tags found from one action of each id with them, and the whole trace's sums,
give what computing them on the whole trace gives, and nothing is kept after it."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.model import TraceBuilder
from minitrace.replay import sampling as S
from tests.support.synthetic_loops import stencil


def _varied():
    """Three ranks: sends of sizes and tags that change, on the world and on a duplicate of
    it (the same ranks: one communicator to a replay's timing), a root of a rooted
    collective, computes."""
    b = TraceBuilder(3)
    b.add_comm(5, [0, 1, 2])
    for i in range(40):
        for r in range(3):
            b.add(r, "compute", volume=1e-4 * (1 + i % 3))
            b.add(r, "isend", peer=(r + 1) % 3, tag=i % 4, comm=5 if i % 5 == 0 else 0,
                  bytes_sent=8 * (1 + i % 7), request=2 * i)
            b.add(r, "irecv", peer=(r - 1) % 3, tag=i % 4, comm=5 if i % 5 == 0 else 0,
                  bytes_recv=8 * (1 + i % 7), request=2 * i + 1)
            b.add(r, "waitall", vector=[2 * i, 2 * i + 1])
            if i % 6 == 0:
                b.add(r, "bcast", peer=i % 3, bytes_sent=16)
    return b.build()


@pytest.mark.parametrize("make,coarser", [(_varied, True),
                                           (lambda: stencil(2, 60, jitter=0.1, seed=4)[0], False)])
def test_ids_found_once_are_the_whole_traces(make, coarser):
    data = make()
    kinds = [{}, {"sizes": False}, {"sizes": False, "timing": True}, {"timing": True}]
    whole = [S.structure_ids(data, **kw) for kw in kinds]
    assert (whole[2][1] < whole[1][1] < whole[0][1]) == coarser   # (fewer ids set aside)
    token = S._MEMO.set({})
    try:
        kept = [S.structure_ids(data, **kw) for kw in kinds]
        assert S._MEMO.get()                    # (the ids with sizes kept)
    finally:
        S._MEMO.reset(token)
    for (a, n), (b, m) in zip(whole, kept):
        assert n == m and a.dtype == b.dtype and np.array_equal(a, b)


def test_nothing_is_kept_after_a_sampled_replay():
    data, bounds = stencil(2, 300)
    bare = S.static_cost(data, bounds)
    s = S.sampled_replay(data, [bounds], "auto", compute_rate="1Gf")
    assert s.skipped_share > 0 and S._MEMO.get() is None
    for a, b in zip(bare, S.static_cost(data, bounds)):
        assert np.array_equal(a, b)
