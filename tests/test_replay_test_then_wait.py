"""A receive polled by tests that fail, then completed by a wait (helper QA, session 29: a
common idiom).  Where the replayed message arrives earlier than the recorded one, SimGrid's
replay completes the request at a test and aborted at the wait ("action wait not preceded by
any irecv or isend"), though `validate` finds the trace sound.  The replay's text leaves such
tests out (they take no time there, ``smpi/test`` 0) and says so; an export keeps them."""
from __future__ import annotations

import pytest

from minitrace import kinds as K
from minitrace.replay import replay
from minitrace.replay.platforms import Cluster
from minitrace import storage
from minitrace.compress.files import write_compressed
from minitrace.converters.simgrid_ti import write_ti
from minitrace.model import TraceBuilder
from minitrace.validate import validate


def _polled(polls: int = 10):
    """2 ranks: each posts a receive, polls it ``polls`` (rank 1: more) times between computes,
    sends, then waits for it."""
    b = TraceBuilder(2, {"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "irecv", peer=1 - r, tag=0, bytes_recv=8, request=0)
        for _ in range(polls + 7 * r):
            b.add(r, "compute", volume=1e4)
            b.add(r, "test", request=0)
        b.add(r, "send", peer=1 - r, tag=0, bytes_sent=8)
        b.add(r, "wait", request=0)
        b.add(r, "finalize")
    return b.build()


@pytest.mark.parametrize("compressed", [False, True])
def test_failed_tests_before_a_wait_replay(tmp_path, compressed):
    data = _polled()
    assert validate(data).ok
    path = tmp_path / "t.h5"
    if compressed:
        write_compressed(str(path), data)      # (replayed through the streamed text)
    else:
        storage.write_trace(path, data)
    res = replay(str(path), engine="native")
    assert res.simulated_time > 0
    assert any("test (left out before its request's wait" in n for n in res.notes), res.notes


def test_the_export_keeps_them(tmp_path):
    rep = write_ti(_polled(), tmp_path / "t.txt", layout="single")
    text = (tmp_path / "t.txt").read_text()
    assert text.count(" test ") == 10 + 17 and not any("left out" in x for x in rep.lines())


@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("test", ["test", "testany"])
def test_a_test_that_completed_is_replayed_as_a_wait(tmp_path, compressed, test):
    """The program went on once its test succeeded, i.e. once the message had come: replayed
    as a test, it fails where the simulated message comes later than the recorded one and the
    rank goes on without it (public Kripke completes its receives by MPI_Testany: its replays
    were 4.5-5.1% short, and with synchronous sends SimGrid aborted)."""
    b = TraceBuilder(2, {"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "compute", volume=1e6)                      # 1 ms at 1 Gf before it sends
    b.add(0, "send", peer=1, tag=0, bytes_sent=8)
    b.add(1, "irecv", peer=0, tag=0, bytes_recv=8, request=3)
    kw = {"vector": [3]} if test == "testany" else {}
    b.add(1, test, flags=K.FLAG_COMPLETED, request=3, **kw)     # (it had come, in the run)
    b.add(1, "compute", volume=1e4)
    for r in range(2):
        b.add(r, "finalize")
    data = b.build()
    assert validate(data).ok
    path = tmp_path / "t.h5"
    if compressed:
        write_compressed(str(path), data)
    else:
        storage.write_trace(path, data)
    r = replay(path, cluster=Cluster(2, speed="1Gf"))
    assert r.rank_end_times[1] > 1e-3, r.rank_end_times
    assert any("completed: written as wait" in n for n in r.notes), r.notes
    rep = write_ti(data, tmp_path / "export.txt", layout="single")   # (an export keeps it)
    assert not any("written as wait" in x for x in rep.lines())
    assert "1 test " in (tmp_path / "export.txt").read_text()


def test_a_deadlock_of_tests_as_waits_replays_them_as_tests(tmp_path):
    """A test that succeeded says the message had come in the run, not that the program
    waited for it: an isend of 100 KB tested, then a receive from the same peer (legal: the
    run's MPI sent it eagerly; SimGrid's replay waits for its receive above 64 KiB) deadlocked
    as a wait; replayed again with the tests as tests, and said (the reviewer, session 31)."""
    b = TraceBuilder(2, {"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "isend", peer=1, tag=0, bytes_sent=100_000, request=5)
    b.add(0, "test", flags=K.FLAG_COMPLETED, request=5)
    b.add(0, "recv", peer=1, tag=0, bytes_recv=100_000)
    b.add(1, "send", peer=0, tag=0, bytes_sent=100_000)
    b.add(1, "recv", peer=0, tag=0, bytes_recv=100_000)
    for r in range(2):
        b.add(r, "finalize")
    data = b.build()
    assert validate(data).ok
    path = tmp_path / "t.h5"
    storage.write_trace(path, data)
    r = replay(path, timeout=120)
    assert r.simulated_time > 0
    assert any(n.startswith("the replay deadlocked with the tests that completed written as "
                            "waits") for n in r.notes), r.notes
