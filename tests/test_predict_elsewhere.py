"""minitrace predict with a calibration of another machine (docs/PREDICT.md, 'Another machine'):
never a silent same-machine answer; compute translated by the calibrations' rates or, with a
probe run, per call site, with the probe's interval; no self-check against the recording.

Machine B is this machine's calibration with another host name and a speed of our choosing (a
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


def _other_machine(src, dst, host="elsewhere", speed_factor=2.0):
    """A copy of calibration ``src`` that says it calibrates ``host``, ``speed_factor`` x as
    fast per CPU second."""
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        f["provenance"].attrs["hostname"] = host
        g = f["calibration/fit"]
        cal = json.loads(g.attrs["calibration"])
        cal["speed"] *= speed_factor
        cal["compute_rate"] *= speed_factor
        g.attrs["calibration"] = json.dumps(cal)
    return dst


@pytest.fixture(scope="module")
def machines(demo, tmp_path_factory):
    d = tmp_path_factory.mktemp("elsewhere")
    here = demo.out / "machine.h5"
    return demo.out / "jacobi.h5", here, _other_machine(here, d / "b.h5"), d


def _compute(p, r):
    return p.predicted["compute"][r]


def test_another_machines_calibration_alone_is_refused(machines):
    trace, here, there, _ = machines
    with pytest.raises(MinitraceError, match="calibrates elsewhere.*--recorded-on"):
        predict(str(trace), str(there))
    p = subprocess.run([sys.executable, "-m", "minitrace", "predict", str(trace),
                        "--calibration", str(there)], capture_output=True, text=True)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    assert "--recorded-on" in p.stderr and "Traceback" not in p.stderr


def test_rates_translate_compute_and_no_self_check(machines):
    trace, here, there, _ = machines
    own = predict(str(trace), str(here))
    p = predict(str(trace), str(there), recorded_on=str(here), measured=1.5)
    assert p.translated and p.recorded_time is None and p.comparable is None
    with minitrace.open(str(trace)) as t:
        data = t.data()
    share = min(np.mean(load(str(there)).core_share), 1.0)
    for r in range(2):
        a = data.actions[data.rank_slice(r)]
        cpu = a["volume"][a["kind"] == K.code("compute")].sum()
        # B is twice as fast per CPU second, and its ranks got ``share`` of a core during its
        # kernel (its wall time per CPU second): A's compute / 2 / share (the replay's rounding)
        assert _compute(p, r) == pytest.approx(cpu / 2 / share, rel=0.02)
        assert _compute(own, r) == pytest.approx(cpu, rel=0.02)
    assert p.measured_time == 1.5 and p.error == pytest.approx((p.predicted_time - 1.5) / 1.5)
    with pytest.raises(MinitraceError, match="--recorded-on .* calibrates elsewhere"):
        predict(str(trace), str(here), recorded_on=str(there))


def test_a_probe_gives_each_call_site_its_ratio(machines):
    trace, here, there, d = machines
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
    with pytest.raises(MinitraceError, match="--probe goes with --recorded-on"):
        predict(str(trace), str(here), probe=str(probe))


def test_the_calibration_knows_its_machine(machines):
    _, here, there, _ = machines
    import socket
    assert load(str(here)).hostname == socket.gethostname()
    assert load(str(there)).hostname == "elsewhere"


def _two_sites(bytes_b: int, slow: float):
    """One rank computing before a send of 8 bytes (volume 1) and one of ``bytes_b`` (volume
    2), 5 times; ``slow`` scales the wall time of each compute (the probe's machine)."""
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2, meta={"volume_unit": "seconds"})
    for r in range(2):
        t = 0.0
        b.add(r, "init", t_start=t, t_end=t)
        for _ in range(5):
            for vol, n in ((1.0, 8), (2.0, bytes_b)):
                b.add(r, "compute", volume=vol, t_start=t, t_end=t + vol * slow)
                t += vol * slow
                b.add(r, "barrier", bytes_sent=n, t_start=t, t_end=t)
        b.add(r, "finalize", t_start=t, t_end=t)
    return b.build()


def test_sites_the_probe_did_not_see_take_its_mean_ratio():
    from minitrace.predict.translate import by_probe
    big = _two_sites(16, 1.0)
    probe = _two_sites(32, 3.0)          # only the 8-byte site is the same call site
    tr = by_probe(big, probe, 2.0, 1.0, "from A to B")
    vols = big.actions["volume"][big.actions["kind"] == K.code("compute")]
    assert np.allclose(tr.factor, 3.0)       # seen: its own ratio; unseen: the seen ones' mean
    assert tr.low.min() == tr.high.max() == pytest.approx(3.0)
    assert any("call sites the probe did not see" in n for n in tr.notes), tr.notes
    none = by_probe(big, _no_barrier(), 2.0, 1.0, "from A to B")
    assert np.allclose(none.factor, 2.0)                      # nothing seen: the rates
    assert any("saw none of the call sites" in n for n in none.notes)


def _no_barrier():
    from minitrace.model import TraceBuilder
    b = TraceBuilder(1, meta={"volume_unit": "seconds"})
    b.add(0, "init", t_start=0.0, t_end=0.0)
    b.add(0, "compute", volume=1.0, t_start=0.0, t_end=1.0)
    b.add(0, "finalize", t_start=1.0, t_end=1.0)
    return b.build()
