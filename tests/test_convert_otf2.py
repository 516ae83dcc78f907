"""OTF2 reader and writer: on archives these tests write with the otf2 package (a Score-P-like
ping-pong: locations, comms, MPI events), the writer's round trip, bad inputs, the CLI; and, as
third-party cross-checks, on Score-P's own archive of a ping-pong (../shared/fixtures/otf2)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import otf2
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.converters.otf2 import read_otf2, write_otf2
from minitrace.errors import MinitraceError
from minitrace.model import TraceBuilder
from minitrace.validate import validate
from tests.support.fixtures import SHARED

PINGPONG = SHARED / "otf2" / "scorep_pingpong" / "traces.otf2"
MPI_KINDS = [c for c, n, cat in K.KINDS if cat not in ("meta",)] + [K.CODE["init"],
                                                                      K.CODE["finalize"]]


def _messages_from_otf2(anchor):
    """(rank, kind, peer, tag, bytes) of every MpiSend/MpiRecv, read with the otf2 package alone
    (rank = index of the location in the MPI location group, peers are MPI_COMM_WORLD ranks)."""
    out = []
    with otf2.reader.open(str(anchor)) as tr:
        groups = [g for g in tr.definitions.groups
                  if g.group_type == otf2.GroupType.COMM_LOCATIONS
                  and g.paradigm == otf2.Paradigm.MPI]
        rank = {loc: i for i, loc in enumerate(groups[0].members)}
        for loc, ev in tr.events:
            if isinstance(ev, otf2.events.MpiSend):
                out.append((rank[loc], "send", ev.receiver, ev.msg_tag, ev.msg_length))
            elif isinstance(ev, otf2.events.MpiRecv):
                out.append((rank[loc], "recv", ev.sender, ev.msg_tag, ev.msg_length))
    return out


def _messages_from_trace(data):
    out = []
    for r in range(data.nranks):
        a = data.actions[data.rank_slice(r)]
        for row in a[np.isin(a["kind"], [K.CODE["send"], K.CODE["recv"]])]:
            kind = K.NAME[int(row["kind"])]
            n = row["bytes_sent"] if kind == "send" else row["bytes_recv"]
            out.append((r, kind, int(row["peer"]), int(row["tag"]), int(n)))
    return out


def _same_mpi_actions(x, y, tol):
    assert x.nranks == y.nranks
    for r in range(x.nranks):
        a, b = x.actions[x.rank_slice(r)], y.actions[y.rank_slice(r)]
        a = a[np.isin(a["kind"], MPI_KINDS)]
        b = b[np.isin(b["kind"], MPI_KINDS)]
        for f in ("kind", "flags", "peer", "tag", "comm", "bytes_sent", "bytes_recv", "request",
                  "vec_len"):
            assert np.array_equal(a[f], b[f]), (r, f)
        for f in ("t_start", "t_end"):
            da = a[f] - x.actions["t_start"].min()
            db = b[f] - y.actions["t_start"].min()
            assert np.abs(da - db).max() <= tol, (r, f)
    vx = [x.vectors[o:o + n].tolist() for o, n in zip(x.actions["vec_off"], x.actions["vec_len"])
          if n > 0]
    vy = [y.vectors[o:o + n].tolist() for o, n in zip(y.actions["vec_off"], y.actions["vec_len"])
          if n > 0]
    assert vx == vy


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "minitrace", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


RES = 2_000_000_000                 # ticks per second of a 2 GHz cycle counter, as Score-P's
START = 7 * RES                     # and, like it, not starting at 0
CALL, GAP = 2000, 4000              # ticks in each MPI call (1 us) and between calls (2 us)
SIZES = [1024 << i for i in range(4)]
HOSTS = ["node-a", "node-b"]
MAIN = "int main(int, char**)"
#: (rank, kind, peer, tag, bytes) of every blocking send/recv of the ping-pong, in program order
PINGPONG_MESSAGES = [m for s in SIZES for m in ((0, "send", 1, 10, s), (0, "recv", 1, 20, s))] \
    + [m for s in SIZES for m in ((1, "recv", 0, 10, s), (1, "send", 0, 20, s))]
#: the MPI actions of each rank (rank 1 receives first)
PINGPONG_KINDS = [["init", "comm_size", *pair * len(SIZES), "irecv", "isend", "waitall", "sendrecv",
                   "allreduce", "bcast", "barrier", "finalize"]
                  for pair in (["send", "recv"], ["recv", "send"])]


def scorep_pingpong(folder) -> Path:
    """A 2-rank MPI ping-pong as Score-P records it, written with the otf2 package's writer.

    Definitions: a system tree (machine, a node per rank), per rank a location group
    ``MPI Rank r`` holding a ``Master thread`` location, the MPI COMM_LOCATIONS group, comms
    MPI_COMM_WORLD, MPI_COMM_SELF and one of both ranks in reverse order; MPI regions and
    ``main``.  Events per rank: main, MPI_Init, MPI_Comm_rank/size, len(SIZES) round trips
    (rank 0 sends with tag 10, rank 1 answers with tag 20), MPI_Irecv + MPI_Isend (tag 30, 512
    bytes) completed by MPI_Waitall, MPI_Sendrecv on the reversed comm (tag 40, 64 bytes, peers
    as ranks of that comm), MPI_Allreduce of 8 bytes, MPI_Bcast of 100 bytes from rank 1 and
    MPI_Barrier with Score-P's collective sizes (totals over all peers), MPI_Finalize.
    Returns the anchor file."""
    with otf2.writer.open(str(folder), timer_resolution=RES) as tr:
        d = tr.definitions
        machine = d.system_tree_node("machine")
        locs = [d.location("Master thread", group=d.location_group(
                    f"MPI Rank {r}", system_tree_parent=d.system_tree_node(HOSTS[r],
                                                                            parent=machine)))
                for r in range(2)]
        d.group("MPI", group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=otf2.Paradigm.MPI,
                members=locs)

        def comm(name, members, group_type=otf2.GroupType.COMM_GROUP):
            return d.comm(name, group=d.group(name, group_type=group_type,
                                              paradigm=otf2.Paradigm.MPI, members=members))
        world = comm("MPI_COMM_WORLD", locs)
        comm("MPI_COMM_SELF", [], otf2.GroupType.COMM_SELF)
        rev = comm("reversed", locs[::-1])             # world rank 1 is its rank 0
        regions = {}

        def region(name):
            if name not in regions:
                regions[name] = d.region(name, region_role=otf2.RegionRole.FUNCTION,
                                         paradigm=otf2.Paradigm.MPI)
            return regions[name]
        main = d.region(MAIN, region_role=otf2.RegionRole.FUNCTION,
                        paradigm=otf2.Paradigm.COMPILER)
        E = otf2.events
        for r in range(2):
            w = tr.event_writer_from_location(locs[r])
            other = 1 - r
            t = [START + 500 * r]

            def call(name, *events):
                """Enter, ``events(time)`` one tick apart, Leave; then the gap to the next."""
                reg = region(name)
                w(E.Enter(t[0], reg))
                for i, ev in enumerate(events, 1):
                    w(ev(t[0] + i))
                w(E.Leave(t[0] + CALL, reg))
                t[0] += CALL + GAP

            w(E.Enter(t[0], main))
            t[0] += GAP
            call("MPI_Init")
            call("MPI_Comm_rank")
            call("MPI_Comm_size")
            for size in SIZES:
                send = ("MPI_Send", lambda t, n=size: E.MpiSend(t, other, world, 10 + 10 * r, n))
                recv = ("MPI_Recv", lambda t, n=size: E.MpiRecv(t, other, world, 20 - 10 * r, n))
                for name, ev in (send, recv) if r == 0 else (recv, send):
                    call(name, ev)
            call("MPI_Irecv", lambda t: E.MpiIrecvRequest(t, 1))
            call("MPI_Isend", lambda t: E.MpiIsend(t, other, world, 30, 512, 2))
            call("MPI_Waitall", lambda t: E.MpiIsendComplete(t, 2),
                 lambda t: E.MpiIrecv(t, other, world, 30, 512, 1))
            call("MPI_Sendrecv", lambda t: E.MpiSend(t, r, rev, 40, 64),
                 lambda t: E.MpiRecv(t, r, rev, 40, 64))
            undefined = otf2.Undefined.UINT32.value
            call("MPI_Allreduce", E.MpiCollectiveBegin,
                 lambda t: E.MpiCollectiveEnd(t, otf2.CollectiveOp.ALLREDUCE, world, undefined,
                                              2 * 8, 2 * 8))
            call("MPI_Bcast", E.MpiCollectiveBegin,
                 lambda t: E.MpiCollectiveEnd(t, otf2.CollectiveOp.BCAST, world, 1,
                                              2 * 100 if r == 1 else 0, 100))
            call("MPI_Barrier", E.MpiCollectiveBegin,
                 lambda t: E.MpiCollectiveEnd(t, otf2.CollectiveOp.BARRIER, world, undefined,
                                              0, 0))
            call("MPI_Finalize")
            w(E.Leave(t[0], main))
    return Path(folder) / "traces.otf2"


def _rows(data, r):
    a = data.actions[data.rank_slice(r)]
    return a[a["kind"] != K.CODE["compute"]]


def _vector(data, row):
    return data.vectors[row["vec_off"]:row["vec_off"] + row["vec_len"]].tolist()


@pytest.fixture(scope="module")
def pingpong(tmp_path_factory):
    return scorep_pingpong(tmp_path_factory.mktemp("scorep"))


# -- archives written by the tests with the otf2 package -----------------------------------------
def test_pingpong_messages_match_the_archive(pingpong):
    data = read_otf2(pingpong)
    assert data.nranks == 2
    got = _messages_from_trace(data)
    assert got == PINGPONG_MESSAGES
    # the otf2 reader's own view (events in time order over both ranks; without the
    # sendrecv's messages, tag 40, whose peers it gives as ranks of the reversed comm)
    want = [m for m in _messages_from_otf2(pingpong) if m[3] != 40]
    assert [m for m in want if m[0] == 0] + [m for m in want if m[0] == 1] == got


def test_pingpong_structure_and_validation(pingpong):
    data = read_otf2(pingpong)
    rep = validate(data)
    assert rep.ok, rep.lines()
    for r in range(2):
        assert [K.NAME[int(k)] for k in _rows(data, r)["kind"]] == PINGPONG_KINDS[r]
    m = data.meta
    assert m["volume_unit"] == "seconds" and m["source_format"] == "otf2"
    assert m["dropped_mpi_calls"] == {"MPI_Comm_rank": 2}         # no kind in the model
    assert m["comm_calls_without_comms"] == {"comm_size": 2}     # kept, as the recorder does
    assert m["hosts"] == HOSTS and m["rank_to_node"] == [0, 1]
    assert m["clock_resolution"] == pytest.approx(1 / RES)
    assert m["complete"] is True and m["user_regions_dropped"] == 2
    a = data.actions[data.rank_slice(1)]
    assert K.NAME[int(a["kind"][0])] == "init"
    # times from the first event (rank 0 entering main): rank 1 enters MPI_Init 500 ticks later
    assert a["t_start"][0] == pytest.approx((500 + GAP) / RES)
    assert a["t_end"][0] - a["t_start"][0] == pytest.approx(CALL / RES)
    # compute: the gaps from MPI_Init to MPI_Comm_size, around the dropped Comm_rank
    assert K.NAME[int(a["kind"][1])] == "compute" and K.NAME[int(a["kind"][2])] == "comm_size"
    assert a["volume"][1] == pytest.approx(2 * GAP / RES)
    assert a["t_end"][1] - a["t_start"][1] == pytest.approx((2 * GAP + CALL) / RES)
    comp = data.actions[data.actions["kind"] == K.CODE["compute"]]["volume"]
    assert sorted(set(np.round(comp * RES).astype(int).tolist())) == [GAP, 2 * GAP]


def test_pingpong_requests_comms_and_collective_sizes(pingpong):
    """Requests from MpiIrecvRequest/MpiIsend, resolved at their completion; comm ranks of the
    reversed comm as world ranks; Score-P's collective totals as per-call bytes."""
    data = read_otf2(pingpong)
    assert {k: v.tolist() for k, v in data.comms.items()} == {0: [0, 1], 1: [1, 0]}
    for r in range(2):
        rows = {K.NAME[int(x["kind"])]: x for x in _rows(data, r)}
        other = 1 - r
        ir, isend, wall = rows["irecv"], rows["isend"], rows["waitall"]
        assert (ir["peer"], ir["tag"], ir["bytes_recv"], ir["request"]) == (other, 30, 512, 1)
        assert (isend["peer"], isend["tag"], isend["bytes_sent"], isend["request"]) == \
            (other, 30, 512, 2)
        assert _vector(data, wall) == [2, 1]
        sr = rows["sendrecv"]
        assert (sr["peer"], sr["comm"], sr["tag"], sr["bytes_sent"], sr["bytes_recv"]) == \
            (other, 1, 40, 64, 64)
        assert _vector(data, sr) == [other, 40]
        assert (rows["allreduce"]["bytes_sent"], rows["allreduce"]["bytes_recv"]) == (8, 8)
        bc = rows["bcast"]
        assert (bc["peer"], bc["bytes_sent"], bc["bytes_recv"]) == \
            ((1, 100, 0) if r == 1 else (1, 0, 100))


