"""Iteration sampling on loops as real codes write them (issue 38): iterations that vary (a
convergence check when the data asks for it, output every n steps), requests that span one
iteration into the next (a pipelined halo exchange), a warm-up before the steady state; and
``--sample auto`` on every kind of trace the recorder tests record, without an internal error."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.errors import MinitraceError
from minitrace.replay import replay
from minitrace.replay import critical_path
from minitrace.replay.platforms import Cluster, parse_quantity
from minitrace.replay.sampling import LASTING, WINDOW, Phase, _fit, _on_critical_path, \
    _seconds_per_unit, iteration_cost, load_trace, loop_window, loops_of, phases_of, \
    sampled_replay, slowest_rank, top_level
from tests.support.record_util import record
from tests.support.synthetic_loops import Step, amr, build, stencil

RATE = "1Gf"


def _varied(nranks: int, runs: list[int], check_every=None):
    """A CG-like loop whose iteration gains a convergence check (two more allreduces) between
    ``runs`` of plain iterations: successive loops as the generator builds them."""
    def plain(r):
        left, right = (r - 1) % nranks, (r + 1) % nranks
        return [Step("irecv", left, 3, 4096), Step("isend", right, 3, 4096),
                Step("waitall", waits=(0, 1)), Step("compute", volume=1e-4),
                Step("allreduce", nbytes=8), Step("compute", volume=2e-5)]

    def checked(r):
        return plain(r) + [Step("allreduce", nbytes=8), Step("compute", volume=1e-5),
                           Step("allreduce", nbytes=8)]
    loops = []
    for n in runs:
        loops += [(n, plain), (1, checked)]
    data, bounds = build(nranks, loops)
    return data, sum(runs) + len(runs)


def test_a_loop_whose_iterations_vary_is_found_whole():
    """The grammar cuts a loop at each varied iteration; the main loop is grown over them (an
    iteration per anchored run of actions), so sampling sees every iteration of it."""
    data, total = _varied(2, [60, 2, 3, 2, 7, 2, 3, 40, 2, 3, 30])
    top = top_level(loops_of(data)[0])
    main = max(top, key=lambda b: b.shape[1])
    assert main.shape[1] - 1 == total - 1     # the last iteration: no anchor after it ends it
    assert (np.diff(main, axis=1) > 0).all()
    s = sampled_replay(data, None, "auto", compute_rate=RATE)
    full = replay(data, compute_rate=RATE)
    assert s.skipped_share > 0.5
    assert abs(s.simulated_time - full.simulated_time) <= s.bound


def test_a_warmup_block_does_not_make_a_phase():
    """A first block in which one rank is slower than in the rest (its caches cold) moves the
    balance between the ranks, but only there: the steady rule's warm-up, not a phase of its
    own replayed whole before a second start; the same rank slower for as long (LASTING
    blocks) is a phase."""
    data, bounds = stencil(2, 20 * WINDOW)
    comp = data.actions["kind"] == K.code("compute")
    for blocks, want in ((1, [(0, 20 * WINDOW)]),
                         (LASTING, [(0, LASTING * WINDOW), (LASTING * WINDOW, 20 * WINDOW)])):
        first = np.zeros(len(data.actions), bool)
        first[bounds[0, 0]:bounds[0, blocks * WINDOW]] = True       # (rank 0's rows)
        acts = data.actions.copy()
        acts["volume"][first & comp] *= 2.0
        got = phases_of(replace(data, actions=acts), 0, bounds, WINDOW)
        assert [(p.first, p.stop) for p in got] == want, blocks


def test_a_change_of_compute_level_is_no_phase_a_change_of_balance_is():
    """Every rank 30% slower over the loop's last 8 blocks (a recorded machine's transient)
    stays in the phase, which the line against the critical path follows; one rank alone 30%
    slower there moves the balance between ranks (how long the others wait): a phase."""
    data, bounds = stencil(2, 20 * WINDOW)
    late = np.zeros(len(data.actions), bool)
    for r in range(2):
        late[bounds[r, 12 * WINDOW]:bounds[r, -1]] = True
    late &= data.actions["kind"] == K.code("compute")
    for ranks, want in (((0, 1), [(0, 20 * WINDOW)]),
                        ((0,), [(0, 12 * WINDOW), (12 * WINDOW, 20 * WINDOW)])):
        acts = data.actions.copy()
        acts["volume"][late & np.isin(data.rank_of(), ranks)] *= 1.3
        got = phases_of(replace(data, actions=acts), 0, bounds, WINDOW)
        assert [(p.first, p.stop) for p in got] == want, ranks


#: Rank 0's share of the compute (its compute over the two ranks' mean) per block of WINDOW
#: iterations in NPB LU class W recorded on 2 ranks at a load of 6-8 (session 16): it wanders
#: by 5-10% for tens of iterations as the machine's other work comes and goes.
LU_SHARE = [1.099, 1.01, 1.007, 1.075, 1.021, 1.033, 1.134, 1.046, 1.009, 0.976, 0.911, 0.926,
            1.017, 0.986, 1.013, 1.026, 0.983, 1.044, 1.082, 0.894, 0.978, 0.882, 0.906, 0.916,
            1.065]


def _compute_scaled(data, bounds, factor):
    """``data`` with rank r's computes in iteration i scaled by ``factor[r, i]`` (a factor of
    one dimension: every rank's)."""
    factor = np.broadcast_to(factor, (len(bounds), bounds.shape[1] - 1))
    acts = data.actions.copy()
    comp = acts["kind"] == K.code("compute")
    for r in range(len(bounds)):
        rows = np.arange(bounds[r, 0], bounds[r, -1])
        it = np.searchsorted(bounds[r], rows, side="right") - 1
        acts["volume"][rows[comp[rows]]] *= factor[r, it[comp[rows]]]
    return replace(data, actions=acts)


