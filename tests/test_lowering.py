"""Lowering (minitrace/collectives/): what SimGrid's TI replay cannot express becomes what it can.
A lowered world collective replays in the same time as SimGrid's built-in collective with the
same algorithm selected, for every algorithm the MPICH and Open MPI tables pick; every lowering keeps messages matched (validate) and replays; a recorded
program using all of them replays without --lossy."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.converters.simgrid_ti import write_ti
from minitrace.collectives import TAG_BASE, lower, lowered_as
from minitrace.model import NONE as NONE_REQ, TraceBuilder, TraceColumns
from minitrace.replay.platforms import Cluster
from minitrace.replay import replay
from minitrace.validate import validate

pytestmark = pytest.mark.timeout(300)


def _cluster(n):
    return Cluster(n, speed="1Gf", bandwidth="1GBps", latency="10us")


def _replay_export(data, path, cfg=None, lower_world=False, engine="native",
                   collectives="simgrid"):
    rep = write_ti(data, path, lower_world=lower_world, collectives=collectives)
    r = replay(path, cluster=_cluster(data.nranks), config=cfg or {}, engine=engine)
    return r.simulated_time, rep


def _world(kind, p, *, root=None, bs=0, br=0, vol=0.0, vec=None, comm=0, members=None,
           nranks=None):
    """Every rank computes a different amount, then ``members`` (default all) make ``kind``."""
    n = nranks or p
    b = TraceBuilder(n, meta={"volume_unit": "flops"})
    members = list(range(p)) if members is None else members
    if comm:
        b.add_comm(comm, members)
    for r in range(n):
        b.add(r, "init")
        b.add(r, "compute", volume=1e5 * (r + 1))
        if r in members:
            me = members.index(r)
            b.add(r, kind, peer=-1 if root is None else members[root], comm=comm,
                  bytes_sent=bs(me) if callable(bs) else bs,
                  bytes_recv=br(me) if callable(br) else br, volume=vol,
                  vector=vec(me) if vec else None)
        b.add(r, "finalize")
    return b.build()


def _v(p, me):   # alltoallv: bytes sent to each member, then received from each
    return [1000 * (me + 1) + 10 * j for j in range(p)] + [1000 * (j + 1) + 10 * me
                                                             for j in range(p)]


#: (library, kind, fields): each on 2, 3, 4 and 6 ranks, lowered with the algorithm the library's
#: table picks (or the nearest one the lowering writes)
WORLD = [
    ("mpich", "barrier", {}),
    ("ompi", "barrier", {}),
    ("mpich", "bcast", {"root": 1, "bs": 100000, "br": 100000}),
    ("mpich", "reduce", {"root": 2, "bs": 50000, "br": 50000, "vol": 1e6}),
    ("ompi", "reduce", {"root": 2, "bs": 4, "br": 4, "vol": 1e3}),
    ("mpich", "allreduce", {"bs": 2048, "br": 2048, "vol": 1000.0}),
    ("mpich", "allreduce", {"bs": 100003, "br": 100003, "vol": 1000.0}),
    ("ompi", "allreduce", {"bs": 4, "br": 4, "vol": 1000.0}),
    ("ompi", "allreduce", {"bs": 7, "br": 7, "vol": 1000.0}),
    ("mpich", "allgather", {"bs": 1000, "br": None}),
    ("mpich", "alltoall", {"bs": None, "br": None}),
    ("mpich", "alltoallv", {"vec": True}),
    ("ompi", "allgather", {"bs": 1000, "br": None}),
    ("mpich", "gather", {"root": 1, "bs": 3000, "br": None}),
    ("ompi", "gather", {"root": 1, "bs": 3000, "br": None}),
    ("mpich", "scatter", {"root": 0, "bs": None, "br": 3000}),
    ("ompi", "scatter", {"root": 1, "bs": None, "br": 3000}),
]


@pytest.mark.parametrize("p", [2, 3, 4, 6])
@pytest.mark.parametrize("library,kind,fields", WORLD,
                         ids=[f"{w[0]}-{w[1]}-{w[2].get('bs', 0)}" for w in WORLD])
def test_lowered_world_collective_takes_simgrid_builtin_time(tmp_path, library, kind, fields, p):
    f = dict(fields)
    if "root" in f:
        f["root"] %= p
    if f.get("br", 0) is None:
        f["br"] = 1000 * p if kind != "gather" else 3000 * p
    if f.get("bs", 0) is None:
        f["bs"] = 1000 * p if kind != "scatter" else 3000 * p
    runs, algo = lowered_as(library, kind, p, f.get("bs", 0), f.get("br", 0))
    if f.pop("vec", False):
        f["vec"] = lambda me: _v(p, me)
        f["bs"] = lambda me: sum(_v(p, me)[:p])
        f["br"] = lambda me: sum(_v(p, me)[p:])
    data = _world(kind, p, **f)
    cfg = {f"smpi/{kind}": algo}
    builtin, rep0 = _replay_export(data, tmp_path / "builtin", cfg)
    lowered, rep = _replay_export(data, tmp_path / "lowered", cfg, lower_world=True,
                                  collectives=library)
    assert not rep0.lowered and sum(rep.lowered.values()) == p
    how = algo if algo == runs else f"{algo} for {runs}"
    assert rep.lowered[f"{kind} on MPI_COMM_WORLD (point-to-point, {how})"] == p
    low = lower(data, library, world=True)[0]
    assert validate(low).ok
    assert not np.isin(low.actions["kind"], K.codes(K.COLLECTIVES)).any()
    assert builtin > 1e-4
    assert lowered == pytest.approx(builtin, rel=1e-6)


def test_every_lowered_algorithm_is_exercised():
    """The WORLD cases above reach every algorithm the lowering writes for those kinds
    (``redbcast`` as ``lr`` of fewer bytes than ranks: 4 bytes on 6)."""
    from minitrace.collectives.algorithms import ALGORITHMS
    seen = set()
    for library, kind, f in WORLD:
        for p in (2, 3, 4, 6):
            bs = f.get("bs", 0) or (1000 if kind != "scatter" else 3000) * p
            br = f.get("br", 0) or (1000 if kind != "gather" else 3000) * p
            seen.add((kind, lowered_as(library, kind, p, bs, br)[1]))
    kinds = {w[1] for w in WORLD}
    missing = {k for k in ALGORITHMS if k[0] in kinds} - seen - {("allreduce", "redbcast")}
    assert not missing, missing


def test_python_engine_agrees_on_a_lowered_collective(tmp_path):
    data = _world("allreduce", 6, bs=100000, br=100000, vol=1e6)
    cfg = {"smpi/allreduce": "rdb"}
    native, _ = _replay_export(data, tmp_path / "n", cfg, lower_world=True)
    python, _ = _replay_export(data, tmp_path / "p", cfg, lower_world=True, engine="python")
    assert native == pytest.approx(python, rel=1e-12)


SUB = [("bcast", "binomial_tree", {"root": 2, "bs": 100000, "br": 100000}),
       ("allreduce", "rdb", {"bs": 1024, "br": 1024, "vol": 1000.0}),
       ("allreduce", "rab_rdb", {"bs": 8192, "br": 8192, "vol": 1000.0}),
       ("barrier", "ompi_bruck", {}),
       ("alltoall", "ring", {"bs": 3000, "br": 3000}),
       ("reduce", "binomial", {"root": 1, "bs": 5000, "br": 5000})]


@pytest.mark.parametrize("kind,algo,fields", SUB, ids=[f"{s[0]}-{s[1]}" for s in SUB])
def test_sub_communicator_collective_is_its_world_form_on_the_members(tmp_path, kind, algo,
                                                                       fields):
    # members 3, 1, 2 of 4 ranks (rank 0 only computes) take, on a homogeneous cluster, the
    # time the same collective takes built in on a world of 3 (whose ranks compute like them)
    members = [3, 1, 2]
    data = _world(kind, 3, comm=5, members=members, nranks=4, **fields)
    rep = write_ti(data, tmp_path / "sub")
    assert not rep.dropped
    runs, low_algo = lowered_as("simgrid", kind, 3, fields.get("bs", 0), fields.get("br", 0))
    assert low_algo == algo
    how = algo if algo == runs else f"{algo} for {runs}"
    assert rep.lowered[f"{kind} on a sub-communicator (point-to-point, {how})"] == 3
    low = lower(data)[0]
    assert validate(low).ok
    tags = low.actions["tag"][np.isin(low.actions["kind"], K.codes(K.SENDS | K.RECVS))]
    assert len(tags) and (tags == TAG_BASE - 256 * 5 - K.CODE[kind]).all()
    sub = replay(tmp_path / "sub", cluster=_cluster(4), config={f"smpi/{kind}": algo},
                 engine="native")
    b = TraceBuilder(3, meta={"volume_unit": "flops"})
    a = data.actions
    for i, w in enumerate(members):
        for row in a[data.rank_slice(w)]:
            name = K.NAME[int(row["kind"])]
            peer = int(row["peer"])
            b.add(i, name, peer=members.index(peer) if peer >= 0 else -1,
                  bytes_sent=int(row["bytes_sent"]), bytes_recv=int(row["bytes_recv"]),
                  volume=float(row["volume"]))
    world = b.build()
    t, _ = _replay_export(world, tmp_path / "world", {f"smpi/{kind}": algo})
    assert sub.simulated_time == pytest.approx(t, rel=1e-6)


def test_every_collective_on_a_sub_communicator_is_lowered_and_matched():
    members = [2, 0, 3]
    b = TraceBuilder(4, meta={"volume_unit": "flops"})
    b.add_comm(1, members)
    P = len(members)
    for r in range(4):
        b.add(r, "init")
        if r in members:
            me = members.index(r)
            for kind in ("barrier", "scan", "exscan"):
                b.add(r, kind, comm=1, bytes_sent=64, bytes_recv=64)
            for kind in ("gatherv", "scatterv"):
                v = [100 * (j + 1) for j in range(P)]
                root = me == 1
                b.add(r, kind, peer=0, comm=1, bytes_sent=100 * (me + 1) if kind == "gatherv"
                      else (sum(v) if root else 0), bytes_recv=sum(v) if root and
                      kind == "gatherv" else 100 * (me + 1), vector=v if root else None)
            v = [100 * (j + 1) for j in range(P)]
            b.add(r, "allgatherv", comm=1, bytes_sent=100 * (me + 1), bytes_recv=sum(v),
                  vector=v)
            b.add(r, "reduce_scatter", comm=1, bytes_sent=sum(v), bytes_recv=v[me], vector=v)
            b.add(r, "reduce_scatter_block", comm=1, bytes_sent=96, bytes_recv=32)
            b.add(r, "alltoallv", comm=1, bytes_sent=0, bytes_recv=0,
                  vector=[10 * me + j for j in range(P)] + [10 * j + me for j in range(P)])
        b.add(r, "finalize")
    data = b.build()
    low, counts, dropped = lower(data)
    assert not dropped and sum(counts.values()) == 9 * P
    rep = validate(low)
    assert rep.ok, str(rep)


def _ring_nbc(kind="iallreduce", p=4):
    b = TraceBuilder(p, meta={"volume_unit": "flops"})
    for r in range(p):
        b.add(r, "init")
        b.add(r, kind, bytes_sent=1 << 20, bytes_recv=1 << 20, request=7)
        b.add(r, "compute", volume=5e6)
        b.add(r, "wait", request=7)
        b.add(r, "finalize")
    return b.build()


def test_nonblocking_collective_overlaps_its_computation(tmp_path):
    data = _ring_nbc()
    low, counts, _ = lower(data)
    assert counts["iallreduce (isend/irecv of rab_rdb at the call, waited at its completion)"] == 4
    assert validate(low).ok
    t, rep = _replay_export(data, tmp_path / "nb", {"smpi/allreduce": "rab_rdb"})
    assert not rep.dropped
    blocking = data.actions.copy()
    blocking["kind"][blocking["kind"] == K.CODE["iallreduce"]] = K.CODE["allreduce"]
    blocking = blocking[blocking["kind"] != K.CODE["wait"]]
    seq = TraceColumns(blocking, np.arange(0, 4 * 4 + 1, 4), meta={"volume_unit": "flops"})
    t_seq, _ = _replay_export(seq, tmp_path / "seq", {"smpi/allreduce": "rab_rdb"})
    assert 5e-3 <= t < t_seq       # the 5 Mflop compute at 1 Gf hides some of the messages


def _persistent(p=2, iters=3):
    b = TraceBuilder(p, meta={"volume_unit": "flops"})
    for r in range(p):
        b.add(r, "init")
        b.add(r, "send_init", peer=(r + 1) % p, tag=4, bytes_sent=10000, request=1)
        b.add(r, "recv_init", peer=(r - 1) % p, tag=4, bytes_recv=10000, request=2)
        for _ in range(iters):
            b.add(r, "startall", vector=[1, 2], flags=K.FLAG_PERSISTENT)
            b.add(r, "waitany", request=2)
            b.add(r, "waitany", request=1)
            b.add(r, "compute", volume=1e5)
        b.add(r, "request_free", request=1)
        b.add(r, "request_free", request=2)
        b.add(r, "finalize")
    return b.build()


def _plain(p=2, iters=3):
    b = TraceBuilder(p, meta={"volume_unit": "flops"})
    for r in range(p):
        b.add(r, "init")
        q = 0
        for _ in range(iters):
            b.add(r, "isend", peer=(r + 1) % p, tag=4, bytes_sent=10000, request=q)
            b.add(r, "irecv", peer=(r - 1) % p, tag=4, bytes_recv=10000, request=q + 1)
            b.add(r, "wait", request=q + 1)
            b.add(r, "wait", request=q)
            b.add(r, "compute", volume=1e5)
            q += 2
        b.add(r, "finalize")
    return b.build()


def test_persistent_requests_are_a_fresh_isend_irecv_per_start(tmp_path):
    data = _persistent()
    low, counts, dropped = lower(data)
    assert not dropped and validate(low).ok
    assert counts["start of send_init (isend)"] == 6 and counts["start of recv_init (irecv)"] == 6
    assert counts["waitany (wait of each request it completed)"] == 12
    assert counts["request_free (nothing to replay)"] == 4
    t, rep = _replay_export(data, tmp_path / "pers")
    assert rep.exact
    t_plain, _ = _replay_export(_plain(), tmp_path / "plain")
    assert t == t_plain > 0


def test_partitioned_send_is_one_message_once_every_partition_is_ready(tmp_path):
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    b.add(0, "init")
    b.add(0, "psend_init", peer=1, tag=2, bytes_sent=40000, request=3, vector=[4])
    b.add(0, "start", request=3, flags=K.FLAG_PARTITIONED)
    for k in range(4):
        b.add(0, "compute", volume=1e5)
        b.add(0, "pready", request=3, vector=[k])
    b.add(0, "wait", request=3)
    b.add(0, "finalize")
    b.add(1, "init")
    b.add(1, "precv_init", peer=0, tag=2, bytes_recv=40000, request=3, vector=[4])
    b.add(1, "start", request=3, flags=K.FLAG_PARTITIONED)
    b.add(1, "parrived", request=3, vector=[0])
    b.add(1, "wait", request=3)
    b.add(1, "finalize")
    data = b.build()
    low, counts, dropped = lower(data)
    assert not dropped and validate(low).ok
    names = [K.NAME[k] for k in low.actions["kind"][low.rank_slice(0)]]
    assert names == ["init"] + ["compute"] * 4 + ["isend", "wait", "finalize"]
    t, rep = _replay_export(data, tmp_path / "part")
    assert not rep.dropped and t > 4e-4


def test_waitsome_and_testany_become_waits_and_tests_of_what_they_completed(tmp_path):
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
        for q in range(3):
            b.add(r, "isend" if r == 0 else "irecv", peer=1 - r, tag=q, request=q,
                  **({"bytes_sent": 100} if r == 0 else {"bytes_recv": 100}))
        b.add(r, "waitsome", vector=[2, 0])
        b.add(r, "testany", request=1, flags=K.FLAG_COMPLETED)
        b.add(r, "probe", peer=1 - r, tag=9)
        b.add(r, "finalize")
    low, counts, _ = lower(b.build())
    assert [K.NAME[k] for k in low.actions["kind"][low.rank_slice(1)]] == \
        ["init", "irecv", "irecv", "irecv", "wait", "wait", "test", "finalize"]
    assert low.actions["request"][low.rank_slice(1)][4:7].tolist() == [2, 0, 1]
    assert counts["probe (nothing to replay)"] == 2


def test_waitanys_rewritten_in_place_are_the_rows_lowered_call_by_call(monkeypatch):
    # a waitany or testany of one request becomes its wait or test in place (public miniGhost
    # SVAF 4r: 64,000 of them), where nothing of its rank lowers into other requests; rank 1
    # has a persistent send (its start lowers into a fresh isend) and rank 2 a bsend: call
    # by call, as before
    from minitrace.collectives import lowering
    b = TraceBuilder(3, meta={"volume_unit": "flops"})
    for r in range(3):
        b.add(r, "init", t_start=0.0, t_end=0.1)
        if r == 1:
            b.add(r, "send_init", peer=0, tag=7, bytes_sent=8, request=9)
            b.add(r, "start", request=9)
        if r == 2:
            b.add(r, "bsend", peer=0, tag=8, bytes_sent=8)
        for q in range(3):
            b.add(r, "irecv", peer=(r + 1) % 3, tag=q, bytes_recv=16, request=q, comm=0)
            b.add(r, "isend", peer=(r + 2) % 3, tag=q, bytes_sent=16, request=10 + q)
        b.add(r, "waitany", request=1, vector=[0, 1, 2], t_start=1.0, t_end=1.5, peer=2,
              bytes_recv=16)
        b.add(r, "testany", request=NONE_REQ, flags=0, vector=[0, 2])
        b.add(r, "testany", request=0, flags=K.FLAG_COMPLETED | 2, vector=[0, 2])
        b.add(r, "waitany", request=NONE_REQ, vector=[])
        b.add(r, "waitall", vector=[2, 10, 11, 12] + ([9] if r == 1 else []))
        b.add(r, "finalize")
    data = b.build()
    in_place, relabelled = [], lowering._Rank._relabelled
    monkeypatch.setattr(lowering._Rank, "_relabelled",
                        lambda self, todo: in_place.append(relabelled(self, todo)) or in_place[-1])
    low, counts, dropped = lower(data)
    assert [int(m.sum()) for m in in_place] == [2, 0, 0]     # rank 0's waitany and testany
    monkeypatch.setattr(lowering._Rank, "_relabelled",
                        lambda self, todo: np.zeros(len(todo), bool))
    want, want_counts, want_dropped = lower(data)
    for f in low.actions.dtype.names:
        assert np.array_equal(low.actions[f], want.actions[f], equal_nan=f.startswith("t_")), f
    assert np.array_equal(low.vectors, want.vectors)
    assert counts == want_counts and dropped == want_dropped
    assert counts["waitany (wait of each request it completed)"] == 6
    assert [K.NAME[k] for k in low.actions["kind"][low.rank_slice(0)]][7:10] == \
        ["wait", "test", "waitall"]


def test_a_trace_with_nothing_to_lower_is_returned_as_it_is():
    data = _plain()
    low, counts, dropped = lower(data)
    assert low is data and not counts and not dropped


@pytest.fixture(scope="module")
def recorded(programs, tmp_path_factory):
    from tests.support.record_util import record
    d = tmp_path_factory.mktemp("lowering")
    exe = programs("lowering")
    out = d / "lowering.h5"
    record(out, 4, [exe], volume="cputime")
    return out


def test_recorded_program_replays_without_lossy(recorded):
    r = replay(recorded, cluster=_cluster(4), compute_rate="1Gf", engine="native")
    assert np.isfinite(r.simulated_time) and r.simulated_time > 0
    notes = "\n".join(r.notes)
    for what in ("allreduce on a sub-communicator", "bcast on a sub-communicator",
                 "iallreduce", "start of send_init", "waitany", "comm_free", "request_free",
                 "ssend (send, completed by a 0-byte acknowledgement"):
        assert f" {what}" in notes, what
    assert "dropped" not in notes
    from minitrace.trace import open as open_trace
    with open_trace(str(recorded)) as t:
        low, _, dropped = lower(t.data())
    assert not dropped and validate(low).ok
    py = replay(recorded, cluster=_cluster(4), compute_rate="1Gf", engine="python")
    assert py.simulated_time == pytest.approx(r.simulated_time, rel=1e-12)


@pytest.mark.parametrize("send,recv", [("ssend", "recv"), ("issend", "irecv"),
                                       ("send", "recv")])
def test_synchronous_send_completes_only_once_its_receive_is_posted(tmp_path, send, recv):
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    b.add(0, "init")
    b.add(0, send, peer=1, tag=3, bytes_sent=100, request=0)
    if send == "issend":
        b.add(0, "wait", request=0)
    b.add(0, "finalize")
    b.add(1, "init")
    b.add(1, "compute", volume=1e6)        # 1 ms before the receive is posted
    b.add(1, recv, peer=0, tag=3, bytes_recv=100, request=0)
    if recv == "irecv":
        b.add(1, "waitall", vector=[0])
    b.add(1, "finalize")
    data = b.build()
    low, counts, _ = lower(data)
    assert validate(low).ok
    write_ti(data, tmp_path / "s")
    r = replay(tmp_path / "s", cluster=_cluster(2), engine="native")
    if send == "send":      # eager: the sender is done long before the receive is posted
        assert not counts and r.rank_end_times[0] < 1e-4
    else:
        assert counts[f"{send} ({send[:-5]}send, completed by a 0-byte acknowledgement from "
                      f"its receive)"] == 1
        assert r.rank_end_times[0] > 1e-3


@pytest.mark.parametrize("send", ["ssend", "issend"])
def test_synchronous_sends_to_pre_posted_receives_do_not_deadlock(tmp_path, send):
    """Two ranks pre-post their receive, then send synchronously to each other, then wait (the
    exchange idiom; public Kripke built with KRIPKE_SWEEP_SSEND): legal, MPI acknowledges each
    ssend once its receive is posted; acknowledged at the receive's wait, each rank waited in
    its ssend for the acknowledgement the other's wait would send, and SimGrid deadlocked."""
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
        for step in range(3):
            b.add(r, "irecv", peer=1 - r, tag=6, bytes_recv=9216, request=2 * step)
            b.add(r, send, peer=1 - r, tag=6, bytes_sent=9216, request=2 * step + 1)
            b.add(r, "compute", volume=1e5)
            if send == "issend":
                b.add(r, "waitall", vector=[2 * step, 2 * step + 1])
            else:
                b.add(r, "wait", request=2 * step)
        b.add(r, "finalize")
    data = b.build()
    low, counts, _ = lower(data)
    assert validate(low).ok
    assert counts[f"{send} ({send[:-5]}send, completed by a 0-byte acknowledgement from "
                  f"its receive)"] == 6
    write_ti(data, tmp_path / "x")
    r = replay(tmp_path / "x", cluster=_cluster(2), engine="native")
    assert r.simulated_time > 3e-4                 # (3 computes of 0.1 ms a rank)