def test_keep_regions_marks_main(pingpong):
    data = read_otf2(pingpong, keep_regions=True)
    assert data.strings == [MAIN]
    for r in range(2):
        a = data.actions[data.rank_slice(r)]
        assert K.NAME[int(a["kind"][0])] == "region_begin"
        assert K.NAME[int(a["kind"][-1])] == "region_end"
    assert data.meta["complete"] is True
    assert validate(data).ok


def test_pingpong_round_trip(pingpong, tmp_path):
    data = read_otf2(pingpong)
    assert write_otf2(data, tmp_path / "a") == {}
    back = read_otf2(tmp_path / "a" / "traces.otf2")
    _same_mpi_actions(data, back, tol=1e-9)
    assert validate(back).ok
    assert back.meta["hosts"] == HOSTS


def test_anchor_without_its_definitions(pingpong, tmp_path):
    shutil.copy(pingpong, tmp_path / "traces.otf2")
    with pytest.raises(MinitraceError) as e:
        read_otf2(tmp_path / "traces.otf2")
    assert str(tmp_path / "traces.def") in str(e.value) and "\n" not in str(e.value)


def test_cli_convert_both_ways(pingpong, tmp_path):
    out = tmp_path / "p.h5"
    r = _cli("convert", pingpong.parent, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "valid" in r.stdout
    with minitrace.open(str(out)) as t:
        assert len(t.actions(kind="send")) == 2 * len(SIZES)
        assert t.meta["source_format"] == "otf2"
    r = _cli("convert", out, "--to", "otf2", "-o", tmp_path / "arch")
    assert r.returncode == 0, r.stderr
    back = read_otf2(tmp_path / "arch" / "traces.otf2")
    assert int((back.actions["kind"] == K.CODE["recv"]).sum()) == 2 * len(SIZES)


def test_cli_minitrace_file_without_to_says_so(pingpong, tmp_path):
    out = tmp_path / "p.h5"
    assert _cli("convert", pingpong, "-o", out).returncode == 0
    r = _cli("convert", out, "-o", tmp_path / "again.h5")
    assert r.returncode == 1 and "--to otf2" in r.stderr and str(out) in r.stderr


# -- minitrace's writer: round trip, lossy kinds, bad inputs ---------------------------------------
def _synthetic() -> "TraceBuilder":
    """3 ranks exercising every kind the writer expresses, with times, a sub-communicator,
    wildcard receives and MPI_IN_PLACE (flags no OTF2 event says: an Enter attribute)."""
    b = TraceBuilder(3, {"volume_unit": "seconds"})
    b.add_comm(1, [2, 0])
    clock = [0.0] * 3

    def add(r, kind, dt=1e-6, **kw):
        b.add(r, kind, t_start=clock[r], t_end=clock[r] + dt, **kw)
        clock[r] += dt + 2e-6

    for r in range(3):
        add(r, "init")
    # ring of isend/irecv + waitall; wait one, test failing then completing
    for r in range(3):
        nxt, prv = (r + 1) % 3, (r - 1) % 3
        add(r, "irecv", peer=prv, tag=7, bytes_recv=100 + prv, request=1)
        add(r, "isend", peer=nxt, tag=7, bytes_sent=100 + r, request=2)
        add(r, "test", request=1)
        add(r, "waitall", vector=[1, 2])
        add(r, "isend", peer=nxt, tag=8, bytes_sent=5, request=3)
        add(r, "wait", request=3)
        add(r, "irecv", peer=prv, tag=8, bytes_recv=5, request=4, flags=K.FLAG_ANY_TAG)
        add(r, "test", request=4, flags=K.FLAG_COMPLETED)
        add(r, "compute", volume=3e-6)
        add(r, "sendrecv", peer=nxt, tag=9, bytes_sent=64, bytes_recv=64, vector=[prv, 9])
    add(0, "ssend", peer=1, tag=3, bytes_sent=12)
    add(1, "recv", peer=0, tag=3, bytes_recv=12, flags=K.FLAG_ANY_SOURCE | K.FLAG_ANY_TAG)
    for r in range(3):
        add(r, "allreduce", bytes_sent=8, bytes_recv=8)
        add(r, "bcast", peer=1, **({"bytes_sent": 40} if r == 1 else {"bytes_recv": 40}))
        add(r, "reduce", peer=0, bytes_sent=16, bytes_recv=16 if r == 0 else 0)
        add(r, "gather", peer=2, bytes_sent=4, bytes_recv=12 if r == 2 else 0)
        add(r, "scatter", peer=0, bytes_sent=12 if r == 0 else 0, bytes_recv=4)
        add(r, "allgather", bytes_sent=4, bytes_recv=12)
        add(r, "alltoall", bytes_sent=24, bytes_recv=24)
        add(r, "scan", bytes_sent=8, bytes_recv=8)
        add(r, "exscan", bytes_sent=8, bytes_recv=8)
        add(r, "reduce_scatter_block", bytes_sent=24, bytes_recv=8)
        add(r, "barrier")
        add(r, "iallreduce", bytes_sent=8, bytes_recv=8, request=5)
        add(r, "wait", request=5)
    for r in (2, 0):
        add(r, "bcast", comm=1, peer=2, **({"bytes_sent": 9} if r == 2 else {"bytes_recv": 9}))
        add(r, "allreduce", comm=1, bytes_sent=16, bytes_recv=16, flags=K.FLAG_IN_PLACE)
    for r in range(3):
        add(r, "finalize")
    return b


def test_synthetic_round_trip(tmp_path):
    data = _synthetic().build()
    assert validate(data).ok, validate(data).lines()
    assert write_otf2(data, tmp_path / "s") == {}
    back = read_otf2(tmp_path / "s")
    _same_mpi_actions(data, back, tol=1e-9)
    assert validate(back).ok, validate(back).lines()
    assert {k: v.tolist() for k, v in back.comms.items()} == {0: [0, 1, 2], 1: [2, 0]}


def test_untimed_trace_gets_a_clock(tmp_path):
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    b.add(0, "compute", volume=0.5)
    b.add(0, "send", peer=1, tag=1, bytes_sent=8)
    b.add(1, "recv", peer=0, tag=1, bytes_recv=8)
    b.add(0, "psend_init", peer=1, tag=2, request=1, vector=[4])
    for r in range(2):
        b.add(r, "finalize")
    data = b.build()
    assert write_otf2(data, tmp_path / "u") == {"psend_init": 1}
    back = read_otf2(tmp_path / "u")
    a = back.actions[back.rank_slice(0)]
    assert [K.NAME[int(k)] for k in a["kind"]] == ["init", "compute", "send", "psend_init",
                                                   "finalize"]
    assert a["volume"][1] == pytest.approx(0.5)
    assert (a["bytes_sent"][2], a["peer"][2]) == (8, 1)


def test_v_collectives_keep_totals_and_are_reported(tmp_path):
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init", t_start=0.0, t_end=1e-6)
        b.add(r, "allgatherv", bytes_sent=4 * (r + 1), bytes_recv=12, vector=[4, 8],
              t_start=2e-6, t_end=3e-6)
        b.add(r, "finalize", t_start=4e-6, t_end=5e-6)
    assert write_otf2(b.build(), tmp_path / "v") == {"allgatherv": 2}
    back = read_otf2(tmp_path / "v")
    rows = np.flatnonzero(back.actions["kind"] == K.CODE["allgatherv"])
    a = back.actions[rows]
    assert a["bytes_sent"].tolist() == [4, 8] and a["bytes_recv"].tolist() == [12, 12]
    # each member's entry is its own total: the vectors come back (tests/test_otf2_vectors.py)
    assert [back.vector(int(r)).tolist() for r in rows] == [[4, 8], [4, 8]]


def test_completions_of_requests_written_as_regions_only_are_reported(tmp_path):
    """Persistent requests are written as regions only (reported); the waits completing them
    lost their request (and waitall its vector) unsaid."""
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "send_init" if r == 0 else "recv_init", peer=1 - r, tag=1, request=0,
              **({"bytes_sent": 8} if r == 0 else {"bytes_recv": 8}))
        b.add(r, "start", request=0, flags=K.FLAG_PERSISTENT)
        b.add(r, "wait", request=0, flags=K.FLAG_PERSISTENT)
        b.add(r, "start", request=0, flags=K.FLAG_PERSISTENT)
        b.add(r, "waitall", vector=[0])
        b.add(r, "request_free", request=0)
        b.add(r, "finalize")
    assert write_otf2(b.build(), tmp_path / "p") == {
        "send_init": 1, "recv_init": 1, "start": 4, "request_free": 2,
        "wait, waitany, waitall, waitsome, test, testany, testall, testsome (of requests "
        "written as regions only, e.g. persistent or partitioned ones: read back without "
        "them)": 4}


