"""mpi4py's object API under ``minitrace record``: every receive is in the trace.

mpi4py receives Python objects with matched probes (MPI_Mprobe/MPI_Improbe, then
MPI_Mrecv/MPI_Imrecv), so a recorder that misses them loses every ``comm.recv`` and the receive
half of ``comm.sendrecv``.  Real mpiexec jobs; each trace is checked against what the programs
in tests/programs/ did (kinds, peers, tags, bytes, which probe each receive consumed) and
validated, and the matched receives reach the SimGrid TI export as receives.
"""
from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from minitrace import kinds as K
from minitrace.converters.simgrid_ti import write_ti
from minitrace.record import shim_path
from tests.support.record_util import PROGRAMS, Ranked, record

pytestmark = pytest.mark.timeout(300)


def _row(tr: Ranked, x) -> tuple:
    return (K.NAME[int(x["kind"])], int(x["peer"]), int(x["tag"]), int(x["comm"]),
            int(x["bytes_recv"]))


def _pairs(tr: Ranked, rank: int) -> list[tuple]:
    """Each mprobe with the receive that follows it: (peer, tag, bytes received), checking
    that the receive carries its probe's message id and that ids are 0, 1, ... in order."""
    names = tr.names(rank)
    a = [x for x in tr.mpi(rank) if K.NAME[int(x["kind"])] != "comm_size"]
    out = []
    for i, n in enumerate(names):
        if n != "mprobe":
            continue
        probe, recv = a[i], a[i + 1]
        assert names[i + 1] == "mrecv"
        assert tr.vector(probe) == tr.vector(recv) == [len(out)]
        assert _row(tr, probe)[1:4] == _row(tr, recv)[1:4]
        out.append((int(recv["peer"]), int(recv["tag"]), int(recv["bytes_recv"])))
    return out


def _sent(tr: Ranked, rank: int, dest: int, kinds=K.SENDS) -> list[tuple]:
    """(tag, bytes) of the sends of ``rank`` to ``dest`` on MPI_COMM_WORLD, in order."""
    return [(int(x["tag"]), int(x["bytes_sent"])) for x in tr.mpi(rank)
            if K.NAME[int(x["kind"])] in kinds and x["peer"] == dest and x["comm"] == 0]


def test_object_api_three_ranks(tmp_path):
    p = record(tmp_path / "obj.h5", 3, [sys.executable, str(PROGRAMS / "pyobjects.py")])
    assert "validation: OK" in p.stdout and p.stdout.count(" ok") == 3
    tr = Ranked(tmp_path / "obj.h5")
    # 1 + 3: rank 1 recv()s four objects from rank 0 (tags 0..3) and, in the ring sendrecv, one
    # from rank 0 (tag 11): each an mprobe then an mrecv of exactly what rank 0 sent
    sent01 = _sent(tr, 0, 1)
    assert [t for t, _ in sent01] == [0, 1, 2, 3, 11]
    assert _pairs(tr, 1) == [(0, t, n) for t, n in sent01]
    for r in (0, 2):     # ranks 0 and 2 receive only their sendrecv's object by matched probe
        left = (r - 1) % 3
        assert _pairs(tr, r) == [(left, 11, n) for t, n in _sent(tr, left, r) if t == 11]
    for r in range(3):   # sendrecv: isend right, mprobe + mrecv from the left, wait the isend
        a = [x for x in tr.mpi(r) if K.NAME[int(x["kind"])] != "comm_size"]
        i = next(j for j, x in enumerate(a) if K.NAME[int(x["kind"])] == "isend"
                 and x["tag"] == 11)
        assert [K.NAME[int(x["kind"])] for x in a[i:i + 4]] == ["isend", "mprobe", "mrecv",
                                                                "wait"]
        assert int(a[i]["peer"]) == (r + 1) % 3 and a[i + 3]["request"] == a[i]["request"]
    # 2: rank 2's irecv() of rank 1's isend() (tag 7), resolved at its wait
    ir = tr.mpi(2, "irecv")
    assert len(ir) == 1 and _row(tr, ir[0])[1:] == (1, 7, 0, _sent(tr, 1, 2)[0][1])
    assert _sent(tr, 1, 2)[0][0] == 7 and not ir[0]["flags"] & K.FLAG_UNRESOLVED
    # 4: bcast/scatter/gather of objects are collectives on the world with their roots
    for r in range(3):
        names = tr.names(r)
        assert {"bcast", "scatter", "gather"} <= set(names)
        assert tr.mpi(r, "scatter")[0]["peer"] == 1 and tr.mpi(r, "gather")[0]["peer"] == 2
    # 5: pkl5's large object: rank 0's three sends (tag 21, one of them the 1 MiB buffer) are
    # rank 2's three receives, with the same sizes; the pkl5 bcast carries the 300 kB object
    big = [n for t, n in _sent(tr, 0, 2) if t == 21]
    assert len(big) == 3 and max(big) == 8 << 17
    got = [(int(x["tag"]), int(x["bytes_recv"])) for x in tr.mpi(2, "recv") if x["comm"] == 0]
    assert got == [(21, n) for n in big]
    assert max(int(x["bytes_recv"]) for x in tr.mpi(0, "bcast")) >= 300000
    # no receive is missing: every message sent was received (validate agrees above)
    for r in range(3):
        n_recv = sum(len(tr.mpi(r, k)) for k in K.RECVS)
        n_probe = sum(len(tr.mpi(r, k)) for k in K.MATCHED_PROBES)
        assert n_probe == len(tr.mpi(r, "mrecv")) and n_recv >= n_probe