def test_buffered_sends_complete_whatever_their_size(tmp_path):
    """Two ranks bsend 1 MB to each other, then receive (legal: the attached buffer holds the
    messages): written as sends, the replay deadlocked, each send waiting for its receive."""
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
        for _ in range(3):
            b.add(r, "bsend", peer=1 - r, tag=2, bytes_sent=1 << 20)
            b.add(r, "recv", peer=1 - r, tag=2, bytes_recv=1 << 20)
        b.add(r, "finalize")
    data = b.build()
    low, counts, _ = lower(data)
    assert validate(low).ok
    assert counts["bsend (isend, waited for at the rank's end: the attached buffer holds it)"] \
        == 6
    assert [K.NAME[k] for k in low.actions["kind"][low.rank_slice(0)]] == \
        ["init"] + ["isend", "recv"] * 3 + ["waitall", "finalize"]
    write_ti(data, tmp_path / "b")
    r = replay(tmp_path / "b", cluster=_cluster(2), engine="native")
    assert r.simulated_time > 3 * (1 << 20) / 10e9     # (3 MB each way at 10 GB/s)


@pytest.mark.parametrize("send", ["isend", "persistent"])
def test_a_bsend_is_waited_for_before_a_send_of_its_key_is(tmp_path, send):
    """SimGrid's replay finds the request a wait names by (source, destination, tag), the oldest
    first: a bsend of 100 B left pending took the wait of the next isend on its tag (or of a
    persistent send's start), a 1 MB whose receive came 1 s later, and the rank ended 1 s early
    (the reviewer, session 31)."""
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "bsend", peer=1, tag=7, bytes_sent=100)
    if send == "isend":
        b.add(0, "isend", peer=1, tag=7, bytes_sent=1 << 20, request=1)
    else:
        b.add(0, "send_init", peer=1, tag=7, bytes_sent=1 << 20, request=1)
        b.add(0, "start", request=1, flags=K.FLAG_PERSISTENT)
    b.add(0, "wait", request=1)
    b.add(0, "compute", volume=1e9)
    b.add(1, "compute", volume=1e9)
    b.add(1, "recv", peer=0, tag=7, bytes_recv=100)
    b.add(1, "recv", peer=0, tag=7, bytes_recv=1 << 20)
    for r in range(2):
        b.add(r, "finalize")
    data = b.build()
    low = lower(data)[0]
    assert [K.NAME[k] for k in low.actions["kind"][low.rank_slice(0)]] == \
        ["init", "isend", "isend", "wait", "wait", "compute", "finalize"]
    write_ti(data, tmp_path / "k")
    r = replay(tmp_path / "k", cluster=_cluster(2), engine="native")
    assert r.rank_end_times[0] > 2.0        # (its 1 MB received after 1 s, then 1 s of its own)