def _rank0_scaled(data, bounds, factor):
    """``data`` with rank 0's computes in iteration i scaled by ``factor[i]``."""
    every = np.ones((len(bounds), len(factor)))
    every[0] = factor
    return _compute_scaled(data, bounds, every)


def test_a_rank_whose_compute_wanders_is_no_phase():
    """Rank 0's share of the compute as it wandered in a loaded recording of NPB LU W: the
    block means' own wander, not the iterations' jitter (none here), is what a change must
    exceed; the old rule cut it at iterations 228 and 288 as LU's recording was (3 phases,
    each with a start replayed: 3.1x fewer actions).  The same rank twice as slow from block 12
    on (a refinement that moves the load) is still a phase, cut where it starts."""
    n = len(LU_SHARE) * WINDOW
    data, bounds = stencil(2, n)
    share = np.repeat(LU_SHARE, WINDOW)
    for step, want in ((1.0, [(0, n)]), (2.0, [(0, 12 * WINDOW), (12 * WINDOW, n)])):
        factor = share / (2 - share) * np.where(np.arange(n) >= 12 * WINDOW, step, 1.0)
        for drifts in (False, True):          # a step is no drift
            got = phases_of(_rank0_scaled(data, bounds, factor), 0, bounds, WINDOW, drifts)
            assert [(p.first, p.stop) for p in got] == want, (step, drifts)


def test_a_balance_that_drifts_is_followed_by_the_critical_path():
    """Rank 0's compute rising gradually to 30% above the other's and back over the loop
    (UK-MAC CloverLeaf recorded at 4-16 ranks on 2 cores: shares drifting by 10-20% over
    tens of blocks): a lasting change of balance, cut into joint phases (each replaying a
    start and a tail: 4.7x fewer actions on CloverLeaf 4r) by the rule on steps; it comes a
    few percent a block, so where the critical path through the messages can be followed it
    is one phase whose skipped iterations are predicted as their path plus what the replayed
    ones took beyond theirs."""
    n = 25 * WINDOW
    data, bounds = stencil(2, n)
    drifted = _rank0_scaled(data, bounds, 1 + 0.3 * np.sin(np.pi * np.arange(n) / n))
    assert len(phases_of(drifted, 0, bounds, WINDOW)) > 1
    assert [(p.first, p.stop) for p in phases_of(drifted, 0, bounds, WINDOW, True)] == [(0, n)]
    s = sampled_replay(drifted, [bounds], "auto", compute_rate=RATE)
    assert [(p.first, p.stop, p.joint) for p in s.phases] == [(0, n, False)]
    assert s.phases[0].path is not None and len(s.phases[0].path) == n
    assert any("drifts" in note for note in s.notes)
    assert abs(s.simulated_time - replay(drifted, compute_rate=RATE).simulated_time) <= s.bound


