"""The windows the machine's background is measured over (minitrace/predict/measure.py
``_window``, after_compute.measure's ``spent``, calibration.py ``windows``/``background``): a
real calibrate run stores each rank's thread CPU and wall seconds of its reductions, copies and
each after-compute kernel, the fit's background is computed from them as documented, and a
damaged window column is refused in one line."""
from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

from minitrace.errors import MinitraceError
from minitrace.predict import after_compute, kernels as kernel_set
from minitrace.predict.calibration import WINDOWS, background, read_runs, windows
from minitrace.predict.measure import PROBES
from tests.test_calibrate import calibration  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(600)


def test_a_calibrate_run_stores_its_windows_and_the_background_uses_them(calibration):
    path, _, cal = calibration
    run = read_runs(str(path))[-1]
    cols, attrs = run["columns"], run["attrs"]
    names = [*(f"probe_{i}" for i in range(PROBES)), "reduction", "copies",
             *(f"after_{k}" for k in after_compute.KERNELS)]
    assert attrs["windows"] == names
    cpu, wall = cols[WINDOWS[0]], cols[WINDOWS[1]]
    assert cpu.shape == wall.shape == (2, len(names))
    assert (cpu > 0).all() and (wall > 0).all() and np.isfinite(cpu).all()
    # every window's CPU time is within its wall time (the same thread, one clock read apart)
    assert (cpu <= wall * 1.01).all()
    all_cpu, all_wall = windows(cols)
    assert all_cpu.shape == (2, 1 + len(kernel_set.KERNELS) + len(names))
    assert all_cpu[:, -len(names):].tolist() == cpu.tolist()
    # the fit's background: per window the node's summed lost share, median over windows
    # and over the runs (one node here)
    per_run = [np.median(np.clip(1 - c / w, 0, 1).sum(axis=0))
               for c, w in (windows(r["columns"]) for r in read_runs(str(path)))]
    assert cal.background == pytest.approx(np.median(per_run))
    assert cal.background == background(read_runs(str(path)))


@pytest.mark.parametrize("damage", ["partial", "negative", "columns"])
def test_a_damaged_window_column_is_refused(calibration, tmp_path, damage):
    bad = tmp_path / "bad.h5"
    shutil.copyfile(calibration[0], bad)
    with h5py.File(bad, "r+") as f:
        g = f["calibration/runs/001"]
        if damage == "partial":
            del g["window_wall"]
        elif damage == "negative":
            g["window_cpu"][0, 0] = -1.0
        else:
            v = g["window_cpu"][()]
            del g["window_cpu"]
            g["window_cpu"] = v[:, :-1]
    with pytest.raises(MinitraceError, match="window_cpu and window_wall"):
        read_runs(str(bad))