def test_a_failed_test_does_not_wait_for_a_bsend(tmp_path):
    """A failed test of an isend on a pending bsend's key waits for nothing (the second
    reviewer: it waited for the bsend's 100 KB, whose receive came after the rank's next
    receive: a deadlock)."""
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "bsend", peer=1, tag=7, bytes_sent=100_000)
    b.add(0, "isend", peer=1, tag=7, bytes_sent=8, request=1)
    b.add(0, "test", request=1)
    b.add(0, "recv", peer=1, tag=9, bytes_recv=100_000)
    b.add(0, "wait", request=1)
    b.add(1, "send", peer=0, tag=9, bytes_sent=100_000)
    b.add(1, "recv", peer=0, tag=7, bytes_recv=100_000)
    b.add(1, "recv", peer=0, tag=7, bytes_recv=8)
    for r in range(2):
        b.add(r, "finalize")
    data = b.build()
    assert validate(data).ok
    write_ti(data, tmp_path / "f")
    assert replay(tmp_path / "f", cluster=_cluster(2), engine="native").simulated_time > 0


def test_a_synchronous_send_whose_receive_is_never_waited_for_still_ends(tmp_path):
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "ssend", peer=1, tag=1, bytes_sent=8)
    b.add(1, "irecv", peer=0, tag=1, bytes_recv=8, request=4)   # completed by SimGrid at the end
    for r in range(2):
        b.add(r, "finalize")
    data = b.build()
    low = lower(data)[0]
    assert [K.NAME[k] for k in low.actions["kind"][low.rank_slice(1)]] == \
        ["init", "irecv", "send", "finalize"]
    write_ti(data, tmp_path / "t")
    assert replay(tmp_path / "t", cluster=_cluster(2), engine="native").simulated_time > 0