def test_writer_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "x").write_text("keep me")
    with pytest.raises(MinitraceError, match=str(tmp_path)):
        write_otf2(_synthetic().build(), tmp_path)


@pytest.mark.parametrize("content,name", [(b"hello, not otf2\n", "bogus.otf2"),
                                          (b"\x00" * 64, "zeros.otf2"),
                                          (b"1 2 3\n", "notes.txt")])
def test_bad_anchor_is_one_line_error_naming_the_file(tmp_path, content, name):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(MinitraceError) as e:
        read_otf2(p)
    msg = str(e.value)
    assert str(p) in msg and "\n" not in msg


def test_cli_bad_input_one_line(tmp_path):
    p = tmp_path / "bogus.otf2"
    p.write_text("not an archive")
    r = _cli("convert", p, "-o", tmp_path / "x.h5")
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and str(p) in r.stderr
    assert "Traceback" not in r.stderr


# -- third-party cross-checks: Score-P's archive of a 2-rank ping-pong ---------------------------
@pytest.mark.thirdparty
def test_scorep_pingpong_messages_match_the_archive():
    data = read_otf2(PINGPONG)
    assert data.nranks == 2
    got = _messages_from_trace(data)
    want = _messages_from_otf2(PINGPONG)
    # order within a rank is program order in both; compare rank by rank
    assert sorted(got) == sorted(want)
    for r in (0, 1):
        assert [m for m in got if m[0] == r] == [m for m in want if m[0] == r]
    kinds = [m[1] for m in got]
    assert kinds.count("send") == 16 and kinds.count("recv") == 16
    # by hand from the event listing: rank 0 sends with tag 10, rank 1 answers with tag 20,
    # sizes 16 KiB doubling up to 2 MiB, 8 round trips
    sizes = [16384 << i for i in range(8)]
    assert [m[4] for m in got if m[0] == 0 and m[1] == "send"] == sizes
    assert {(m[0], m[2], m[3]) for m in got if m[1] == "send"} == {(0, 1, 10), (1, 0, 20)}


