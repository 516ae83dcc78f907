"""Ranks whose programs differ only in their point-to-point message sizes are one rank class
(extrapolate's structure.py): miniMD's ghost-atom counts differ per rank and change at each
reneighbouring, which made every rank of its periodic ring a class of its own (refused: each
in fewer than 3 runs).  The class's sizes are its ranks' median, fitted across runs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.cli import main
from minitrace.errors import MinitraceError
from minitrace.extrapolate import build as B
from minitrace.extrapolate import check as C
from minitrace.extrapolate import structure as ST
from minitrace.model import TraceBuilder
from tests.support.record_util import record


def ring(P: int, sizes, gather: bool = False, root_bcast: bool = False):
    """A periodic ring: each rank sends ``sizes[rank]`` bytes right, 3 times (sendrecv);
    ``gather``: then an 8-byte gather to rank 0, whose receive is 8 P bytes; ``root_bcast``:
    rank 0 then also broadcasts to itself (another program)."""
    b = TraceBuilder(P)
    for r in range(P):
        b.add(r, "init")
        for _ in range(3):
            b.add(r, "compute", volume=1e-3)
            b.add(r, "sendrecv", peer=(r + 1) % P, tag=0, bytes_sent=sizes[r],
                  bytes_recv=sizes[(r - 1) % P], vector=[(r - 1) % P, 0])
        if gather:
            b.add(r, "gather", peer=0, bytes_sent=8, bytes_recv=8 * P if r == 0 else 0)
        if root_bcast and r == 0:
            b.add(r, "bcast", peer=0, bytes_sent=8, comm=0)
        b.add(r, "finalize")
    return b.build()


def test_ranks_that_differ_in_message_sizes_only_are_one_class():
    run = ST.load("ring5.h5", ring(5, [800, 1600, 816, 824, 808]))
    assert list(run.classes) == ["bulk"]
    rows = run.sig.table[run.classes["bulk"].leaves]
    sendrecv = rows[rows["kind"] == K.CODE["sendrecv"]]
    assert sendrecv["bytes_sent"].tolist() == [816] and sendrecv["bytes_recv"].tolist() == [816]


def test_a_gather_root_stays_a_class_of_its_own():
    run = ST.load("ring5.h5", ring(5, [800, 1600, 816, 824, 808], gather=True))
    assert sorted(run.classes) == ["0", "bulk"]
    assert run.classes["bulk"].ranks.tolist() == [1, 2, 3, 4]


def test_a_class_left_out_is_named_so_in_the_refusal():
    """Rank 0's class is ``0`` at every scale, but its program at 5 ranks is not the one at
    3 and 4: --force leaves it out of these, and the refusal says so rather than only that
    the class is in 1 run (Nekbone at 2-5 ranks printed ``rank class 0 ... is in 1 run(s)``
    after naming ``0`` among the classes of every run)."""
    runs = [ST.load(f"ring{p}.h5", ring(p, [800] * p, gather=True, root_bcast=p == 5))
            for p in (3, 4, 5)]
    assert [sorted(r.classes) for r in runs] == [["0", "bulk"]] * 3
    assert ST.check(runs, force=True)[0].startswith("left out: ring3.h5 (3 ranks), rank "
                                                    "class 0: ")
    with pytest.raises(MinitraceError, match=r"rank class 0 \(anchored\) is in 1 run\(s\) "
                       r"\(5 ranks; left out of 3, 4 ranks: its loops or calls differ\)"):
        B.fit_parameters(runs, 8, "weak")


def test_recorded_ring_of_varying_sizes_extrapolates(programs, tmp_path, capsys):
    """tests/programs/ring_varsize.c at 3, 4, 5 -> 8 ranks (refused before: rank classes
    ``(*)@(1)``, ``(*)@(-2)`` in fewer than 3 runs, with --force too)."""
    exe = programs("ring_varsize")
    paths = []
    for p in (3, 4, 5):
        paths.append(str(tmp_path / f"v{p}.h5"))
        record(Path(paths[-1]), p, [str(exe), "60", "20"])
    runs = C.load_runs(paths)
    assert [list(r.classes) for r in runs] == [["(*)"]] * 3
    recorded = np.unique(np.concatenate([minitrace.open(q).data().actions["bytes_sent"]
                                         for q in paths]))
    out = str(tmp_path / "v8.h5")
    # --force: compute gaps that the load makes noisy must not make this test flaky
    assert main(["extrapolate", *paths, "--ranks", "8", "-o", out, "--scaling", "strong",
                 "--force"]) == 0
    assert "not extrapolated" not in capsys.readouterr().out
    a = minitrace.open(out).data().actions
    sent = a["bytes_sent"][a["kind"] == K.CODE["sendrecv"]].reshape(8, -1)
    assert (sent == sent[0]).all()              # every rank sends its class's sizes
    halos = sent[0][sent[0] > 4]
    assert len(halos) == 60 and halos.min() >= recorded[recorded > 4].min() and \
        halos.max() <= recorded.max()
