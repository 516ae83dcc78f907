"""MPI_Comm_spawn under ``minitrace record`` (tests/programs/spawn.c): the spawn is recorded and
flagged, the spawned processes are not traced (their world ranks would otherwise write over the
parents' raw files), and actions on the intercommunicator to them are flagged."""
from __future__ import annotations

import pytest

from minitrace import kinds as K
from tests.support.record_util import Ranked, record

pytestmark = pytest.mark.timeout(300)


def test_spawn_recorded_children_not_traced(programs, tmp_path):
    p = record(tmp_path / "sp.h5", 2, [programs("spawn")])
    assert "validation: OK" in p.stdout and p.stdout.count("spawn rank") == 2
    tr = Ranked(tmp_path / "sp.h5")
    assert tr.meta["nranks"] == 2 and tr.meta["complete"]
    for r in range(2):
        assert tr.names(r) == ["init", "comm_spawn"] + ["send"] * (r == 0) + \
            ["barrier", "finalize"]
        sp, = tr.mpi(r, "comm_spawn")
        assert sp["flags"] & K.FLAG_INTERCOMM and sp["peer"] == 0 and tr.vector(sp) == [2]
        assert tr.data.comms[int(sp["request"])].tolist() == [-32766, -32766]
        bar, = tr.mpi(r, "barrier")
        assert bar["comm"] == sp["request"] and bar["flags"] & K.FLAG_INTERCOMM
    s, = tr.mpi(0, "send")
    assert (int(s["peer"]), int(s["tag"]), int(s["bytes_sent"])) == (-32766, 3, 16)
    assert s["flags"] & K.FLAG_INTERCOMM
