"""SimGrid TI text import/export: on traces written for these tests (tests/data/ti) and, as
third-party cross-checks, on SimGrid's own example traces (../shared/fixtures/simgrid_ti)."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.converters.simgrid_ti import read_ti, write_ti
from minitrace.errors import MinitraceError
from minitrace.model import TraceBuilder
from minitrace.storage import write_trace
from minitrace.validate import validate
from tests.support.fixtures import DATA, OWN_TI, SHARED, ti_traces

OWN = DATA / "ti"
FIX = SHARED / "simgrid_ti"


def rows(data, rank):
    a = data.actions[data.rank_slice(rank)]
    return [(K.NAME[int(x["kind"])], int(x["peer"]), int(x["tag"]), int(x["bytes_sent"]),
             int(x["bytes_recv"]), float(x["volume"]), int(x["request"])) for x in a]


def vec(data, rank, index):
    x = data.actions[data.rank_slice(rank)][index]
    return data.vectors[x["vec_off"]:x["vec_off"] + x["vec_len"]].tolist()


def same_actions(d1, d2) -> None:
    assert np.array_equal(d1.rank_offsets, d2.rank_offsets)
    for name in d1.actions.dtype.names:
        assert np.array_equal(d1.actions[name], d2.actions[name],
                              equal_nan=d1.actions[name].dtype.kind == "f"), name
    assert np.array_equal(d1.vectors, d2.vectors)


# -- our traces (tests/data/ti): sizes by hand from docs/SIMGRID_TI.md ---------------------------
def test_datatypes_roots_and_flops():
    d = read_ti(OWN / "types.txt")
    assert d.nranks == 3 and d.meta["volume_unit"] == "flops"
    # "init 1": MPI_DOUBLE (8 B) by default; bcast 3000 root 2 MPI_INT (4 B); bcast 700 root 0;
    # reduce 900 3e7 root 1 MPI_SHORT (2 B); allreduce 250 1e6
    assert rows(d, 1) == [
        ("init", -1, -1, 0, 0, 0.0, -1),
        ("bcast", 2, -1, 0, 12000, 0.0, -1),
        ("compute", -1, -1, 0, 0, 1e8, -1),
        ("bcast", 0, -1, 0, 5600, 0.0, -1),
        ("reduce", 1, -1, 1800, 1800, 3e7, -1),
        ("allreduce", -1, -1, 2000, 2000, 1e6, -1),
        ("finalize", -1, -1, 0, 0, 0.0, -1)]
    assert rows(d, 2)[1] == ("bcast", 2, -1, 12000, 0, 0.0, -1)
    assert rows(d, 0)[3] == ("bcast", 0, -1, 5600, 0, 0.0, -1)
    assert rows(d, 0)[4] == ("reduce", 1, -1, 1800, 0, 3e7, -1)
    assert validate(d).ok


def test_every_collective_in_bytes():
    """4 ranks, MPI_BYTE by default (no init token): what each rank sends and receives."""
    d = read_ti(OWN / "collectives.txt")
    assert d.nranks == 4
    assert [r[0] for r in rows(d, 0)] == [
        "init", "bcast", "barrier", "compute", "alltoall", "allgather", "alltoallv",
        "allgatherv", "gather", "scatter", "gatherv", "scatterv", "reduce_scatter", "scan",
        "exscan", "finalize"]
    assert rows(d, 0)[1] == ("bcast", 0, -1, 5000, 0, 0.0, -1)          # root 0 by default
    assert rows(d, 3)[1] == ("bcast", 0, -1, 0, 5000, 0.0, -1)
    assert rows(d, 3)[3][5] == 4e8
    for r in range(4):
        assert rows(d, r)[4][3:5] == (400, 400)                        # alltoall 100 x 4
        assert rows(d, r)[5][3:5] == (30, 120)                         # allgather 30, 4 x 30
        assert rows(d, r)[12] == ("reduce_scatter", -1, -1, 100, [10, 20, 30, 40][r], 5e5, -1)
        assert vec(d, r, 12) == [10, 20, 30, 40]
        assert rows(d, r)[13][3:6] == rows(d, r)[14][3:6] == (64, 64, 2e5)
    # alltoallv: send counts then receive counts, in bytes
    assert vec(d, 1, 6) == [20, 21, 22, 23, 11, 21, 31, 41]
    assert rows(d, 1)[6][3:5] == (86, 104)
    # allgatherv "... 0 0": both datatypes MPI_DOUBLE
    assert vec(d, 3, 7) == [56, 40, 24, 8] and rows(d, 3)[7][3:5] == (8, 128)
    # gather 12 12 root 3; scatter 5 5 root 1
    assert rows(d, 3)[8][1:5] == (3, -1, 12, 48) and rows(d, 0)[8][1:5] == (3, -1, 12, 0)
    assert rows(d, 1)[9][1:5] == (1, -1, 20, 5) and rows(d, 2)[9][1:5] == (1, -1, 0, 5)
    # gatherv to root 2 and scatterv from root 0: the per-peer vector at the root only
    assert rows(d, 2)[10][1:5] == (2, -1, 3, 10) and vec(d, 2, 10) == [1, 2, 3, 4]
    assert rows(d, 0)[10][1:5] == (2, -1, 1, 0) and vec(d, 0, 10) == []
    assert rows(d, 0)[11][1:5] == (0, -1, 9, 3) and vec(d, 0, 11) == [3, 1, 4, 1]
    assert rows(d, 2)[11][1:5] == (0, -1, 0, 4) and vec(d, 2, 11) == []
    assert validate(d).ok, validate(d).lines()


def test_requests_resolved_from_src_dst_tag():
    d = read_ti(OWN / "p2p.txt")
    r1 = rows(d, 1)
    assert r1[1] == ("recv", 0, 5, 0, 4000, 0.0, -1)
    assert r1[2] == ("irecv", 2, 6, 0, 3000, 0.0, 0)
    assert r1[4] == ("test", -1, -1, 0, 0, 0.0, 0) and r1[5] == ("wait", -1, -1, 0, 0, 0.0, 0)
    assert r1[6] == ("sendrecv", 2, 0, 500, 600, 0.0, -1) and vec(d, 1, 6) == [2, 0]
    r0 = rows(d, 0)
    assert r0[3] == ("isend", 2, 7, 800, 0, 0.0, 0) and r0[4] == ("irecv", 2, 8, 0, 900, 0.0, 1)
    assert r0[5][0] == "waitall" and vec(d, 0, 5) == [0, 1]
    r2 = rows(d, 2)
    assert r2[6] == ("sendrecv", 1, 0, 600, 500, 0.0, -1) and vec(d, 2, 6) == [1, 0]
    assert r2[7] == ("recv", 0, 9, 0, 1234, 0.0, -1)       # "-1": sized by rank 0's send
    assert not d.actions[d.rank_slice(2)]["flags"][7] & K.FLAG_UNRESOLVED
    assert r2[8] == ("isend", 0, 10, 64, 0, 0.0, 2)
    # SimGrid completes the never-waited isend implicitly at the end; validate says so
    assert dict(validate(d).counts) == {"incomplete-request": 1}


def test_list_file_of_per_rank_traces(tmp_path):
    d = read_ti(OWN / "split_traces")        # comments, a blank line, paths relative to it
    assert d.nranks == 2
    assert rows(d, 0)[1] == ("send", 1, 3, 2500, 0, 0.0, -1)
    assert [r[0] for r in rows(d, 1)] == ["init", "recv", "compute", "isend", "wait",
                                          "finalize"]
    assert rows(d, 1)[4][6] == 0        # waits for the isend (src 1, dst 0, tag 4)
    assert validate(d).ok
    lst = tmp_path / "split"            # relative entries are resolved against the list's folder
    lst.write_text("".join(os.path.relpath(OWN / f"split{r}.txt", tmp_path) + "\n"
                           for r in range(2)))
    same_actions(read_ti(lst), d)
    one = tmp_path / "one_trace"        # one entry: a trace shared by all ranks
    one.write_text(str(OWN / "types.txt") + "\n")
    same_actions(read_ti(one), read_ti(OWN / "types.txt"))


def test_list_file_skips_blank_and_comment_lines(tmp_path):
    """The list reader shared with replay: ``#`` comments and blank lines are not entries."""
    lst = tmp_path / "commented"
    lst.write_text(f"# rank 0\n\n{OWN / 'split0.txt'}\n  # rank 1\n{OWN / 'split1.txt'}\n")
    plain = tmp_path / "plain"
    plain.write_text(f"{OWN / 'split0.txt'}\n{OWN / 'split1.txt'}\n")
    same_actions(read_ti(lst), read_ti(plain))


