"""minitrace predict with a calibration of another machine (docs/PREDICT.md, 'Another machine'):
never a silent same-machine answer; compute translated by the kernel set (or, in calibrations
made before it, the matrix-product rates) or, with a probe run, per call site, with the
probe's interval, and the sites it did not see by the kernel mix that best fits the seen ones,
flagged; no self-check against the recording.

Machine B is this machine's calibration with another host name and speeds of our choosing (a
copy of the demo's), so that every translated number has a known right answer."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace import storage
from minitrace.errors import MinitraceError
from minitrace.predict import predict
from minitrace.predict.calibration import load
from minitrace.predict.translate import _site_keys

pytestmark = pytest.mark.timeout(600)


#: the kernel set of the generated machines: A's rates per CPU second, and B/A ratios
A_RATES = {"fma": 8e9, "triad_memory": 12e9, "triad_cache": 40e9, "chase": 5e6}
B_RATIOS = {"fma": 0.5, "triad_memory": 2.0, "triad_cache": 1.0, "chase": 4.0}


def _edit_fit(path, change, host=None):
    """Rewrite calibration ``path``'s fit JSON by ``change(dict)``; ``host``: its machine."""
    with h5py.File(path, "r+") as f:
        if host:
            f["provenance"].attrs["hostname"] = host
        g = f["calibration/fit"]
        cal = json.loads(g.attrs["calibration"])
        change(cal)
        g.attrs["calibration"] = json.dumps(cal)
    return path


def _kernels(rates):
    return {k: {"unit": "x", "cpu_rate": v, "wall_rate": v} for k, v in rates.items()}


def _other_machine(src, dst, host="elsewhere", speed_factor=2.0, ratios=None):
    """A copy of calibration ``src`` that says it calibrates ``host``, ``speed_factor`` x as
    fast per CPU second on the matrix product, and whose kernel set runs ``ratios`` x as long
    as A_RATES say (None: no kernel set, as calibrations made before it)."""
    shutil.copy(src, dst)

    def change(cal):
        cal["speed"] *= speed_factor
        cal["compute_rate"] *= speed_factor
        cal.pop("kernels", None)
        cal.pop("kernels_version", None)
        if ratios is not None:
            cal["kernels"] = _kernels({k: A_RATES[k] / r for k, r in ratios.items()})
    return _edit_fit(dst, change, host)


@pytest.fixture(scope="module")
def machines(demo, tmp_path_factory):
    """(trace, A without a kernel set, B without one, folder, A with A_RATES, B with B_RATIOS)"""
    d = tmp_path_factory.mktemp("elsewhere")
    here = demo.out / "machine.h5"
    old_a = _other_machine(here, d / "a_old.h5", host=load(str(here)).hostname, speed_factor=1)
    a = _other_machine(here, d / "a.h5", host=load(str(here)).hostname, speed_factor=1,
                       ratios={k: 1.0 for k in A_RATES})
    return (demo.out / "jacobi.h5", old_a, _other_machine(here, d / "b_old.h5"), d, a,
            _other_machine(here, d / "b.h5", ratios=B_RATIOS))


def _compute(p, r):
    """Rank ``r``'s replayed compute, less the calibration's after-compute call costs (seconds
    added to the computes an MPI call follows: B's calls, not A's translated compute) and the
    first calls' set-up (seconds added on the recording's own machine, not stretched) and the
    calibration's posting and completion costs (B's calls)."""
    return p.predicted["compute"][r] - (p.after_compute[r] if p.after_compute else 0.0) - \
        (p.first_calls[r] if p.first_calls else 0.0) - (p.call_costs[r] if p.call_costs else 0.0)


def test_another_machines_calibration_alone_is_refused(machines):
    trace, here, there, *_ = machines
    with pytest.raises(MinitraceError, match="calibrates elsewhere.*--recorded-on"):
        predict(str(trace), str(there))
    p = subprocess.run([sys.executable, "-m", "minitrace", "predict", str(trace),
                        "--calibration", str(there)], capture_output=True, text=True)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    assert "--recorded-on" in p.stderr and "Traceback" not in p.stderr


