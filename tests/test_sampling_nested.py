"""Iteration sampling of a step loop with a summary every n steps (issue 38): UK-MAC CloverLeaf
writes a field summary every 10 steps, so the grammar finds a loop of 10 steps (a nested loop
of 9 and the step with the summary); sampling saw 30 iterations where 300 steps repeat.  Where
the steps do not fill the last 10, those left form a loop of their own which, grown back over
the steps with a summary, overlaps the loop of 10 steps in part: both were sampled and their
shared iterations skipped twice (CloverLeaf on one rank: -11% from the full replay).
tests/programs/summary_steps.c reproduces the pattern."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.replay import replay
from minitrace.replay.sampling import Phase, _cover_variants, _variant_labels, \
    iteration_cost, load_trace, loop_window, loops_of, sampled_replay, top_level
from tests.support.record_util import record
from tests.support.synthetic_loops import Step, build

pytestmark = pytest.mark.timeout(600)
RATE = "1Gf"
PERIOD = 10


@pytest.fixture(scope="module")
def runs(programs, tmp_path_factory):
    """summary_steps on 2 ranks: 300 steps (30 summaries) and 299 (9 steps after the last)."""
    where = tmp_path_factory.mktemp("summary")
    out = {}
    for steps in (300, 299):
        f = where / f"s{steps}.h5"
        record(f, 2, [programs("summary_steps"), str(steps), str(PERIOD)], volume="cputime")
        out[steps] = load_trace(str(f))
    return out


def _spans(loops):
    return [(int(b[0, 0]), int(b[0, -1])) for b in loops]


def test_loops_that_overlap_in_part_leave_the_larger():
    """Of two loops neither inside the other but sharing rows, the larger is top-level alone;
    one inside another and one apart stay as they were."""
    a = np.array([[35, 345, 655, 965]])           # 3 iterations from row 35
    b = np.arange(43, 1300, 30)[None, :]           # 41 iterations from row 43, past a's end
    inner = np.array([[40, 50, 60]])
    apart = np.array([[1400, 1410, 1420]])
    assert _spans(top_level([a, b])) == _spans([b])
    assert _spans(top_level([a, inner, apart])) == _spans([a, apart])


def test_the_main_loop_is_the_steps_not_the_summaries(runs):
    """One iteration a step, the summaries' steps among them, on every rank; no two top-level
    loops overlap."""
    for steps, data in runs.items():
        top = top_level(loops_of(data)[0])
        spans = _spans(top)
        assert all(z <= a for (_, z), (a, _) in zip(spans, spans[1:]))
        main = max(top, key=lambda b: int((b[:, -1] - b[:, 0]).sum()))
        # the last step may have no anchor after it to end it: left to what follows the loop
        assert steps - 1 <= main.shape[1] - 1 <= steps, steps
        lengths = set(np.diff(main).ravel().tolist())
        assert len(lengths) == 2, lengths         # a step, and a step with a summary


def test_each_step_is_sampled_once(runs):
    """The phases hold each of the main loop's iterations once (not the overlap twice), and
    most of them are skipped.  (Whether the prediction is within its bound depends on the
    recording: 60 us steps on a loaded machine once had a replayed step 2% off the others.)"""
    for steps, data in runs.items():
        s = sampled_replay(data, None, "auto", compute_rate=RATE)
        assert steps - 1 <= sum(p.iterations for p in s.phases) <= steps
        assert s.skipped_share > 0.5
        assert len(s.loops) == 1


def _plain(r):
    """A CG-like iteration: a halo exchange, its compute, a residual's allreduce."""
    return [Step("irecv", 1 - r, 1, 4096), Step("isend", 1 - r, 1, 4096),
            Step("compute", volume=2e-4), Step("waitall", waits=(0, 1)),
            Step("allreduce", nbytes=8)]


def _check(r):
    """A variant of it: a convergence check's compute and allreduce more."""
    return _plain(r) + [Step("compute", volume=5e-5), Step("allreduce", nbytes=8)]


