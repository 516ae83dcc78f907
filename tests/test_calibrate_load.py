"""The load a calibration ran under (minitrace/predict/under_load.py): measured beside the
calibration's ranks without counting them, stored with each run, and flagged with every
prediction made with a calibration measured under load, where calibrate and info say it too.

The measurement runs on a real 2-rank MPI job with a busy child process; the flag is checked
on a real quick calibration whose stored load is then set high, low or removed (older files)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import h5py
import pytest

from minitrace.errors import MinitraceError
from minitrace.predict import under_load
from minitrace.predict.calibration import load, read_runs
from minitrace.storage import write_trace
from tests.support.mpiutil import run_python_mpi, tool
from tests.test_calibrate import QUICK, _pingpong

pytestmark = pytest.mark.timeout(600)

#: the MPI job of the measurement's test: rank 0 starts a busy child after the window opens
#: and stops it before it closes, every rank spins for SPIN s of its own CPU time meanwhile;
#: rank 0 prints the node's load, the child's CPU seconds, the ranks' spin and, read around
#: the window, this machine's busy CPU seconds and the wall time
JOB = """
import json, os, subprocess, sys, time
from mpi4py import MPI
from minitrace.bench.common import topology
from minitrace.predict import under_load
SPIN = 1.0
comm = MPI.COMM_WORLD
topo = topology(comm)
busy0, wall0 = under_load.busy_seconds(), time.monotonic()
window = under_load.start(comm, topo["local_rank"][comm.rank] == 0)
child = subprocess.Popen([sys.executable, "-c", "while 1: pass"]) if comm.rank == 0 else None
t0 = time.thread_time()
while time.thread_time() - t0 < SPIN:
    pass
spun = time.thread_time() - t0
comm.Barrier()
child_cpu = None
if child is not None:
    child.kill()
    _, _, used = os.wait4(child.pid, 0)
    child_cpu = used.ru_utime + used.ru_stime
loads = under_load.stop(comm, window, topo["rank_to_node"])
spun = comm.reduce(spun, root=0)
if comm.rank == 0:
    print(json.dumps({"loads": loads, "child": child_cpu, "spun": spun,
                      "busy": under_load.busy_seconds() - busy0,
                      "wall": time.monotonic() - wall0}))
