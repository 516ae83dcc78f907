"""``minitrace calibrate --libmpi``: a calibration of the MPI library a program runs on.

Public codes built with Debian's MPICH 4.0.2 answer a small message in 0.4 us where the mpich
wheel's 5.0.2, which this environment's calibration measures, takes 1.1 us (issue 35, session
15): their calls' costs are another library's.  The calibration job's mpi4py is made to load the
program's libmpi, a file holds one library's runs, and ``predict`` says when the program ran on
another library than the calibrated one."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from minitrace.errors import MinitraceError
from minitrace.mpitools import abi_of, mpi4py_env
from minitrace.predict import predict
from minitrace.predict.calibration import load
from minitrace.provenance import mpi_version
from minitrace.shims import library_of_program, linked_mpi
from tests.support.mpiutil import tool
from tests.support.record_util import PROGRAMS, record
from tests.support.twins import shim_cache_env

pytestmark = pytest.mark.timeout(900)
QUICK = ["--nsizes", "12", "--reps", "1", "--iterations", "6", "--iterations-large", "2",
         "--max-size", str(1 << 20)]


def test_the_abi_is_read_from_the_librarys_name(tmp_path):
    assert abi_of("/usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2") == "mpich"
    assert abi_of("/venv/lib/libmpi.so.12") == "mpich"
    assert abi_of("/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4") == "openmpi"
    with pytest.raises(MinitraceError, match="known ABI"):
        abi_of("/opt/libmpi_abi.so.0")


def test_mpi4py_is_pointed_at_the_library_through_a_link_of_its_abis_name(tmp_path):
    lib = tmp_path / "vendor" / "libmpich.so.12.2.2"
    lib.parent.mkdir()
    lib.write_bytes(b"")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = mpi4py_env(str(lib), str(scratch))
    assert env["MPI4PY_LIBMPI"] == str(lib) and env["MPI4PY_MPIABI"] == "mpich"
    assert env["LD_LIBRARY_PATH"].split(os.pathsep)[0] == str(scratch)
    assert os.path.realpath(scratch / "libmpi.so.12") == str(lib)


def test_a_program_names_its_library_and_one_without_mpi_is_refused(programs, tmp_path):
    program = programs("pingpong")
    lib = linked_mpi(program)
    assert library_of_program(program) == lib
    assert library_of_program(lib) == lib
    with pytest.raises(MinitraceError, match="links no MPI library"):
        library_of_program(shutil.which("true"))
    with pytest.raises(MinitraceError, match="no such file"):
        library_of_program(str(tmp_path / "absent"))


def _library_version(lib: str) -> str:
    """MPI_Get_library_version of ``lib``, asked before MPI_Init (allowed) in a child."""
    code = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); buf = ctypes.create_string_"
            "buffer(8192); n = ctypes.c_int(); lib.MPI_Get_library_version(buf, ctypes.byref(n));"
            " print(buf.value.decode(errors='replace'))")
    return subprocess.run([sys.executable, "-c", code, lib], capture_output=True, text=True,
                          check=True, timeout=300).stdout


@pytest.fixture(scope="module")
def debian(tmp_path_factory):
    """pingpong.c built with Debian's MPICH, and a quick calibration of that library."""
    if not shutil.which("mpicc.mpich"):
        pytest.skip("Debian's MPICH (libmpich-dev) is not installed")
    where = tmp_path_factory.mktemp("libmpi")
    program = where / "pingpong"
    subprocess.run(["mpicc.mpich", "-O1", "-o", str(program), str(PROGRAMS / "pingpong.c")],
                   check=True, capture_output=True, timeout=300)
    cal = where / "debian.h5"
    p = subprocess.run([sys.executable, "-m", "minitrace", "calibrate", "-o", str(cal), *QUICK,
                        "--seed", "3", "--libmpi", str(program), "--", tool("mpiexec"), "-n",
                        "2"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return str(program), cal, shim_cache_env(tmp_path_factory)


def test_the_calibration_measures_the_programs_library(debian, demo):
    program, cal, _ = debian
    measured = load(str(cal)).mpi_library
    assert mpi_version(measured) == mpi_version(_library_version(linked_mpi(program)))
    assert mpi_version(measured) != mpi_version(load(str(demo.out / "machine.h5")).mpi_library)


def test_a_run_of_another_library_is_refused_before_it_measures(debian):
    _, cal, _ = debian
    before = cal.read_bytes()
    p = subprocess.run([sys.executable, "-m", "minitrace", "calibrate", "-o", str(cal), *QUICK,
                        "--quiet", "--", tool("mpiexec"), "-n", "2"], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 1
    first = p.stderr.splitlines()[0]           # (then the launcher's exit status)
    assert str(cal) in first and "calibrate into another file" in first
    assert cal.read_bytes() == before


def test_predict_says_when_the_program_ran_on_another_library(debian, demo, tmp_path):
    program, cal, env = debian
    out = tmp_path / "pp.h5"
    record(out, 2, [program, "2000"], volume="cputime", env=env, timeout=300)
    other = predict(str(out), str(demo.out / "machine.h5"), ranges=False)
    said = [w for w in other.warnings if "--libmpi" in w]
    assert len(said) == 1 and f"--libmpi {program}" in said[0]
    assert mpi_version(_library_version(linked_mpi(program))) in said[0]
    same = predict(str(out), str(cal), ranges=False)
    assert not [w for w in same.warnings if "--libmpi" in w]


def test_a_program_of_debians_open_mpi_is_calibrated_with_its_library(tmp_path):
    """The other ABI: a program built with Debian's Open MPI 4.1 (libmpi.so.40), launched by
    its mpiexec, measured by this environment's mpi4py."""
    if not (shutil.which("mpicc.openmpi") and shutil.which("mpiexec.openmpi")):
        pytest.skip("Debian's Open MPI (libopenmpi-dev) is not installed")
    from tests.support.mpiutil import OPEN_MPI_LAUNCH_ENV
    program = tmp_path / "pingpong"
    subprocess.run(["mpicc.openmpi", "-O1", "-o", str(program), str(PROGRAMS / "pingpong.c")],
                   check=True, capture_output=True, timeout=300)
    assert abi_of(linked_mpi(str(program))) == "openmpi"
    cal = tmp_path / "ompi.h5"
    p = subprocess.run([sys.executable, "-m", "minitrace", "calibrate", "-o", str(cal), *QUICK,
                        "--seed", "5", "--quiet", "--libmpi", str(program), "--",
                        "mpiexec.openmpi", "-n", "2"], capture_output=True, text=True,
                       timeout=600, env={**os.environ, **OPEN_MPI_LAUNCH_ENV})
    assert p.returncode == 0, p.stderr
    assert mpi_version(load(str(cal)).mpi_library) == \
        mpi_version(_library_version(linked_mpi(str(program))))
    assert load(str(cal)).mpi_library.startswith("Open MPI")
