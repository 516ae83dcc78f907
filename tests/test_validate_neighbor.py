"""validate() on neighbourhood and persistent collectives: ordered with the other collectives,
sizes of persistent ones checked like their blocking form, neighbour exchanges paired."""
from __future__ import annotations

from minitrace.model import TraceBuilder
from minitrace.validate import validate


def _ring(bytes_to_right=(8, 8, 8), kinds=("neighbor_alltoall",) * 3) -> TraceBuilder:
    """3 ranks in a ring (in: left, out: right); rank r sends bytes_to_right[r] to its right
    and receives 8 B from its left."""
    b = TraceBuilder(3)
    for r in range(3):
        left, right = (r - 1) % 3, (r + 1) % 3
        b.add(r, "init")
        b.add(r, kinds[r], comm=0, bytes_sent=bytes_to_right[r], bytes_recv=8,
              vector=[1, 1, left, right, 8, bytes_to_right[r]])
        b.add(r, "finalize")
    return b


def test_consistent_neighbour_exchange():
    assert validate(_ring().build()).ok


def test_neighbour_bytes_disagree():
    rep = validate(_ring(bytes_to_right=(8, 16, 8)).build())
    msgs = [str(p) for p in rep.problems]
    assert rep.counts["collective-size-mismatch"] == 1, msgs
    assert msgs[0] == ("rank 1 action 1: collective-size-mismatch: neighbor_alltoall "
                       "(collective 0 on communicator 0) sends 16 B to 2 which expects 8 B")


def test_neighbour_not_listed():
    b = _ring()
    b.add(0, "neighbor_allgather", bytes_sent=4, vector=[0, 1, 2, 4])   # 0 -> 2 only
    for r in (1, 2):
        b.add(r, "neighbor_allgather", vector=[0, 0])
    rep = validate(b.build())
    bad = [p.message for p in rep.problems if p.category == "collective-size-mismatch"]
    assert len(bad) == 1 and "sends 4 B to 2 which does not list this exchange" in bad[0]


def test_kinds_must_agree_in_order():
    rep = validate(_ring(kinds=("neighbor_alltoall", "ineighbor_alltoall",
                                "neighbor_alltoall")).build())
    assert rep.counts["collective-mismatch"] == 1


def test_persistent_init_sizes_are_checked():
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "allreduce_init", bytes_sent=16 * (r + 1), bytes_recv=16 * (r + 1), request=0)
        b.add(r, "start", request=0)
        b.add(r, "wait", request=0)
        b.add(r, "finalize")
    rep = validate(b.build())
    assert rep.counts["collective-size-mismatch"] == 1 and len(rep.counts) == 1, str(rep)
