"""Neighborhood and MPI-4 persistent collectives under ``minitrace record``
(tests/programs/neighbor.c, 4 ranks): each neighbourhood collective's vector lists the
neighbours (world ranks, -1 for MPI_PROC_NULL) in MPI's order and the bytes exchanged with
each; persistent collectives are initialization calls whose requests are started and
completed; validate (which pairs every neighbour exchange) passes."""
from __future__ import annotations

import pytest

from minitrace import kinds as K
from minitrace.converters.simgrid_ti import write_ti
from tests.support.record_util import Ranked, record

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def trace(programs, tmp_path_factory):
    d = tmp_path_factory.mktemp("neighbor")
    p = record(d / "nb.h5", 4, [programs("neighbor")])
    assert "validation: OK" in p.stdout
    return Ranked(d / "nb.h5")


def _one(tr, r, kind):
    x, = tr.mpi(r, kind)
    return x, tr.vector(x)


def test_neighbor_vectors(trace):
    tr = trace
    for r in range(4):
        # 1-D line: in = out = [left, right], -1 at the ends; 8 B each way
        x, v = _one(tr, r, "neighbor_alltoall")
        nb = [r - 1 if r > 0 else -1, r + 1 if r < 3 else -1]
        assert v == [2, 2, *nb, *nb, 8, 8, 8, 8]
        assert x["bytes_sent"] == x["bytes_recv"] == 8 * sum(p >= 0 for p in nb)
        # distributed graph: from r-1, r-2, to r+1, r+2; r sends r + j + 1 ints to out-neighbour j
        src, dst = [(r + 3) % 4, (r + 2) % 4], [(r + 1) % 4, (r + 2) % 4]
        x, v = _one(tr, r, "neighbor_alltoallv")
        assert v == [2, 2, *src, *dst, 4 * (src[0] + 1), 4 * (src[1] + 2), 4 * (r + 1), 4 * (r + 2)]
        assert (x["bytes_sent"], x["bytes_recv"]) == (sum(v[8:]), sum(v[6:8]))
        x, v = _one(tr, r, "neighbor_alltoallw")
        assert v == [2, 2, *src, *dst, 4, 8, 4, 8]
        # ring graph: the graph's neighbours of r in its edge order, 12 B each; a request
        x, v = _one(tr, r, "ineighbor_allgatherv")
        ring = [[3, 1], [0, 2], [1, 3], [2, 0]][r]
        assert v == [2, 2, *ring, *ring, 12, 12, 12, 12]
        w = [y for y in tr.mpi(r, "wait") if y["request"] == x["request"]]
        assert len(w) == 1 and w[0]["comm"] == x["comm"]


def test_persistent_collectives(trace):
    tr = trace
    for r in range(4):
        names = tr.names(r)
        i = names.index("neighbor_allgather_init")
        assert names[i:i + 6] == ["neighbor_allgather_init", "start", "wait", "start", "wait",
                                  "request_free"]
        # (each startall written as its starts, in its order)
        assert names[i + 6:i + 16] == ["allreduce_init", "bcast_init"] + \
            ["start", "start", "waitall"] * 2 + ["request_free"] * 2
        init, v = _one(tr, r, "neighbor_allgather_init")
        assert v[:2] == [2, 2] and v[6:] == [8, 8, 8, 8]
        starts = tr.mpi(r, "start")
        assert (starts["flags"] & K.FLAG_PERSISTENT).all()
        ar, _ = _one(tr, r, "allreduce_init")
        bc, _ = _one(tr, r, "bcast_init")
        assert starts["request"].tolist() == [init["request"]] * 2 + \
            [ar["request"], bc["request"]] * 2
        assert (ar["bytes_sent"], ar["bytes_recv"], ar["comm"]) == (16, 16, 0)
        assert bc["peer"] == 1 and (bc["bytes_sent"] if r == 1 else bc["bytes_recv"]) == 8


def test_ti_export_reports_them(trace, tmp_path):
    rep = write_ti(trace.data, tmp_path / "nb.ti", lossy=True)
    for kind in ("neighbor_alltoall", "neighbor_alltoallv", "neighbor_alltoallw",
                 "ineighbor_allgatherv", "neighbor_allgather_init", "allreduce_init",
                 "bcast_init"):
        assert _reported(rep, kind) == 4, kind


def _reported(rep, kind: str) -> int:
    """Actions of ``kind`` the export said it could not write as they are (dropped, lowered or
    approximated)."""
    return rep.dropped[kind] + sum(n for k, n in (*rep.lowered.items(),
                                                  *rep.approximated.items())
                                   if k.split(" ")[0] == kind)
