"""The recorder never breaks the traced program: preloading into a non-MPI program, an
unwritable output directory, and the volume counter's selection with the counter unavailable."""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.errors import MinitraceError
from minitrace.record import shim_env, shim_path
from tests.support.mpiutil import run_mpi, tool
from tests.support.record_util import Ranked, record

pytestmark = pytest.mark.timeout(300)


def test_preload_into_non_mpi_program_changes_nothing(programs, tmp_path):
    exe = programs("nompi")
    plain = subprocess.run([exe, "a", "b"], capture_output=True, text=True, timeout=300)
    env = dict(os.environ, LD_PRELOAD=shim_path(), MINITRACE_DIR=str(tmp_path / "raw"))
    traced = subprocess.run([exe, "a", "b"], capture_output=True, text=True, timeout=300, env=env)
    assert (traced.returncode, traced.stdout, traced.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr) == (7, "sum 1498500 args 3\n", "")
    assert not (tmp_path / "raw").exists()


def test_shim_disables_itself_on_unwritable_dir(programs, tmp_path):
    exe = programs("ring")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = {"LD_PRELOAD": shim_path(), "MINITRACE_DIR": str(blocker / "raw")}
    p = run_mpi(3, [exe, "4"], env=env, timeout=300)
    assert sorted(p.stdout.split("\n")[:-1]) == [f"rank {r} done" for r in range(3)]
    warn = sorted(line for line in p.stderr.splitlines() if line.startswith("minitrace:"))
    assert len(warn) == 3
    for r, w in enumerate(warn):    # every rank says it (each one fails on its own)
        assert w.startswith(f"minitrace: rank {r}: tracing disabled:") and "Not a directory" in w


SLOTS = (4 << 20) // 80 - 1     # records per 4 MiB chunk (slot 0 is the chunk header)


