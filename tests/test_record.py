"""The recorder end to end: real MPI jobs (2-4 ranks) under ``minitrace record``, each merged
trace checked against what the program did (counts, peers, tags, bytes, order)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from tests.support.record_util import PROGRAMS, Ranked, record

pytestmark = pytest.mark.timeout(300)
C = K.CODE


def _compute_before_each_call(tr: Ranked, rank: int) -> None:
    """Every MPI action but init/resume is preceded by a compute action; MPI actions are in
    start-time order (a compute of one thread may start before another thread's call)."""
    a = tr.all(rank)
    comp = a["kind"] == C["compute"]
    rows = np.nonzero(~comp & ~np.isin(a["kind"], [C["init"], C["resume"]]))[0]
    assert (a["kind"][rows - 1] == C["compute"]).all()
    assert (a["volume"][comp] >= 0).all()
    assert (np.diff(a["t_start"][~comp]) >= 0).all() and (a["t_end"] >= a["t_start"]).all()


def test_ring_c(programs, tmp_path):
    exe = programs("ring")
    p = record(tmp_path / "ring.h5", 3, [exe, "3"])
    assert "validation: OK" in p.stdout
    tr = Ranked(tmp_path / "ring.h5")
    assert tr.meta["complete"] and tr.meta["nranks"] == 3
    assert tr.meta["volume_unit"] == "seconds"
    for r in range(3):
        pair = ["send", "recv"] if r == 0 else ["recv", "send"]
        assert tr.names(r) == ["init"] + pair * 3 + ["finalize"]
        s, rv = tr.mpi(r, "send"), tr.mpi(r, "recv")
        assert s["peer"].tolist() == [(r + 1) % 3] * 3 and s["tag"].tolist() == [0, 1, 2]
        assert s["bytes_sent"].tolist() == [8 * (r + 1)] * 3
        prev = (r + 2) % 3
        assert rv["peer"].tolist() == [prev] * 3 and rv["tag"].tolist() == [0, 1, 2]
        assert rv["bytes_recv"].tolist() == [8 * (prev + 1)] * 3
        _compute_before_each_call(tr, r)


def test_halo_isend_irecv_waitall(programs, tmp_path):
    exe = programs("halo")
    iters = 5
    p = record(tmp_path / "halo.h5", 4, [exe, str(iters)])
    assert "validation: OK" in p.stdout
    tr = Ranked(tmp_path / "halo.h5")
    for r in range(4):
        x, y = r % 2, r // 2
        north, south = ((y + 1) % 2) * 2 + x, ((y + 1) % 2) * 2 + x
        west = east = y * 2 + (x + 1) % 2
        peers = [north, south, west, east]
        assert tr.names(r) == ["init", "barrier"] + (["irecv"] * 4 + ["isend"] * 4 + ["waitall"]) * iters \
            + ["barrier", "finalize"]
        ir, is_, wa = tr.mpi(r, "irecv"), tr.mpi(r, "isend"), tr.mpi(r, "waitall")
        assert ir["peer"].tolist() == peers * iters
        assert ir["tag"].tolist() == [1, 0, 3, 2] * iters
        assert ir["bytes_recv"].tolist() == [128, 128, 192, 192] * iters
        assert not (ir["flags"] & K.FLAG_UNRESOLVED).any()
        assert is_["peer"].tolist() == peers * iters
        assert is_["tag"].tolist() == [0, 1, 2, 3] * iters
        assert is_["bytes_sent"].tolist() == [128, 128, 192, 192] * iters
        for i, w in enumerate(wa):
            ids = tr.vector(w)
            assert ids == ir["request"][4 * i:4 * i + 4].tolist() + \
                is_["request"][4 * i:4 * i + 4].tolist()
        assert len(set(ir["request"]) | set(is_["request"])) == 8 * iters
        _compute_before_each_call(tr, r)


def test_every_collective(programs, tmp_path):
    exe = programs("colls")
    P = 4
    record(tmp_path / "c.h5", P, [exe])
    tr = Ranked(tmp_path / "c.h5")
    expected = ["init", "barrier", "bcast", "reduce", "allreduce", "allreduce", "reduce_scatter",
                "reduce_scatter_block", "scan", "exscan", "gather", "gatherv", "scatter",
                "scatterv", "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw",
                "ibarrier", "ibcast", "iallreduce", "waitall", "ialltoallv", "wait", "finalize"]
    for r in range(P):
        assert tr.names(r) == expected
        a = {n: [] for n in expected + ["comm_size"]}
        for row in tr.mpi(r):
            a[K.NAME[int(row["kind"])]].append(row)
        one = {n: v[0] for n, v in a.items() if v}
        b = one["bcast"]
        assert b["peer"] == 3 and (b["bytes_sent"], b["bytes_recv"]) == ((40, 0) if r == 3 else (0, 40))
        rd = one["reduce"]
        assert rd["peer"] == 0 and rd["bytes_sent"] == 56 and rd["bytes_recv"] == (56 if r == 0 else 0)
        ar, ar2 = a["allreduce"]
        assert (ar["bytes_sent"], ar["bytes_recv"], ar["flags"]) == (20, 20, 0)
        assert (ar2["bytes_sent"], ar2["bytes_recv"]) == (12, 12) and ar2["flags"] & K.FLAG_IN_PLACE
        rs = one["reduce_scatter"]
        assert tr.vector(rs) == [4, 8, 12, 16] and rs["bytes_recv"] == 4 * (r + 1)
        rsb = one["reduce_scatter_block"]
        assert (rsb["bytes_sent"], rsb["bytes_recv"]) == (32, 8)
        assert (one["scan"]["bytes_sent"], one["exscan"]["bytes_recv"]) == (16, 24)
        g = one["gather"]
        assert g["peer"] == 1 and g["bytes_sent"] == 12 and g["bytes_recv"] == (48 if r == 1 else 0)
        gv = one["gatherv"]
        assert gv["bytes_sent"] == 4 * (2 * r + 1)
        assert tr.vector(gv) == ([4, 12, 20, 28] if r == 0 else [])
        sc = one["scatter"]
        assert sc["bytes_recv"] == 20 and sc["bytes_sent"] == (80 if r == 0 else 0)
        sv = one["scatterv"]
        assert sv["peer"] == 3 and sv["bytes_recv"] == 4 * (r + 2)
        assert tr.vector(sv) == ([8, 12, 16, 20] if r == 3 else [])
        ag = one["allgather"]
        assert (ag["bytes_sent"], ag["bytes_recv"]) == (16, 64)
        agv = one["allgatherv"]
        assert tr.vector(agv) == [12, 16, 20, 24] and agv["bytes_sent"] == 4 * (r + 3)
        assert (one["alltoall"]["bytes_sent"], one["alltoall"]["bytes_recv"]) == (32, 32)
        send = [4 * (r + 1) * (j + 1) for j in range(P)]
        recv = [4 * (j + 1) * (r + 1) for j in range(P)]
        av = one["alltoallv"]
        assert tr.vector(av) == send + recv and av["bytes_sent"] == sum(send)
        assert tr.vector(one["alltoallw"]) == [2 * x for x in send + recv]
        reqs = [int(one[k]["request"]) for k in ("ibarrier", "ibcast", "iallreduce")]
        assert min(reqs) >= 0 and tr.vector(one["waitall"]) == reqs
        assert one["iallreduce"]["bytes_sent"] == 44 and one["ibcast"]["peer"] == 0
        assert one["wait"]["request"] == one["ialltoallv"]["request"] >= 0
        assert tr.vector(one["ialltoallv"]) == send + recv
        # in-call compute is kept for reductions only
        others = [row for n, v in a.items() for row in v if n not in
                  ("reduce", "allreduce", "reduce_scatter", "reduce_scatter_block", "scan",
                   "exscan", "iallreduce")]
        assert all(row["volume"] == 0 for row in others)


def test_comm_split_and_any_source(programs, tmp_path):
    exe = programs("split")
    p = record(tmp_path / "s.h5", 4, [exe])
    assert "validation: OK" in p.stdout
    tr = Ranked(tmp_path / "s.h5")
    comms = tr.data.comms
    sub_of = {}
    for r in range(4):
        sp = tr.mpi(r, "comm_split")[0]
        assert tr.vector(sp) == [r % 2, -r] and sp["comm"] == 0
        sub_of[r] = int(sp["request"])
        members = comms[sub_of[r]].tolist()
        assert members == ([2, 0] if r % 2 == 0 else [3, 1])
        other = members[0] if members[1] == r else members[1]
        sr = tr.mpi(r, "sendrecv")[0]
        assert sr["comm"] == sub_of[r] and sr["peer"] == other and sr["tag"] == 7
        assert tr.vector(sr) == [other, 7] and (sr["bytes_sent"], sr["bytes_recv"]) == (4, 4)
        assert tr.mpi(r, "allreduce")[0]["comm"] == sub_of[r]
        assert tr.mpi(r, "comm_free")[0]["comm"] == sub_of[r]
    assert sub_of[0] == sub_of[2] != sub_of[1] == sub_of[3] and 0 not in sub_of.values()
    rv = tr.mpi(0, "recv")
    assert sorted(rv["peer"].tolist()) == [1, 2, 3]
    assert (rv["flags"] & K.FLAG_ANY_SOURCE).all() and (rv["tag"] == 100).all()
    assert rv["bytes_recv"].tolist() == [4 * p for p in rv["peer"]]
    ir = tr.mpi(0, "irecv")
    assert sorted(ir["peer"].tolist()) == [1, 2, 3]
    assert ir["tag"].tolist() == [200 + p for p in ir["peer"]]
    assert ir["bytes_recv"].tolist() == [8 * p for p in ir["peer"]]
    assert (ir["flags"] & (K.FLAG_ANY_SOURCE | K.FLAG_ANY_TAG) ==
            K.FLAG_ANY_SOURCE | K.FLAG_ANY_TAG).all()


def test_persistent_and_partitioned(programs, tmp_path):
    exe = programs("persist")
    p = record(tmp_path / "p.h5", 2, [exe])
    assert "validation: OK" in p.stdout
    tr = Ranked(tmp_path / "p.h5")
    n0 = tr.names(0)
    assert n0 == (["init", "send_init", "recv_init"] + ["start", "start", "wait", "wait"] * 3
                  + ["start", "start", "waitall", "request_free", "request_free", "psend_init",
                     "start", "pready", "pready_range", "wait", "request_free", "finalize"])
    si, ri = tr.mpi(0, "send_init")[0], tr.mpi(0, "recv_init")[0]
    assert (si["peer"], si["tag"], si["bytes_sent"]) == (1, 11, 40)
    assert (ri["peer"], ri["tag"], ri["bytes_recv"]) == (1, 11, 40)
    st = tr.mpi(0, "start")     # (the startall: its starts, in its order)
    assert st["request"][:8].tolist() == [ri["request"], si["request"]] * 4
    assert (st["flags"][:8] & K.FLAG_PERSISTENT).all()
    assert tr.mpi(0, "request_free")["request"][:2].tolist() == [si["request"], ri["request"]]
    ps = tr.mpi(0, "psend_init")[0]
    assert (ps["peer"], ps["tag"], ps["bytes_sent"]) == (1, 12, 256) and tr.vector(ps) == [4]
    assert st[-1]["request"] == ps["request"] and st[-1]["flags"] & K.FLAG_PARTITIONED
    assert tr.vector(tr.mpi(0, "pready")[0]) == [0]
    assert tr.vector(tr.mpi(0, "pready_range")[0]) == [1, 3]
    pr = tr.mpi(1, "precv_init")[0]
    assert (pr["peer"], pr["bytes_recv"]) == (0, 256) and tr.vector(pr) == [4]
    arr = tr.mpi(1, "parrived")
    assert len(arr) >= 1 and arr[-1]["flags"] & K.FLAG_COMPLETED
    assert all(tr.vector(x) == [3] for x in arr)


@pytest.mark.parametrize("how", ["testany", "waitany", "test", "wait"])
def test_persistent_receive_takes_each_completion_status(programs, tmp_path, how):
    """Each start of a persistent receive from MPI_ANY_SOURCE/ANY_TAG (public graph500's aml)
    holds the source, tag and size its completion saw (COMPLETED): the recording validates,
    where every message was unmatched, and its replay's text receives what was sent.  The
    waitall on the inactive requests at the end (empty statuses) resolves nothing."""
    exe = programs("persist_anysrc")
    p = record(tmp_path / "p.h5", 2, [exe, how])
    assert "validation: OK" in p.stdout, p.stdout[-2000:]
    tr = Ranked(tmp_path / "p.h5")
    ri = tr.mpi(1, "recv_init")
    assert (ri["peer"] == -1).all() and (ri["bytes_recv"] == 64).all()
    st = tr.mpi(1, "start")
    assert len(st) == 5 and (st["flags"] & K.FLAG_COMPLETED).all()
    assert not (st["flags"] & K.FLAG_UNRESOLVED).any()
    assert (st["peer"] == 0).all()
    assert sorted(zip(st["tag"].tolist(), st["bytes_recv"].tolist())) == \
        [(i, 10 + i) for i in range(5)]
    from minitrace.converters.simgrid_ti import write_ti
    with minitrace.open(tmp_path / "p.h5") as t:
        write_ti(t.data(), tmp_path / "p.txt", layout="single", lossy=True)
    irecvs = [x.split() for x in (tmp_path / "p.txt").read_text().splitlines()
              if x.startswith("1 irecv")]
    assert sorted((int(x[3]), int(x[4])) for x in irecvs) == [(i, 10 + i) for i in range(5)]


@pytest.mark.parametrize("how", ["null", "cancel", "thread"])
def test_persistent_receive_statuses_paired_by_activation(programs, tmp_path, how):
    """A persistent receive's completion names its activation (the shim numbers each start):
    a receive from MPI_PROC_NULL (MPICH's status looks like an inactive request's) is a
    message from nobody, not unresolved; a cancelled start receives nothing and the next
    starts their own messages; completions in two threads go to their own starts."""
    exe = programs("persist_edges")
    p = record(tmp_path / "p.h5", 2, [exe, how])
    assert "validation: OK" in p.stdout, p.stdout[-2000:]
    st = Ranked(tmp_path / "p.h5").mpi(1, "start")
    assert (st["flags"] & K.FLAG_COMPLETED).all() and not (st["flags"] & K.FLAG_UNRESOLVED).any()
    got = list(zip(st["peer"].tolist(), st["bytes_recv"].tolist()))
    want = {"null": [(-1, 0)] * 2, "cancel": [(-1, 0), (0, 10), (0, 11)],
            "thread": [(0, 10), (0, 11)]}[how]
    assert got == want
    if how != "null":
        assert st["tag"].tolist()[-2:] == [0, 1]
    if how == "cancel":     # (it took: the cancel has COMPLETED and the recv_init's values)
        c = Ranked(tmp_path / "p.h5").mpi(1, "cancel")
        assert len(c) == 1 and c["flags"][0] & K.FLAG_COMPLETED
        assert (c["peer"][0], c["tag"][0], c["bytes_recv"][0]) == (-1, -1, 64)


def test_a_startall_is_its_starts_each_with_its_own_message(programs, tmp_path):
    """MPI_Startall of two wildcard persistent receives: its vector held only ids, so neither
    took its message's source (validate: every message unmatched, record exit 1); written as
    one start per request, in its order, with the call's times and no compute between them,
    each takes its own completion's source, tag and size, and the request's later MPI_Start
    its own."""
    p = record(tmp_path / "p.h5", 2, [programs("persist_edges"), "startall"])
    assert "validation: OK" in p.stdout, p.stdout[-2000:]
    with minitrace.open(tmp_path / "p.h5") as t:
        a = t.actions(rank=1)
    assert "startall" not in set(a["kind"])
    st = a[a["kind"] == "start"]
    assert (st["flags"] & K.FLAG_COMPLETED).all() and (st["flags"] & K.FLAG_PERSISTENT).all()
    assert list(zip(st["peer"], st["tag"], st["bytes_recv"], st["request"])) == [
        (0, 0, 10, 0), (0, 1, 11, 1), (0, 2, 12, 1)]
    first, second = st.index[:2]
    assert second == first + 1 and st["t_start"][first] == st["t_start"][second]
    assert a["kind"][first - 1] == "compute" and a["kind"][second + 1] == "compute"


def test_persistent_receive_started_before_a_pause_stays_unresolved(programs, tmp_path):
    """A start whose completion may have come while recording was paused takes no status (the
    completion seen after the resume is an inactive request's, empty): it stays UNRESOLVED,
    not a receive of no message; the next start takes its own."""
    p = record(tmp_path / "p.h5", 2, [programs("persist_edges"), "pause"], expect_rc=None)
    assert p.returncode in (0, 1), p.stdout[-2000:] + p.stderr[-2000:]
    st = Ranked(tmp_path / "p.h5").mpi(1, "start")
    assert len(st) == 2
    assert st["flags"][0] & K.FLAG_UNRESOLVED and not st["flags"][0] & K.FLAG_COMPLETED
    assert st["flags"][1] & K.FLAG_COMPLETED
    assert (st["peer"][1], st["tag"][1], st["bytes_recv"][1]) == (0, 1, 11)


def test_ranks_calling_mpi_from_threads_said_in_the_replay(programs, tmp_path):
    """A rank whose calls overlapped in several threads (public OSU osu_latency_mt) is named in
    the trace (``mpi_threads``, ``mpi_overlapping_calls``) and in its replay's notes; threads
    that took turns (a second thread waits while the first joins it) make a sequential
    program, which replays as recorded: no note (the reviewer, session 30: every rank of
    several threads was named).  A replay that deadlocks on such a trace says why it may
    (SimGrid replays a rank's calls in one sequence)."""
    from minitrace.errors import MinitraceError
    from minitrace.model import TraceBuilder
    from minitrace.replay import replay
    p = record(tmp_path / "p.h5", 2, [programs("persist_edges"), "thread"])
    assert "validation: OK" in p.stdout, p.stdout[-2000:]
    with minitrace.open(tmp_path / "p.h5") as t:
        assert t.meta["mpi_threads"] == [1, 2]
        assert t.meta["mpi_overlapping_calls"] == [0, 0]
    r = replay(tmp_path / "p.h5", compute_rate="1Gf")
    assert not any("threads" in n for n in r.notes), r.notes
    p = record(tmp_path / "t.h5", 2, [programs("threads"), "25"])
    assert "validation: OK" in p.stdout, p.stdout[-2000:]
    with minitrace.open(tmp_path / "t.h5") as t:
        assert t.meta["mpi_threads"] == [5, 5]     # (the main thread and 4)
        overlapping = t.meta["mpi_overlapping_calls"]   # (4 threads, each waiting in turn for
        assert all(n > 0 for n in overlapping), overlapping   # the other rank's: never apart)
    try:                                # (serialized, the threads' calls may deadlock)
        said = replay(tmp_path / "t.h5", compute_rate="1Gf").notes
    except MinitraceError as e:
        said = [str(e)]
    assert any("rank(s) 0, 1 called MPI from 5 threads whose calls overlapped" in n
               for n in said), said
    b = TraceBuilder(2)                     # each rank receives first: a deadlock
    for rk in range(2):
        b.add(rk, "init")
        b.add(rk, "recv", peer=1 - rk, tag=1, bytes_recv=8)
        b.add(rk, "send", peer=1 - rk, tag=1, bytes_sent=8)
        b.add(rk, "finalize")
    d = b.build()
    d.meta["mpi_threads"] = [2, 1]
    with pytest.raises(MinitraceError, match="unfinished.*rank.s. 0 called MPI from 2 threads"):
        replay(d, compute_rate="1Gf")
    d.meta.pop("mpi_threads")
    with pytest.raises(MinitraceError, match="unfinished") as e:
        replay(d, compute_rate="1Gf")
    assert "threads" not in str(e.value)


def test_threads_multiple(programs, tmp_path):
    exe = programs("threads")
    M = 25
    p = record(tmp_path / "t.h5", 2, [exe, str(M)])
    assert "validation: OK" in p.stdout
    tr = Ranked(tmp_path / "t.h5")
    for r in range(2):
        s, ir = tr.mpi(r, "send"), tr.mpi(r, "irecv")
        assert len(s) == len(ir) == len(tr.mpi(r, "wait")) == 4 * M
        for t in range(4):
            st, it = s[s["tag"] == t], ir[ir["tag"] == t]
            assert len(st) == len(it) == M
            assert (st["peer"] == 1 - r).all() and (st["bytes_sent"] == 4 * (t + 1)).all()
            assert (it["peer"] == 1 - r).all() and (it["bytes_recv"] == 4 * (t + 1)).all()
        _compute_before_each_call(tr, r)


def test_sigkill_keeps_everything_recorded(programs, tmp_path):
    exe = programs("selfkill")
    k = 3000
    done = tmp_path / "sent.txt"
    p = record(tmp_path / "k.h5", 2, [exe, str(k), str(done)], expect_rc=None, extra=["--keep-raw"])
    assert p.returncode != 0
    sent = int(done.read_text())
    tr = Ranked(tmp_path / "k.h5")
    assert tr.meta["complete"] is False or tr.meta["complete"] == 0
    s = tr.mpi(1, "send")
    assert len(s) == sent == k
    assert s["tag"].tolist() == [i % 5 for i in range(k)] and (s["bytes_sent"] == 4).all()
    rv = tr.mpi(0, "recv")
    assert 0 < len(rv) <= k and rv["tag"].tolist() == [i % 5 for i in range(len(rv))]
    # the raw files were kept and merge again to the same trace
    raw = [d for d in os.listdir(tmp_path) if d.startswith("k.h5.raw-")]
    assert len(raw) == 1
    q = subprocess.run([sys.executable, "-m", "minitrace", "merge", str(tmp_path / raw[0]),
                        "-o", str(tmp_path / "again.h5")], capture_output=True, text=True,
                       timeout=300)
    assert q.returncode == 1 and "INCOMPLETE" in q.stdout
    assert len(Ranked(tmp_path / "again.h5").mpi(1, "send")) == k


def test_python_program(tmp_path):
    p = record(tmp_path / "py.h5", 2, [sys.executable, str(PROGRAMS / "pyprog.py")])
    assert "validation: OK" in p.stdout and "tracing True" in p.stdout
    tr = Ranked(tmp_path / "py.h5")
    assert tr.data.strings == ["exchange", "solve"]
    s, rv = tr.mpi(0, "send"), tr.mpi(1, "recv")
    assert (len(s), s[0]["peer"], s[0]["tag"], s[0]["bytes_sent"]) == (1, 1, 5, 24)
    assert (len(rv), rv[0]["peer"], rv[0]["tag"], rv[0]["bytes_recv"]) == (1, 0, 5, 24)
    for r in range(2):
        names = tr.names(r, skip=("comm_size", "bcast"))
        i = names.index("pause")
        assert names[i + 1] == "resume"       # the barrier in between is not recorded
        assert names.count("barrier") == 1 and names.count("allreduce") == 1
        rb, re_ = tr.mpi(r, "region_begin"), tr.mpi(r, "region_end")
        assert rb["tag"].tolist() == re_["tag"].tolist() == [0, 1]
        assert names[names.index("barrier") - 1] == "region_begin"
        assert tr.mpi(r, "allreduce")[0]["bytes_sent"] == 32


def test_control_is_a_noop_untraced():
    p = subprocess.run([sys.executable, "-c", "import minitrace\nminitrace.pause()\n"
                        "with minitrace.region('x'): pass\nminitrace.resume()\n"
                        "print(minitrace.tracing())"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "False"


def test_python_program_4_ranks(tmp_path):
    """mpi4py (big-count MPI_*_c calls) on 4 ranks: ring, alltoallv, split + bcast."""
    p = record(tmp_path / "py4.h5", 4, [sys.executable, str(PROGRAMS / "pyring4.py")])
    assert "validation: OK" in p.stdout and p.stdout.count("ok") >= 4
    tr = Ranked(tmp_path / "py4.h5")
    for r in range(4):
        isends, irecvs = tr.mpi(r, "isend"), tr.mpi(r, "irecv")
        assert isends["peer"].tolist() == [(r + 1) % 4] * 3
        assert irecvs["peer"].tolist() == [(r - 1) % 4] * 3
        assert isends["tag"].tolist() == irecvs["tag"].tolist() == [0, 1, 2]
        assert (isends["bytes_sent"] == 64).all() and (irecvs["bytes_recv"] == 64).all()
        waits = tr.mpi(r, "waitall")
        assert len(waits) == 3
        for w, s, v in zip(waits, isends, irecvs):
            assert sorted(tr.vector(w)) == sorted([int(s["request"]), int(v["request"])])
        (a2a,) = tr.mpi(r, "alltoallv")
        sent = [8 * (r + 2 * j + 1) for j in range(4)]
        recv = [8 * (j + 2 * r + 1) for j in range(4)]
        assert tr.vector(a2a) == sent + recv
        assert (a2a["bytes_sent"], a2a["bytes_recv"]) == (sum(sent), sum(recv))
        (bc,) = tr.mpi(r, "bcast")
        members = [x for x in range(4) if x % 2 == r % 2]
        assert tr.data.comms[int(bc["comm"])].tolist() == members
        assert bc["peer"] == members[1]                      # sub-rank 1 as a world rank
        assert (bc["bytes_sent"], bc["bytes_recv"]) == ((40, 0) if r == members[1] else (0, 40))