def test_matched_probe_api_two_ranks(tmp_path):
    """Mprobe/improbe/Improbe, receives out of probe order, PROC_NULL; the TI export."""
    p = record(tmp_path / "mp.h5", 2, [sys.executable, str(PROGRAMS / "pymprobe.py")])
    assert "validation: OK" in p.stdout
    tr = Ranked(tmp_path / "mp.h5")
    assert _sent(tr, 0, 1, K.SENDS) == [(1, 32), (2, _sent(tr, 0, 1)[1][1]), (5, 8), (5, 16),
                                        (6, 10000)]
    pkl = _sent(tr, 0, 1)[1][1]
    a = [x for x in tr.mpi(1) if K.NAME[int(x["kind"])] not in ("comm_size", "init",
                                                                 "finalize")]
    # unsuccessful improbes (polls) carry no message; drop them for the exact sequence
    polls = [x for x in a if K.NAME[int(x["kind"])] == "improbe"
             and not x["flags"] & K.FLAG_COMPLETED]
    assert all(tr.vector(x) == [] and x["peer"] == 0 for x in polls)
    a = [x for x in a if not (K.NAME[int(x["kind"])] == "improbe"
                              and not x["flags"] & K.FLAG_COMPLETED)]
    got = [_row(tr, x) + (tr.vector(x),) for x in a]
    assert got == [
        ("mprobe", 0, 1, 0, 0, [0]), ("mrecv", 0, 1, 0, 32, [0]),
        ("improbe", 0, 2, 0, 0, [1]), ("imrecv", 0, 2, 0, pkl, [1]), ("wait", -1, -1, 0, 0, []),
        ("mprobe", 0, 5, 0, 0, [2]), ("mprobe", 0, 5, 0, 0, [3]),
        ("mrecv", 0, 5, 0, 16, [3]), ("mrecv", 0, 5, 0, 8, [2]),       # the second one first
        ("improbe", 0, 6, 0, 0, [4]), ("imrecv", 0, 6, 0, 10000, [4]), ("wait", -1, -1, 0, 0, []),
        ("mprobe", -1, -1, 0, 0, []), ("mrecv", -1, -1, 0, 0, []),     # MPI_PROC_NULL
    ]
    imrecv, waits = tr.mpi(1, "imrecv"), tr.mpi(1, "wait")
    assert imrecv["request"].tolist() == waits["request"].tolist() and \
        len(set(imrecv["request"])) == 2
    assert not (tr.mpi(1, "mrecv")["flags"] & K.FLAG_UNRESOLVED).any()
    # TI: each matched receive is a recv/irecv (+ wait) at its probe, which is left out;
    # nothing dropped; and SimGrid replays it (its receives match the sends' sizes)
    rep = write_ti(tr.data, tmp_path / "mp.ti")
    assert not rep.dropped
    assert rep.approximated["mrecv (written as recv)"] == 3
    assert rep.approximated["imrecv (written as irecv)"] == 2
    lines = [ln for ln in (tmp_path / "mp.ti_files" / "1.txt").read_text().splitlines()
             if "compute" not in ln and "comm_size" not in ln]
    # the tag-5 receives where their probes matched them: 8 B then 16 B, as the sends
    assert lines == ["1 init", "1 recv 0 1 32", f"1 irecv 0 2 {pkl}", "1 wait 0 1 2",
                     "1 recv 0 5 8", "1 recv 0 5 16", "1 irecv 0 6 10000", "1 wait 0 1 6",
                     "1 finalize"]


def test_replay_of_out_of_order_matched_receives(tmp_path):
    """SimGrid matches receives in posting order: the tag-5 messages received in the reverse
    of their probes' order replay without truncation."""
    record(tmp_path / "mp.h5", 2, [sys.executable, str(PROGRAMS / "pymprobe.py")])
    p = subprocess.run([sys.executable, "-m", "minitrace", "replay", "--compute-rate", "1Gf",
                        str(tmp_path / "mp.h5")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "predicted run time" in p.stdout, p.stderr


def test_shim_wraps_the_big_count_matched_receives():
    """mpi4py 4 receives buffers with MPI_Mrecv_c/MPI_Imrecv_c when MPI has them."""
    lib = ctypes.CDLL(shim_path())
    names = ["MPI_Mprobe", "MPI_Improbe", "MPI_Mrecv", "MPI_Imrecv"]
    if hasattr(lib, "PMPI_Mrecv_c"):    # the MPI linked (MPICH; not Open MPI 5.0, MPI 3.1)
        names += ["MPI_Mrecv_c", "MPI_Imrecv_c"]
    for name in names:
        assert hasattr(lib, name), name
