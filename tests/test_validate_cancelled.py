"""A receive the program cancels and then frees, or never names again, has no status (the
cancel's outcome unknown): validate takes it for what the program gave up, not an incomplete
request nor an unresolved receive (public graph500's aml cancels its pending persistent
receives from MPI_ANY_SOURCE before MPI_Finalize).  Without the cancel both stay reported."""
from __future__ import annotations

import pytest

from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.validate import validate


def _trace(after: list[str], persistent: bool):
    """Rank 1 receives one message of rank 0, then posts a receive from MPI_ANY_SOURCE (an
    irecv, or a recv_init's start) that no message meets, and does ``after`` with it."""
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    b.add(0, "send", peer=1, tag=3, bytes_sent=8)
    b.add(1, "recv", peer=0, tag=3, bytes_recv=8)
    if persistent:
        b.add(1, "recv_init", peer=-1, tag=-1, bytes_recv=64, request=5,
              flags=K.FLAG_ANY_SOURCE | K.FLAG_ANY_TAG)
        b.add(1, "start", request=5, flags=K.FLAG_PERSISTENT | K.FLAG_UNRESOLVED)
    else:
        b.add(1, "irecv", peer=-1, tag=-1, bytes_recv=64, request=5,
              flags=K.FLAG_ANY_SOURCE | K.FLAG_ANY_TAG | K.FLAG_UNRESOLVED)
    for kind in after:
        b.add(1, kind, request=5)
    for r in range(2):
        b.add(r, "finalize")
    return b.build()


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("after", [["cancel"], ["cancel", "request_free"]])
def test_cancelled_and_given_up_is_no_problem(after, persistent):
    rep = validate(_trace(after, persistent))
    assert rep.ok, str(rep)


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("after", [[], ["request_free"]])
def test_left_without_a_cancel_is_still_reported(after, persistent):
    kinds = {p.category for p in validate(_trace(after, persistent)).problems}
    assert kinds == {"unresolved-recv", "incomplete-request"}
