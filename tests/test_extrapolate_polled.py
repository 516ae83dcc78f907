"""Polling written as the waits it stands for (extrapolate's polled.py; SNAP's pipelined sweep,
reproduced by tests/programs/kba_sweep.c with jitter): how many polls fail and which one sees a
request complete is the arrival order's, so two runs of one program were two programs ("item
16: testsome ... vs testsome ... (differing in vector (2, 2, 1) vs (2, 2, 0))")."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.extrapolate import check as CH
from minitrace.extrapolate import structure as ST
from minitrace.extrapolate.polled import polled_waits
from minitrace.model import TraceBuilder
from minitrace.trace import open as open_trace
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(600)


def _chunk(b: TraceBuilder, rank: int, first: int, fails: int, together: bool) -> None:
    """A chunk of the sweep: two faces received, polled (``fails`` failed testsomes, then one
    completing both or two completing one each), work, the send polled, the next send."""
    b.add(rank, "irecv", peer=1 - rank, tag=1, bytes_recv=64, request=first)
    b.add(rank, "irecv", peer=1 - rank, tag=2, bytes_recv=64, request=first + 1)
    for _ in range(fails):
        b.add(rank, "testsome", vector=[])
        b.add(rank, "compute", volume=1e-6)
    done = [[first, first + 1]] if together else [[first + 1], [first]]
    for ids in done:
        b.add(rank, "testsome", vector=ids, flags=K.FLAG_COMPLETED)
        b.add(rank, "compute", volume=3e-6)
    b.add(rank, "test", request=-1, flags=K.FLAG_COMPLETED)      # MPI_REQUEST_NULL
    b.add(rank, "compute", volume=1e-7)
    b.add(rank, "isend", peer=1 - rank, tag=1, bytes_sent=64, request=first + 2)
    b.add(rank, "test", request=first + 2, flags=K.FLAG_COMPLETED)


def test_runs_of_polls_become_one_wait_and_the_work_done_between():
    """Chunks that polled differently come out alike: a waitall of the requests completed, in
    the order they were posted, then one compute holding the work (the computes after a
    failed poll, the spin, left out)."""
    b = TraceBuilder(2)
    for rank in range(2):
        for c, (fails, together) in enumerate([(0, True), (3, False), (7, True)]):
            _chunk(b, rank, 3 * c, fails, together)
    data = b.build()
    out, failed, runs = polled_waits(data)
    assert failed == 2 * (10 + 3) and runs == 2 * 3 * 2
    for rank in range(2):
        a = out.actions[out.rank_slice(rank)]
        names = [K.NAME[int(k)] for k in a["kind"]]
        assert names == ["irecv", "irecv", "waitall", "compute", "isend", "waitall",
                         "compute"] * 3
        waits = np.flatnonzero(a["kind"] == K.code("waitall")) + out.rank_offsets[rank]
        assert [out.vector(int(w)).tolist() for w in waits] == \
            [[0, 1], [2], [3, 4], [5], [6, 7], [8]]
        work = a["volume"][a["kind"] == K.code("compute")]
        np.testing.assert_allclose(work[0::2], [3e-6, 6e-6, 3e-6])    # spin left out
    assert polled_waits(out)[1:] == (0, 0)


def test_two_recordings_of_a_polling_sweep_are_one_program(programs, tmp_path):
    """kba_sweep recorded twice on 2 ranks, a random compute before each send: the runs' polls
    differ, their programs do not once the polls are read as the waits they stand for."""
    datas = []
    for i in range(2):
        out = tmp_path / f"kba{i}.h5"
        record(out, 2, [programs("kba_sweep"), "3", "2", "1"], timeout=300)
        with open_trace(str(out)) as t:
            datas.append(t.data())
    raw = [ST.load(f"kba{i}.h5", d) for i, d in enumerate(datas)]
    assert CH.same_structure(*raw)
    a, b = CH.runs_of(["kba0.h5", "kba1.h5"], datas)
    assert CH.same_structure(a, b) == []


def test_a_run_of_polls_ends_at_its_rank_s_end():
    """A rank whose actions begin with polls starts a run of its own: it was joined to the
    previous rank's last run, which took its work and left it without its compute."""
    b = TraceBuilder(2)
    b.add(0, "irecv", peer=1, tag=1, bytes_recv=8, request=0)
    b.add(0, "testsome", vector=[])
    b.add(0, "compute", volume=1e-6)
    b.add(0, "testsome", vector=[0], flags=K.FLAG_COMPLETED)
    b.add(1, "testsome", vector=[])
    b.add(1, "compute", volume=2e-6)
    b.add(1, "isend", peer=0, tag=1, bytes_sent=8, request=1)
    out, _, runs = polled_waits(b.build())
    assert runs == 2
    names = [[K.NAME[int(k)] for k in out.actions[out.rank_slice(r)]["kind"]] for r in (0, 1)]
    assert names == [["irecv", "waitall", "compute"], ["compute", "isend"]]
    assert np.all(out.rank_offsets == [0, 3, 5])