def _joined(bl):
    """One loop's iteration bounds from ``build``'s segments (each ends where the next
    starts)."""
    return np.concatenate([b[:, :-1] for b in bl] + [bl[-1][:, -1:]], axis=1)


def test_a_joint_phase_takes_the_variants_its_group_replayed():
    """A summary every 10 steps (the 3rd of each 10) and one rank's compute 50% up from step
    144 on (a lasting change of balance: a joint phase there).  The joint phase's start (steps
    144-150) and tail (293-299) hold no summary step, but the phase before replayed some: its
    line, which the joint phase shares, has the summaries' cost, so the tail stays one window
    (it grew back to the 2nd last summary, 28 steps, for CloverLeaf at 4 ranks).  The joint
    phase's skipped summaries compute beyond any of its fitted iterations, which its bound
    covers (:func:`minitrace.replay.sampling._outside`): its start may grow."""
    def summary(r):
        return _plain(r) + [Step("compute", volume=5e-5)] + [Step("reduce", 0, nbytes=40)] * 5
    runs = [(2, _plain)] + [(1, summary), (9, _plain)] * 29 + [(1, summary), (7, _plain)]
    data, bl = build(2, runs)
    bounds = _joined(bl)
    assert bounds.shape[1] - 1 == 300
    acts = data.actions.copy()
    late = np.zeros(len(acts), bool)
    late[bounds[0, 144]:bounds[0, -1]] = True
    acts["volume"][late & (acts["kind"] == K.code("compute"))] *= 1.5
    s = sampled_replay(replace(data, actions=acts), [bounds], "auto", compute_rate=RATE)
    assert [(p.first, p.joint) for p in s.phases] == [(0, False), (144, True)]
    assert s.phases[1].tail == s.phases[1].window
    assert s.phases[1].skipped > 0
    full = replay(replace(data, actions=acts), compute_rate=RATE)
    assert abs(s.simulated_time - full.simulated_time) <= s.bound


def test_a_rare_variant_grows_the_start_and_the_tail_where_that_is_cheaper():
    """A check every 26th iteration, the first after the start of 28 (NPB CG W on 8 ranks: a
    residual step after every 25 CG iterations): to fit two of each, the start grows over the
    first check and the tail back over the last (41 + 27 replayed), not the tail alone over
    the last two (28 + 53); with --sample K the start is the user's, the tail alone grows.
    Two of each leave this replay under GAIN times smaller than the trace: auto fits one
    (41 + 7, :func:`_see_once`)."""
    data, bl = build(2, [(40, _plain)] + [(1, _check), (25, _plain)] * 10)
    bounds = _joined(bl)
    assert bounds.shape[1] - 1 == 300
    w = loop_window(300)
    p = Phase(0, 0, 300, w, replayed=4 * w, tail=w)
    _cover_variants(p, _variant_labels(iteration_cost(data, bounds)))
    assert (p.replayed, p.tail) == (41, 27)
    s = sampled_replay(data, [bounds], "auto", compute_rate=RATE)
    assert [(p.replayed, p.tail) for p in s.phases] == [(41, w)]
    assert any("one iteration of each variant replayed, not two" in n for n in s.notes)
    s = sampled_replay(data, [bounds], 28, compute_rate=RATE)
    assert [(p.replayed, p.tail) for p in s.phases] == [(28, 53)]


def test_variants_near_the_start_grow_the_start():
    """Two checks just after the start of 28 (iterations 30 and 34; HPCG's benchmark loop has
    its variants near its start): the start grows over both (35 replayed), not the tail back
    over them (28 + 271) nor the start over the first and the tail over the last (31 + 267)."""
    data, bl = build(2, [(30, _plain), (1, _check), (3, _plain), (1, _check), (265, _plain)])
    bounds = _joined(bl)
    s = sampled_replay(data, [bounds], "auto", compute_rate=RATE)
    w = s.phases[0].window
    assert [(p.replayed, p.tail) for p in s.phases] == [(35, w)]
