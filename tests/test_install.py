"""The hard dependencies scripts/setup.sh installs are there: a broken install fails the run,
one named test each, instead of skipping what needs them.  (Only the third-party cross-checks
skip, when ../shared/fixtures is absent: conftest.py.)"""
from __future__ import annotations

import os

from minitrace.replay.libsimgrid import LIBRARY, library_dir, load_simgrid
from minitrace.replay.replayer_build import binary
from tests.support.mpiutil import tool


def test_otf2_bindings_and_the_converters_compiled_reader():
    import otf2
    from minitrace.converters import otf2_native
    assert otf2.__version__
    assert otf2_native.lib is not None, "converters/native (the OTF2 reader) is not built: " \
                                        "run scripts/setup.sh"
    assert otf2_native.code("ENTER") != otf2_native.code("LEAVE")


def test_the_adaptive_context_coder_is_built():
    from minitrace.compress.native import load
    ffi, lib = load()
    assert lib.mt_adaptive_encode and lib.mt_adaptive_decode


def test_simgrid_and_its_library_where_the_wheel_leaves_it():
    where = library_dir()
    assert where is not None and (where / LIBRARY).is_file(), \
        f"{LIBRARY} not found: install SimGrid 4.1 with scripts/setup.sh"
    simgrid = load_simgrid()
    assert callable(simgrid.smpi.replay_run)


def test_the_native_replayer_is_built():
    path = binary()
    assert path is not None and os.access(path, os.X_OK), \
        "run scripts/setup.sh (python -m minitrace.replay.replayer_build)"


def test_the_mpi_tools_and_the_standards_function_list():
    import pympistandard
    assert os.access(tool("mpiexec"), os.X_OK) and os.access(tool("mpicc"), os.X_OK)
    assert pympistandard.__version__


def test_every_package_of_the_tree_is_installed():
    """A regular install (the README's other environments, the Open MPI one of the tests)
    ships only the packages pyproject.toml lists: a new folder must be listed there."""
    import tomllib
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    found = {".".join(("minitrace", *p.parent.relative_to(root / "minitrace").parts))
             for p in (root / "minitrace").rglob("__init__.py")}
    found |= {".".join(("minitrace.converters", *p.parent.relative_to(root / "converters")
                        .parts)) for p in (root / "converters").rglob("__init__.py")}
    assert found - listed == set(), "packages missing from pyproject.toml"

