"""validate() on MPI-IO: accesses to open files only, files closed before the end."""
from __future__ import annotations

from minitrace.model import TraceBuilder
from minitrace.validate import validate


def _trace(*kinds_and_files) -> TraceBuilder:
    b = TraceBuilder(1)
    b.add(0, "init")
    for kind, fid in kinds_and_files:
        b.add(0, kind, tag=fid, bytes_sent=8 if "write" in kind else 0)
    b.add(0, "finalize")
    return b


def test_open_write_close_is_valid():
    assert validate(_trace(("file_open", 0), ("file_write_at", 0), ("file_close", 0)).build()).ok


def test_access_to_a_file_not_open():
    rep = validate(_trace(("file_open", 0), ("file_close", 0), ("file_write", 0),
                          ("file_read", 1)).build())
    assert rep.counts["io-unknown-file"] == 2
    assert str(rep.problems[0]) == ("rank 0 action 3: io-unknown-file: file_write on file 0, "
                                    "which this rank did not open (or closed)")


def test_file_left_open():
    rep = validate(_trace(("file_open", 0), ("file_open", 1), ("file_close", 0)).build())
    assert rep.counts["io-not-closed"] == 1 and "finalize with file 1 open" in str(rep)