@pytest.mark.parametrize("trace", ti_traces())
@pytest.mark.parametrize("layout", ["per-rank", "single"])
def test_round_trip_through_hdf5(trace, layout, tmp_path):
    d1 = read_ti(trace)
    h5 = tmp_path / "t.h5"
    write_trace(h5, d1)
    with minitrace.open(h5) as t:
        stored = t.data()
    rep = write_ti(stored, tmp_path / "out", layout=layout)
    assert rep.exact, rep.lines()
    d2 = read_ti(tmp_path / "out")
    same_actions(d1, d2)


@pytest.mark.timeout(180)
def test_exported_traces_replay_like_their_source(tmp_path):
    """Each of our traces and its export (per-rank files in bytes, MPI_BYTE) replay on our
    platform to the same time: the export says to SimGrid what the source said.  (A receive
    sized by a probe, ``recv 0 9 -1``, is exported with the size it found, so SimGrid no longer
    charges the probe's cost, ``smpi/iprobe``: that cost is set to 0 for both replays.)"""
    from minitrace.replay import replay

    def one(job):
        name, exported = job
        src = OWN / name
        if exported:
            write_ti(read_ti(src), tmp_path / name, layout="per-rank")
            src = tmp_path / name
        return replay(src, OWN / "platform.xml", OWN / "hostfile", config={"smpi/iprobe": "0"},
                      timeout=300).simulated_time

    jobs = [(n, e) for n in OWN_TI for e in (False, True)]
    with ThreadPoolExecutor(2) as pool:
        got = dict(zip(jobs, pool.map(one, jobs)))
    for n in OWN_TI:
        assert got[(n, False)] > 0
        assert got[(n, True)] == pytest.approx(got[(n, False)], rel=1e-9), n


