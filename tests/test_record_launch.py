"""When no rank could be traced, ``minitrace record`` says why in the command's own words: the
launcher's refusal to start, or the shim's line when the program runs another MPI than the
one the shim was built for; a compiled program of the other MPI gets a shim of its own
(checked in both directions when scripts/test.sh made the other MPI's environment:
MINITRACE_MPICH_VENV, MINITRACE_OPENMPI_VENV)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from minitrace.record import shim_path
from tests.support.mpiutil import OPEN_MPI_LAUNCH_ENV, is_open_mpi, tool
from tests.support.record_util import PROGRAMS

pytestmark = pytest.mark.timeout(300)
OPEN_MPI = is_open_mpi(tool("mpiexec"))


def record(out: Path, launcher: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "minitrace", "record", "-o", str(out), "--", *launcher]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def error_line(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 1, (p.stdout, p.stderr)
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("minitrace: error: nothing recorded: "), p.stderr
    return last


def test_launcher_error_is_quoted(tmp_path):
    """A program the launcher cannot start: its own message and exit status, not a guess."""
    mpiexec = tool("mpiexec")
    # (hydra's teardown is sometimes killed by a signal under load, SIGPIPE at times before it
    # wrote its message: record says so, and this test, which needs a message to quote, tries
    # again; three launches killed speechless in a row would be a defect)
    for _ in range(3):
        p = record(tmp_path / "t.h5", [mpiexec, "-n", "2", str(tmp_path / "no-such-program")])
        last = error_line(p)
        if not re.search(r"was killed by signal \d+ and said nothing on stderr", last):
            break
    how = re.search(rf"nothing recorded: {re.escape(mpiexec)} "
                    r"(exited with status|was killed by signal) (\d+);", last)
    assert how and int(how[2]) != 0, last
    said = last.split("; it said: ", 1)[1]
    assert said in " ".join(p.stderr.split())    # quoted from what the launcher printed
    assert "no-such-program" in said and "MPI_Init" not in last
    assert not (tmp_path / "t.h5").exists()
    assert not [x for x in os.listdir(tmp_path) if ".raw-" in x]


@pytest.mark.skipif(not OPEN_MPI, reason="Open MPI's launcher refusals")
@pytest.mark.parametrize("case", ["root", "slots"])
def test_open_mpi_refusals(tmp_path, case):
    """Open MPI's mpiexec refuses root without its two variables and more ranks than cores
    without oversubscription: record quotes the refusal."""
    env = {k: v for k, v in os.environ.items() if k not in OPEN_MPI_LAUNCH_ENV}
    if case == "root":
        if os.geteuid() != 0:
            pytest.skip("not running as root")
        n, expect = 2, "prterun has detected an attempt to run as root."
        env["PRTE_MCA_rmaps_default_mapping_policy"] = ":oversubscribe"
    else:
        n, expect = os.cpu_count() + 1, "There are not enough slots available in the system"
        env.update({k: v for k, v in OPEN_MPI_LAUNCH_ENV.items() if "ALLOW" in k})
    p = subprocess.run([sys.executable, "-m", "minitrace", "record", "-o", str(tmp_path / "t.h5"),
                        "--", tool("mpiexec"), "-n", str(n), sys.executable, "-c", "pass"],
                       capture_output=True, text=True, timeout=300, env=env)
    last = error_line(p)
    assert f"{tool('mpiexec')} exited with status 1; it said: {expect}" in last


def test_shim_is_built_for_this_mpi():
    """The shim this environment preloads links this environment's libmpi (Open MPI's .so.40,
    MPICH's .so.12): a second environment from the same checkout must not share it."""
    needed = subprocess.run(["readelf", "-d", shim_path()], capture_output=True, text=True,
                            check=True, timeout=300).stdout
    assert ("libmpi.so.40" if OPEN_MPI else "libmpi.so.12") in needed


def _other_venv() -> Path | None:
    here = Path(sys.prefix).resolve()
    for var in ("MINITRACE_MPICH_VENV", "MINITRACE_OPENMPI_VENV"):
        v = os.environ.get(var)
        if v and Path(v).resolve() != here and (Path(v) / "bin" / "mpiexec").exists():
            return Path(v)
    return None


OTHER = _other_venv()


