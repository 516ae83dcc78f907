"""Iteration sampling of a drift's phase with a variant deep inside it (public UK-MAC TeaLeaf
under Open MPI at 2 ranks: its balance changed at iteration 180 and drifted after it, so the
phase after the change was joint to the first and predicted from its critical path; the step
between its two CG loops, two iterations of more calls, lay in its middle).  Joint phases were
never cut before a variant, so the phase's tail grew over 694 iterations to cover it (2.4x
fewer actions); a drift's joint phase is now cut there like any other (11.0x).  A built trace
of that shape: 880 + 2 + 1000 iterations, rank 0's compute jumping at 180 and falling
slowly after it, the two between with a bcast and a barrier more."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.replay import sampling
from minitrace.replay.sampling import sampled_replay
from tests.support.synthetic_loops import Step, build

pytestmark = pytest.mark.timeout(600)
FIRST, SECOND, JUMP = 880, 1000, 180


def _trace():
    rng = np.random.default_rng(3)

    def body(lo, n):
        def steps(r):
            it = np.arange(lo, lo + n)
            own = np.where(it < JUMP, 100e-6, 200e-6 - 0.1e-6 * (it - JUMP)) if r == 0 \
                else np.full(n, 150e-6)
            return [Step("compute", volume=own * (1 + 0.02 * rng.standard_normal(n))),
                    Step("allreduce", nbytes=8),
                    Step("irecv", peer=1 - r, tag=1, nbytes=4096),
                    Step("isend", peer=1 - r, tag=1, nbytes=4096),
                    Step("waitall", waits=(2, 3)), Step("compute", volume=20e-6),
                    Step("allreduce", nbytes=8)]
        return steps

    def between(r):
        return [Step("compute", volume=50e-6), Step("allreduce", nbytes=8),
                Step("irecv", peer=1 - r, tag=1, nbytes=8192),
                Step("isend", peer=1 - r, tag=1, nbytes=8192),
                Step("waitall", waits=(2, 3)), Step("compute", volume=30e-6),
                Step("bcast", nbytes=8), Step("barrier")]

    data, b = build(2, [(FIRST, body(0, FIRST)), (2, between), (SECOND, body(FIRST, SECOND))])
    return data, np.concatenate([b[0][:, :-1], b[1][:, :-1], b[2]], axis=1)


def test_a_drifts_joint_phase_is_cut_before_a_variant(monkeypatch):
    data, loop = _trace()
    s = sampled_replay(data, [loop], "auto", compute_rate="1Gf")
    assert any("drifts in loop 0" in n for n in s.notes), s.notes
    assert any(n.startswith("phases cut before a variant") and "iteration 880" in n
               for n in s.notes), s.notes
    pieces = [p for p in s.phases if p.first >= JUMP]
    assert all(p.joint and p.path is not None for p in pieces)    # a drift's, still joint
    assert [p.first for p in pieces][-1] == FIRST
    # left whole, as joint phases were: its tail or start grows over the variant
    monkeypatch.setattr(sampling, "_split_at_variants", lambda phases, cost, fixed: phases)
    whole = sampled_replay(data, [loop], "auto", compute_rate="1Gf")
    assert not any(n.startswith("phases cut before a variant") for n in whole.notes)
    assert s.replayed_share < 0.75 * whole.replayed_share, (s.replayed_share,
                                                             whole.replayed_share)