# -- third-party cross-checks: SimGrid's example traces -------------------------------------------
@pytest.mark.thirdparty
def test_simgrid_datatypes_roots_and_flops():
    d = read_ti(FIX / "actions_bcast_reduce_datatypes.txt")
    assert d.nranks == 3 and d.meta["volume_unit"] == "flops"
    # bcast 5e4 root 1 MPI_DOUBLE; bcast 5e4 root 0 MPI_SHORT; reduce 5e4 5e8 root 0 MPI_LONG
    assert rows(d, 1) == [
        ("init", -1, -1, 0, 0, 0.0, -1),
        ("bcast", 1, -1, 400000, 0, 0.0, -1),
        ("compute", -1, -1, 0, 0, 2e8, -1),
        ("bcast", 0, -1, 0, 100000, 0.0, -1),
        ("compute", -1, -1, 0, 0, 2e8, -1),
        ("reduce", 0, -1, 400000, 0, 5e8, -1),
        ("finalize", -1, -1, 0, 0, 0.0, -1)]
    assert rows(d, 0)[5] == ("reduce", 0, -1, 400000, 400000, 5e8, -1)


@pytest.mark.thirdparty
def test_simgrid_default_datatype_is_byte_without_init_token():
    d = read_ti(FIX / "actions_bcast.txt")
    assert rows(d, 0)[1] == ("bcast", 0, -1, 50000, 0, 0.0, -1)
    assert rows(d, 2)[1] == ("bcast", 0, -1, 0, 50000, 0.0, -1)


@pytest.mark.thirdparty
def test_simgrid_vector_collectives_in_bytes():
    d = read_ti(FIX / "actions_alltoallv.txt")
    assert vec(d, 1, 1) == [80, 1, 40, 40, 1, 30]
    assert rows(d, 1)[1][3:5] == (121, 71)
    d = read_ti(FIX / "actions_allgatherv.txt")         # trailing "0 0": MPI_DOUBLE
    assert vec(d, 3, 1) == [275427 * 8] * 3 + [204020 * 8]
    assert rows(d, 3)[1][3:5] == (204020 * 8, (3 * 275427 + 204020) * 8)
    d = read_ti(FIX / "actions_reducescatter.txt")
    assert [rows(d, r)[1][4] for r in range(4)] == [275427 * 8] * 3 + [204020 * 8]
    assert rows(d, 2)[1][5] == 12501522.0
    d = read_ti(FIX / "actions_gather.txt")
    assert rows(d, 0)[1][3:5] == (68 * 8, 4 * 68 * 8) and rows(d, 2)[1][3:5] == (68 * 8, 0)


@pytest.mark.thirdparty
def test_simgrid_requests_resolved_from_src_dst_tag():
    d = read_ti(FIX / "actions_with_isend.txt")
    r1 = rows(d, 1)
    assert r1[1] == ("irecv", 0, 0, 0, 1000000, 0.0, 0)
    assert r1[3][0] == "test" and r1[3][6] == 0 and r1[5] == ("wait", -1, -1, 0, 0, 0.0, 0)
    d = read_ti(FIX / "actions_waitall.txt")
    assert rows(d, 0)[3][0] == "waitall" and vec(d, 0, 3) == [0, 1]
    assert validate(d).ok


@pytest.mark.thirdparty
def test_simgrid_list_file_of_per_rank_traces(tmp_path):
    lst = tmp_path / "split_traces"
    # relative entries are resolved against the list file's directory
    lst.write_text("".join(os.path.relpath(FIX / f"actions{r}.txt", tmp_path) + "\n"
                           for r in range(2)))
    d = read_ti(lst)
    assert d.nranks == 2
    assert rows(d, 0)[1] == ("send", 1, 0, 1000000, 0, 0.0, -1)
    assert [r[0] for r in rows(d, 1)] == ["init", "recv", "compute", "isend", "irecv", "wait",
                                          "finalize"]
    assert rows(d, 1)[5][6] == 1        # waits for the irecv (src 0, dst 1, tag 2)
    rep = validate(d)
    # SimGrid completes the never-waited isend implicitly at the end; validate says so
    assert dict(rep.counts) == {"incomplete-request": 1}
    one = tmp_path / "one_trace"
    one.write_text(str(FIX / "actions_bcast.txt") + "\n")
    same_actions(read_ti(one), read_ti(FIX / "actions_bcast.txt"))


@pytest.mark.thirdparty
def test_simgrid_list_file_skips_blank_and_comment_lines(tmp_path):
    lst = tmp_path / "commented"
    lst.write_text(f"# rank 0\n\n{FIX / 'actions0.txt'}\n  # rank 1\n{FIX / 'actions1.txt'}\n")
    plain = tmp_path / "plain"
    plain.write_text(f"{FIX / 'actions0.txt'}\n{FIX / 'actions1.txt'}\n")
    same_actions(read_ti(lst), read_ti(plain))


