"""validate on converted traces (meta["source_messages"] holds the source's message counts):
a point-to-point action or persistent request without a peer, a message count that differs
from the source's, a wait/waitany/waitsome completing nothing are problems."""
from __future__ import annotations

from minitrace.model import TraceBuilder
from minitrace.validate import validate


def _trace(source=None, lose_peer=False, empty_waitany=False, lose_init_peer=False):
    """Rank 0 sends 8 bytes to rank 1 (isend + waitany) and through a persistent send_init
    started once; rank 1 receives both with recv."""
    b = TraceBuilder(2, {"source_messages": source} if source else {})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "isend", peer=-1 if lose_peer else 1, tag=0, bytes_sent=8, request=0)
    b.add(0, "waitany", request=-1 if empty_waitany else 0)
    b.add(0, "send_init", peer=-1 if lose_init_peer else 1, tag=1, bytes_sent=8, request=1)
    b.add(0, "start", request=1, flags=32)
    b.add(0, "wait", request=1)
    b.add(1, "recv", peer=0, tag=0, bytes_recv=8)
    b.add(1, "recv", peer=0, tag=1, bytes_recv=8)
    for r in range(2):
        b.add(r, "finalize")
    return b.build()


SOURCE = {"sent": 2, "received": 2}


def test_complete_conversion_is_valid():
    assert validate(_trace(SOURCE)).ok


def test_lost_peer_is_reported_with_the_count():
    rep = validate(_trace(SOURCE, lose_peer=True))
    assert rep.counts["p2p-without-peer"] == 1
    assert rep.counts["message-count-mismatch"] == 1
    assert any("1 sent message(s) in the trace but 2 in the source" in x for x in rep.lines())
    assert "rank 0 action 1: p2p-without-peer" in "\n".join(rep.lines())


def test_persistent_init_without_peer():
    rep = validate(_trace(SOURCE, lose_init_peer=True))
    assert rep.counts["p2p-without-peer"] == 1 and rep.counts["message-count-mismatch"] == 1


def test_waitany_completing_nothing():
    rep = validate(_trace(SOURCE, empty_waitany=True))
    assert rep.counts["empty-completion"] == 1
    assert "rank 0 action 2: empty-completion" in "\n".join(rep.lines())


def test_waits_on_null_handles_of_the_source_are_no_problem():
    """A source whose waits without a completion (waits on MPI_REQUEST_NULL) are as many as
    the trace's empty ones: not an empty completion (the request the waitany lost is still
    reported, never completed); one more in the trace: each reported."""
    rep = validate(_trace({**SOURCE, "null_completions": 1}, empty_waitany=True))
    assert dict(rep.counts) == {"incomplete-request": 1}
    rep = validate(_trace({**SOURCE, "null_completions": 0}, empty_waitany=True))
    assert rep.counts["empty-completion"] == 1


def test_count_differs_from_the_source():
    rep = validate(_trace({"sent": 3, "received": 2}))
    assert dict(rep.counts) == {"message-count-mismatch": 1}


def test_recorded_traces_keep_proc_null_peers():
    """Without the source's counts (a recorded trace), peer -1 is MPI_PROC_NULL: no problem of
    these kinds."""
    rep = validate(_trace(None, lose_peer=True))
    assert not {"p2p-without-peer", "message-count-mismatch"} & set(rep.counts)
