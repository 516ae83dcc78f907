"""MPI-IO under ``minitrace record`` (tests/programs/io.c, 3 ranks): every file call recorded
as an I/O action (file id, bytes, offsets), so I/O time is an MPI call's, not computation;
validate passes; the TI export counts what it cannot express."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.converters.simgrid_ti import write_ti
from tests.support.record_util import Ranked, record

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def trace(programs, tmp_path_factory):
    d = tmp_path_factory.mktemp("io")
    p = record(d / "io.h5", 3, [programs("io"), str(d / "data.bin")])
    assert "validation: OK" in p.stdout
    assert (d / "data.bin").stat().st_size >= 308 and not (d / "data.bin.2").exists()
    return Ranked(d / "io.h5")


def test_every_file_call(trace):
    tr = trace
    for r in range(3):
        got = [(K.NAME[int(x["kind"])], int(x["tag"]), int(x["bytes_sent"]),
                int(x["bytes_recv"]), tr.vector(x)) for x in tr.mpi(r)
               if K.NAME[int(x["kind"])] in K.IO_KINDS]
        assert got == [
            ("file_open", 0, 0, 0, []), ("file_write_at", 0, 32, 0, [32 * r]),
            ("file_write_at_all", 0, 32, 0, [96 + 32 * r]),
            ("file_set_view", 0, 0, 0, [96 + 32 * r]), ("file_read", 0, 0, 16, [0]),
            ("file_read_all", 0, 0, 16, [2]), ("file_set_view", 0, 0, 0, [0]),
            ("file_iwrite_at", 0, 4, 0, [200 + 4 * r]), ("file_iread", 0, 0, 8, [0]),
            ("file_write_shared", 0, 3, 0, []), ("file_write_ordered", 0, r + 1, 0, []),
            ("file_preallocate", 0, 0, 0, [4096]),
            ("file_write_at_all_begin", 0, 8, 0, [300 + 8 * r]),
            ("file_write_at_all_end", 0, 0, 0, []), ("file_read_ordered_begin", 0, 0, 2, []),
            ("file_read_ordered_end", 0, 0, 0, []),
            ("file_sync", 0, 0, 0, []), ("file_close", 0, 0, 0, []),
            ("file_open", 1, 0, 0, []), ("file_set_size", 1, 0, 0, [100]),
            ("file_close", 1, 0, 0, [])] + [("file_delete", -1, 0, 0, [])] * (r == 0)
        assert [int(x["comm"]) for x in tr.mpi(r) if K.NAME[int(x["kind"])] in K.IO_KINDS] == \
            [0] * 21 + [-1] * (r == 0)
        nb = [x for x in tr.mpi(r) if K.NAME[int(x["kind"])] in K.NONBLOCKING_IO]
        assert [int(x["request"]) for x in nb] == [int(w["request"]) for w in tr.mpi(r, "wait")]
        # each file call is an MPI action preceded by its own compute action
        a = tr.all(r)
        io = [i for i, k in enumerate(a["kind"]) if K.NAME[int(k)] in K.IO_KINDS]
        assert all(a["kind"][i - 1] == K.CODE["compute"] for i in io)


def test_an_open_that_failed_opened_nothing(programs, tmp_path):
    """(public IOR's MPI-IO backend probes for its file with an MPI_File_open that fails:
    recorded as an open never closed, `record` exited 1 on a correct program)"""
    p = record(tmp_path / "f.h5", 2, [programs("file_open_fail"), str(tmp_path / "f.bin")])
    assert "validation: OK" in p.stdout, p.stdout[-2000:]
    tr = Ranked(tmp_path / "f.h5")
    for r in range(2):
        assert [(K.NAME[int(x["kind"])], int(x["tag"])) for x in tr.mpi(r)
                if K.NAME[int(x["kind"])] in K.IO_KINDS] == [
            ("file_open", -1), ("file_open", 0), ("file_close", 0)]


def test_a_lossy_replay_says_what_the_calls_left_out_took(trace):
    """(public IOR: its file calls took 0.026 s of rank 0's 0.156 s, which the prediction
    left out with only their counts said)"""
    from minitrace.replay import replay
    notes = replay(trace.data, lossy=True, compute_rate="1Gf").notes
    said = [n for n in notes if n.startswith("the calls left out (")]
    assert len(said) == 1 and "file_write_at_all" in said[0], notes
    kinds = said[0][len("the calls left out ("):said[0].index(")")].split(", ")
    assert set(kinds) >= {"file_open", "file_write_at_all", "file_close"}
    a = trace.data.actions
    left = K.mask(kinds)[a["kind"]]          # (every call of its kinds left out: the file
    took = np.bincount(trace.data.rank_of()[left],          # calls, the waits of theirs)
                       weights=(a["t_end"] - a["t_start"])[left])
    assert f"took {took.max():.3g} s of rank {int(np.argmax(took))}'s recorded" in said[0]


def test_ti_export_reports_them(trace, tmp_path):
    rep = write_ti(trace.data, tmp_path / "io.ti", lossy=True)
    assert _reported(rep, "file_open") == 6 and _reported(rep, "file_write_at_all") == 3
    assert _reported(rep, "file_iread") == 3


def _reported(rep, kind: str) -> int:
    """Actions of ``kind`` the export said it could not write as they are (dropped, lowered or
    approximated)."""
    return rep.dropped[kind] + sum(n for k, n in (*rep.lowered.items(),
                                                  *rep.approximated.items())
                                   if k.split(" ")[0] == kind)