@pytest.mark.thirdparty
def test_scorep_pingpong_structure_and_validation():
    data = read_otf2(PINGPONG)
    rep = validate(data)
    assert rep.ok, rep.lines()
    for r in range(2):
        kinds = [K.NAME[int(k)] for k in data.actions[data.rank_slice(r)]["kind"]]
        mpi = [k for k in kinds if k != "compute"]
        assert mpi[0] == "init" and mpi[-1] == "finalize"
        assert len(mpi) == 19                                   # MPI_Comm_size kept
    assert data.meta["volume_unit"] == "seconds"
    assert data.meta["source_format"] == "otf2"
    assert data.meta["dropped_mpi_calls"] == {"MPI_Comm_rank": 2}
    assert data.meta["comm_calls_without_comms"] == {"comm_size": 2}
    assert data.meta["hosts"] == ["quartz10"]
    res = data.meta["clock_resolution"]
    assert res == pytest.approx(1 / 2095197216)
    a = data.actions
    comp = a[a["kind"] == K.CODE["compute"]]
    assert (comp["volume"] > 0).all()
    assert np.all(a["t_end"] >= a["t_start"])


@pytest.mark.thirdparty
def test_scorep_keep_regions_marks_main():
    data = read_otf2(PINGPONG, keep_regions=True)
    assert data.strings == ["int main(int, char**)"]
    a = data.actions[data.rank_slice(0)]
    assert K.NAME[int(a["kind"][0])] == "region_begin"
    assert K.NAME[int(a["kind"][-1])] == "region_end"
    assert data.meta["complete"] is True
    assert validate(data).ok


@pytest.mark.thirdparty
def test_scorep_fixture_round_trip(tmp_path):
    data = read_otf2(PINGPONG)
    assert write_otf2(data, tmp_path / "a") == {}
    back = read_otf2(tmp_path / "a" / "traces.otf2")
    _same_mpi_actions(data, back, tol=1e-9)
    assert validate(back).ok


@pytest.mark.thirdparty
def test_scorep_anchor_without_its_definitions(tmp_path):
    shutil.copy(PINGPONG, tmp_path / "traces.otf2")
    with pytest.raises(MinitraceError) as e:
        read_otf2(tmp_path / "traces.otf2")
    assert str(tmp_path / "traces.def") in str(e.value) and "\n" not in str(e.value)