@pytest.mark.thirdparty
@pytest.mark.timeout(180)
def test_exported_examples_replay_to_simgrid_published_times(tmp_path):
    """Import each fixture SimGrid publishes a time for, export it (per-rank files in bytes,
    MPI_BYTE), replay the export on SimGrid: the published time, to the replay tests' 1e-6 s.
    (The SimGrid wheel has no smpirun: the replay is minitrace.replay's, SimGrid's own engine.)"""
    from minitrace.replay import replay
    from tests.test_replay import PUBLISHED, SIMGRID_POLLS

    def one(name):
        src = [FIX / "actions0.txt", FIX / "actions1.txt"] if name == "split" \
            else [FIX / f"{name}.txt"]
        if len(src) > 1:
            lst = tmp_path / f"{name}.in"
            lst.write_text("".join(f"{p}\n" for p in src))
            src = [lst]
        rep = write_ti(read_ti(src[0]), tmp_path / name, layout="per-rank")
        assert rep.exact, rep.lines()
        return replay(tmp_path / name, FIX / "small_platform.xml", FIX / "hostfile",
                      timeout=300, config=SIMGRID_POLLS).simulated_time

    with ThreadPoolExecutor(2) as pool:
        got = dict(zip(PUBLISHED, pool.map(one, PUBLISHED)))
    assert got == pytest.approx(PUBLISHED, abs=1e-6)


