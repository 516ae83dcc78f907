"""Communicator creations under ``minitrace record`` (tests/programs/comms.c, 4 ranks): each one
recorded with its parent and the new communicator's id (the same on every rank), the
communicator's members right, intercommunicators and every action on them flagged, the p2p
across the intercommunicator matched, and the TI export counting what it cannot express."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.converters.simgrid_ti import write_ti
from tests.support.record_util import Ranked, record

pytestmark = pytest.mark.timeout(300)

CREATIONS = ["cart_create", "cart_sub", "comm_idup", "comm_dup", "comm_create_from_group",
             "graph_create", "dist_graph_create_adjacent", "dist_graph_create", "comm_split",
             "intercomm_create", "intercomm_merge"]


@pytest.fixture(scope="module")
def trace(programs, tmp_path_factory):
    d = tmp_path_factory.mktemp("comms")
    p = record(d / "comms.h5", 4, [programs("comms")])
    assert "validation: OK" in p.stdout
    return Ranked(d / "comms.h5")


def _after(tr: Ranked, rank: int, kind: str, n: int = 1):
    """The action ``kind`` and the ``n`` MPI actions after it on ``rank``."""
    a = [x for x in tr.mpi(rank) if K.NAME[int(x["kind"])] != "comm_size"]
    i = next(j for j, x in enumerate(a) if K.NAME[int(x["kind"])] == kind)
    return a[i:i + 1 + n]


def test_sequence_and_new_communicators(trace):
    tr = trace
    for r in range(4):
        names = tr.names(r)
        assert [n for n in names if n in K.COMM_KINDS and n != "comm_free"] == CREATIONS
        assert names.count("comm_free") == 11
        # the collective after each creation runs on the communicator it created
        for kind, coll in (("cart_sub", "bcast"), ("comm_dup", "barrier"),
                           ("comm_create_from_group", "barrier"), ("graph_create", "barrier"),
                           ("dist_graph_create_adjacent", "barrier"),
                           ("dist_graph_create", "barrier"), ("intercomm_merge", "allreduce")):
            made, nxt = _after(tr, r, kind)
            assert K.NAME[int(nxt["kind"])] == coll and nxt["comm"] == made["request"] > 0
        cs, bc = _after(tr, r, "cart_sub")
        assert tr.data.comms[int(bc["comm"])].tolist() == ([0, 1] if r < 2 else [2, 3])
        assert cs["comm"] == _after(tr, r, "cart_create")[0]["request"]
        # comm_idup: a request completed by the wait; its copy is learned at the allreduce
        idup, wait, allred = _after(tr, r, "comm_idup", 2)
        assert wait["request"] == idup["request"] >= 0 and idup["comm"] == 0
        assert allred["comm"] > 0 and tr.data.comms[int(allred["comm"])].tolist() == [0, 1, 2, 3]
        assert _after(tr, r, "comm_create_from_group")[0]["comm"] == -1
        for x in tr.mpi(r):
            flagged = bool(x["flags"] & K.FLAG_INTERCOMM)
            assert flagged == (K.NAME[int(x["kind"])] in ("intercomm_create", "send", "recv",
                                                          "intercomm_merge")
                               or (x["comm"] == _after(tr, r, "intercomm_create")[0]["request"]))
    # one id per communicator, the same on every rank; the intercomm is both parity groups
    for kind in CREATIONS:
        if kind not in ("comm_split", "comm_idup", "cart_sub"):   # one per group or none
            assert len({int(_after(tr, r, kind)[0]["request"]) for r in range(4)}) == 1, kind
    inter = int(_after(tr, 0, "intercomm_create")[0]["request"])
    assert tr.data.comms[inter].tolist() == [0, 1, 2, 3]
    merged = int(_after(tr, 0, "intercomm_merge")[0]["request"])
    assert tr.data.comms[merged].tolist() == [0, 2, 1, 3]      # the low (even) group first
    # the message across the intercommunicator: even world rank r to r + 1, tag 5, 16 B
    for r in (0, 2):
        s, = tr.mpi(r, "send")
        rv, = tr.mpi(r + 1, "recv")
        assert (int(s["peer"]), int(s["tag"]), int(s["comm"]), int(s["bytes_sent"])) == \
            (r + 1, 5, inter, 16)
        assert (int(rv["peer"]), int(rv["tag"]), int(rv["comm"]), int(rv["bytes_recv"])) == \
            (r, 5, inter, 16)


def test_ti_export_reports_the_creations(trace, tmp_path):
    rep = write_ti(trace.data, tmp_path / "c.ti", lossy=True)
    for kind in ("cart_create", "cart_sub", "comm_create_from_group", "graph_create",
                 "dist_graph_create", "dist_graph_create_adjacent", "intercomm_create",
                 "intercomm_merge", "comm_idup"):
        assert _reported(rep, kind) == 4, kind


def _reported(rep, kind: str) -> int:
    """Actions of ``kind`` the export said it could not write as they are (dropped, lowered or
    approximated)."""
    return rep.dropped[kind] + sum(n for k, n in (*rep.lowered.items(),
                                                  *rep.approximated.items())
                                   if k.split(" ")[0] == kind)


def test_cartesian_creations_keep_their_grid(trace):
    # cart_create: [dims..., periods...] (2x2, periodic); cart_sub: [remain_dims...]
    a = trace.data.actions
    for kind, want in (("cart_create", [2, 2, 1, 1]), ("cart_sub", [0, 1])):
        rows = np.flatnonzero(a["kind"] == K.CODE[kind])
        assert len(rows) == 4 and all(trace.data.vector(int(x)).tolist() == want for x in rows)
