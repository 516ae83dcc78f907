"""validate() on matched probes: a matched receive takes its message where its probe dequeued
it, and every probed message is received exactly once, after its probe, as probed."""
from __future__ import annotations

import pytest

from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.validate import validate


def _trace(recvs, probes=((0, 5, [0]), (0, 5, [1])), sizes=(8, 16)) -> TraceBuilder:
    """Rank 0 sends 8 B then 16 B to rank 1 (tag 5); rank 1 probes ``probes`` (peer, tag,
    vector) then does the receives ``recvs`` (kind, peer, tag, bytes, vector)."""
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    for n in sizes:
        b.add(0, "send", peer=1, tag=5, bytes_sent=n)
    for peer, tag, vec in probes:
        b.add(1, "mprobe", peer=peer, tag=tag, vector=vec)
    req = 0
    for kind, peer, tag, n, vec in recvs:
        b.add(1, kind, peer=peer, tag=tag, bytes_recv=n, vector=vec,
              request=req if kind == "imrecv" else -1)
        if kind == "imrecv":
            b.add(1, "wait", request=req)
            req += 1
    for r in range(2):
        b.add(r, "finalize")
    return b


def test_receives_in_reverse_probe_order_are_valid():
    """The second probed message (16 B) received first: matched by probe order, no mismatch."""
    rep = validate(_trace([("mrecv", 0, 5, 16, [1]), ("imrecv", 0, 5, 8, [0])]).build())
    assert rep.ok, str(rep)


def test_without_the_probe_link_the_order_is_the_receives():
    """The same receives not linked to their probes pair by their own order: sizes disagree."""
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    for n in (8, 16):
        b.add(0, "send", peer=1, tag=5, bytes_sent=n)
    for n in (16, 8):
        b.add(1, "recv", peer=0, tag=5, bytes_recv=n)
    assert validate(b.build()).counts["size-mismatch"] == 2


@pytest.mark.parametrize("recvs,probes,what", [
    ([("mrecv", 0, 5, 8, [0])], ((0, 5, [0]), (0, 5, [1])), "message 1 (from 0 tag 5 comm 0) "
     "is never received"),
    ([("mrecv", 0, 5, 8, [0]), ("mrecv", 0, 5, 16, [7])], ((0, 5, [0]),),
     "message 7 (from 0 tag 5 comm 0) has no matched probe"),
    ([("mrecv", 0, 5, 8, [0]), ("mrecv", 0, 5, 16, [0])], ((0, 5, [0]), (0, 5, [1])),
     ("message 0 (from 0 tag 5 comm 0) was already received",
      "message 1 (from 0 tag 5 comm 0) is never received")),
    ([("mrecv", 0, 5, 8, [0]), ("mrecv", 0, 5, 16, [1])], ((0, 5, [0]), (0, 6, [1])),
     "message 1 (from 0 tag 5 comm 0) but its probe (action 2) saw it from 0 tag 6 comm 0"),
])
def test_probe_problems_are_named(recvs, probes, what):
    rep = validate(_trace(recvs, probes).build())
    what = (what,) if isinstance(what, str) else what
    found = [p for p in rep.problems if p.category == "unmatched-probe"]
    assert len(found) == len(what) and all(w in p.message for w, p in zip(what, found)), rep
    assert all(p.rank == 1 for p in found)


def test_receive_before_its_probe():
    b = TraceBuilder(1)
    b.add(0, "init")
    b.add(0, "mrecv", peer=0, tag=1, bytes_recv=4, vector=[0])
    b.add(0, "mprobe", peer=0, tag=1, vector=[0])
    b.add(0, "send", peer=0, tag=1, bytes_sent=4)
    b.add(0, "finalize")
    rep = validate(b.build())
    assert rep.counts["unmatched-probe"] == 1
    assert "comes before its probe (action 2)" in rep.problems[0].message


def test_proc_null_and_polls_carry_no_message():
    """A matched probe of MPI_PROC_NULL, its receive and unsuccessful improbes: no vector,
    nothing to pair."""
    b = TraceBuilder(1)
    b.add(0, "init")
    b.add(0, "improbe", peer=0, tag=3)
    b.add(0, "mprobe", flags=K.FLAG_ANY_TAG)
    b.add(0, "mrecv")
    b.add(0, "finalize")
    assert validate(b.build()).ok
