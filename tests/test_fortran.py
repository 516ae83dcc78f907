"""Fortran programs recorded under the machine's own MPIs (Debian's MPICH and Open MPI), each
with a shim built for the MPI library the program is linked against (minitrace/shims.py):
tests/programs/halo_f.F90 in its three bindings (mpif.h, use mpi, use mpi_f08) gives, rank by
rank, the same MPI actions (kinds, peers, tags, communicators, bytes, flags) as its C twin
halo_f_twin.c.  Under Open MPI the Fortran bindings call PMPI_* directly: without the Fortran
twins of the wrappers nothing at all is recorded; under MPICH they call the C MPI_*: a
double count would show.  Shims are built once per run into the run's own cache."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minitrace.mpitools import mpi_tool
from minitrace.record import shim_path
from minitrace.shims import linked_mpi
from tests.support.record_util import PROGRAMS
from tests.support.twins import (BINDINGS, FAMILIES, actions, assert_same_actions, build_halo,
                                 missing, record_with, shim_cache_env)


@pytest.fixture(scope="session")
def shim_cache(tmp_path_factory) -> dict:
    """The environment of this run's recordings: a shim cache of their own."""
    return shim_cache_env(tmp_path_factory)


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """``built(family, binding)``: halo_f.F90 (binding None: its C twin) compiled with that
    MPI's mpif90 (mpicc), once per run."""
    where = tmp_path_factory.mktemp("fortran")

    def make(family: str, binding: str | None) -> str:
        why = missing(family)
        if why:
            pytest.skip(why)
        return build_halo(family, binding, where)
    return make


@pytest.fixture(scope="session")
def twin(built, shim_cache, tmp_path_factory):
    """``twin(family)``: the C twin's recording under that MPI, once per run."""
    done = {}

    def get(family: str) -> list:
        if family not in done:
            out = tmp_path_factory.mktemp("twin") / f"{family}.h5"
            record_with(family, [built(family, None)], out, shim_cache)
            done[family] = actions(out)
        return done[family]
    return get


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("family", FAMILIES)
def test_fortran_equals_its_c_twin(family, binding, built, twin, shim_cache, tmp_path):
    program = built(family, binding)
    p = record_with(family, [program], tmp_path / "f.h5", shim_cache)
    assert "validation: OK" in p.stdout
    assert_same_actions(actions(tmp_path / "f.h5"), twin(family))


@pytest.mark.parametrize("family", FAMILIES)
def test_the_shim_is_built_for_the_programs_mpi(family, built, shim_cache):
    """The shim record uses links the program's libmpi, not the installed shim's."""
    program = built(family, "mpif.h")
    p = subprocess.run([sys.executable, "-m", "minitrace", "shim-path", "--", program],
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, **shim_cache})
    assert p.returncode == 0, p.stderr
    shim = p.stdout.strip()
    assert shim.startswith(shim_cache["MINITRACE_CACHE"])
    assert linked_mpi(shim) == linked_mpi(program) != linked_mpi(shim_path())
    assert linked_mpi(program) in p.stderr


def test_an_mpi_without_a_shim_is_refused_before_it_runs(tmp_path, built, shim_cache):
    """A program linked against an MPI library no mpicc of this machine builds for (here a
    copy of Debian's libmpich in a directory of its own): one line naming the library and how
    to build a shim, and the program is not run."""
    lib = linked_mpi(built("mpich", None))
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    shutil.copy(lib, vendor / "libmpich.so.12")
    (vendor / "libmpich.so").symlink_to("libmpich.so.12")
    program = tmp_path / "app"
    flags = subprocess.run(["mpicc.mpich", "-show"], capture_output=True, text=True,
                           check=True).stdout.split()
    includes = [w for w in flags if w.startswith("-I")]
    subprocess.run(["gcc", *includes, str(PROGRAMS / "halo_f_twin.c"), f"-L{vendor}",
                    "-lmpich", f"-Wl,-rpath,{vendor}", "-o", str(program)], check=True,
                   capture_output=True, timeout=300)
    assert linked_mpi(str(program)) == str(vendor / "libmpich.so.12")
    out = tmp_path / "t.h5"
    p = subprocess.run([sys.executable, "-m", "minitrace", "record", "-o", str(out), "--",
                        "mpiexec.mpich", "-n", "2", str(program)], capture_output=True,
                       text=True, timeout=300, env={**os.environ, **shim_cache})
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert str(vendor / "libmpich.so.12") in lines[0]
    assert "minitrace shim build --mpicc" in lines[0] and "not run" in lines[0]
    assert not out.exists() and not list(tmp_path.glob("t.h5.raw-*"))


def test_mpi5_abi_program_recorded_with_an_abi_shim(built, twin, shim_cache, tmp_path):
    """The mpich wheel's MPI-5 ABI (libmpi_abi, mpicc_abi): the C twin built for the ABI gets a
    shim built with mpicc_abi (no Fortran twins: the ABI has no Fortran part) and records the
    same actions as under Debian's MPICH."""
    mpicc_abi = mpi_tool("mpicc_abi")
    if not mpicc_abi:
        pytest.skip("no mpicc_abi in this environment (the mpich wheel has it)")
    program = tmp_path / "halo_abi"
    subprocess.run([mpicc_abi, "-O1", "-o", str(program), str(PROGRAMS / "halo_f_twin.c")],
                   check=True, capture_output=True, timeout=300)
    assert Path(linked_mpi(str(program))).name.startswith("libmpi_abi.so")
    out = tmp_path / "abi.h5"
    p = subprocess.run([sys.executable, "-m", "minitrace", "record", "-o", str(out), "--",
                        mpi_tool("mpiexec"), "-n", "4", str(program)], capture_output=True,
                       text=True, timeout=600, env={**os.environ, **shim_cache})
    assert p.returncode == 0, p.stderr
    assert f"with {mpicc_abi}" in p.stderr      # built here, for the ABI library
    assert_same_actions(actions(out), twin("mpich"))
