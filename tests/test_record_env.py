"""The recorder never breaks the traced program: preloading into a non-MPI program, an
unwritable output directory, and the volume counter's selection with the counter unavailable."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.record import shim_path
from tests.mpiutil import run_mpi
from tests.record_util import Ranked, build, record

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def bindir(tmp_path_factory):
    return tmp_path_factory.mktemp("bin")


def test_preload_into_non_mpi_program_changes_nothing(bindir, tmp_path):
    exe = build("nompi", bindir)
    plain = subprocess.run([exe, "a", "b"], capture_output=True, text=True, timeout=60)
    env = dict(os.environ, LD_PRELOAD=shim_path(), MINITRACE_DIR=str(tmp_path / "raw"))
    traced = subprocess.run([exe, "a", "b"], capture_output=True, text=True, timeout=60, env=env)
    assert (traced.returncode, traced.stdout, traced.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr) == (7, "sum 1498500 args 3\n", "")
    assert not (tmp_path / "raw").exists()


def test_shim_disables_itself_on_unwritable_dir(bindir, tmp_path):
    exe = build("ring", bindir)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = {"LD_PRELOAD": shim_path(), "MINITRACE_DIR": str(blocker / "raw")}
    p = run_mpi(3, [exe, "4"], env=env, timeout=120)
    assert sorted(p.stdout.split("\n")[:-1]) == [f"rank {r} done" for r in range(3)]
    warn = [line for line in p.stderr.splitlines() if line.startswith("minitrace:")]
    assert len(warn) == 1 and "tracing disabled" in warn[0] and "Not a directory" in warn[0]


def test_record_fails_clearly_on_unwritable_output(bindir, tmp_path):
    exe = build("ring", bindir)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    p = record(blocker / "out.h5", 2, [exe, "2"], expect_rc=1)
    assert sorted(p.stdout.split("\n")[:-1]) == ["rank 0 done", "rank 1 done"]
    err = p.stderr.strip().splitlines()
    assert err[-1].startswith("minitrace: error:") and "nothing recorded" in err[-1]
    assert "program ran untraced and exited with 0" in err[-1]
    assert "Traceback" not in p.stderr


def test_program_exit_code_is_returned(bindir, tmp_path):
    exe = build("threads", bindir)
    # 3 ranks: rank 2's partner (rank 3) does not exist -> MPI error; record returns non-zero
    p = record(tmp_path / "x.h5", 3, [exe, "1"], expect_rc=None, timeout=120)
    assert p.returncode != 0


def test_counter_forced_unavailable_falls_back_to_cputime(bindir, tmp_path):
    exe = build("ring", bindir)
    env = {"MINITRACE_FORCE_NO_HWCOUNTER": "1"}
    p = record(tmp_path / "i.h5", 2, [exe, "2"], volume="instructions", env=env)
    assert "no hardware instruction counter" in p.stderr
    assert p.stderr.count("no hardware instruction counter") == 1
    tr = Ranked(tmp_path / "i.h5")
    assert tr.meta["volume_requested"] == "instructions"
    assert (tr.meta["volume_source"], tr.meta["volume_unit"]) == ("cputime", "seconds")
    p = record(tmp_path / "a.h5", 2, [exe, "2"], env=env)
    assert "no hardware instruction counter" not in p.stderr      # auto: silent fallback
    tr = Ranked(tmp_path / "a.h5")
    assert (tr.meta["volume_requested"], tr.meta["volume_source"]) == ("auto", "cputime")


def test_walltime_volume_is_the_gap_between_calls(bindir, tmp_path):
    exe = build("halo", bindir)
    record(tmp_path / "w.h5", 2, [exe, "4", "200000"], volume="walltime")
    tr = Ranked(tmp_path / "w.h5")
    assert tr.meta["volume_source"] == "walltime"
    for r in range(2):
        a = tr.all(r)
        comp = np.nonzero(a["kind"] == K.CODE["compute"])[0]
        gap = a["t_end"][comp] - a["t_start"][comp]
        assert np.allclose(a["volume"][comp], gap, atol=2e-9)
        assert np.allclose(a["t_start"][comp], a["t_end"][comp - 1], atol=2e-9)


def test_cputime_volume_sees_the_compute(bindir, tmp_path):
    exe = build("halo", bindir)
    record(tmp_path / "c.h5", 2, [exe, "4", "3000000"], volume="cputime")
    tr = Ranked(tmp_path / "c.h5")
    for r in range(2):
        a = tr.all(r)
        comp = a["kind"] == K.CODE["compute"]
        # the 4 compute phases (3e6-iteration loops) dominate every other gap between calls
        vol = np.sort(a["volume"][comp])
        assert vol[-4:].min() > 10 * np.median(vol[:-4])
        # a thread cannot use more CPU time than the wall time that passed (clock granularity)
        wall = (a["t_end"] - a["t_start"])[comp]
        assert (a["volume"][comp] <= wall + 1e-3).all()


def test_shim_path_command():
    p = subprocess.run([sys.executable, "-m", "minitrace", "shim-path"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == shim_path() and os.path.exists(shim_path())