def test_old_calibrations_translate_by_the_matrix_product_and_no_self_check(machines):
    trace, here, there, *_ = machines
    assert load(str(here)).kernels == {} and any("no kernel set" in n
                                                 for n in load(str(here)).notes)
    own = predict(str(trace), str(here))
    p = predict(str(trace), str(there), recorded_on=str(here), measured=1.5)
    assert p.translated and p.recorded_time is None and p.comparable is None
    assert p.translation["fallback"] == "matrix product" and p.interval is None
    with minitrace.open(str(trace)) as t:
        data = t.data()
    share = min(np.mean(load(str(there)).core_share), 1.0)
    for r in range(2):
        a = data.actions[data.rank_slice(r)]
        cpu = a["volume"][a["kind"] == K.code("compute")].sum()
        # B is twice as fast per CPU second, and its ranks got ``share`` of a core during its
        # kernel (its wall time per CPU second): A's compute / 2 / share (the replay's rounding)
        assert _compute(p, r) == pytest.approx(cpu / 2 / share, rel=0.02)
        # (on A itself: stretched by A's background, which a translation does not take)
        assert _compute(own, r) == pytest.approx(cpu * (1 + load(str(here)).background),
                                                 rel=0.02)
    assert p.measured_time == 1.5 and p.error == pytest.approx((p.predicted_time - 1.5) / 1.5)
    with pytest.raises(MinitraceError, match="--recorded-on .* calibrates elsewhere"):
        predict(str(trace), str(here), recorded_on=str(there))


def test_without_a_probe_the_kernels_geometric_mean_and_their_range(machines):
    trace, _, _, _, a, b = machines
    p = predict(str(trace), str(b), recorded_on=str(a))
    with minitrace.open(str(trace)) as t:
        data = t.data()
    mean = np.exp(np.mean(np.log(list(B_RATIOS.values()))))          # (0.5 * 2 * 1 * 4)^(1/4)
    for r in range(2):
        a_ = data.actions[data.rank_slice(r)]
        cpu = a_["volume"][a_["kind"] == K.code("compute")].sum()
        assert _compute(p, r) == pytest.approx(cpu * mean, rel=0.02)
    assert p.translation == {"fallback": "kernels' geometric mean", "fallback_share": 1.0,
                             "mix": {}}
    lo, hi = p.interval                     # every segment at the slowest and fastest kernel
    assert lo < p.predicted_time < hi
    from minitrace.predict.prediction import report
    text = report(p)
    assert "FLAGGED: 100% of the compute translated by the kernels' geometric mean" in text
    assert "x0.500..x4.000" in text


def test_a_probe_gives_each_call_site_its_ratio(machines):
    trace, here, there, d, *_ = machines
    with minitrace.open(str(trace)) as t:
        data = t.data()
    rows, key = _site_keys(data)
    sites, counts = np.unique(key, return_counts=True)
    busiest = sites[np.argmax(counts)]
    ratio = np.where(key == busiest, 3.0, 0.5)        # B: 3x slower at one site, 2x faster else
    actions = data.actions.copy()                     # (B's wall times: what the probe gives)
    actions["t_end"][rows] = actions["t_start"][rows] + data.actions["volume"][rows] * ratio
    probe = d / "probe.h5"
    storage.write_trace(str(probe), replace(data, actions=actions))
    p = predict(str(trace), str(there), recorded_on=str(here), probe=str(probe))
    for r in range(2):
        mine = data.rank_of(rows) == r
        want = (data.actions["volume"][rows] * ratio)[mine].sum()
        assert _compute(p, r) == pytest.approx(want, rel=0.02)
    lo, hi = p.interval
    assert lo <= p.predicted_time <= hi
    assert any("per call site by a probe run" in n for n in p.notes)
    assert p.translation["fallback_share"] < 0.01     # the sites it saw once: not measured
    with pytest.raises(MinitraceError, match="--probe goes with --recorded-on"):
        predict(str(trace), str(here), probe=str(probe))


def test_the_calibration_knows_its_machine(machines):
    _, here, there, *_ = machines
    import socket
    assert load(str(here)).hostname == socket.gethostname()
    assert load(str(there)).hostname == "elsewhere"


def _two_sites(bytes_b: int, slow: float, kind_b: str = "barrier"):
    """One rank computing before a barrier of 8 bytes (volume 1) and a ``kind_b`` of
    ``bytes_b`` (volume 2), 5 times; ``slow`` scales the wall time of each compute (the probe's
    machine)."""
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2, meta={"volume_unit": "seconds"})
    for r in range(2):
        t = 0.0
        b.add(r, "init", t_start=t, t_end=t)
        for _ in range(5):
            for vol, n, kind in ((1.0, 8, "barrier"), (2.0, bytes_b, kind_b)):
                b.add(r, "compute", volume=vol, t_start=t, t_end=t + vol * slow)
                t += vol * slow
                b.add(r, kind, bytes_sent=n, t_start=t, t_end=t)
        b.add(r, "finalize", t_start=t, t_end=t)
    return b.build()