@pytest.mark.thirdparty
def test_scorep_cli_convert_both_ways(tmp_path):
    out = tmp_path / "p.h5"
    r = _cli("convert", PINGPONG.parent, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "valid" in r.stdout
    with minitrace.open(str(out)) as t:
        sends = t.actions(kind="send")
        assert len(sends) == 16
        assert t.meta["source_format"] == "otf2"
    r = _cli("convert", out, "--to", "otf2", "-o", tmp_path / "arch")
    assert r.returncode == 0, r.stderr
    back = read_otf2(tmp_path / "arch" / "traces.otf2")
    assert int((back.actions["kind"] == K.CODE["recv"]).sum()) == 16


@pytest.mark.thirdparty
def test_scorep_cli_minitrace_file_without_to_says_so(tmp_path):
    out = tmp_path / "p.h5"
    assert _cli("convert", PINGPONG, "-o", out).returncode == 0
    r = _cli("convert", out, "-o", tmp_path / "again.h5")
    assert r.returncode == 1 and "--to otf2" in r.stderr and str(out) in r.stderr


# -- persistent requests, sub-communicators, PAPI counters ---------------------------------------
class Archive:
    """A Score-P-like archive of ``n`` ranks written with the otf2 package: per rank a location
    group and master location, the MPI location group, MPI_COMM_WORLD and the comms named in
    ``comms`` (name -> world ranks in comm rank order, or "self" for a COMM_SELF-type group,
    Score-P's group of every one-member communicator), MPI regions, and optionally PAPI metrics
    (``metrics``: member names) written before every Enter and Leave, as Score-P does."""

    def __init__(self, folder, n, comms=None, metrics=(), chunk=1 << 20):
        self.folder, self.n = Path(folder), n
        self._cm = otf2.writer.open(str(folder), timer_resolution=1_000_000,
                                    chunk_size_events=chunk)
        self._tr = self._cm.__enter__()
        d = self.defs = self._tr.definitions
        node = d.system_tree_node("node")
        self.locs = [d.location("Master thread", group=d.location_group(
            f"MPI Rank {r}", system_tree_parent=node)) for r in range(n)]
        d.group("MPI", group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=otf2.Paradigm.MPI,
                members=self.locs)
        self.comms = {}
        for name, members in {"MPI_COMM_WORLD": list(range(n)), **(comms or {})}.items():
            kind = otf2.GroupType.COMM_SELF if members == "self" else otf2.GroupType.COMM_GROUP
            g = d.group(name, group_type=kind, paradigm=otf2.Paradigm.MPI,
                        members=[] if members == "self" else [self.locs[m] for m in members])
            self.comms[name] = d.comm(name, group=g)
        self.metric = d.metric_class(
            [d.metric_member(m, metric_type=otf2.MetricType.PAPI, unit="#",
                             metric_mode=otf2.MetricMode.ACCUMULATED_START) for m in metrics],
            occurrence=otf2.MetricOccurrence.SYNCHRONOUS_STRICT) if metrics else None
        self.regions = {}
        self.writers = [self._tr.event_writer_from_location(loc) for loc in self.locs]
        self.t = [0] * n
        self.counts = [[0] * len(metrics) for _ in range(n)]

    def call(self, r, name, *events, work=(), dt=10):
        """``name`` on rank ``r``: Enter, ``events`` (functions of the time), Leave; before the
        call, ``dt`` microseconds outside MPI during which the counters grow by ``work``."""
        if name not in self.regions:
            self.regions[name] = self.defs.region(name, region_role=otf2.RegionRole.FUNCTION,
                                                  paradigm=otf2.Paradigm.MPI)
        w, E = self.writers[r], otf2.events
        self.t[r] += dt
        self.counts[r] = [c + x for c, x in zip(self.counts[r], work)] or self.counts[r]
        self._metrics(r)
        w(E.Enter(self.t[r], self.regions[name]))
        for i, ev in enumerate(events, 1):
            w(ev(self.t[r] + i))
        self.t[r] += 5
        self.counts[r] = [c + 1 for c in self.counts[r]]      # what the call itself counts
        self._metrics(r)
        w(E.Leave(self.t[r], self.regions[name]))

    def _metrics(self, r):
        if self.metric is not None:
            self.writers[r](otf2.events.Metric(self.t[r], self.metric, self.counts[r]))

    def close(self) -> Path:
        self._cm.__exit__(None, None, None)
        return self.folder / "traces.otf2"


def test_persistent_requests(tmp_path):
    """Score-P writes a persistent send's MpiIsend, and a persistent receive's
    MpiIrecvRequest, inside MPI_Start (with the request's id), completions in the waits."""
    arch = Archive(tmp_path, 2)
    world, E = arch.comms["MPI_COMM_WORLD"], otf2.events
    for r in range(2):
        other = 1 - r
        arch.call(r, "MPI_Init")
        arch.call(r, "MPI_Send_init")
        arch.call(r, "MPI_Recv_init")
        for _ in range(3):
            arch.call(r, "MPI_Start", lambda t: E.MpiIsend(t, other, world, 4, 64 + r, 7))
            arch.call(r, "MPI_Start", lambda t: E.MpiIrecvRequest(t, 9))
            arch.call(r, "MPI_Waitany",
                      lambda t: E.MpiIrecv(t, other, world, 4, 64 + other, 9))
            arch.call(r, "MPI_Waitany", lambda t: E.MpiIsendComplete(t, 7))
        arch.call(r, "MPI_Finalize")
    data = read_otf2(arch.close())
    assert validate(data).ok, validate(data).lines()
    assert "unmapped_events" not in data.meta
    assert data.meta["source_messages"] == {"sent": 6, "received": 6}
    for r in range(2):
        rows = _rows(data, r)
        k = [K.NAME[int(x)] for x in rows["kind"]]
        si, ri = rows[k.index("send_init")], rows[k.index("recv_init")]
        assert (si["peer"], si["tag"], si["bytes_sent"], si["request"]) == (1 - r, 4, 64 + r, 7)
        assert (ri["peer"], ri["tag"], ri["bytes_recv"], ri["request"]) == (1 - r, 4, 65 - r, 9)
        st = rows[rows["kind"] == K.CODE["start"]]
        assert st["request"].tolist() == [7, 9] * 3 and (st["flags"] & K.FLAG_PERSISTENT).all()
        assert rows[rows["kind"] == K.CODE["waitany"]]["request"].tolist() == [9, 7] * 3


def test_a_cancelled_receive_as_scorep_writes_it(tmp_path):
    """Score-P writes nothing in MPI_Cancel and an MpiRequestCancelled, not a message, in the
    completion of a receive it cancelled: the receive is one of no message (peer -1, 0 bytes),
    which a converted trace's check of peers took for a message lost by the converter
    (p2p-without-peer); the source's cancellations are now counted with its MPI_PROC_NULL
    records."""
    arch = Archive(tmp_path, 2)
    world, E = arch.comms["MPI_COMM_WORLD"], otf2.events
    for r in range(2):
        arch.call(r, "MPI_Init")
    arch.call(0, "MPI_Send", lambda t: E.MpiSend(t, 1, world, 5, 8))
    arch.call(1, "MPI_Irecv", lambda t: E.MpiIrecvRequest(t, 3))
    arch.call(1, "MPI_Wait", lambda t: E.MpiIrecv(t, 0, world, 5, 8, 3))
    arch.call(1, "MPI_Irecv", lambda t: E.MpiIrecvRequest(t, 4))
    arch.call(1, "MPI_Cancel")
    arch.call(1, "MPI_Wait", lambda t: E.MpiRequestCancelled(t, 4))
    for r in range(2):
        arch.call(r, "MPI_Finalize")
    data = read_otf2(arch.close())
    assert validate(data).ok, validate(data).lines()
    assert data.meta["source_messages"] == {"sent": 1, "received": 1, "cancelled": 1}
    rows = _rows(data, 1)
    irecv = rows[rows["kind"] == K.CODE["irecv"]]
    assert irecv["peer"].tolist() == [0, -1] and irecv["bytes_recv"].tolist() == [8, 0]
    assert rows[rows["kind"] == K.CODE["wait"]]["request"].tolist() == [3, 4]


def test_a_cancelled_send_does_not_hide_a_peerless_receive(tmp_path):
    """The reviewer of session 33 (L2): every MpiRequestCancelled raised validate's allowance
    for peerless receives, a cancelled send's too (it keeps its peer), so an irecv whose
    message the archive lacks went unreported.  Only the cancelled receives read back without
    a peer count."""
    arch = Archive(tmp_path, 2)
    world, E = arch.comms["MPI_COMM_WORLD"], otf2.events
    for r in range(2):
        arch.call(r, "MPI_Init")
    arch.call(0, "MPI_Isend", lambda t: E.MpiIsend(t, 1, world, 9, 8, 7))
    arch.call(0, "MPI_Cancel")
    arch.call(0, "MPI_Wait", lambda t: E.MpiRequestCancelled(t, 7))
    arch.call(1, "MPI_Irecv", lambda t: E.MpiIrecvRequest(t, 3))
    for r in range(2):
        arch.call(r, "MPI_Finalize")
    data = read_otf2(arch.close())
    lost = [p for p in validate(data).problems if p.category == "p2p-without-peer"]
    assert [(p.rank, K.NAME[int(data.actions["kind"][data.rank_slice(1)][p.index])])
            for p in lost] == [(1, "irecv")]
    assert data.meta["source_messages"] == {"sent": 1, "received": 0}


def _recv_and_cancel(folder, attribute_type, creator):
    """A Score-P-like archive of ``creator`` whose MPI_Recv and MPI_Cancel Enters carry
    another tool's attributes named as minitrace's, of ``attribute_type`` (STRING or
    minitrace's own types)."""
    arch = Archive(folder, 2)
    arch._tr.creator = creator
    world, E, d = arch.comms["MPI_COMM_WORLD"], otf2.events, arch.defs

    def attribute(name, typ, value, text):
        if attribute_type == "STRING":
            return d.attribute(name, "another tool's", otf2.Type.STRING), text
        return d.attribute(name, "another tool's", getattr(otf2.Type, typ)), value

    flags = dict([attribute("MPI_Flags", "UINT64", 1, "blocking")])
    cancel = dict([attribute("MPI_Request", "UINT64", 4, "four"),
                   attribute("MPI_Source", "INT64", 0, "zero")])
    for r in range(2):
        arch.call(r, "MPI_Init")
    arch.call(0, "MPI_Send", lambda t: E.MpiSend(t, 1, world, 5, 8))
    arch.call(0, "MPI_Send", lambda t: E.MpiSend(t, 1, world, 5, 8))
    regions = [d.region(n, region_role=otf2.RegionRole.FUNCTION, paradigm=otf2.Paradigm.MPI)
               for n in ("MPI_Recv", "MPI_Cancel")]
    w, t = arch.writers[1], arch.t[1]
    w(E.Enter(t + 10, regions[0], attributes=flags))
    w(E.MpiRecv(t + 11, 0, world, 5, 8))
    w(E.Leave(t + 12, regions[0]))
    arch.t[1] += 12
    arch.call(1, "MPI_Irecv", lambda t: E.MpiIrecvRequest(t, 4))
    w(E.Enter(arch.t[1] + 10, regions[1], attributes=cancel))
    w(E.Leave(arch.t[1] + 12, regions[1]))
    arch.t[1] += 12
    arch.call(1, "MPI_Wait", lambda t: E.MpiIrecv(t, 0, world, 5, 8, 4))
    for r in range(2):
        arch.call(r, "MPI_Finalize")
    return arch.close()


@pytest.mark.parametrize("attribute_type, creator", [
    ("STRING", f"minitrace {minitrace.__version__}"), ("minitrace's", "Score-P 7.1")])
def test_another_tools_attributes_named_as_minitraces_are_not_read(tmp_path, attribute_type,
                                                                    creator):
    """The reviewer of session 33 (M4): the reader took minitrace's Enter attributes by name
    alone: another tool's STRING "MPI_Flags" on an MPI_Recv set MPI_ANY_SOURCE, and its
    "MPI_Request"/"MPI_Source" on an MPI_Cancel made the cancel COMPLETED with a request.  Now
    they are read with their type, and only from archives minitrace wrote (its creator)."""
    data = read_otf2(_recv_and_cancel(tmp_path, attribute_type, creator))
    rows = _rows(data, 1)
    assert rows[rows["kind"] == K.CODE["recv"]]["flags"].tolist() == [0]
    cancel = rows[rows["kind"] == K.CODE["cancel"]]
    assert cancel["request"].tolist() == [-1] and cancel["peer"].tolist() == [-1]
    assert not cancel["flags"][0] & K.FLAG_COMPLETED
    assert validate(data).ok, validate(data).lines()


def test_a_communicator_a_program_named_intercommunicator(tmp_path):
    """The reviewer of session 33 (L1): a communicator named "intercommunicator 1" (a Score-P
    program's MPI_Comm_set_name) was read as one of minitrace's intercommunicators: INTERCOMM,
    and its collectives' sizes taken raw rather than by Score-P's rules (the root's 16 B
    total read back as 16 B sent)."""
    arch = Archive(tmp_path, 2, comms={"intercommunicator 1": [0, 1]})
    c, E = arch.comms["intercommunicator 1"], otf2.events
    for r in range(2):
        arch.call(r, "MPI_Init")
    for r in range(2):                  # Score-P's totals of an 8-byte bcast from rank 0 of 2
        arch.call(r, "MPI_Bcast", lambda t: E.MpiCollectiveBegin(t),
                  lambda t, r=r: E.MpiCollectiveEnd(t, otf2.CollectiveOp.BCAST, c, 0,
                                                    16 if r == 0 else 0, 8))
    for r in range(2):
        arch.call(r, "MPI_Finalize")
    data = read_otf2(arch.close())
    b = data.actions[data.actions["kind"] == K.CODE["bcast"]]
    assert b["flags"].tolist() == [0, 0]
    assert b["bytes_sent"].tolist() == [8, 0] and b["bytes_recv"].tolist() == [0, 8]
    assert validate(data).ok, validate(data).lines()


def test_sub_communicators_and_self(tmp_path):
    """Collectives on comms from MPI_Comm_split (the even and the odd ranks of 4, given as
    ranks of the world in reverse order for the odd ones) and on a one-member COMM_SELF-type
    comm (Score-P's group for every such communicator) each get a communicator of their own,
    members as world ranks; roots and peers are translated."""
    comms = {"even": [0, 2], "odd": [3, 1], "self-like": "self", "dup": [0, 1, 2, 3]}
    arch = Archive(tmp_path, 4, comms)
    E, C = otf2.events, arch.comms
    undef = otf2.Undefined.UINT32.value
    for r in range(4):
        mine = C["even"] if r % 2 == 0 else C["odd"]
        arch.call(r, "MPI_Init")
        arch.call(r, "MPI_Comm_split")
        # bcast of 8 bytes from comm rank 1 (world 2 in even, world 1 in odd)
        root = r in (1, 2)
        arch.call(r, "MPI_Bcast", E.MpiCollectiveBegin, lambda t: E.MpiCollectiveEnd(
            t, otf2.CollectiveOp.BCAST, mine, 1, 16 if root else 0, 8))
        arch.call(r, "MPI_Allreduce", E.MpiCollectiveBegin, lambda t: E.MpiCollectiveEnd(
            t, otf2.CollectiveOp.ALLREDUCE, C["self-like"], undef, 4, 4))
        arch.call(r, "MPI_Barrier", E.MpiCollectiveBegin, lambda t: E.MpiCollectiveEnd(
            t, otf2.CollectiveOp.BARRIER, C["dup"], undef, 0, 0))
        # a message within the odd/even comm: comm rank 0 sends to comm rank 1
        pos = [0, 2].index(r) if r % 2 == 0 else [3, 1].index(r)
        if pos == 0:
            arch.call(r, "MPI_Send", lambda t: E.MpiSend(t, 1, mine, 3, 12))
        else:
            arch.call(r, "MPI_Recv", lambda t: E.MpiRecv(t, 0, mine, 3, 12))
        arch.call(r, "MPI_Finalize")
    data = read_otf2(arch.close())
    assert validate(data).ok, validate(data).lines()
    comm_of = {k: v.tolist() for k, v in data.comms.items()}
    assert comm_of[0] == [0, 1, 2, 3]
    assert sorted(comm_of.values()) == sorted([[0, 1, 2, 3], [0, 2], [3, 1], [0, 1, 2, 3], [0],
                                               [1], [2], [3]])
    for r in range(4):
        rows = {K.NAME[int(x["kind"])]: x for x in _rows(data, r)}
        bc, ar, ba = rows["bcast"], rows["allreduce"], rows["barrier"]
        assert comm_of[int(bc["comm"])] == ([0, 2] if r % 2 == 0 else [3, 1])
        assert bc["peer"] == (2 if r % 2 == 0 else 1)
        assert (bc["bytes_sent"], bc["bytes_recv"]) == ((8, 0) if r in (1, 2) else (0, 8))
        assert comm_of[int(ar["comm"])] == [r] and (ar["bytes_sent"], ar["bytes_recv"]) == (4, 4)
        assert ba["comm"] != 0 and comm_of[int(ba["comm"])] == [0, 1, 2, 3]
        p2p = rows.get("send", rows.get("recv"))
        assert p2p["peer"] == {0: 2, 2: 0, 3: 1, 1: 3}[r]


@pytest.mark.parametrize("metrics,unit", [(("PAPI_TOT_CYC", "PAPI_TOT_INS"), "instructions"),
                                          (("PAPI_TOT_CYC",), "cycles"), ((), "seconds")])
def test_papi_counters_make_the_compute_volume(tmp_path, metrics, unit):
    arch = Archive(tmp_path, 2, metrics=metrics)
    for r in range(2):
        arch.call(r, "MPI_Init")
        # 1000 cycles and 300 instructions per compute phase (in metric order), 50 us
        arch.call(r, "MPI_Barrier", work=[1000, 300][:len(metrics)] if metrics[:1] == (
            "PAPI_TOT_CYC",) else [], dt=50)
        arch.call(r, "MPI_Comm_rank", work=[1000, 300][:len(metrics)], dt=50)
        arch.call(r, "MPI_Finalize", work=[1000, 300][:len(metrics)], dt=50)
    data = read_otf2(arch.close())
    comp = data.actions[data.actions["kind"] == K.CODE["compute"]]
    assert data.meta["volume_unit"] == unit
    per = {"instructions": 300, "cycles": 1000}.get(unit)
    if per is None:
        assert comp["volume"].tolist() == pytest.approx([50e-6, 100e-6] * 2)
        assert data.meta["volume_source"].startswith("time")
    else:
        # the gap around the dropped MPI_Comm_rank adds up its two pieces, without the
        # count inside the dropped call
        assert comp["volume"].tolist() == [per, 2 * per] * 2
        assert data.meta["volume_source"].startswith("PAPI_TOT_" + ("INS" if per == 300
                                                                     else "CYC"))


# -- damaged archives: errors name the file, --keep-going keeps what is readable ------------------
@pytest.fixture()
def long_archive(tmp_path):
    """2 ranks, rank 1 making 12000 calls: its events fill two 256 KiB chunks."""
    arch = Archive(tmp_path / "a", 2, chunk=256 * 1024)
    for r in range(2):
        arch.call(r, "MPI_Init")
        for _ in range(12000 if r == 1 else 10):
            arch.call(r, "MPI_Barrier")
        arch.call(r, "MPI_Finalize")
    anchor = arch.close()
    assert (anchor.parent / "traces" / "1.evt").stat().st_size > 256 * 1024
    return anchor


def _one_line(e, path):
    msg = str(e.value)
    assert str(path) in msg and "\n" not in msg
    return msg


@pytest.mark.parametrize("missing", ["traces.def", "traces/1.evt"])
def test_missing_definitions_or_events_name_the_file(long_archive, missing, capfd):
    (long_archive.parent / missing).unlink()
    with pytest.raises(MinitraceError) as e:
        read_otf2(long_archive, keep_going=True)
    _one_line(e, long_archive.parent / missing)
    assert "[OTF2]" not in capfd.readouterr().err


def test_missing_local_definitions(long_archive):
    (long_archive.parent / "traces" / "1.def").unlink()
    with pytest.raises(MinitraceError, match="local definitions of rank 1") as e:
        read_otf2(long_archive)
    _one_line(e, long_archive.parent / "traces" / "1.def")
    data = read_otf2(long_archive, keep_going=True)
    assert data.meta["complete"] is False and "1.def" in data.meta["damaged"][0]


@pytest.mark.parametrize("cut,why", [(0, ("OTF2 library message",)),
                                     (100, ("damaged chunk", "OTF2 library message"))],
                         ids=["at-a-chunk-boundary", "inside-a-chunk"])
def test_cut_events(long_archive, tmp_path, capfd, cut, why):
    """A location's events cut after its first chunk (the library reports a missing chunk
    header: summarised, not printed) or inside its last one (the library then either reports
    it or, from one run to the next, starts decoding the location's events over again: time
    going back stops it): one line naming the location's file; --keep-going keeps the events
    read until then."""
    evt = long_archive.parent / "traces" / "1.evt"
    evt.write_bytes(evt.read_bytes()[:256 * 1024 + cut])
    with pytest.raises(MinitraceError, match="cut short") as e:
        read_otf2(long_archive)
    msg = _one_line(e, evt)
    assert any(w in msg for w in why), msg
    assert "[OTF2]" not in capfd.readouterr().err
    data = read_otf2(long_archive, keep_going=True)
    assert data.meta["complete"] is False and "rank(s) 1 short" in data.meta["damaged"][0]
    a = data.actions[data.rank_slice(1)]
    n = int((a["kind"] == K.CODE["barrier"]).sum())
    assert K.NAME[int(a["kind"][0])] == "init" and 0 < n < 12000
    assert "finalize" not in [K.NAME[int(k)] for k in a["kind"]]
    r = _cli("convert", long_archive, "-o", tmp_path / "x.h5")
    assert r.returncode == 1 and str(evt) in r.stderr and r.stderr.count("\n") == 1
    r = _cli("convert", long_archive, "-o", tmp_path / "x.h5", "--keep-going")
    assert r.returncode == 0, r.stderr
    assert "incomplete" in r.stderr and str(evt) in r.stderr
    with minitrace.open(str(tmp_path / "x.h5")) as t:
        assert t.meta["complete"] is False


def test_requests_without_ids(tmp_path):
    """Score-P without its XNONBLOCK events records no request ids: a persistent send's message
    is a plain MpiSend inside MPI_Start, a receive's an MpiRecv inside the wait completing it,
    and a receive's start and a send's wait hold no event.  init -> start -> completion are
    linked in order, as TAU's are, with request ids of the reader's own."""
    arch = Archive(tmp_path, 2)
    world, E = arch.comms["MPI_COMM_WORLD"], otf2.events
    for r in range(2):
        other = 1 - r

        def send(tag, n):
            return lambda t: E.MpiSend(t, other, world, tag, n)

        def recv(tag, n):
            return lambda t: E.MpiRecv(t, other, world, tag, n)
        arch.call(r, "MPI_Init")
        arch.call(r, "MPI_Send_init")          # A: tag 4
        arch.call(r, "MPI_Send_init")          # B: tag 5, first described by its start below
        arch.call(r, "MPI_Recv_init")          # R: tag 4
        for _ in range(3):
            arch.call(r, "MPI_Start", send(4, 64 + r))
            arch.call(r, "MPI_Start")
            arch.call(r, "MPI_Wait", recv(4, 64 + other))
            arch.call(r, "MPI_Wait")
        arch.call(r, "MPI_Start", send(5, 8))
        arch.call(r, "MPI_Wait")
        arch.call(r, "MPI_Recv", recv(5, 8))
        arch.call(r, "MPI_Startall", send(4, 64 + r))          # A and R again
        arch.call(r, "MPI_Waitall", recv(4, 64 + other))
        arch.call(r, "MPI_Finalize")
    data = read_otf2(arch.close())
    assert validate(data).ok, validate(data).lines()
    assert "unmapped_events" not in data.meta
    assert data.meta["source_messages"] == {"sent": 10, "received": 10}
    for r in range(2):
        rows = _rows(data, r)
        k = [K.NAME[int(x)] for x in rows["kind"]]
        a, b = rows[[i for i, x in enumerate(k) if x == "send_init"]]
        rr = rows[k.index("recv_init")]
        # ids in order of first start: A 1, R 2, B 3 (the archive has none of its own)
        assert (a["peer"], a["tag"], a["bytes_sent"], a["request"]) == (1 - r, 4, 64 + r, 1)
        assert (b["peer"], b["tag"], b["bytes_sent"], b["request"]) == (1 - r, 5, 8, 3)
        assert (rr["peer"], rr["tag"], rr["bytes_recv"], rr["request"]) == (1 - r, 4, 65 - r, 2)
        st = rows[rows["kind"] == K.CODE["start"]]
        assert st["request"].tolist() == [1, 2] * 3 + [3]
        assert (st["flags"] & K.FLAG_PERSISTENT).all()
        assert rows[rows["kind"] == K.CODE["wait"]]["request"].tolist() == [2, 1] * 3 + [3]
        assert _vector(data, rows[k.index("startall")]) == [1, 2]
        assert _vector(data, rows[k.index("waitall")]) == [1, 2]


@pytest.mark.parametrize("damage,at_fault", [
    ("delete", "traces.def"), ("truncate", "traces.def"), ("delete", "traces/1.evt"),
    ("truncate", "traces/1.evt"), ("truncate", "traces/1.def"), ("truncate", "traces.otf2")])
def test_cli_damaged_archive_is_one_stderr_line(long_archive, tmp_path, damage, at_fault):
    """What the OTF2 C library prints on a damaged archive (3-10 lines) stays out of the
    terminal: convert's stderr is the one error line, naming the file at fault."""
    f = long_archive.parent / at_fault
    if damage == "delete":
        f.unlink()
    else:
        f.write_bytes(f.read_bytes()[:f.stat().st_size // 2])
    r = _cli("convert", long_archive, "-o", tmp_path / "x.h5")
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("minitrace: error: ") and str(f) in r.stderr, r.stderr
    assert "[OTF2]" not in r.stderr and "Traceback" not in r.stderr
    if at_fault == "traces/1.def":
        data = read_otf2(long_archive, keep_going=True)
        assert data.meta["complete"] is False and str(f) in data.meta["damaged"][0]


def nonblocking_collectives_without_requests(folder, n=10, rounds=3) -> Path:
    """An archive as OTF2 writers other than Score-P write non-blocking collectives (sst-macro's
    test traces): ``n`` ranks, MPI_Comm_split with no event, then ``rounds`` times
    MPI_Iallgather, MPI_Ialltoall, MPI_Iallreduce with no event inside, an MPI_Isend/MPI_Irecv
    pair with Score-P's request events, a blocking MPI_Allreduce, and the waits: three
    MPI_Wait without any event, then an MPI_Waitall whose events complete the isend and the
    irecv; a last round ends with one MPI_Waitall without events for its three collectives."""
    arch = Archive(folder, n)
    world, E = arch.comms["MPI_COMM_WORLD"], otf2.events
    undef = otf2.Undefined.UINT32.value
    for r in range(n):
        right, left = (r + 1) % n, (r - 1) % n
        arch.call(r, "MPI_Init")
        arch.call(r, "MPI_Comm_split")
        for k in range(rounds + 1):
            for name in ("MPI_Iallgather", "MPI_Ialltoall", "MPI_Iallreduce"):
                arch.call(r, name)
            if k == rounds:
                arch.call(r, "MPI_Waitall", dt=40)
                break
            sreq, rreq = 100 + 2 * k, 101 + 2 * k
            arch.call(r, "MPI_Irecv", lambda t, q=rreq: E.MpiIrecvRequest(t, q))
            arch.call(r, "MPI_Isend", lambda t, q=sreq: E.MpiIsend(t, right, world, k, 256, q))
            arch.call(r, "MPI_Allreduce", E.MpiCollectiveBegin, lambda t: E.MpiCollectiveEnd(
                t, otf2.CollectiveOp.ALLREDUCE, world, undef, 8 * n, 8 * n))
            for _ in range(3):
                arch.call(r, "MPI_Wait", dt=40)
            arch.call(r, "MPI_Waitall", lambda t, q=sreq: E.MpiIsendComplete(t, q),
                      lambda t, q=rreq: E.MpiIrecv(t, left, world, k, 256, q))
        arch.call(r, "MPI_Finalize")
    return arch.close()


def test_nonblocking_collectives_without_request_events(tmp_path):
    """Each wait without events completes the oldest pending non-blocking collective without a
    request id (ids of the reader's own), a waitall without events all pending ones; waits with
    request events keep theirs.  The trace validates, the link count is reported, and
    MPI_Comm_split is the recorder's action, not a dropped call."""
    data = read_otf2(nonblocking_collectives_without_requests(tmp_path / "a"))
    rep = validate(data)
    assert rep.ok, rep.lines()[:5]
    assert data.meta["requests_linked_in_order"] == {"iallgather": 40, "iallreduce": 40,
                                                     "ialltoall": 40}
    assert data.meta["comm_calls_without_comms"] == {"comm_split": 10}
    assert "MPI_Comm_split" not in data.meta.get("dropped_mpi_calls", {})
    for r in range(10):
        rows = _rows(data, r)
        names = [K.NAME[int(x)] for x in rows["kind"]]
        assert names[:2] == ["init", "comm_split"]
        colls = rows[np.isin(rows["kind"], [K.CODE[x] for x in
                                            ("iallgather", "ialltoall", "iallreduce")])]
        ids = colls["request"].tolist()
        assert len(set(ids)) == 12 and min(ids) > 101      # above the archive's own ids
        waits = rows[rows["kind"] == K.CODE["wait"]]["request"].tolist()
        assert waits == ids[:9]                             # in order, three per round
        wa = rows[rows["kind"] == K.CODE["waitall"]]
        assert [_vector(data, w) for w in wa] == [[100 + 2 * k, 101 + 2 * k] for k in range(3)] \
            + [ids[9:]]


def test_nonblocking_collectives_without_request_events_replay(tmp_path):
    """The CLI converts such an archive (saying how many waits it linked in order) and the trace
    replays on SimGrid without --lossy."""
    anchor = nonblocking_collectives_without_requests(tmp_path / "a")
    out = tmp_path / "nbc.h5"
    p = _cli("convert", anchor, "-o", out)
    assert p.returncode == 0 and "valid" in p.stdout, p.stderr
    assert ("non-blocking collectives without request events, each linked to the next wait "
            "without events in order: iallgather x40, iallreduce x40, ialltoall x40") in p.stderr
    assert "MPI_Comm_split" not in p.stderr.split("dropped:")[-1]
    p = _cli("replay", out, "--compute-rate", "1Gf")
    assert p.returncode == 0 and "predicted run time" in p.stdout, p.stderr