@pytest.mark.parametrize("rate, speed", [("4Gf", "1Gf"), ("0.25Gf", "1Gf"), ("1Gf", "4Gf")])
def test_a_drifts_critical_path_is_in_the_replays_seconds(rate, speed):
    """The drift of the test above replayed at a compute rate other than the hosts' speed:
    the critical path sums the trace's volumes (recorded seconds here), which the replay runs
    at ``rate`` flops each on hosts of ``speed``; taken for the replay's seconds at slope 1
    the skipped iterations were 9% off against a bound of 3% (4Gf), 25% against 11%
    (0.25Gf).  On a platform file, whose hosts may differ in speed, the drift is cut into
    phases as without a path."""
    n = 25 * WINDOW
    data, bounds = stencil(2, n)
    drifted = _rank0_scaled(data, bounds, 1 + 0.3 * np.sin(np.pi * np.arange(n) / n))
    kw = dict(compute_rate=rate, cluster=Cluster(speed=speed))
    s = sampled_replay(drifted, [bounds], "auto", **kw)
    assert s.phases[0].path is not None
    assert abs(s.simulated_time - replay(drifted, **kw).simulated_time) <= s.bound
    assert _seconds_per_unit(kw) == pytest.approx(parse_quantity(rate, "speed") /
                                                  parse_quantity(speed, "speed"))
    assert _seconds_per_unit({**kw, "cluster": None, "platform": "hosts.xml"}) is None


def test_a_step_that_moves_the_load_between_ranks_is_no_drift():
    """At block 8 three of six ranks compute 7-13% more, the other three as much less, the
    larger move passing from rank to rank each block: every block departs, none of the ranks
    in all four, and the rule on drifts (which tested only a rank departing in all four) took
    the step for a drift and followed it.  It is a phase cut as without the rule."""
    nb, nranks = 20, 6
    n = nb * WINDOW
    data, bounds = stencil(nranks, n)
    factor = np.ones((nranks, n))
    for b in range(8, nb):
        for i in range(3):
            up = 1.07 if (b + i) % 3 == 0 else 1.13
            factor[i, b * WINDOW:(b + 1) * WINDOW] = up
            factor[3 + i, b * WINDOW:(b + 1) * WINDOW] = 2 - up
    stepped = _compute_scaled(data, bounds, factor)
    want = [(0, 8 * WINDOW), (8 * WINDOW, n)]
    for drifts in (False, True):
        got = phases_of(stepped, 0, bounds, WINDOW, drifts)
        assert [(p.first, p.stop) for p in got] == want, drifts


def test_skipped_iterations_follow_their_critical_path_at_slope_one():
    """Replayed times that are their critical path plus a constant (and an alternation of
    period 2, a delay carried into the next iteration), the skipped iterations' path 30% up
    (a drifting balance): a line of their own, fitted on the replayed iterations where the
    path hardly moves, would extrapolate an uncertain slope; at slope 1 the prediction is
    the skipped iterations' path plus the constant, the variance of smallest kept."""
    n = 25 * WINDOW
    data, bounds = stencil(2, n)
    drifted = _rank0_scaled(data, bounds, 1 + 0.3 * np.sin(np.pi * np.arange(n) / n))
    path = critical_path.iteration_path(drifted, bounds, critical_path.clocks(drifted))
    w = loop_window(n)
    t = path + 1e-6 + 1e-8 * (-1) ** np.arange(n)
    p = Phase(0, 0, n, w, replayed=4 * w, tail=w, steady_from=0)
    times, cost = [(t[:4 * w], t[n - w:])], [iteration_cost(drifted, bounds)]
    _fit([p], times, [cost[0][:n]])
    phases = [p]
    assert _on_critical_path(drifted, [bounds], phases, times, cost,
                             [slowest_rank(drifted, bounds)], [critical_path.DETACHED], 1.0)
    (q,) = phases
    assert q.path is not None
    skipped = slice(4 * w, n - w)
    assert q.skipped_time == pytest.approx(path[skipped].sum() + 1e-6 * q.skipped, rel=1e-6)


