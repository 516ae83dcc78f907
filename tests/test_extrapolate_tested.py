"""Completed tests written as the incomplete test and the wait it stands for
(minitrace/tested_waits.py, which extrapolation and sampling use; TeaLeaf's halo exchange,
reproduced by tests/programs/fifo_waits.c): a rank whose MPI_Testall completed comes out with
the program of a rank whose test did not."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from minitrace import kinds as K
from minitrace.cli import main
from minitrace import tested_waits as TW
from minitrace.model import TraceBuilder
from tests.support.record_util import record

FIELDS = ("kind", "flags", "peer", "tag", "comm", "bytes_sent", "bytes_recv", "volume",
          "request")


def exchange(b: TraceBuilder, rank: int, completed: bool, first: int) -> None:
    """One TeaLeaf exchange: left-right posted and tested, up-down posted, the waits."""
    lr, ud = [first, first + 1], [first + 2, first + 3]
    b.add(rank, "isend", peer=1 - rank, tag=1, bytes_sent=64, request=lr[0])
    b.add(rank, "irecv", peer=1 - rank, tag=1, bytes_recv=64, request=lr[1])
    b.add(rank, "compute", volume=1e-6)
    b.add(rank, "testall", vector=lr, flags=K.FLAG_COMPLETED if completed else 0,
          volume=5e-7, t_start=1.0, t_end=1.0)
    b.add(rank, "compute", volume=2e-6)
    b.add(rank, "isend", peer=1 - rank, tag=2, bytes_sent=64, request=ud[0])
    b.add(rank, "irecv", peer=1 - rank, tag=2, bytes_recv=64, request=ud[1])
    b.add(rank, "compute", volume=3e-6)
    if not completed:   # as the rewrite adds it: no time inside, at the next wait's start
        b.add(rank, "waitall", vector=lr, t_start=2.0, t_end=2.0)
        b.add(rank, "compute", comm=-1)
    b.add(rank, "waitall", vector=ud, volume=1e-6, t_start=2.0, t_end=2.0)


def program(data, rank):
    a = data.actions[data.rank_slice(rank)]
    lists = [data.vectors[o:o + n].tolist() if n else []
             for o, n in zip(a["vec_off"].tolist(), a["vec_len"].tolist())]
    return [tuple(row[f].item() for f in FIELDS) for row in a], lists


def test_a_completed_test_reads_as_the_incomplete_one_and_its_wait():
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        for i, done in enumerate([True, False, True] if r == 0 else [False, False, True]):
            exchange(b, r, done, 4 * i)
        b.add(r, "finalize")
    data = b.build()
    out, rewritten = TW.tested_waits(data)
    assert rewritten == 3
    # the reference: every test incomplete, every wait called
    ref = TraceBuilder(2)
    for r in range(2):
        ref.add(r, "init")
        for i in range(3):
            exchange(ref, r, False, 4 * i)
        ref.add(r, "finalize")
    ref = ref.build()
    assert program(out, 0) == program(ref, 0) and program(out, 1) == program(ref, 1)
    # the rows added on rank 0 (two tests completed, one not): like the incomplete test's
    # wait, a waitall with no time and no bytes at the next wait's start, then an empty compute
    a = out.actions[out.rank_slice(0)]
    assert len(a) == len(data.actions[data.rank_slice(0)]) + 4
    waits = np.flatnonzero((a["kind"] == K.CODE["waitall"]) & (a["volume"] == 0))
    assert len(waits) == 3
    assert (a["t_start"][waits] == 2.0).all() and (a["bytes_sent"][waits] == 0).all()
    assert (a["kind"][waits + 1] == K.CODE["compute"]).all() and (a["volume"][waits + 1] == 0).all()
    assert not (a["flags"] & K.FLAG_COMPLETED).any()
    assert out.rank_offsets.tolist() == [0, len(a), len(out.actions)]


def test_nothing_to_rewrite_returns_the_trace_itself():
    b = TraceBuilder(1)
    b.add(0, "init")
    exchange(b, 0, False, 0)
    data = b.build()
    assert TW.tested_waits(data) == (data, 0)


def test_recorded_tests_that_complete_by_arrival_extrapolate(programs, tmp_path, capsys):
    """tests/programs/fifo_waits.c on a ring of 4, 6, 8 -> 10 ranks: which tests complete is
    the arrival order's choice, every rank a program of its own, yet the structure at 10 is
    identical (refused as rank classes that differ without the rewrite)."""
    exe = programs("fifo_waits")
    paths = []
    for p in (4, 6, 8, 10):
        paths.append(str(tmp_path / f"f{p}.h5"))
        record(Path(paths[-1]), p, [str(exe), "60", "0"])
    assert main(["extrapolate", *paths, "--check", "--force"]) == 0
    out = capsys.readouterr().out
    assert "structure at 10 ranks: identical to the recorded run" in out
    assert "MPI_Testall that completed taken as incomplete" in out