def _other_ring(tmp_path: Path) -> str:
    prog = tmp_path / "ring"
    subprocess.run([str(OTHER / "bin" / "mpicc"), "-o", str(prog), str(PROGRAMS / "ring.c")],
                   check=True, capture_output=True, timeout=300)
    return str(prog)


def _mismatch_line(how: str) -> str:
    built, runs = ("Open MPI", "an MPICH-family MPI") if OPEN_MPI else ("MPICH", "Open MPI")
    return (f"minitrace: the PMPI shim was built for {built} but the program runs {runs} "
            f"({how}): stopped before MPI_Init")


@pytest.mark.skipif(OTHER is None, reason="the other MPI's environment was not made "
                                           "(scripts/test.sh makes it)")
def test_python_program_of_the_other_mpi(tmp_path):
    """An mpi4py program of the other MPI family (which loads its MPI at run time: record
    gives it the installed shim), started by that MPI's launcher: every rank stops before
    MPI_Init (the calls cannot pass through the wrappers), rank 0 says why in one line, and
    record quotes it."""
    other_open_mpi = not OPEN_MPI
    argv = [str(OTHER / "bin" / "python"), "-c",
            "from mpi4py import MPI; print('done', MPI.COMM_WORLD.rank)"]
    how = ("started by its launcher: " +
           ("OMPI_COMM_WORLD_RANK" if other_open_mpi else "PMI_RANK") + " is set")
    env = dict(OPEN_MPI_LAUNCH_ENV) if other_open_mpi else {}
    p = record(tmp_path / "t.h5", [str(OTHER / "bin" / "mpiexec"), "-n", "2", *argv], env)
    line = _mismatch_line(how)
    assert p.stderr.count(line) == 1, p.stderr      # rank 0 only
    assert "done" not in p.stdout and "Segmentation" not in p.stderr
    assert error_line(p).split("; it said: ", 1)[1] == line.removeprefix("minitrace: ") + \
        p.stderr.split(line, 1)[1].splitlines()[0]


@pytest.mark.skipif(OTHER is None, reason="the other MPI's environment was not made "
                                           "(scripts/test.sh makes it)")
def test_shim_preloaded_by_hand_into_a_program_of_the_other_mpi(tmp_path):
    """This environment's shim preloaded by hand (LD_PRELOAD=$(minitrace shim-path)) into a C
    program of the other MPI family: stopped before MPI_Init, rank 0 saying why, naming the
    object that defines the other family's symbol (read from each loaded object's symbols):
    the program itself when it holds a copy of the symbol (Open MPI's ompi_mpi_comm_world,
    copy-relocated into the executable), else its MPI library."""
    from minitrace.shims import linked_mpi
    env = {**os.environ, **(OPEN_MPI_LAUNCH_ENV if not OPEN_MPI else {}),
           "LD_PRELOAD": shim_path(), "MINITRACE_DIR": str(tmp_path / "raw")}
    program = _other_ring(tmp_path)
    p = subprocess.run([str(OTHER / "bin" / "mpiexec"), "-n", "2", program],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode != 0
    said = re.findall(re.escape(_mismatch_line("@")).replace(
        "@", "(linked into the program|/[^)]+)"), p.stderr)
    assert len(said) == 1, p.stderr                            # rank 0 only
    assert said[0] == "linked into the program" or \
        os.path.realpath(said[0]) == linked_mpi(program)
    assert "done" not in p.stdout and "Segmentation" not in p.stderr


@pytest.mark.skipif(OTHER is None, reason="the other MPI's environment was not made "
                                           "(scripts/test.sh makes it)")
def test_program_of_the_other_mpi_is_recorded_with_its_own_shim(tmp_path, tmp_path_factory):
    """record gives a C program of the other MPI a shim built for that MPI's library (with
    that MPI's mpicc, found beside its library), and it records."""
    from tests.support.twins import shim_cache_env
    env = shim_cache_env(tmp_path_factory)
    p = record(tmp_path / "t.h5", [str(OTHER / "bin" / "mpiexec"), "-n", "2",
                                   _other_ring(tmp_path)], env)
    assert p.returncode == 0, p.stderr
    assert f"with {OTHER / 'bin' / 'mpicc'}" in p.stderr and "validation: OK" in p.stdout