def test_a_hiccup_of_the_compute_is_replayed_not_extrapolated():
    """One iteration in the middle of the loop where rank 0 computes 40 times as long (HPCG
    recorded on 8 ranks: one iteration of 21.5 ms among ones of 1.2 ms): the others wait for
    it only in part, so the replayed iterations' line, extrapolated to its cost, was off by
    more than its bound.  The start grows over it (cheaper than the tail back to it), as over
    an iteration variant no replayed one shows."""
    n = 20 * WINDOW
    data, bounds = stencil(2, n)
    at = 5 * WINDOW
    s = sampled_replay(_rank0_scaled(data, bounds, np.where(np.arange(n) == at, 40.0, 1.0)),
                       [bounds], "auto", compute_rate=RATE)
    (p,) = s.phases
    assert p.skipped > 0 and not p.replayed <= at < p.iterations - p.tail
    assert p.replayed == at + 1


@pytest.mark.parametrize("factor", [8.0, 20.0])
def test_a_hiccup_under_a_tenth_of_the_loop_is_replayed_where_the_compute_is_flat(factor):
    """The hiccup above 8 or 20 times the others' (3% or 7% of the loop's compute, under
    HICCUP): the replayed iterations' compute is all the same, so their line has no compute
    column and predicted the hiccup as any other iteration, 2.3% or 6% off against a bound of
    0.005%.  Where most iterations' compute is the same, one that differs is replayed."""
    n = 20 * WINDOW
    data, bounds = stencil(2, n)
    at = 5 * WINDOW
    hiccup = _rank0_scaled(data, bounds, np.where(np.arange(n) == at, factor, 1.0))
    s = sampled_replay(hiccup, [bounds], "auto", compute_rate=RATE)
    (p,) = s.phases
    assert p.skipped > 0 and not p.replayed <= at < p.iterations - p.tail
    assert abs(s.simulated_time - replay(hiccup, compute_rate=RATE).simulated_time) <= s.bound


def test_a_change_in_the_last_blocks_is_no_phase():
    """One rank 30% slower over the loop's last LASTING - 1 blocks does not last: no phase of
    its own (a start replayed whole), the phase's tail replays the loop's end."""
    n = 20 * WINDOW
    data, bounds = stencil(2, n)
    factor = np.where(np.arange(n) >= n - (LASTING - 1) * WINDOW, 1.3, 1.0)
    got = phases_of(_rank0_scaled(data, bounds, factor), 0, bounds, WINDOW)
    assert [(p.first, p.stop) for p in got] == [(0, n)]


def test_a_phase_of_balance_alone_is_joint_with_the_one_before():
    """Refinement phases that move the load but not the messages (the generated AMR code):
    each later phase is joint with the first, replays one window at its start (the replay is
    steady through the cut) and a tail, and skips the rest on the line it shares (an intercept
    of its own); a change of the bytes moved instead is a phase of its own, with a start of
    four windows."""
    data, bounds = amr(2, 2000, phases=4, jitter=0.05, seed=5)
    s = sampled_replay(data, [bounds], "auto", compute_rate=RATE)
    full = replay(data, compute_rate=RATE)
    assert [p.joint for p in s.phases] == [False, True, True, True]
    w = s.phases[0].window
    assert s.phases[0].replayed >= 4 * w
    assert all(p.replayed == w and p.tail == w and p.skipped > 0 for p in s.phases[1:])
    assert abs(s.simulated_time - full.simulated_time) <= s.bound
    data, bounds = stencil(2, 20 * WINDOW)
    late = np.zeros(len(data.actions), bool)
    for r in range(2):
        late[bounds[r, 12 * WINDOW]:bounds[r, -1]] = True
    acts = data.actions.copy()
    for f in ("bytes_sent", "bytes_recv"):
        acts[f][late] *= 2
    got = phases_of(replace(data, actions=acts), 0, bounds, WINDOW)
    assert [(p.first, p.stop, p.joint) for p in got] == [(0, 12 * WINDOW, False),
                                                         (12 * WINDOW, 20 * WINDOW, False)]