def _calibrations(machines, ratios):
    """(A, B) loaded, B's kernel set running ``ratios`` x as long as A's."""
    _, _, _, _, a, b = machines
    cal_a, cal_b = load(str(a)), load(str(b))
    return cal_a, replace(cal_b, kernels=_kernels({k: A_RATES[k] / r
                                                   for k, r in ratios.items()}))


def test_sites_the_probe_did_not_see_take_the_best_kernel_mix(machines):
    from minitrace.predict.translate import by_probe
    big = _two_sites(16, 1.0)
    probe = _two_sites(32, 3.0, "bcast")  # x3; the same call site: init .. 8-byte barrier only
    _, key = _site_keys(big)
    unseen = ~np.isin(key, _site_keys(probe)[1])
    vols = big.actions["volume"][big.actions["kind"] == K.code("compute")]
    assert 0 < unseen.sum() < len(unseen)
    cal_a, cal_b = _calibrations(machines, {"fma": 1.0, "triad_memory": 4.0, "chase": 6.0})
    tr = by_probe(big, probe, cal_a, cal_b, "from A to B")
    # x3 between fma (x1) and triad_memory (x4): 1/3 fma + 2/3 triad_memory
    assert np.allclose(tr.factor, 3.0)
    assert tr.mix == pytest.approx({"fma": 1 / 3, "triad_memory": 2 / 3})
    assert tr.fallback == "kernel mix"
    assert tr.fallback_share == pytest.approx(vols[unseen].sum() / vols.sum())
    assert any("the kernel mix that best fits the seen sites" in n for n in tr.notes), tr.notes
    from minitrace.predict.prediction import Prediction, report
    shown = Prediction(trace="t.h5", calibration="b.h5", platform="p", nranks=2,
                       predicted_time=1.0, rank_end_times=[1.0, 1.0], predicted=None,
                       translated="from A to B", translation=tr.summary())
    assert (f"FLAGGED: {tr.fallback_share:.0%} of the compute translated by the kernel mix "
            f"(fma 33%, triad_memory 67%), not measured by a probe") in report(shown)
    # beyond every kernel: the nearest one, and the interval spans it and the seen ratio
    cal_a, cal_b = _calibrations(machines, {"fma": 1.0, "triad_cache": 2.0})
    tr = by_probe(big, probe, cal_a, cal_b, "from A to B")
    assert np.allclose(tr.factor[unseen], 2.0) and np.allclose(tr.factor[~unseen], 3.0)
    assert tr.mix == {"triad_cache": 1.0}
    assert np.allclose(tr.low[unseen], 2.0) and np.allclose(tr.high[unseen], 3.0)
    assert any("beyond every kernel" in n for n in tr.notes)
    # no kernel set (older calibrations): the probe's mean ratio
    cal_a, cal_b = replace(cal_a, kernels={}), replace(cal_b, kernels={})
    tr = by_probe(big, probe, cal_a, cal_b, "from A to B")
    assert np.allclose(tr.factor, 3.0) and tr.fallback == "probe's mean ratio"
    # a probe that saw nothing: the kernel set's rule for all of the compute
    cal_a, cal_b = _calibrations(machines, {"fma": 1.0, "chase": 4.0})
    none = by_probe(big, _no_barrier(), cal_a, cal_b, "from A to B")
    assert np.allclose(none.factor, 2.0) and none.fallback_share == 1.0       # sqrt(1 * 4)
    assert any("saw none of the call sites" in n for n in none.notes)
    assert np.allclose(none.low, 1.0) and np.allclose(none.high, 4.0)


def test_sites_whose_messages_change_size_are_matched_by_their_calls(machines):
    """Messages whose size depends on the data (atoms crossing a boundary) make a new site at
    nearly every occurrence: the probe then sees those segments by the kinds of the calls
    around them, not the kernel mix."""
    from minitrace.model import TraceBuilder
    from minitrace.predict.translate import by_probe

    def run(n, sizes, slow):
        b = TraceBuilder(2, meta={"volume_unit": "seconds"})
        for r in range(2):
            t = 0.0
            b.add(r, "init", t_start=t, t_end=t)
            for i in range(n):
                vol = 1.0 + 0.1 * (i % 3)
                b.add(r, "compute", volume=vol, t_start=t, t_end=t + vol * slow)
                t += vol * slow
                b.add(r, "barrier", bytes_sent=sizes(i), t_start=t, t_end=t)
            b.add(r, "finalize", t_start=t, t_end=t)
        return b.build()
    big = run(40, lambda i: 8 * (1 + i * i % 37), 1.0)
    probe = run(10, lambda i: 8 * (50 + i), 3.0)          # x3, sizes the trace never sent
    cal_a, cal_b = _calibrations(machines, {"fma": 1.0, "chase": 6.0})
    tr = by_probe(big, probe, cal_a, cal_b, "from A to B")
    assert tr.fallback_share == 0.0 and np.allclose(tr.factor, 3.0)
    assert any("by the kinds of the calls around them alone" in n for n in tr.notes), tr.notes


