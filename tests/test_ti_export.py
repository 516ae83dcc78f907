"""The TI exporter writes the same text, byte for byte, as the per-action writer it replaced:
committed exports (tests/data/ti_export/) of seeded traces of every kind it handles (the ``plain``
ones were written by that writer; the ``mixed`` ones, which hold kinds lowering rewrites, pin the
lowered output), and its column-at-a-time path against its per-action path rank by rank."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from minitrace.converters.simgrid_ti import ExportReport, RankWriter, read_ti, write_ti
from minitrace.model import TraceBuilder

from tests.support.ti_export_traces import CASES, build

DATA = Path(__file__).parent / "data" / "ti_export"


@pytest.mark.parametrize("name,seed,n,plain", CASES, ids=[c[0] for c in CASES])
def test_export_is_the_committed_text(tmp_path, name, seed, n, plain):
    data = build(seed, n, plain)
    rep = write_ti(data, tmp_path / "single.txt", layout="single", lossy=True)
    assert (tmp_path / "single.txt").read_text() == (DATA / f"{name}.txt").read_text()
    assert "\n".join(rep.lines()) + "\n" == (DATA / f"{name}.report").read_text()
    write_ti(data, tmp_path / "list", layout="per-rank", lossy=True)
    per_rank = "".join((tmp_path / "list_files" / f"{r}.txt").read_text()
                       for r in range(data.nranks))
    assert per_rank == (DATA / f"{name}.txt").read_text()


@pytest.mark.parametrize("name,seed,n,plain", [c for c in CASES if c[3]], ids=lambda c: str(c))
def test_column_path_writes_what_the_action_path_writes(name, seed, n, plain):
    data = build(seed, n, plain)
    fast, slow = ExportReport(), ExportReport()
    for r in range(data.nranks):
        text = RankWriter(data, fast).fast_text(r)
        assert text is not None      # these ranks are what the column path is for
        assert text == "".join(ln + "\n" for ln in RankWriter(data, slow).rank_lines(r))
    assert fast.approximated == slow.approximated and not fast.dropped and not slow.dropped


def _ring(waitall_subset: bool):
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "irecv", peer=1 - r, tag=0, bytes_recv=8, request=0)
        b.add(r, "isend", peer=1 - r, tag=0, bytes_sent=8, request=1)
        b.add(r, "waitall", vector=[0] if waitall_subset else [1, 0])
        b.add(r, "compute", volume=0.1 + r)
        b.add(r, "finalize")
    return b.build()


@pytest.mark.parametrize("subset", [False, True])
def test_a_waitall_of_some_pending_requests_is_one_wait_each(tmp_path, subset):
    data = _ring(subset)
    rep = write_ti(data, tmp_path / "t.txt", layout="single")
    text = (tmp_path / "t.txt").read_text().splitlines()
    assert text[3] == ("0 wait 1 0 0" if subset else "0 waitall")
    assert text[4] == "0 compute 0.1"
    fast, slow = RankWriter(data, ExportReport()), RankWriter(data, ExportReport())
    assert fast.fast_text(0) == "".join(ln + "\n" for ln in slow.rank_lines(0))   # (either)
    back = read_ti(tmp_path / "t.txt").actions["kind"]
    assert (back == data.actions["kind"]).all() != subset    # a subset comes back as a wait
    assert not rep.dropped


def test_messages_on_a_sub_communicator_take_the_column_path():
    # public miniGhost and TeaLeaf exchange halos on a duplicate of the world: their ranks
    # took the per-action path (2.3x the time on miniGhost SVAF 4r), for the same text
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    b.comms[1] = np.arange(2, dtype=np.int32)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "comm_dup", comm=0)
        for it in range(3):
            b.add(r, "irecv", peer=1 - r, tag=it, comm=1, bytes_recv=8, request=2 * it)
            b.add(r, "isend", peer=1 - r, tag=it, comm=1 if it else 0, bytes_sent=8,
                  request=2 * it + 1)
            b.add(r, "waitall", vector=[2 * it, 2 * it + 1])
            b.add(r, "send", peer=1 - r, tag=9, comm=1, bytes_sent=4)
            b.add(r, "recv", peer=1 - r, tag=9, comm=1, bytes_recv=4)
            b.add(r, "compute", volume=0.5)
        b.add(r, "finalize")
    data = b.build()
    fast, slow = ExportReport(), ExportReport()
    for r in range(2):
        text = RankWriter(data, fast).fast_text(r)
        assert text is not None
        assert text == "".join(ln + "\n" for ln in RankWriter(data, slow).rank_lines(r))
    assert fast.approximated == slow.approximated
    assert slow.approximated["irecv (sub-communicator written on MPI_COMM_WORLD)"] == 6
    assert slow.approximated["isend (sub-communicator written on MPI_COMM_WORLD)"] == 4


def test_counts_beyond_int_found_on_either_path(tmp_path):
    b = TraceBuilder(1, meta={"volume_unit": "flops"})
    b.add(0, "init")
    b.add(0, "allreduce", bytes_sent=2**33, bytes_recv=2**33)
    with pytest.raises(Exception, match="beyond what SimGrid parses"):
        write_ti(b.build(), tmp_path / "t.txt", layout="single")
    assert not (tmp_path / "t.txt").exists()


def test_lines_formatted_once_each_even_when_their_keys_collide(monkeypatch):
    # the column path formats each distinct line once, keyed by a hash of its tokens; with
    # every key colliding it formats every line, and writes the same text
    from minitrace.converters import simgrid_ti
    data = build(2, 300, True)
    want = [RankWriter(data, ExportReport()).fast_text(r) for r in range(data.nranks)]
    monkeypatch.setattr(simgrid_ti, "_MIX", np.zeros_like(simgrid_ti._MIX))
    assert [RankWriter(data, ExportReport()).fast_text(r) for r in range(data.nranks)] == want


def test_a_rootless_collective_is_said_not_silently_rooted(tmp_path):
    # TAU records MPI_Bcast's bytes but not its root: SimGrid's text needs one
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "bcast", peer=-1, bytes_recv=256)
        b.add(r, "bcast", peer=1, bytes_sent=8 if r == 1 else 0, bytes_recv=0 if r == 1 else 8)
        b.add(r, "finalize")
    rep = write_ti(b.build(), tmp_path / "t.txt", layout="single")
    assert not rep.exact
    assert rep.lines() == ["approximated 2 bcast (root not recorded: written as root 0)"]
    assert (tmp_path / "t.txt").read_text().splitlines()[1:3] == ["0 bcast 256 0", "0 bcast 8 1"]


@pytest.mark.parametrize("free_tests", [False, True, "tests"])
def test_column_path_writes_what_the_action_path_writes_on_random_requests(free_tests):
    # seeded traces of what public codes do with requests (TeaLeaf: tests that did or did
    # not complete, waitalls of some pending requests and of none, a cart_create, halos on a
    # duplicated communicator; miniMD's sendrecvs): where the column path writes a rank, it writes what the
    # per-action path writes, and it writes most of them
    from minitrace import kinds as K
    rng = np.random.default_rng(7)
    ranks = fast = 0
    for _ in range(150):
        b = TraceBuilder(3, meta={"volume_unit": "flops"})
        b.comms[5] = np.arange(3, dtype=np.int32)
        req = 10
        for r in range(3):
            b.add(r, "init")
            if rng.random() < 0.3:
                b.add(r, "cart_create")
            pend: list[int] = []
            for _ in range(int(rng.integers(1, 14))):
                k = rng.choice(["isend", "irecv", "send", "wait", "test", "waitall", "compute",
                                "sendrecv"])
                peer, tag, comm = int(rng.integers(3)), int(rng.choice([0, 1, 3])), \
                    int(rng.choice([0, 5]))
                if k in ("isend", "irecv"):
                    req += 1
                    b.add(r, k, peer=peer, tag=tag, comm=comm, request=req,
                          **{"bytes_sent" if k == "isend" else "bytes_recv": 8})
                    pend.append(req)
                elif k == "send":
                    b.add(r, k, peer=peer, tag=tag, bytes_sent=4)
                elif k == "sendrecv":        # (miniMD's: tag 0 both ways, mostly)
                    rtag = 0 if rng.random() < 0.9 else 1
                    b.add(r, rng.choice(["sendrecv", "sendrecv_replace"]), peer=peer,
                          tag=0 if rng.random() < 0.9 else 2, bytes_sent=16,
                          bytes_recv=int(rng.choice([8, 16])),
                          vector=[int(rng.integers(3)), rtag])
                elif k == "compute":
                    b.add(r, k, volume=2.0)
                elif k == "waitall":
                    some = [q for q in pend if rng.random() < 0.7]
                    b.add(r, k, vector=some)
                    pend = [q for q in pend if q not in some]
                elif pend:
                    q = pend[int(rng.integers(len(pend)))]
                    done = k == "wait" or rng.random() < 0.5
                    b.add(r, k, request=q, flags=K.FLAG_COMPLETED if done else 0)
                    if done:
                        pend.remove(q)
            b.add(r, "finalize")
        data = b.build()
        for r in range(3):
            fast_rep, slow_rep = ExportReport(), ExportReport()
            text = RankWriter(data, fast_rep, None, free_tests).fast_text(r)
            ranks += 1
            if text is None:
                continue
            fast += 1
            want = RankWriter(data, slow_rep, None, free_tests).rank_lines(r)
            assert text == "".join(ln + "\n" for ln in want)
            assert fast_rep.approximated == slow_rep.approximated and not slow_rep.dropped
    assert fast > 0.8 * ranks, (fast, ranks)