def test_a_transient_of_the_recorded_compute_is_no_warmup():
    """Every rank's compute 50% up at the loop's start, settling over a few windows (a recorded
    machine's load going away): the replayed times follow their static cost, so the replay is
    steady from the start: four windows replayed, not grown until the compute settles (the
    steady rule is about the replay's own warm-up, measured beside the cost)."""
    n = 20 * WINDOW
    data, bounds = stencil(2, n)
    w = loop_window(n)
    factor = 1 + 0.5 * np.exp(-np.arange(n) / (2 * w))
    s = sampled_replay(_compute_scaled(data, bounds, factor), [bounds], "auto",
                       compute_rate=RATE)
    assert [(p.replayed, p.tail, p.steady_from) for p in s.phases] == [(4 * w, w, 0)]


@pytest.mark.parametrize("halo", [10, 40])
def test_a_warmup_that_sets_the_slope_alone_is_in_the_bound(halo):
    """The loop's first iteration four times the others' compute and its halo messages
    ``halo`` times as large (public miniGhost at 4 ranks: its first iteration 4x the others'
    compute, 6.3e-5 s above the others' line), the compute of iterations 60-259 20% up on
    every rank (a level that wanders on all ranks alike stays in its phase), the others'
    within 2%: the steady rule lets the first iteration in (its cost explains most of it), and
    at leverage near 1 it set the replayed iterations' slope, which carried the skipped ones'
    higher compute 1.9% and 12% off against bounds of 0.29% and 0.73%.  The line without it
    predicts them; the two lines' disagreement is in the bound."""
    n = 25 * WINDOW
    data, bounds = stencil(2, n, jitter=0.02)
    factor = np.where((np.arange(n) >= 60) & (np.arange(n) < 260), 1.2, 1.0)
    factor[0] = 4.0
    acts = _compute_scaled(data, bounds, factor).actions
    for r in range(2):
        first = np.arange(bounds[r, 0], bounds[r, 1])
        for f in ("bytes_sent", "bytes_recv"):
            halo_rows = first[acts[f][first] > 1000]
            acts[f][halo_rows] *= halo
    warm = replace(data, actions=acts)
    s = sampled_replay(warm, [bounds], "auto", compute_rate=RATE)
    (p,) = s.phases
    assert p.steady_from == 0 and p.skipped > n / 2
    assert abs(s.simulated_time - replay(warm, compute_rate=RATE).simulated_time) <= s.bound


@pytest.fixture(scope="module")
def pipeline_traces(programs, tmp_path_factory):
    """tests/programs/pipeline.c recorded at 2 ranks, 300 iterations: pipelined and not."""
    exe = programs("pipeline")
    where = tmp_path_factory.mktemp("pipeline")
    out = {}
    for name, args in (("pipelined", ["300", "1"]), ("plain", ["300", "0"])):
        out[name] = where / f"{name}.h5"
        record(out[name], 2, [exe, *args], volume="cputime")
    return out


@pytest.mark.parametrize("name", ["pipelined", "plain"])
def test_recorded_loop_with_varied_and_pipelined_iterations_is_sampled(pipeline_traces, name):
    """The recorded main loop (convergence checks at irregular iterations, a reduce every 50,
    nested sweeps; pipelined: each iteration completes the halo requests the previous one
    posted) is found whole and its iterations skipped: the requests in flight at the skipped
    block's end are completed by the waits after it under the ids of those in flight at its
    start (without that the reduced trace does not replay)."""
    data = load_trace(pipeline_traces[name])
    top = top_level(loops_of(data)[0])
    assert max(b.shape[1] - 1 for b in top) >= 299
    s = sampled_replay(data, None, "auto", compute_rate=RATE)
    assert not [n for n in s.notes if "cannot be skipped" in n or "replayed whole" in n]
    assert s.skipped_share > 0.5
    assert sum(p.skipped for p in s.phases) > 150