def _steps(n: int, volume, ratio):
    """Two ranks computing ``volume(r, i)`` CPU seconds in ``ratio(r, i)`` times that of wall
    time before an 8-byte barrier, ``n`` times (a probe's wall time over a trace's CPU time)."""
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2, meta={"volume_unit": "seconds"})
    for r in range(2):
        t = 0.0
        b.add(r, "init", t_start=t, t_end=t)
        for i in range(n):
            vol = volume(r, i)
            b.add(r, "compute", volume=vol, t_start=t, t_end=t + vol * ratio(r, i))
            t += vol * ratio(r, i)
            b.add(r, "barrier", bytes_sent=8, t_start=t, t_end=t)
        b.add(r, "finalize", t_start=t, t_end=t)
    return b.build()


def test_the_interval_comes_from_the_matched_pairs(machines):
    """Segments of a site that differ in size in both runs alike (1 s, 3 s, 1 s, ...) at one
    ratio B/A leave the ratio certain: its interval is the ratio itself, not the spread of the
    sizes; a ratio that moves from pair to pair widens it."""
    from minitrace.predict.translate import by_probe

    def run(n, ratio):
        return _steps(n, lambda r, i: 1.0 if i % 2 else 3.0, lambda r, i: ratio(i))
    big = run(40, lambda i: 1.0)
    cal_a, cal_b = _calibrations(machines, {"fma": 1.0, "chase": 6.0})
    steady = by_probe(big, run(12, lambda i: 2.0), cal_a, cal_b, "from A to B")
    assert np.allclose(steady.factor, 2.0)
    assert np.allclose(steady.low, 2.0) and np.allclose(steady.high, 2.0)
    moving = by_probe(big, run(12, lambda i: 2.0 + 0.2 * (i % 3 - 1)), cal_a, cal_b, "A to B")
    later = np.arange(len(moving.factor)) % 40 >= 6             # the steady occurrences
    assert (moving.low[later] < moving.factor[later]).all()
    assert (moving.high[later] > moving.factor[later]).all()


def test_an_occurrence_is_one_pair_over_its_ranks(machines):
    """B's disturbances hit every rank at once: an occurrence's segments on all ranks make one
    pair.  Ranks off the ratio in opposite directions at each occurrence cancel (the ratio is
    certain), in the same direction they widen the interval."""
    from minitrace.predict.translate import by_probe

    def run(n, ratio):
        return _steps(n, lambda r, i: 1.0, ratio)
    big = run(40, lambda r, i: 1.0)
    cal_a, cal_b = _calibrations(machines, {"fma": 1.0, "chase": 6.0})
    wobble = [0.3, -0.1, -0.2, 0.25, -0.15, -0.1]
    apart = by_probe(big, run(12, lambda r, i: 2.0 + (1 - 2 * r) * wobble[i % 6]), cal_a,
                     cal_b, "A to B")
    together = by_probe(big, run(12, lambda r, i: 2.0 + wobble[i % 6]), cal_a, cal_b, "A to B")
    later = np.arange(len(apart.factor)) % 40 >= 6                 # the steady occurrences
    assert np.allclose(apart.low[later], apart.factor[later])
    assert np.allclose(apart.high[later], apart.factor[later])
    assert (together.high[later] - together.low[later] > 0.05).all()

def _no_barrier():
    from minitrace.model import TraceBuilder
    b = TraceBuilder(1, meta={"volume_unit": "seconds"})
    b.add(0, "init", t_start=0.0, t_end=0.0)
    b.add(0, "compute", volume=1.0, t_start=0.0, t_end=1.0)
    b.add(0, "finalize", t_start=1.0, t_end=1.0)
    return b.build()


