"""Iteration sampling where message sizes change every few steps (public Mantevo miniMD: its
halo sizes change at each re-neighbouring, every 20 steps).  The loops of the calls as they
are were runs of 19 steps, too short for the sampler to skip any, and they covered more than
half of the actions, so the search with sizes set aside never ran: ``--sample auto`` replayed
everything, with markers, in 2.2-3.4x the full replay's time.  Now the loops with sizes set
aside are tried where the others would skip few actions, and an outer loop broken by a thermo
output is flattened into its steps; where nothing long enough to skip is left, the trace
replays fully.  tests/programs/ring_rebuild.c reproduces the pattern."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.replay import replay
from minitrace.replay.sampling import SIZES_NOTE, load_trace, loops_of, sampled_replay, \
    top_level
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(600)
STEPS, EVERY = 240, 12
RATE = "1Gf"


@pytest.fixture(scope="module")
def rebuild(programs, tmp_path_factory):
    out = tmp_path_factory.mktemp("rebuild") / "ring.h5"
    record(out, 2, [programs("ring_rebuild"), str(STEPS), str(EVERY)], volume="cputime")
    return load_trace(str(out))


def test_the_sizes_change_at_each_rebuild(rebuild):
    a = rebuild.actions[rebuild.rank_slice(0)]
    sent = a["bytes_sent"][a["kind"] == K.code("sendrecv")]
    assert len(set(sent[sent > 4].tolist())) >= STEPS // EVERY


def test_the_steps_are_one_loop_with_sizes_set_aside(rebuild):
    loops, notes = loops_of(rebuild)
    assert SIZES_NOTE in notes
    main = max(top_level(loops), key=lambda b: int((b[:, -1] - b[:, 0]).sum()))
    # one iteration a (compute, sendrecv) pair, each thermo output's sums one of their own:
    # not runs of EVERY steps
    assert main.shape[1] - 1 >= 2 * STEPS
    assert (main[:, -1] - main[:, 0]).sum() > 0.9 * len(rebuild.actions)


def test_auto_skips_iterations_within_its_bound(rebuild):
    full = replay(rebuild, compute_rate=RATE)
    s = sampled_replay(rebuild, None, "auto", compute_rate=RATE)
    assert s.replayed_share < 0.5, s.notes
    assert abs(s.simulated_time - full.simulated_time) <= s.bound
    assert not any(n.startswith("replayed fully") for n in s.notes)


def test_a_loop_too_short_to_skip_replays_fully(programs, tmp_path):
    out = tmp_path / "short.h5"
    record(out, 2, [programs("ring_rebuild"), "10", str(EVERY)], volume="cputime")
    data = load_trace(str(out))
    s = sampled_replay(data, None, "auto", compute_rate=RATE)
    assert any(n.startswith("replayed fully: no loop long enough to skip") for n in s.notes), \
        s.notes
    assert s.replays == 1 and s.replayed_share == 1.0 and not s.phases
    assert np.isclose(s.simulated_time, replay(data, compute_rate=RATE).simulated_time,
                      rtol=0, atol=1e-12)