@pytest.mark.parametrize("source", [1, -1])
def test_a_sendrecv_on_a_bsend_key_waits_for_its_own_send(tmp_path, source):
    """A sendrecv with tags is written as isend + recv + wait, and the wait took the oldest
    request of its destination and tag: a pending bsend's of 100 B, so the sendrecv's 1 MB,
    received 1 s later, was never waited for and the rank ended 1 s early (the second
    reviewer, session 31; from MPI_PROC_NULL, isend + wait: the same).  It is irecv + send +
    wait now: the send blocks for its receive."""
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "bsend", peer=1, tag=7, bytes_sent=100)
    b.add(0, "sendrecv", peer=1, tag=7, bytes_sent=1 << 20, bytes_recv=8 if source >= 0 else 0,
          vector=[source, 8])
    b.add(0, "compute", volume=1e9)
    if source >= 0:
        b.add(1, "send", peer=0, tag=8, bytes_sent=8)
    b.add(1, "compute", volume=1e9)
    b.add(1, "recv", peer=0, tag=7, bytes_recv=100)
    b.add(1, "recv", peer=0, tag=7, bytes_recv=1 << 20)
    for r in range(2):
        b.add(r, "finalize")
    data = b.build()
    low, counts, _ = lower(data)
    assert validate(low).ok
    assert [K.NAME[k] for k in low.actions["kind"][low.rank_slice(0)]] == \
        ["init", "isend"] + (["irecv", "send", "wait"] if source >= 0 else ["send"]) + \
        ["compute", "waitall", "finalize"]
    assert counts["sendrecv on a pending bsend's destination and tag (irecv + send + wait: no "
                  "wait by its key)"] == 1
    write_ti(data, tmp_path / "k")
    r = replay(tmp_path / "k", cluster=_cluster(2), engine="native")
    assert r.rank_end_times[0] > 2.0        # (its 1 MB received after 1 s, then 1 s of its own)


