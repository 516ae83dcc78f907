"""minitrace predict on a trace recorded here: the bundled Jacobi solver on 2 ranks, recorded
with minitrace record and predicted with a calibration of this machine made in the test.

The bound on the self-check's error is generous on purpose (50%): the test machine is shared
and small, and a rank descheduled during the recording makes any replay too short.  When that
happens the prediction must say so (not comparable) instead of passing the error off as
accurate; the deterministic parts are checked exactly either way."""
from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.predict import MIN_CORE_SHARE, predict, report
from tests.mpiutil import mpicc, tool
from tests.record_util import record

pytestmark = pytest.mark.timeout(600)
BOUND = 0.5


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    d = tmp_path_factory.mktemp("predict")
    exe = d / "jacobi2d"
    mpicc(resources.files("minitrace") / "data" / "jacobi2d.c", exe, "-lm")
    trace = d / "jacobi.h5"
    record(trace, 2, [str(exe), "384", "300"], volume="cputime")
    cal = d / "machine.h5"
    cmd = [sys.executable, "-m", "minitrace", "calibrate", "-o", str(cal), "--nsizes", "16",
           "--reps", "1", "--iterations", "8", "--iterations-large", "3", "--max-size",
           str(1 << 22), "--quiet", "--", tool("mpiexec"), "-n", "2"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return trace, cal, d


def test_self_check_error_within_bound_or_flagged(recorded):
    trace, cal, d = recorded
    p = predict(str(trace), str(cal), timeline=str(d / "timeline.png"))
    assert p.recorded_time > 0 and p.predicted_time > 0
    assert len(p.rank_end_times) == len(p.recorded_rank_end_times) == 2
    assert p.predicted_time == pytest.approx(max(p.rank_end_times))
    assert p.error == pytest.approx((p.predicted_time - p.recorded_time) / p.recorded_time)
    assert (d / "timeline.png").stat().st_size > 0
    # the replay executes exactly the CPU time recorded between MPI calls
    with minitrace.open(str(trace)) as t:
        data = t.data()
    for r in range(2):
        a = data.actions[data.rank_slice(r)]
        cpu = a["volume"][a["kind"] == K.code("compute")].sum()
        assert p.measured["compute_cpu"][r] == pytest.approx(cpu)
        assert p.predicted["compute"][r] == pytest.approx(cpu, rel=0.02)
        parts = sum(p.predicted[k][r] for k in ("compute", "p2p", "waiting", "collectives"))
        assert parts <= p.rank_end_times[r] * (1 + 1e-9)
        assert parts == pytest.approx(p.rank_end_times[r], rel=0.05)
    assert all(t > 0 for t in p.init_time)
    if p.comparable:
        assert abs(p.error) <= BOUND, p
    else:
        assert min(p.core_share + p.in_call_share) < MIN_CORE_SHARE
        assert any(w.startswith("not comparable") for w in p.warnings)


def test_cli_json_and_other_platforms(recorded):
    trace, cal, _ = recorded
    out = subprocess.run([sys.executable, "-m", "minitrace", "predict", str(trace),
                          "--calibration", str(cal), "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["nranks"] == 2 and got["recorded_time"] > 0
    # on two calibrated hosts, one rank each: a prediction, no self-check
    p = predict(str(trace), str(cal), hosts=2, ranks_per_host=1)
    assert p.recorded_time is None and p.predicted_time > 0
    assert "cluster of 2 hosts" in p.platform


def test_sizes_outside_the_calibrated_range_are_flagged(recorded, tmp_path):
    from minitrace.model import TraceBuilder
    _, cal, _ = recorded
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
        if r == 0:
            b.add(r, "send", peer=1, tag=0, bytes_sent=64 << 20)
        else:
            b.add(r, "recv", peer=0, tag=0, bytes_recv=64 << 20)
        b.add(r, "finalize")
    path = tmp_path / "big.h5"
    minitrace.storage.write_trace(str(path), b.build())
    p = predict(str(path), str(cal))
    assert any("exceed the calibrated range" in w for w in p.warnings), p.warnings
    assert np.isfinite(p.predicted_time)


def test_more_ranks_than_cores_is_not_comparable(recorded):
    from dataclasses import replace
    from minitrace.predict.calibration import load
    trace, cal, _ = recorded
    one_core = replace(load(str(cal)), cores_per_host=1)
    p = predict(str(trace), one_core)
    assert not p.comparable
    assert "not comparable: 2 ranks ran on a node of 1 cores (oversubscribed)" in p.warnings


def test_cli_replicas_and_sampling_with_a_calibration(recorded):
    trace, cal, d = recorded
    base = [sys.executable, "-m", "minitrace", "predict", str(trace), "--calibration", str(cal)]
    p = subprocess.run(base + ["--replicas", "3", "--seed", "1", "--sample", "auto", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert len(out["times"]) == 3 and out["seed"] == 1 and out["lo"] <= out["hi"]
    assert any("calls do bytes /" in n or "reduction" in n for n in out["notes"])
    p = subprocess.run(base + ["--replicas", "3", "--timeline", str(d / "x.png")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "--timeline is not available" in p.stderr


def test_without_the_native_replayer_the_python_engine_predicts(recorded, monkeypatch):
    """An environment without the native replayer (an install that could not build it) still
    predicts, with SimGrid's Python bindings, without the predicted breakdown, and says so."""
    trace, cal, _ = recorded
    monkeypatch.setenv("MINITRACE_REPLAYER", "")       # as if not built
    p = predict(str(trace), str(cal))
    assert p.predicted is None and p.predicted_time > 0 and p.recorded_time > 0
    assert any(n.startswith("the native replayer is not built: replayed by SimGrid's Python "
                            "bindings, without the predicted breakdown") for n in p.notes)
    text = report(p)
    assert "note: the native replayer is not built" in text
    assert "where the time goes" in text and text.count("        -") >= 4   # no predicted parts