# -- errors, older syntax, export limits ---------------------------------------------------------
@pytest.mark.parametrize("content, why", [
    (b"hello world\n", "line 1: neither a TI action ('<rank> <action> ...') nor an existing "
                       "trace file: 'hello world'"),
    (b"# list\nr0.txt\n\nmissing.txt\n", "line 4: neither a TI action ('<rank> <action> ...') "
                                          "nor an existing trace file: 'missing.txt'"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not a text trace (binary data)"),
    (b"0 init\n\xff\xfe\xfd garbage\n", "not a text trace (binary data)"),
    (b"# nothing but a comment\n\n", "empty file: neither a TI trace nor a list of traces"),
])
def test_bad_input_is_one_line_error_naming_the_file(tmp_path, content, why):
    (tmp_path / "r0.txt").write_text("0 init\n0 finalize\n")
    f = tmp_path / "input"
    f.write_bytes(content)
    with pytest.raises(MinitraceError) as e:
        read_ti(f)
    assert str(e.value) == f"{f}: {why}"


def test_older_variants(tmp_path):
    f = tmp_path / "old.txt"
    f.write_text("\n".join([
        "# a SimGrid 3.x-style trace", "p0 init", "p1 init",
        "p0 send 1 1e3", "p1 recv 0",
        "p0 Isend 1 10", "p1 Irecv 0 10", "p1 wait", "p0 waitAll",
        "p0 allReduce 8 100", "p1 allReduce 8 100",
        "p0 allToAll 4 4", "p1 allToAll 4 4",
        "p0 allToAllV 3 1 2 3 1 2", "p1 allToAllV 3 2 1 3 2 1",
        "p0 comm_size 2", "p1 comm_split", "p0 reduce 16", "p1 reduce 16",
        "p0 finalize", "p1 finalize", ""]))
    d = read_ti(f)
    r1 = rows(d, 1)
    assert r1[1] == ("recv", 0, 0, 0, 1000, 0.0, -1)          # size taken from the send
    assert r1[2] == ("irecv", 0, 0, 0, 10, 0.0, 0) and r1[3][0] == "wait"
    assert r1[4] == ("allreduce", -1, -1, 8, 8, 100.0, -1)
    assert r1[5][3:5] == (8, 8)
    assert vec(d, 1, 6) == [2, 1, 2, 1]
    assert rows(d, 0)[8] == ("reduce", 0, -1, 16, 16, 0.0, -1)
    assert validate(d).ok, str(validate(d))


def test_probe_sized_receive(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("0 init\n1 init\n0 send 1 3 500\n1 recv 0 3 -1\n1 recv 0 4 -1\n"
                 "0 finalize\n1 finalize\n")
    d = read_ti(f)
    a = d.actions[d.rank_slice(1)]
    assert int(a["bytes_recv"][1]) == 500 and not a["flags"][1] & K.FLAG_UNRESOLVED
    assert a["flags"][2] & K.FLAG_UNRESOLVED                   # no send with tag 4
    assert validate(d).counts["unresolved-recv"] == 1
    out = tmp_path / "o.txt"
    write_ti(d, out, layout="single")
    assert "1 recv 0 4 -1\n" in out.read_text()


def test_every_bad_line_reported(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("0 init\n1 init\n0 sned 1 0 5\n0 send 1 0 many\n1 recv 7 0 5\n"
                 "0 bcast 5 0 99\nxx send\n1 wait 0 1 0\n0 gatherv 1 2\n0 finalize\n"
                 "1 finalize\n")
    with pytest.raises(MinitraceError) as e:
        read_ti(f)
    msg = str(e.value)
    assert msg.startswith("7 unparsable line(s): ")
    for where, why in ((3, "unknown action"), (4, "'many' is not a number"),
                       (5, "source '7' is not a rank"), (6, "unknown datatype id 99")):
        assert f"{f}:{where}: " in msg and why in msg
    assert "(and 2 more)" in msg and "\n" not in msg


def test_missing_file_is_one_line_error(tmp_path):
    with pytest.raises(MinitraceError, match="cannot read"):
        read_ti(tmp_path / "nope.txt")


def _mixed_trace():
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "ssend", peer=1, tag=3, bytes_sent=64)
    b.add(1, "recv", peer=0, tag=3, bytes_recv=64)
    b.add(0, "send_init", peer=1, tag=4, bytes_sent=8, request=5)
    b.add(1, "recv_init", peer=0, tag=4, bytes_recv=8, request=2)
    b.add(0, "start", request=5, flags=K.FLAG_PERSISTENT)
    b.add(1, "start", request=2, flags=K.FLAG_PERSISTENT)
    b.add(0, "wait", request=5)
    b.add(1, "wait", request=2)
    b.add_comm(1, [1, 0])
    for r in range(2):
        b.add(r, "ibcast", peer=0, bytes_sent=8 if r == 0 else 0, bytes_recv=8 if r else 0,
              request=9)
        b.add(r, "wait", request=9)
        b.add(r, "barrier", comm=1)
        b.add(r, "finalize")
    return b.build()


def test_export_refuses_silent_loss(tmp_path):
    d = _mixed_trace()
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):      # the recorder paused: what happened meanwhile is not known
        b.add(r, "init")
        b.add(r, "pause")
        b.add(r, "finalize")
    with pytest.raises(MinitraceError) as e:
        write_ti(b.build(), tmp_path / "x", layout="single")
    assert "cannot express 2 pause; rerun with --lossy" in str(e.value)
    assert not (tmp_path / "x").exists()
    write_ti(d, tmp_path / "x", layout="single")     # lowered: nothing to drop


def test_lossy_export_lists_drops_and_approximations(tmp_path):
    d = _mixed_trace()
    rep = write_ti(d, tmp_path / "x", layout="single", lossy=True)
    assert not rep.dropped
    assert rep.lowered["ssend (send, completed by a 0-byte acknowledgement from its "
                       "receive)"] == 1
    assert rep.lowered["start of send_init (isend)"] == 1
    assert rep.lowered["barrier on a sub-communicator (point-to-point, ompi_bruck)"] == 2
    assert rep.lowered["ibcast (isend/irecv of binomial_tree at the call, waited at its "
                       "completion)"] == 2
    text = (tmp_path / "x").read_text().splitlines()
    assert text[1:5] == ["0 send 1 3 64", "0 recv 1 -100255 0", "0 isend 1 4 8", "0 wait 0 1 4"]
    back = read_ti(tmp_path / "x")
    assert validate(back).ok


def test_sendrecv_with_tags_written_exactly_in_meaning(tmp_path):
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "sendrecv", peer=1 - r, tag=7, bytes_sent=10 * (r + 1),
              bytes_recv=10 * (2 - r), vector=[1 - r, 7])
        b.add(r, "sendrecv", peer=1 - r, tag=0, bytes_sent=5, bytes_recv=5, vector=[1 - r, 0])
        b.add(r, "finalize")
    rep = write_ti(b.build(), tmp_path / "s", layout="single")
    lines = (tmp_path / "s").read_text().splitlines()
    assert lines[1:5] == ["0 isend 1 7 10", "0 recv 1 7 20", "0 wait 0 1 7",
                         "0 sendRecv 5 1 5 1 6 6"]
    assert rep.approximated["sendrecv (tags kept: written as isend + recv + wait)"] == 2
    assert validate(read_ti(tmp_path / "s")).ok


