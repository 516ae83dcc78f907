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
