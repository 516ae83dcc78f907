"""MPI_Isendrecv(_replace) under ``minitrace record`` (tests/programs/isendrecv.c, 3 ranks):
both halves recorded (the receive half as posted: MPICH's completion status does not describe
it), paired by validate; a wildcard receive half is flagged UNRESOLVED, not guessed."""
from __future__ import annotations

import pytest

from minitrace import kinds as K
from tests.support.record_util import Ranked, record

pytestmark = pytest.mark.timeout(300)


def test_isendrecv_ring(programs, tmp_path):
    p = record(tmp_path / "isr.h5", 3, [programs("isendrecv")])
    assert "validation: OK" in p.stdout
    tr = Ranked(tmp_path / "isr.h5")
    for r in range(3):
        right, left = (r + 1) % 3, (r + 2) % 3
        assert tr.names(r) == ["init", "isendrecv", "wait", "isendrecv_replace", "waitall",
                               "finalize"]
        sr, = tr.mpi(r, "isendrecv")
        assert (int(sr["peer"]), int(sr["tag"]), int(sr["bytes_sent"]),
                int(sr["bytes_recv"]), tr.vector(sr)) == (right, 4, 32, 32, [left, 4])
        rp, = tr.mpi(r, "isendrecv_replace")
        assert (int(rp["peer"]), int(rp["tag"]), int(rp["bytes_sent"]),
                int(rp["bytes_recv"]), tr.vector(rp)) == (left, 6, 16, 16, [right, 6])
        assert tr.mpi(r, "wait")[0]["request"] == sr["request"]
        assert tr.vector(tr.mpi(r, "waitall")[0]) == [int(rp["request"])]
        assert not (sr["flags"] | rp["flags"]) & K.FLAG_UNRESOLVED


def test_wildcard_receive_half_is_unresolved(programs, tmp_path):
    p = record(tmp_path / "w.h5", 3, [programs("isendrecv"), "wild"], expect_rc=1)
    assert "3 unresolved-recv" in p.stdout
    tr = Ranked(tmp_path / "w.h5")
    for r in range(3):
        rp, = tr.mpi(r, "isendrecv_replace")
        assert tr.vector(rp) == [-1, -1]
        assert rp["flags"] & K.FLAG_UNRESOLVED and rp["flags"] & K.FLAG_ANY_SOURCE