def test_sendrecv_with_a_null_side_written_as_its_other_half(tmp_path):
    """A non-periodic shift by MPI_Sendrecv (miniVite's graph set-up): the end ranks send to
    or receive from MPI_PROC_NULL (peer or source -1, as the recorder writes them).  Each such
    sendrecv is its other half (dropped, the partner's half was left unmatched and the replay
    deadlocked); both sides null is a no-op; an unknown source is still dropped."""
    from minitrace.replay import replay
    n = 3
    b = TraceBuilder(n)
    for r in range(n):
        up, down = (r + 1 if r + 1 < n else -1), (r - 1 if r > 0 else -1)
        b.add(r, "init")
        b.add(r, "sendrecv", peer=up, tag=1, bytes_sent=800,
              bytes_recv=800 if down >= 0 else 0, vector=[down, 1 if down >= 0 else -1])
        b.add(r, "sendrecv", peer=-1, tag=3, bytes_sent=8, bytes_recv=0, vector=[-1, -1])
        b.add(r, "finalize")
    rep = write_ti(b.build(), tmp_path / "s", layout="single")
    lines = (tmp_path / "s").read_text().splitlines()
    assert [x for x in lines if x.startswith("0 ")][1:3] == ["0 isend 1 1 800", "0 wait 0 1 1"]
    assert [x for x in lines if x.startswith("2 ")][1:2] == ["2 recv 1 1 800"]
    assert rep.approximated["sendrecv (receive from MPI_PROC_NULL: its send written as "
                            "isend + wait)"] == 1
    assert rep.approximated["sendrecv (send to MPI_PROC_NULL: its receive written as recv)"] \
        == 1
    assert rep.approximated["sendrecv (left out: both sides MPI_PROC_NULL)"] == 3
    assert not rep.dropped
    assert validate(read_ti(tmp_path / "s")).ok
    write_trace(tmp_path / "s.h5", b.build())
    r = replay(tmp_path / "s.h5", compute_rate="1Gf")
    assert r.simulated_time > 0
    u = TraceBuilder(2)
    for r in range(2):
        u.add(r, "init")
        u.add(r, "sendrecv", peer=1 - r, tag=1, bytes_sent=8, bytes_recv=8, vector=[-1, -1],
              flags=K.FLAG_UNRESOLVED)
        u.add(r, "finalize")
    with pytest.raises(MinitraceError, match="cannot express 2 sendrecv"):
        write_ti(u.build(), tmp_path / "u", layout="single")


def _ranks_trace(n):
    b = TraceBuilder(n)
    for r in range(n):
        b.add(r, "init")
        b.add(r, "barrier")
        b.add(r, "finalize")
    return b.build()


def test_export_replaces_a_previous_export_whole(tmp_path):
    """A re-export swaps in a complete new rank-file directory (no stale rank file of a larger
    earlier export) and leaves no temporary file behind."""
    write_ti(_ranks_trace(3), tmp_path / "list")
    write_ti(_ranks_trace(2), tmp_path / "list")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["list", "list_files"]
    assert sorted(p.name for p in (tmp_path / "list_files").iterdir()) == ["0.txt", "1.txt"]
    assert (tmp_path / "list").read_text() == "list_files/0.txt\nlist_files/1.txt\n"
    assert (tmp_path / "list_files/1.txt").read_text() == "1 init\n1 barrier\n1 finalize\n"
    assert read_ti(tmp_path / "list").nranks == 2


@pytest.mark.parametrize("layout", ["per-rank", "single"])
def test_export_refuses_a_bad_output_before_writing(tmp_path, layout):
    (tmp_path / "dir").mkdir()
    with pytest.raises(MinitraceError, match=r"dir: is a directory: name a file to write"):
        write_ti(_ranks_trace(2), tmp_path / "dir", layout=layout)
    (tmp_path / "x_files").write_text("not a directory")
    if layout == "per-rank":
        with pytest.raises(MinitraceError, match=r"x_files: exists and is not a directory"):
            write_ti(_ranks_trace(2), tmp_path / "x", layout=layout)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "x_files"]
    assert list((tmp_path / "dir").iterdir()) == []


