"""Iteration sampling where message sizes change every step (issue 38): ECP CoMD exchanges the
atoms that crossed each face, a count that moves from step to step, so no two steps made the
same calls and sampling said "replayed fully: no dominant loop".  Its step on two ranks also
has no call of its own (six computes, two exchanges with the other rank, four with itself), so
no iteration could be anchored, and a body of one compute and one call took every other pair
for a variant of itself.  tests/programs/md_drift.c reproduces the pattern."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.replay.sampling import SIZES_NOTE, _anchor, extend_loop, load_trace, loops_of, \
    sampled_replay, top_level
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(600)
STEPS = 120
RATE = "1Gf"


@pytest.fixture(scope="module")
def drift(programs, tmp_path_factory):
    out = tmp_path_factory.mktemp("drift") / "md.h5"
    record(out, 2, [programs("md_drift"), str(STEPS)], volume="cputime")
    return load_trace(str(out))


def _steps(data, rank):
    """The row where each step starts on ``rank`` (its first compute before a sendrecv with
    the other rank, after the previous step's last exchange)."""
    a = data.actions[data.rank_slice(rank)]
    mpi = np.flatnonzero(a["kind"] != K.code("compute"))
    sr = mpi[a["kind"][mpi] == K.code("sendrecv")]
    return data.rank_offsets[rank] + sr[::6] - 1


def test_the_steps_differ_in_their_sizes(drift):
    a = drift.actions[drift.rank_slice(0)]
    sizes = a["bytes_sent"][a["kind"] == K.code("sendrecv")].reshape(STEPS, 6)
    assert len({tuple(s) for s in sizes.tolist()}) > STEPS // 2


def test_the_step_loop_is_found_with_sizes_set_aside(drift):
    loops, notes = loops_of(drift)
    assert SIZES_NOTE in notes
    main = max(top_level(loops), key=lambda b: int((b[:, -1] - b[:, 0]).sum()))
    # one iteration a step (every 10th with the energies' two allreduces), nearly all of them
    assert main.shape[1] - 1 >= STEPS - 2
    for r in range(2):
        assert set(np.diff(main[r]).tolist()) <= {12, 16}
        assert set(main[r, :-1].tolist()) <= set(_steps(drift, r).tolist())


def test_an_anchor_is_a_run_when_no_call_is_the_steps_own():
    c, other, me = 0, 1, 2          # compute, an exchange with the other rank, with itself
    body = np.array([c, other, c, other, c, me, c, me, c, me, c, me])
    assert _anchor(body, None) == (1, 3)          # "other, compute, other": no single, no pair
    assert _anchor(np.array([c, other, c, me]), None) == (1, 1)
    assert _anchor(np.array([c, me] * 6), None) is None     # periodic past MAX_ANCHOR


def test_a_body_of_a_compute_and_a_call_is_not_every_pair():
    """[compute, exchange with itself] shares half of any [compute, call]: no variant."""
    ids = np.array([0, 2, 0, 2, 0, 2, 0, 1, 0, 1, 0, 2], np.int64)
    bounds = np.array([[0, 2, 4, 6]])
    assert extend_loop(ids, np.array([0, len(ids)]), bounds).tolist() == bounds.tolist()


def test_sampling_skips_steps_and_bounds_them(drift):
    res = sampled_replay(drift, None, "auto", compute_rate=RATE)
    assert any(SIZES_NOTE in n for n in res.notes)
    assert 0 < res.replayed_share < 0.6 and res.skipped_share > 0.4
    assert np.isfinite(res.bound) and res.bound > 0