def _limit_file_size():
    """preexec_fn: files of the job may not grow past 10 MiB (the header page and two chunks
    fit, the third does not); past the limit a write fails with EFBIG instead of SIGXFSZ."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (10 << 20, 10 << 20))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def test_rank_that_stops_recording_makes_the_trace_incomplete(programs, tmp_path):
    """A full disk, without root: RLIMIT_FSIZE makes growing the raw file fail (EFBIG)."""
    exe = programs("callcost")
    raw = tmp_path / "raw"
    env = dict(os.environ, LD_PRELOAD=shim_path(), MINITRACE_DIR=str(raw),
               MINITRACE_VOLUME="walltime")
    cmd = [tool("mpiexec"), "-n", "2", exe, "120000"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env,
                       preexec_fn=_limit_file_size)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("sendrecv_ns") == 2         # the program ran to its end
    warn = sorted(line for line in p.stderr.splitlines() if line.startswith("minitrace:"))
    assert warn == [f"minitrace: rank {r}: tracing disabled: cannot grow the raw trace file: "
                    f"File too large" for r in range(2)]
    out = tmp_path / "t.h5"
    m = subprocess.run([sys.executable, "-m", "minitrace", "merge", str(raw), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert m.returncode == 1, m.stderr
    assert "INCOMPLETE: recording stopped early" in m.stdout
    assert "tracing disabled on rank 0: cannot grow the raw trace file: File too large; " \
        "rank 1: cannot grow the raw trace file: File too large" in m.stdout
    tr = Ranked(out)
    assert not tr.meta["complete"]
    assert tr.meta["disabled_ranks"] == [0, 1]
    for r in range(2):
        # the world communicator's definition (2 records), init, then comm_size, up to where the
        # shim stopped: when provisioning the third chunk fails (the second one's end, or earlier
        # when its helper thread gets there first on a loaded machine), never beyond two chunks
        names = tr.names(r, skip=())
        assert names[0] == "init" and set(names[1:]) == {"comm_size"}
        assert SLOTS - 3 <= len(names) - 1 <= 2 * SLOTS - 3


def test_record_fails_clearly_on_unwritable_output(programs, tmp_path):
    exe = programs("ring")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    p = record(blocker / "out.h5", 2, [exe, "2"], expect_rc=1)
    assert p.stdout == ""                   # refused before launching: the program never ran
    assert p.stderr.splitlines() == [
        f"minitrace: error: {blocker / 'out.h5'}: cannot write: {blocker} is not a directory"]


def test_program_exit_code_is_returned(programs, tmp_path):
    exe = programs("threads")
    # 3 ranks: rank 2's partner (rank 3) does not exist -> MPI error; record returns non-zero
    p = record(tmp_path / "x.h5", 3, [exe, "1"], expect_rc=None, timeout=300)
    assert p.returncode != 0


def test_counter_forced_unavailable_falls_back_to_cputime(programs, tmp_path):
    exe = programs("ring")
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


def test_walltime_volume_is_the_gap_between_calls(programs, tmp_path):
    exe = programs("halo")
    record(tmp_path / "w.h5", 2, [exe, "4", "200000"], volume="walltime")
    tr = Ranked(tmp_path / "w.h5")
    assert tr.meta["volume_source"] == "walltime"
    for r in range(2):
        a = tr.all(r)
        comp = np.nonzero(a["kind"] == K.CODE["compute"])[0]
        gap = a["t_end"][comp] - a["t_start"][comp]
        assert np.allclose(a["volume"][comp], gap, atol=2e-9)
        assert np.allclose(a["t_start"][comp], a["t_end"][comp - 1], atol=2e-9)


def test_cputime_volume_sees_the_compute(programs, tmp_path):
    exe = programs("halo")
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
                       text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == shim_path() and os.path.exists(shim_path())


def test_open_mpi_env_list_replaces_its_own_entries(tmp_path):
    """OMPI_MCA_mca_base_env_list (Open MPI's -x): the user's entries are kept, ours replace
    earlier ones for the same variables instead of piling up, a ';' in a value is refused."""
    shim = shim_path()
    base = {"LD_PRELOAD": "/lib/x.so", "OMPI_MCA_mca_base_env_list":
            "FOO=1;MINITRACE_DIR=/old;BAR;LD_PRELOAD;MINITRACE_VOLUME=walltime"}
    once = shim_env(str(tmp_path / "a"), "cputime", base)
    twice = shim_env(str(tmp_path / "b"), "cputime", once)
    assert once["LD_PRELOAD"] == twice["LD_PRELOAD"] == f"{shim}:/lib/x.so"
    for env, d in ((once, "a"), (twice, "b")):
        assert env["OMPI_MCA_mca_base_env_list"].split(";") == [
            "FOO=1", "BAR", f"LD_PRELOAD={shim}:/lib/x.so",
            f"MINITRACE_DIR={tmp_path / d}", "MINITRACE_VOLUME=cputime"]
    with pytest.raises(MinitraceError) as e:
        shim_env(str(tmp_path / "c;d"), "auto", {})
    assert "MINITRACE_DIR contains ';'" in str(e.value) and "\n" not in str(e.value)


def test_hydra_launcher_and_proxies_are_not_preloaded(tmp_path):
    """Through Hydra the shim reaches every rank as -genv options, not through the launcher's
    environment: mpiexec and its proxies would otherwise load the shim and libmpi (~85 ms per
    job).  The ranks here are shells printing their own LD_PRELOAD and their parent's (the
    Hydra proxy)."""
    from minitrace.record import traced_command
    mpiexec = tool("mpiexec")
    script = 'echo "rank:$LD_PRELOAD"; tr "\\0" "\\n" < /proc/$PPID/environ | grep "^LD_PRELOAD=" ' \
             '|| echo "proxy:none"'
    argv, env = traced_command([mpiexec, "-n", "2", "sh", "-c", script], str(tmp_path / "raw"),
                               "cputime")
    assert argv[1] == "-genv" and shim_path() not in env.get("LD_PRELOAD", "")
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300).stdout
    lines = out.split()
    assert lines.count(f"rank:{shim_path()}") == 2 and lines.count("proxy:none") == 2, out
    # any other launcher gets the variables in its environment
    argv, env = traced_command(["sh", "-c", "true"], str(tmp_path / "raw"), "cputime")
    assert argv == ["sh", "-c", "true"] and env["LD_PRELOAD"].startswith(shim_path())