def _iterations(n: int, first: float, then: float):
    """Two ranks computing before an 8-byte barrier ``n`` times: ``first`` seconds the first
    time (the start-up: page faults, cold caches), ``then`` afterwards (volume and wall)."""
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2, meta={"volume_unit": "seconds"})
    for r in range(2):
        t = 0.0
        b.add(r, "init", t_start=t, t_end=t)
        for i in range(n):
            d = first if i == 0 else then
            b.add(r, "compute", volume=d, t_start=t, t_end=t + d)
            t += d
            b.add(r, "barrier", bytes_sent=8, t_start=t, t_end=t)
        b.add(r, "finalize", t_start=t, t_end=t)
    return b.build()


def test_a_probe_matches_the_start_up_to_the_start_up(machines):
    """A short probe holds more of the start-up than the long run: its first occurrences
    translate the trace's first ones, its later ones the steady state."""
    from minitrace.predict.translate import by_probe
    big = _iterations(40, 2.0, 1.0)            # A: the first iteration twice a warm one
    probe = _iterations(8, 10.0, 1.5)          # B: x1.5 warm, its start-up 10 s
    cal_a, cal_b = _calibrations(machines, {"fma": 1.0, "triad_memory": 4.0})
    tr = by_probe(big, probe, cal_a, cal_b, "from A to B")
    on_b = tr.apply(big)
    compute = on_b.actions["kind"] == K.code("compute")
    for r in range(2):
        mine = compute & (on_b.rank_of() == r)
        # B's start-up as the probe ran it, then 39 warm iterations at x1.5
        assert on_b.actions["volume"][mine].sum() == pytest.approx(10.0 + 39 * 1.5)
    # a mean over all of the probe's occurrences against all of the trace's would say
    # (10 + 7 x 1.5) / 8 over 41 / 40: x2.50, 102.5 s a rank
    assert np.allclose(tr.factor[4::40], 1.5) and tr.fallback_share == 0.0


@pytest.mark.skipif(shutil.which("valgrind") is None,
                    reason="valgrind absent (benchmarks/bench_elsewhere.py's machine B)")
def test_a_probe_recorded_under_valgrind_sees_every_call_site(machines, programs, tmp_path):
    """bench_elsewhere's machine B runs the ranks under valgrind's no-op tool: the recorder
    (LD_PRELOAD beside valgrind's own preloads) records the same calls there, so a short
    probe recorded under valgrind gives every call site of a native trace its ratio."""
    from minitrace.predict.translate import by_probe
    from tests.support.record_util import Ranked, record
    exe = programs("halo")
    native, short, probe = tmp_path / "a.h5", tmp_path / "a10.h5", tmp_path / "b.h5"
    record(native, 2, [exe, "40", "20000"], volume="cputime")
    record(short, 2, [exe, "10", "20000"], volume="cputime")
    record(probe, 2, ["env", "UCX_MEM_MALLOC_HOOKS=no", "UCX_MEM_EVENTS=no",
                      shutil.which("valgrind"), "--tool=none", "-q", exe, "10", "20000"],
           volume="cputime", timeout=300)
    a, b = Ranked(native), Ranked(probe)
    for r in range(2):                   # the same calls as natively, in the same order
        assert b.names(r) == Ranked(short).names(r)
        assert (b.mpi(r)["bytes_sent"] == Ranked(short).mpi(r)["bytes_sent"]).all()
    assert set(_site_keys(a.data)[1]) == set(_site_keys(b.data)[1])
    cal_a, cal_b = _calibrations(machines, {"fma": 1.0, "chase": 4.0})
    tr = by_probe(a.data, b.data, cal_a, cal_b, "from A to B")
    assert tr.fallback_share == 0.0 and (tr.factor > 0).all()


def test_the_background_is_the_calibrated_machines_own(machines, tmp_path):
    """A same-machine prediction stretches the compute by the calibration's background; a
    translated one does not take B's (its ratios are B's wall rates, background included)."""
    trace, here, there, *_ = machines
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    for src, dst in ((here, a), (there, b)):
        shutil.copy(src, dst)
        _edit_fit(dst, lambda cal: cal.update(background=0.2))
    own, plain = predict(str(trace), str(a), ranges=False), predict(str(trace), str(here),
                                                                    ranges=False)
    p = predict(str(trace), str(b), recorded_on=str(a), ranges=False)
    q = predict(str(trace), str(there), recorded_on=str(here), ranges=False)
    assert own.background == 0.2 and p.background is None
    for r in range(2):
        stretch = 1.2 / (1 + load(str(here)).background)          # (0.2 instead of here's)
        assert _compute(own, r) == pytest.approx(_compute(plain, r) * stretch, rel=1e-6)
        assert _compute(p, r) == pytest.approx(_compute(q, r), rel=1e-6)
