"""A receive the program cancels and then frees, or never names again, has no status (the
cancel's outcome unknown): validate takes it for what the program gave up, not an incomplete
request nor an unresolved receive (public graph500's aml cancels its pending persistent
receives from MPI_ANY_SOURCE before MPI_Finalize).  Without the cancel both stay reported."""
from __future__ import annotations

import pytest

from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.validate import validate


def _trace(after: list[str], persistent: bool, fixed: bool = False):
    """Rank 1 receives one message of rank 0, then posts a receive from MPI_ANY_SOURCE, or
    from rank 0 with tag 9 (``fixed``: as the recorder leaves one it saw no status of), an
    irecv or a recv_init's start, that no message meets, and does ``after`` with it."""
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    b.add(0, "send", peer=1, tag=3, bytes_sent=8)
    b.add(1, "recv", peer=0, tag=3, bytes_recv=8)
    wild = 0 if fixed else K.FLAG_ANY_SOURCE | K.FLAG_ANY_TAG
    src, tag = (0, 9) if fixed else (-1, -1)
    if persistent:
        b.add(1, "recv_init", peer=src, tag=tag, bytes_recv=64, request=5, flags=wild)
        b.add(1, "start", request=5,
              flags=K.FLAG_PERSISTENT | (0 if fixed else K.FLAG_UNRESOLVED))
    else:
        b.add(1, "irecv", peer=src, tag=tag, bytes_recv=64, request=5,
              flags=wild | K.FLAG_UNRESOLVED)
    for kind in after:
        b.add(1, kind, request=5)
    for r in range(2):
        b.add(r, "finalize")
    return b.build()


@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("after", [["cancel"], ["cancel", "request_free"]])
def test_cancelled_and_given_up_is_no_problem(after, persistent, fixed):
    rep = validate(_trace(after, persistent, fixed))
    assert rep.ok, str(rep)


def test_a_send_a_given_up_receive_would_have_taken_is_still_unmatched():
    """Had the cancel not taken, the message it met is not hidden."""
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    b.add(1, "irecv", peer=0, tag=9, bytes_recv=64, request=5, flags=K.FLAG_UNRESOLVED)
    b.add(1, "cancel", request=5)
    b.add(1, "request_free", request=5)
    b.add(0, "send", peer=1, tag=9, bytes_sent=8)
    for r in range(2):
        b.add(r, "finalize")
    assert {p.category for p in validate(b.build()).problems} == {"unmatched-send"}


@pytest.mark.parametrize("sent,problems", [(8, set()), (64, set()), (100, {"size-mismatch"})])
def test_a_startall_receive_holds_a_message_that_fits_its_posted_bytes(sent, problems):
    """A receive started by MPI_Startall is known by its recv_init's posted bytes (the
    buffer's room): a smaller message fits (a persistent halo exchange), a larger one not."""
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    b.add(0, "send_init", peer=1, tag=4, bytes_sent=sent, request=1)
    b.add(1, "recv_init", peer=0, tag=4, bytes_recv=64, request=2)
    for _ in range(3):
        b.add(0, "startall", vector=[1], flags=K.FLAG_PERSISTENT)
        b.add(0, "waitall", vector=[1])
        b.add(1, "startall", vector=[2], flags=K.FLAG_PERSISTENT)
        b.add(1, "waitall", vector=[2])
    for r in range(2):
        b.add(r, "finalize")
    assert {p.category for p in validate(b.build()).problems} == problems


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("after", [[], ["request_free"]])
def test_left_without_a_cancel_is_still_reported(after, persistent):
    kinds = {p.category for p in validate(_trace(after, persistent)).problems}
    assert kinds == {"unresolved-recv", "incomplete-request"}
