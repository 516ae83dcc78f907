"""The calibrated machine's background (minitrace/predict/calibration.py ``background``, applied
by minitrace/predict/prediction.py ``with_background``): the share of a node's compute time that
other work takes, on runs and traces whose right answer is known."""
from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.predict import kernels as kernel_set, predict, report
from minitrace.predict.calibration import WINDOWS, background, load, windows
from minitrace.predict.prediction import with_background


def _run(cpu, wall, nodes, kernel=None, more=None):
    """A run's columns: the matrix product's CPU and wall seconds per rank; ``kernel``: (cpu,
    wall) of every kernel of the kernel set; ``more``: (cpu, wall) [rank, window] of the
    window columns."""
    cols = {"compute_cpu": np.array(cpu, float), "compute_wall": np.array(wall, float)}
    if kernel:
        cols |= {f"kernel_{k}_{q}": np.array(v, float) for k in kernel_set.KERNELS
                 for q, v in zip(("cpu", "wall"), kernel)}
    if more:
        cols |= {k: np.array(v, float) for k, v in zip(WINDOWS, more)}
    return {"columns": cols, "attrs": {"rank_to_node": nodes}}


def test_background_sums_a_nodes_ranks_and_takes_the_median_run():
    # one node, two ranks: 1% and 3% of their wall time lost: 4% of the node's compute
    one = _run([0.99, 0.97], [1.0, 1.0], ["a", "a"])
    assert background([one]) == pytest.approx(0.04)
    # two nodes: their mean; a rank faster in CPU than wall (clock noise) counts as 0
    two = _run([0.98, 1.0, 0.96, 1.001], [1.0] * 4, ["a", "a", "b", "b"])
    assert background([two]) == pytest.approx((0.02 + 0.04) / 2)
    # the median over the runs
    assert background([one, two, _run([0.5, 0.5], [1.0, 1.0], ["a", "a"])]) == \
        pytest.approx(0.04)


def test_background_is_the_median_over_a_runs_windows():
    """Each window (the matrix product, each kernel, each window column) its own node sum; the
    run's value their median, so one burst in one window does not set it."""
    n = len(kernel_set.KERNELS)
    # the kernels lose 1% + 1% of 0.25 s each; the matrix product had a burst: 20% + 20%
    burst = _run([0.8, 0.8], [1.0, 1.0], ["a", "a"],
                 kernel=([0.2475, 0.2475], [0.25, 0.25]))
    assert background([burst]) == pytest.approx(0.02)            # not 0.4 / (1 + 0.25 n)
    # window columns count as windows: two more at 5% + 5%, with the five above: 2%, 2%, 2%,
    # 2% (kernels), 10%, 10%, 40%: median 2% when n = 4
    more = ([[0.95, 0.95], [0.95, 0.95]], [[1.0, 1.0], [1.0, 1.0]])
    with_more = _run([0.8, 0.8], [1.0, 1.0], ["a", "a"],
                     kernel=([0.2475, 0.2475], [0.25, 0.25]), more=more)
    got = np.median([0.02] * n + [0.1, 0.1, 0.4])
    assert background([with_more]) == pytest.approx(got)
    # a quiet machine everywhere but a burst in one window column: the median is the quiet one
    quiet = _run([0.995, 0.995], [1.0, 1.0], ["a", "a"],
                 kernel=([0.24875, 0.24875], [0.25, 0.25]),
                 more=([[0.5, 0.995], [0.5, 0.995]], [[1.0, 1.0], [1.0, 1.0]]))
    assert background([quiet]) == pytest.approx(0.01)
    cpu, wall = windows(quiet["columns"])
    assert cpu.shape == wall.shape == (2, 1 + n + 2)


def _trace():
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
        for i in range(5):
            b.add(r, "compute", volume=2e-3 * (1 + r))
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
        b.add(r, "finalize")
    return b.build()


def test_with_background_stretches_every_compute_and_nothing_else():
    data = _trace()

    class Cal:
        background = 0.05
    got, share = with_background(data, Cal)
    assert share == 0.05
    comp = data.actions["kind"] == K.code("compute")
    assert got.actions["volume"][comp] == pytest.approx(data.actions["volume"][comp] * 1.05)
    assert (got.actions["volume"][~comp] == data.actions["volume"][~comp]).all()
    assert (data.actions["volume"][comp] == _trace().actions["volume"][comp]).all()   # a copy
    Cal.background = 0.0
    same, share = with_background(data, Cal)
    assert same is data and share is None


