"""OTF2 reader on the real Score-P fixture, the OTF2 writer's round trip, bad inputs, the CLI."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

otf2 = pytest.importorskip("otf2")

import minitrace  # noqa: E402
from minitrace import kinds as K  # noqa: E402
from minitrace.converters.otf2 import read_otf2, write_otf2  # noqa: E402
from minitrace.errors import MinitraceError  # noqa: E402
from minitrace.model import TraceBuilder  # noqa: E402
from minitrace.validate import validate  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
PINGPONG = FIXTURES / "otf2" / "scorep_pingpong" / "traces.otf2"
needs_fixture = pytest.mark.skipif(not PINGPONG.exists(), reason="shared fixtures absent")
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


@needs_fixture
def test_pingpong_messages_match_the_archive():
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


@needs_fixture
def test_pingpong_structure_and_validation():
    data = read_otf2(PINGPONG)
    rep = validate(data)
    assert rep.ok, rep.lines()
    for r in range(2):
        kinds = [K.NAME[int(k)] for k in data.actions[data.rank_slice(r)]["kind"]]
        mpi = [k for k in kinds if k != "compute"]
        assert mpi[0] == "init" and mpi[-1] == "finalize"
        assert len(mpi) == 18
    assert data.meta["volume_unit"] == "seconds"
    assert data.meta["source_format"] == "otf2"
    assert data.meta["dropped_mpi_calls"] == {"MPI_Comm_rank": 2, "MPI_Comm_size": 2}
    assert data.meta["hosts"] == ["quartz10"]
    res = data.meta["clock_resolution"]
    assert res == pytest.approx(1 / 2095197216)
    a = data.actions
    comp = a[a["kind"] == K.CODE["compute"]]
    assert (comp["volume"] > 0).all()
    assert np.all(a["t_end"] >= a["t_start"])


@needs_fixture
def test_keep_regions_marks_main():
    data = read_otf2(PINGPONG, keep_regions=True)
    assert data.strings == ["int main(int, char**)"]
    a = data.actions[data.rank_slice(0)]
    assert K.NAME[int(a["kind"][0])] == "region_begin"
    assert K.NAME[int(a["kind"][-1])] == "region_end"
    assert data.meta["complete"] is True
    assert validate(data).ok


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


@needs_fixture
def test_fixture_round_trip(tmp_path):
    data = read_otf2(PINGPONG)
    assert write_otf2(data, tmp_path / "a") == {}
    back = read_otf2(tmp_path / "a" / "traces.otf2")
    _same_mpi_actions(data, back, tol=1e-9)
    assert validate(back).ok


def _synthetic() -> "TraceBuilder":
    """3 ranks exercising every kind the writer expresses, with times, a sub-communicator."""
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
        add(r, "irecv", peer=prv, tag=8, bytes_recv=5, request=4)
        add(r, "test", request=4, flags=K.FLAG_COMPLETED)
        add(r, "compute", volume=3e-6)
        add(r, "sendrecv", peer=nxt, tag=9, bytes_sent=64, bytes_recv=64, vector=[prv, 9])
    add(0, "ssend", peer=1, tag=3, bytes_sent=12)
    add(1, "recv", peer=0, tag=3, bytes_recv=12)
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
        add(r, "allreduce", comm=1, bytes_sent=16, bytes_recv=16)
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
    a = back.actions[back.actions["kind"] == K.CODE["allgatherv"]]
    assert a["bytes_sent"].tolist() == [4, 8] and a["bytes_recv"].tolist() == [12, 12]
    assert (a["vec_len"] == 0).all()


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


@needs_fixture
def test_anchor_without_its_definitions(tmp_path):
    shutil.copy(PINGPONG, tmp_path / "traces.otf2")
    with pytest.raises(MinitraceError) as e:
        read_otf2(tmp_path / "traces.otf2")
    assert str(tmp_path / "traces.otf2") in str(e.value) and "\n" not in str(e.value)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "minitrace", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


@needs_fixture
def test_cli_convert_both_ways(tmp_path):
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


@needs_fixture
def test_cli_minitrace_file_without_to_says_so(tmp_path):
    out = tmp_path / "p.h5"
    assert _cli("convert", PINGPONG, "-o", out).returncode == 0
    r = _cli("convert", out, "-o", tmp_path / "again.h5")
    assert r.returncode == 1 and "--to otf2" in r.stderr and str(out) in r.stderr


def test_cli_bad_input_one_line(tmp_path):
    p = tmp_path / "bogus.otf2"
    p.write_text("not an archive")
    r = _cli("convert", p, "-o", tmp_path / "x.h5")
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and str(p) in r.stderr
    assert "Traceback" not in r.stderr