def test_a_sendrecv_after_two_bsends_of_its_key_does_not_wait_for_them(tmp_path):
    """Two bsends of 1 MB, then a sendrecv on their key, then a send: the receiver takes the
    first bsend, the sendrecv's message on another tag, the send, and only then the second
    bsend.  Legal (the attached buffer holds the bsends); waiting for the pending bsends before
    the sendrecv's own wait deadlocked it (the reviewer, session 32)."""
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    for _ in range(2):
        b.add(0, "bsend", peer=1, tag=7, bytes_sent=1 << 20)
    b.add(0, "sendrecv", peer=1, tag=7, bytes_sent=8, bytes_recv=8, vector=[1, 8])
    b.add(0, "send", peer=1, tag=9, bytes_sent=8)
    b.add(1, "recv", peer=0, tag=7, bytes_recv=1 << 20)
    b.add(1, "send", peer=0, tag=8, bytes_sent=8)
    b.add(1, "recv", peer=0, tag=9, bytes_recv=8)
    b.add(1, "recv", peer=0, tag=7, bytes_recv=1 << 20)
    b.add(1, "recv", peer=0, tag=7, bytes_recv=8)
    for r in range(2):
        b.add(r, "finalize")
    data = b.build()
    assert validate(data).ok
    assert _replay_export(data, tmp_path / "m")[0] > 0