def test_a_prediction_on_the_calibrated_machine_stretches_its_compute(tmp_path, demo):
    """The demo's calibration with its background set: the replayed compute of every rank is
    the recorded CPU time times 1 + background, plus the after-compute costs; set to 0, none."""
    from minitrace import storage
    trace = tmp_path / "t.h5"
    storage.write_trace(str(trace), _trace())
    cal = tmp_path / "cal.h5"
    shutil.copyfile(demo.out / "machine.h5", cal)

    def with_bg(value):
        with h5py.File(cal, "r+") as f:
            stored = json.loads(f["calibration/fit"].attrs["calibration"])
            stored["background"] = value
            f["calibration/fit"].attrs["calibration"] = json.dumps(stored)
        return predict(str(trace), str(cal), ranges=False)
    none, some = with_bg(0.0), with_bg(0.1)
    assert none.background is None and "compute stretched" not in report(none)
    assert some.background == 0.1 and "compute stretched by 10.00%" in report(some)
    for r in range(2):
        cpu = 5 * 2e-3 * (1 + r)
        added = some.after_compute[r] if some.after_compute else 0.0
        assert some.predicted["compute"][r] == pytest.approx(cpu * 1.1 + added, rel=1e-6)
        assert none.predicted["compute"][r] == pytest.approx(cpu + added, rel=1e-6)
    assert load(str(cal)).background == 0.1


def _timed(lost, nodes=None):
    """Two ranks, each 5 computes of 10 ms wall time between allreduces, rank r's CPU time
    ``1 - lost[r]`` of it: the recording's own background is known."""
    b = TraceBuilder(2, {"volume_unit": "seconds",
                         **({"rank_to_node": nodes} if nodes else {})})
    for r in range(2):
        b.add(r, "init", t_start=0.0, t_end=1e-3)
        t = 1e-3
        for i in range(5):
            b.add(r, "compute", volume=1e-2 * (1 - lost[r]), t_start=t, t_end=t + 1e-2)
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8, t_start=t + 1e-2,
                  t_end=t + 1.01e-2)
            t += 1.01e-2
        b.add(r, "finalize", t_start=t, t_end=t + 1e-4)
    return b.build()


def test_the_recordings_own_background_is_measured_as_the_calibrations(tmp_path, demo):
    """The recording's background: each rank's compute wall time above its CPU time over that
    wall time, summed over a node's ranks (the mean over the nodes); the report says when the
    machine was much busier at calibration or at recording than at the other."""
    from minitrace import storage
    cal = tmp_path / "cal.h5"
    shutil.copyfile(demo.out / "machine.h5", cal)
    with h5py.File(cal, "r+") as f:
        stored = json.loads(f["calibration/fit"].attrs["calibration"])
        stored["background"] = 0.005
        f["calibration/fit"].attrs["calibration"] = json.dumps(stored)
    runs = load(str(cal)).runs
    got = {}
    for name, lost, nodes in (("one", (0.02, 0.04), ["a", "a"]), ("two", (0.02, 0.04),
                                                                  ["a", "b"]),
                              ("quiet", (0.002, 0.004), None)):
        trace = tmp_path / f"{name}.h5"
        storage.write_trace(str(trace), _timed(lost, nodes))
        got[name] = predict(str(trace), str(cal), ranges=False)
    assert got["one"].recorded_background == pytest.approx(0.06)
    assert got["two"].recorded_background == pytest.approx(0.03)          # (0.02 + 0.04) / 2
    assert got["quiet"].recorded_background == pytest.approx(0.006)      # one node if unsaid
    assert got["one"].background_runs == runs
    text = report(got["one"])
    assert "the recording's own background, measured the same way: 6.00%" in text
    assert "busier when recorded" in text
    assert "busier" not in report(got["quiet"])        # 0.6% against 0.5%: not much
    assert ("one calibration run" in text) == (runs == 1)
    from minitrace.predict.prediction import _busier
    assert "busier when calibrated" in _busier(0.05, 0.006)
    assert _busier(0.015, 0.006) == ""            # under a point apart
    assert _busier(0.03, 0.02) == ""              # under twice