def test_proc_null_calls_are_exact_no_ops_in_export(tmp_path):
    """Sends/receives to MPI_PROC_NULL (peer -1) do nothing in MPI: export leaves them and
    their completions out without calling it a loss; a real message next to them stays."""
    b = TraceBuilder(2, {"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "irecv", peer=-1, tag=0, request=1)
    b.add(0, "isend", peer=1, tag=0, bytes_sent=16, request=2)
    b.add(0, "isend", peer=-1, tag=1, bytes_sent=16, request=3)
    b.add(0, "waitall", vector=[1, 2, 3])
    b.add(1, "recv", peer=0, tag=0, bytes_recv=16)
    b.add(1, "send", peer=-1, tag=0, bytes_sent=8)
    for r in range(2):
        b.add(r, "finalize")
    rep = write_ti(b.build(), tmp_path / "t.txt", layout="single")
    assert rep.exact, rep.lines()
    lines = (tmp_path / "t.txt").read_text().split("\n")
    assert [x for x in lines if x.startswith("0 ")] == \
        ["0 init", "0 isend 1 0 16", "0 waitall", "0 finalize"]
    assert [x for x in lines if x.startswith("1 ")] == ["1 init", "1 recv 0 0 16", "1 finalize"]


def _text_round_trip(b: TraceBuilder, tmp_path):
    """(the trace of ``b``'s two ranks, finalized and valid; it written as text and read
    back)."""
    for r in range(2):
        b.add(r, "finalize")
    src = b.build()
    assert validate(src).ok
    write_ti(src, tmp_path / "t.txt", layout="single")
    return src, read_ti(tmp_path / "t.txt")


def test_requests_completed_by_tests_round_trip(tmp_path):
    """A text trace does not say which test succeeded: a request tested but never waited for is
    read as completed by its last test before the next request of its (src, dst, tag), or the
    rank's end; a request tested then waited for by its wait.  A recorded trace whose tests
    completed its sends and receives (public SNAP's) comes back with the same flags, valid
    (before: every such request incomplete, and later tests named the first request)."""
    done = K.FLAG_COMPLETED
    b = TraceBuilder(2, {"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    for i in range(3):                     # the same key each time, tested until it completes
        b.add(0, "isend", peer=1, tag=7, bytes_sent=8, request=i)
        b.add(0, "test", request=i)
        b.add(0, "compute", volume=1e6)
        b.add(0, "test", request=i, flags=done)
        b.add(1, "irecv", peer=0, tag=7, bytes_recv=8, request=i)
        b.add(1, "test", request=i, flags=done)
    b.add(0, "isend", peer=1, tag=8, bytes_sent=8, request=3)   # tested, then waited for
    b.add(0, "test", request=3)
    b.add(0, "wait", request=3)
    b.add(1, "recv", peer=0, tag=8, bytes_recv=8)
    src, back = _text_round_trip(b, tmp_path)
    assert validate(back).ok, validate(back).lines()
    for r in range(2):
        tests = src.actions[src.rank_slice(r)]["kind"] == K.CODE["test"]
        assert np.array_equal(back.actions[back.rank_slice(r)]["flags"][tests] & done,
                              src.actions[src.rank_slice(r)]["flags"][tests] & done)


def test_a_test_names_the_request_pending_under_its_key(tmp_path):
    """Two isends of one key, each tested once, never waited for: each test is its own
    request's and completes it (no wait is left for either)."""
    (tmp_path / "t.txt").write_text("0 init\n1 init\n0 isend 1 3 8\n0 test 0 1 3\n"
                                    "0 isend 1 3 8\n0 test 0 1 3\n1 recv 0 3 8\n1 recv 0 3 8\n"
                                    "0 finalize\n1 finalize\n")
    d = read_ti(tmp_path / "t.txt")
    r0 = d.actions[d.rank_slice(0)]
    tests = np.flatnonzero(r0["kind"] == K.CODE["test"])
    assert r0["request"][tests].tolist() == [0, 1]
    assert (r0["flags"][tests] & K.FLAG_COMPLETED).all()
    assert validate(d).ok, validate(d).lines()


# (the reviewer's cases, session 29: a first rule completed a tested request at the next
# request of its key even where waits left in the text completed it)
_TWO_OF_A_KEY = ("0 init\n1 init\n"
        "0 isend 1 3 8\n0 test 0 1 3\n0 isend 1 3 8\n0 wait 0 1 3\n0 wait 0 1 3\n"
        "1 recv 0 3 8\n1 recv 0 3 8\n0 finalize\n1 finalize\n")


def test_waits_after_a_failed_test_and_a_second_request_of_the_key(tmp_path):
    """Each wait names its own request (0 then 1); the test completes nothing."""
    (tmp_path / "t.txt").write_text(_TWO_OF_A_KEY)
    d = read_ti(tmp_path / "t.txt")          # (1b7cd0a: "wait: no pending isend/irecv ...")
    r0 = d.actions[d.rank_slice(0)]
    waits = np.flatnonzero(r0["kind"] == K.CODE["wait"])
    assert r0["request"][waits].tolist() == [0, 1]
    tests = np.flatnonzero(r0["kind"] == K.CODE["test"])
    assert not (r0["flags"][tests] & K.FLAG_COMPLETED).any()


def test_round_trip_of_a_polled_request_then_waitall(tmp_path):
    """isend A, test A (not done), isend B of the same key, waitall [A, B]: written as text
    and read back, the waitall still holds both and the test completes nothing (1b7cd0a:
    the test flagged as completing A, the waitall holding B alone)."""
    b = TraceBuilder(2, {"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "isend", peer=1, tag=3, bytes_sent=8, request=0)
    b.add(0, "test", request=0)
    b.add(0, "isend", peer=1, tag=3, bytes_sent=8, request=1)
    b.add(0, "waitall", vector=[0, 1])
    b.add(1, "recv", peer=0, tag=3, bytes_recv=8)
    b.add(1, "recv", peer=0, tag=3, bytes_recv=8)
    _, back = _text_round_trip(b, tmp_path)
    r0 = back.actions[back.rank_slice(0)]
    tests = np.flatnonzero(r0["kind"] == K.CODE["test"])
    assert not (r0["flags"][tests] & K.FLAG_COMPLETED).any()
    wa = np.flatnonzero(r0["kind"] == K.CODE["waitall"])[0]
    _, vec = back.vector_entries(np.array([back.rank_offsets[0] + wa]))
    assert len(vec) == 2


def test_mixed2_export_fixture_reads_back(tmp_path):
    """tests/support/ti_export_traces' 'mixed2' case (the repository's own export fixture,
    tests among its kinds), written as text (lossy) and read back (1b7cd0a: 'wait: no pending
    isend/irecv from 2 to 2 with tag 0')."""
    from tests.support import ti_export_traces as T
    name, seed, n, plain = next(c for c in T.CASES if c[0] == "mixed2")
    write_ti(T.build(seed, n, plain), tmp_path / "t.txt", layout="single", lossy=True)
    read_ti(tmp_path / "t.txt")


def test_a_cut_rank_does_not_complete_by_its_last_test(tmp_path):
    """A rank cut short (keep_going): its text stops before its finalize, so its end says
    nothing of whether the pending request was waited for after the cut: the test completes
    nothing (1b7cd0a: FLAG_COMPLETED)."""
    (tmp_path / "t.txt").write_text("0 init\n1 init\n0 isend 1 3 8\n0 test 0 1 3\n"
                                    "1 recv 0 3 8\n1 finalize\n")
    d = read_ti(tmp_path / "t.txt", keep_going=True)
    r0 = d.actions[d.rank_slice(0)]
    tests = np.flatnonzero(r0["kind"] == K.CODE["test"])
    assert not (r0["flags"][tests] & K.FLAG_COMPLETED).any()


def test_a_tested_request_then_waited_ones_of_its_key(tmp_path):
    """QA s30 M3 (public OSU non-blocking collectives: 600 to 17,684 requests each): an irecv
    completed by its second test, then two irecvs of the same key each waited for.  Read
    back, the first wait went to the tested request and the last irecv was never completed;
    now each wait completes its own irecv and the last test the first."""
    b = TraceBuilder(2, {"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "irecv", peer=1, tag=7, bytes_recv=8, request=0)
    b.add(0, "test", request=0)
    b.add(0, "test", request=0, flags=K.FLAG_COMPLETED)
    b.add(1, "send", peer=0, tag=7, bytes_sent=8)
    for q in (1, 2):
        b.add(0, "irecv", peer=1, tag=7, bytes_recv=8, request=q)
        b.add(0, "wait", request=q, flags=K.FLAG_COMPLETED)
        b.add(1, "send", peer=0, tag=7, bytes_sent=8)
    src, back = _text_round_trip(b, tmp_path)
    assert validate(back).ok, validate(back).lines()
    assert np.array_equal(back.actions["request"], src.actions["request"])
    tests = src.actions["kind"] == K.CODE["test"]
    assert np.array_equal(back.actions["flags"][tests] & K.FLAG_COMPLETED,
                          src.actions["flags"][tests] & K.FLAG_COMPLETED)


def _polled_requests(seed: int) -> TraceBuilder:
    """Rank 0's isends and irecvs on two tags, each completed by a wait, a test or a waitall
    of every pending request, tests and waits naming any pending request (not the oldest),
    failed tests among them; rank 1 the matching blocking calls."""
    rng = np.random.default_rng(seed)
    b = TraceBuilder(2, {"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
    pending, nxt = [], 0
    for _ in range(int(rng.integers(4, 30))):
        step = str(rng.choice(["new", "new", "test", "test", "wait", "waitall"]))
        if step == "waitall" and rng.random() >= 0.3:
            step = "test"
        if step == "new" or not pending:
            kind, tag = rng.choice(["isend", "irecv"]), int(rng.integers(2))
            if kind == "isend":
                b.add(0, "isend", peer=1, tag=tag, bytes_sent=8, request=nxt)
                b.add(1, "recv", peer=0, tag=tag, bytes_recv=8)
            else:
                b.add(0, "irecv", peer=1, tag=tag, bytes_recv=8, request=nxt)
                b.add(1, "send", peer=0, tag=tag, bytes_sent=8)
            pending.append(nxt)
            nxt += 1
        elif step == "waitall":
            b.add(0, "waitall", vector=pending)
            pending = []
        else:
            q = pending[int(rng.integers(len(pending)))]
            done = step == "wait" or rng.random() < 0.4
            b.add(0, step, request=q,
                  flags=K.FLAG_COMPLETED if done else 0)
            if done:
                pending.remove(q)
    for q in pending:
        b.add(0, "wait", request=q, flags=K.FLAG_COMPLETED)
    return b


@pytest.mark.parametrize("seed", range(100))
def test_any_polled_and_waited_requests_read_back_valid(seed, tmp_path):
    """Whichever request each test or wait named and whichever test succeeded, a legal trace
    written as text (which names a request by its (src, dst, tag) and no test's result) reads
    back valid (not always as it was: a waitall may take a request a test completed)."""
    _, back = _text_round_trip(_polled_requests(seed), tmp_path)
    assert validate(back).ok, validate(back).lines()


@pytest.mark.parametrize("unit", ["seconds", "flops"])
def test_replay_of_ti_text_says_seconds_written_as_flops(unit, tmp_path):
    """QA s30 L3: a trace in seconds written as TI text holds its seconds as flops, and its
    replay predicted almost no compute without a word (hpgmg 4r: 0.0236 s for 0.633 s); the
    replay of the text now says so.  A text of real flops (the same amounts x 1e9) not."""
    from minitrace.replay import replay
    scale = 1.0 if unit == "seconds" else 1e9
    b = TraceBuilder(2, {"volume_unit": unit})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "compute", volume=0.25 * scale)
        b.add(r, "barrier")
        b.add(r, "compute", volume=0.5 * scale)
        b.add(r, "finalize")
    write_ti(b.build(), tmp_path / "t.txt", layout="per-rank")
    notes = [n for n in replay(tmp_path / "t.txt").notes if "below 1 flop" in n]
    if unit == "seconds":
        assert notes and "(the largest 0.5)" in notes[0], notes
    else:
        assert not notes