def test_requests_that_do_not_pair_up_say_why(pipeline_traces):
    """A block of a pipeline's periods pairs up the requests in flight at its end with those in
    flight at its start; a block that completes requests posted before it but posts none that
    are completed after it (the pipeline drains) is no period of it, and says so."""
    from minitrace.replay.sampling import crossing_requests
    data = load_trace(pipeline_traces["pipelined"])
    b = top_level(loops_of(data)[0])[0]
    rows = np.concatenate([np.arange(b[r, 100], b[r, 150]) for r in range(data.nranks)])
    pairs, why = crossing_requests(data, rows)
    assert why is None and len(pairs) == 2 * data.nranks      # irecv and isend per rank
    last = np.concatenate([np.arange(b[r, 290], data.rank_offsets[r + 1])
                           for r in range(data.nranks)])         # the loop's end, and after
    _, why = crossing_requests(data, last)
    assert why and why.startswith("requests cross the boundaries")


# == no internal error on any trace the recorder tests record ==================================
RECORDED = [("ring", 2, ["5"]), ("halo", 4, ["30", "100"]), ("isendrecv", 3, []),
            ("persist", 2, []), ("amr", 4, []), ("colls", 2, []),
            ("pipeline", 2, ["40", "1"]), ("pipeline", 3, ["250", "1"])]


@pytest.fixture(scope="module")
def recorded_traces(programs, tmp_path_factory):
    where = tmp_path_factory.mktemp("recorded")
    out = []
    for name, n, args in RECORDED:
        f = where / f"{name}-{n}-{'-'.join(args)}.h5"
        record(f, n, [programs(name), *args], volume="cputime")
        out.append(f)
    return out


def test_sample_auto_never_fails_inside_on_recorded_traces(recorded_traces):
    """``minitrace replay --sample auto`` on each recorded trace: a prediction, or a one-line
    error (what the replay cannot express); never an internal error."""
    for f in recorded_traces:
        p = subprocess.run([sys.executable, "-m", "minitrace", "replay", str(f),
                            "--compute-rate", RATE, "--sample", "auto"],
                           capture_output=True, text=True, timeout=300)
        assert "internal error" not in p.stderr and "Traceback" not in p.stderr, \
            (f.name, p.stderr[-2000:])
        assert p.returncode == 0 or (p.stderr.startswith("minitrace: error:") and
                                     p.stderr.count("\n") == 1), (f.name, p.stderr[-2000:])


def test_sampling_varied_loops_fails_only_with_a_reason():
    """Random compositions of plain and varied iterations (seeded) sample, or say in one line
    why not."""
    rng = np.random.default_rng(38)
    for _ in range(25):
        runs = rng.integers(1, 41, rng.integers(1, 13)).tolist()
        data, _ = _varied(int(rng.integers(2, 5)), runs)
        sample = ["auto", 1, 5, 30][int(rng.integers(4))]
        try:
            s = sampled_replay(data, None, sample, compute_rate=RATE)
        except MinitraceError as e:
            assert str(e)
            continue
        assert np.isfinite(s.simulated_time) and s.bound >= 0, (runs, sample)


def test_a_loop_that_ends_where_its_ranks_end_is_sampled():
    """The marker after such a loop's last iteration falls on the next rank's first row (the
    trace's end for the last rank): it stays its own rank's."""
    def body(r):
        return [Step("compute", volume=1e-4), Step("allreduce", nbytes=8)]
    data, bounds = build(3, 400, body, tail=lambda r: [])
    assert (bounds[:, -1] == data.rank_offsets[1:]).all()
    s = sampled_replay(data, [bounds], "auto", compute_rate=RATE)
    full = replay(data, compute_rate=RATE)
    assert s.skipped_share > 0.5
    assert abs(s.simulated_time - full.simulated_time) <= s.bound