"""


def test_the_load_counts_a_busy_child_and_not_the_calibrations_ranks(tmp_path):
    """Other work's CPU time is counted (the child's, at least half of it: /proc/stat counts
    in clock ticks), the ranks' own is not (without it the load would be at least this
    machine's busy time less half of what the ranks spun)."""
    if under_load.busy_seconds() is None:
        pytest.skip("no /proc/stat here: the load is unknown")
    script = tmp_path / "job.py"
    script.write_text(JOB)
    got = json.loads(run_python_mpi(2, str(script)).stdout)
    assert len(got["loads"]) == 1             # (one node)
    other = got["loads"][0] * got["wall"]     # CPU seconds other work took in the window
    assert other >= 0.5 * got["child"] > 0
    assert other <= got["busy"] - 0.5 * got["spun"]


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """A quick real calibration of this machine (one run), its file."""
    path = tmp_path_factory.mktemp("load") / "machine.h5"
    p = subprocess.run([sys.executable, "-m", "minitrace", "calibrate", "-o", str(path),
                        *QUICK, "--seed", "3", "--quiet", "--", tool("mpiexec"), "-n", "2"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return path


def test_a_run_stores_the_load_it_ran_under(calibrated):
    if under_load.busy_seconds() is None:
        pytest.skip("no /proc/stat here: the load is unknown")
    (run,) = read_runs(str(calibrated))
    stored = run["attrs"][under_load.ATTR]
    assert len(stored) == 1 and stored[0] >= 0
    cal = load(str(calibrated))
    assert cal.other_load == {"cores": stored[0], "of": run["attrs"]["cores"][0],
                              "run": "000", "measured": 1}


def _with_load(src, dst, share: float | None) -> None:
    """A copy of the calibration ``src`` whose run and fit say other work took ``share`` of
    the node's cores (None: no load stored, as in files made before it was measured)."""
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        g = f["calibration/runs/000"]
        cores = json.loads(g.attrs["cores"])[0]
        fit = f["calibration/fit"]
        stored = json.loads(fit.attrs["calibration"])
        if share is None:
            g.attrs.pop(under_load.ATTR, None)
            stored.pop("other_load", None)
        else:
            g.attrs[under_load.ATTR] = json.dumps([share * cores])
            stored["other_load"] = {"cores": share * cores, "of": cores, "run": "000",
                                    "measured": 1}
        fit.attrs["calibration"] = json.dumps(stored)


def _minitrace(*argv) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "minitrace", *map(str, argv)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p


def _predict(cal, tmp_path, *extra) -> str:
    """What ``minitrace predict`` prints for a small ping-pong with calibration ``cal``."""
    trace = tmp_path / "pp.h5"
    if not trace.exists():
        write_trace(str(trace), _pingpong(1000, 5))
    return _minitrace("predict", trace, "--calibration", cal, "--no-range", *extra).stdout


FLAG = "calibrated under load"


def test_a_calibration_under_load_is_flagged_by_calibrate_info_and_predict(calibrated,
                                                                          tmp_path):
    cal = tmp_path / "loaded.h5"
    _with_load(calibrated, cal, 0.7)
    refit = _minitrace("calibrate", "-o", cal).stdout          # (no launcher: refits)
    assert load(str(cal)).other_load["cores"] == 0.7 * load(str(cal)).other_load["of"]
    flagged = [line for line in refit.splitlines() if FLAG in line]
    assert len(flagged) == 1 and flagged[0].startswith("  FLAGGED: ") and str(cal) in flagged[0]
    assert refit.rstrip().splitlines()[-2] == flagged[0]        # (then the plot's line)
    quiet = _minitrace("calibrate", "-o", cal, "--quiet").stdout
    assert quiet.count("\n") == 1 and quiet.startswith("warning: ") and FLAG in quiet
    info = _minitrace("info", cal).stdout
    assert "load while calibrating: other processes took" in info and FLAG in info
    text = _predict(cal, tmp_path)
    assert [line for line in text.splitlines() if FLAG in line] == \
        [f"  warning: {under_load.flag(load(str(cal)))}"]
    got = json.loads(_predict(cal, tmp_path, "--json"))
    assert sum(FLAG in w for w in got["warnings"]) == 1
    assert _predict(cal, tmp_path, "--replicas", "2", "--noise", "none").count(FLAG) == 1


def test_calibrate_says_nothing_of_a_low_load(calibrated, tmp_path):
    cal = tmp_path / "low.h5"
    _with_load(calibrated, cal, 0.05)
    assert _minitrace("calibrate", "-o", cal, "--quiet").stdout == ""
    info = _minitrace("info", cal).stdout
    assert "load while calibrating: other processes took" in info and FLAG not in info


@pytest.mark.parametrize("share", [0.05, None])
def test_no_flag_when_the_load_was_low_or_is_unknown(calibrated, tmp_path, share):
    """Low, or unknown: a file made before the load was measured (no ``other_load`` in its
    run nor in its fit) still loads."""
    cal = tmp_path / "quiet.h5"
    _with_load(calibrated, cal, share)
    got = load(str(cal))
    assert under_load.flag(got) == "" and (got.other_load == {}) == (share is None)
    assert FLAG not in _predict(cal, tmp_path)
    assert FLAG not in _predict(cal, tmp_path, "--replicas", "2", "--noise", "none")


def test_two_calibrations_each_flagged_when_loaded(calibrated, tmp_path):
    """A prediction's flags name each calibration it uses that was measured under load (the
    target's and, translating, the recording machine's)."""
    from minitrace.predict.prediction import load_flags
    _with_load(calibrated, tmp_path / "a.h5", 0.7)
    _with_load(calibrated, tmp_path / "b.h5", 0.05)
    busy, idle = load(str(tmp_path / "a.h5")), load(str(tmp_path / "b.h5"))
    assert load_flags(idle, None) == [] and load_flags(idle, busy) == [under_load.flag(busy)]
    assert str(tmp_path / "a.h5") in under_load.flag(busy)


@pytest.mark.parametrize("stored", [[-1.0], [0.1, 0.2], "x"])
def test_a_damaged_load_is_refused(calibrated, tmp_path, stored):
    bad = tmp_path / "bad.h5"
    shutil.copyfile(calibrated, bad)
    with h5py.File(bad, "r+") as f:
        f["calibration/runs/000"].attrs[under_load.ATTR] = json.dumps(stored)
    with pytest.raises(MinitraceError, match=f"corrupt calibration: .*{under_load.ATTR}"):
        read_runs(str(bad))


def test_a_damaged_load_in_the_fit_is_refused(calibrated, tmp_path):
    bad = tmp_path / "bad.h5"
    _with_load(calibrated, bad, 0.7)
    with h5py.File(bad, "r+") as f:
        stored = json.loads(f["calibration/fit"].attrs["calibration"])
        stored["other_load"]["cores"] = -1.0
        f["calibration/fit"].attrs["calibration"] = json.dumps(stored)
    with pytest.raises(MinitraceError, match="corrupt calibration: /calibration/fit: other_load"):
        load(str(bad))
