"""docs/RECORDER.md's coverage table is what c_shim/coverage.py makes of the spec and the MPI
standard's function list, and every function in scope is recorded or has a reason."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "c_shim"))      # for its own import of generate
_spec = importlib.util.spec_from_file_location("shim_coverage", ROOT / "c_shim" / "coverage.py")
cov = importlib.util.module_from_spec(_spec)    # not "coverage": that is coverage.py's package
_spec.loader.exec_module(cov)


def test_table_is_up_to_date():
    p = subprocess.run([sys.executable, str(ROOT / "c_shim" / "coverage.py"), "--check"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr


def test_scope_and_what_is_recorded():
    funcs, rec = cov.standard_functions(), cov.recorded()
    groups = {n: cov.scope(n, e) for n, e in funcs.items()}
    assert groups["MPI_Mprobe"] == groups["MPI_Imrecv"] == "point-to-point"
    assert groups["MPI_Neighbor_alltoallw_init"] == "collective"
    assert groups["MPI_Win_lock_all"] == groups["MPI_Rget"] == "one-sided"
    assert groups["MPI_File_iwrite_at_all"] == "I/O"
    assert groups["MPI_Cart_sub"] == groups["MPI_Intercomm_merge"] == "communicator creation"
    assert groups["MPI_Type_commit"] is None and groups["MPI_Win_set_name"] is None
    assert rec["MPI_Mrecv"] == ("mrecv", True) and rec["MPI_Comm_dup_with_info"][0] == "comm_dup"
    assert rec["MPI_Allreduce_init"] == ("allreduce_init", True)


def test_a_function_without_wrapper_or_reason_is_an_error(monkeypatch):
    monkeypatch.setattr(cov, "NOT_RECORDED", [r for r in cov.NOT_RECORDED
                                              if "Test_cancelled" not in r[0]])
    with pytest.raises(SystemExit, match="neither wrapped nor given a reason.*MPI_Test_cancelled"):
        cov.table()
