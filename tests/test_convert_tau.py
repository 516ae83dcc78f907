"""TAU reader: on merged traces these tests write in TAU's record layout (an OSU-allgather-like
run, both byte orders and record sizes, bad inputs, detection) and, as third-party cross-checks,
on TAU's own trace of OSU allgather on 2 ranks (../shared/fixtures/tau)."""
from __future__ import annotations

import re
import shutil
from collections import Counter

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.converters.detect import detect, read_any
from minitrace.converters.tau import decode_message, read_tau
from minitrace.errors import MinitraceError
from minitrace.validate import validate
from tests.support.fixtures import DATA, SHARED

OSU = SHARED / "tau" / "osu_allgather_2ranks"
#: TAU's record {int32 ev; uint16 nid; uint16 tid; int64 par; uint64 ti}, and the 64-bit variant
#: whose event id takes 8 bytes (padded), in little-endian order.
REC = np.dtype([("ev", "<i4"), ("nid", "<u2"), ("tid", "<u2"), ("par", "<i8"), ("ti", "<u8")])
REC64 = np.dtype([("ev", "<i8"), ("nid", "<u2"), ("tid", "<u2"), ("pad", "<u4"), ("par", "<i8"),
                  ("ti", "<u8")])


class TauTrace:
    """A merged TAU trace as tau_treemerge.pl leaves it: ``tau.edf`` defines the events (id,
    group, tag, "name", parameter kind), ``tau.trc`` holds the records of all nodes in time order
    (microseconds), the first one EV_INIT with ``par == 3``."""

    def __init__(self, names: dict[str, tuple[str, int, str]] | None = None):
        self.ids: dict[str, int] = {}
        self.defs: list[str] = []
        self.records: list[tuple[int, int, int, int, int, int]] = []
        for name, (group, tag, param) in (names or {}).items():
            self.define(name, group, tag, param)

    def define(self, name: str, group: str = "MPI", tag: int = 0,
               param: str = "EntryExit") -> None:
        self.ids[name] = len(self.ids) + 1
        self.defs.append(f'{self.ids[name]} {group} {tag} "{name}" {param}')

    def add(self, name: str, nid: int, par: int, ti: int, tid: int = 0) -> None:
        self.records.append((ti, len(self.records), self.ids[name], nid, tid, par))

    def close(self, nid: int, ti: int) -> None:
        """TAU's last record of a node (FLUSH_CLOSE)."""
        if "FLUSH_CLOSE" not in self.ids:
            self.define("FLUSH_CLOSE", "TRACER", 0, "none")
        self.add("FLUSH_CLOSE", nid, 0, ti)

    def write(self, folder, dtype: np.dtype = REC):
        """tau.trc (records of ``dtype``) and tau.edf in ``folder``; the .trc path."""
        (folder / "tau.edf").write_text(
            "\n".join([f"{len(self.defs)} dynamic_trace_events",
                       '# FunctionId Group Tag "Name Type" Parameters', *self.defs]) + "\n")
        ti, _, ev, nid, tid, par = zip(*sorted(self.records))
        rec = np.zeros(len(ti), dtype)
        rec["ev"], rec["nid"], rec["tid"], rec["par"], rec["ti"] = ev, nid, tid, par, ti
        rec.tofile(folder / "tau.trc")
        return folder / "tau.trc"


    def write_per_thread(self, folder, dtype: np.dtype = REC) -> list:
        """What TAU writes before tau_treemerge.pl: per node an events.<node>.edf with its own
        event ids (here each node numbers them differently: reversed, from 100 * node), per
        node and thread a tautrace.<node>.0.<thread>.trc starting with EV_INIT.  The .trc
        paths."""
        out = []
        names = list(self.ids)
        for nid in sorted({r[3] for r in self.records}):
            local = {n: 100 * nid + len(names) - i for i, n in enumerate(names)}
            defs = [d.replace(f"{self.ids[n]} ", f"{local[n]} ", 1)
                    for n, d in zip(names, self.defs)]
            (folder / f"events.{nid}.edf").write_text(
                "\n".join([f"{len(defs)} dynamic_trace_events",
                           '# FunctionId Group Tag "Name Type" Parameters', *defs]) + "\n")
            back = {i: n for n, i in self.ids.items()}
            for tid in sorted({r[4] for r in self.records if r[3] == nid}):
                mine = sorted(r for r in self.records if r[3] == nid and r[4] == tid)
                if back[mine[0][2]] != "EV_INIT":
                    mine.insert(0, (mine[0][0], -1, self.ids["EV_INIT"], nid, tid, 3))
                rec = np.zeros(len(mine), dtype)
                rec["ti"] = [m[0] for m in mine]
                rec["ev"] = [local[back[m[2]]] for m in mine]
                rec["nid"], rec["tid"], rec["par"] = nid, tid, [m[5] for m in mine]
                path = folder / f"tautrace.{nid}.0.{tid}.trc"
                rec.tofile(path)
                out.append(path)
        return out


def _msg(tag, other, length):
    """A TAU message parameter (tag and other node below 256)."""
    return (length & 0xFFFF) | (tag << 16) | (other << 24) | ((length >> 16) << 32)


ITERATIONS, BARRIERS = 6, 3
HOSTS = ["node-a", "node-b"]


def osu_like(folder, dtype: np.dtype = REC):
    """osu_trace() written as a merged trace in ``folder``; the .trc path."""
    return osu_trace().write(folder, dtype)


def osu_trace() -> TauTrace:
    """What TAU records of OSU ``osu_allgather -m 16384:16384`` on 2 ranks when the MPI library
    runs each allgather as isend/irecv/wait calls through the profiled interface: per rank
    MPI_Init, MPI_Comm_rank/size, BARRIERS barriers, then ITERATIONS times 4 irecv and 4 isend of
    4096 bytes (tags 0-3) with the other rank, 8 waits (the irecvs' first) and a barrier, 3
    reduces of one double, MPI_Finalize; TAU's metadata counters; 2 records of an OpenMP thread."""
    tr = TauTrace()
    for name, group, tag, param in [
            ("EV_INIT", "TRACER", 0, "none"), ("WALL_CLOCK", "TRACER", 0, "none"),
            ("FLUSH_CLOSE", "TRACER", 0, "none"), (".TAU application ", "TAU_DEFAULT", 0,
                                                    "EntryExit"),
            ("MESSAGE_SEND", "TAU_MESSAGE", -7, "par"), ("MESSAGE_RECV", "TAU_MESSAGE", -8, "par"),
            ("Message size sent to all nodes", "TAUEVENT", 0, "TriggerValue"),
            ("Message size received in wait", "TAUEVENT", 0, "TriggerValue"),
            ("Message size for reduce", "TAUEVENT", 0, "TriggerValue"),
            ("TAU Version | 2.30.1-git", "TAUEVENT", 0, "TriggerValue"),
            ("Command Line | ./osu_allgather -m 16384:16384", "TAUEVENT", 0, "TriggerValue"),
            *[(f"Hostname | {h}", "TAUEVENT", 0, "TriggerValue") for h in HOSTS]]:
        tr.define(name, group, tag, param)
    for call in ("Init", "Comm_rank", "Comm_size", "Barrier", "Irecv", "Isend", "Wait", "Reduce",
                 "Finalize"):
        tr.define(f"MPI_{call}()  ")          # TAU pads MPI timer names
    for r in (0, 1):
        t = [1_000_000 + 7 * (1 - r)]         # rank 1 starts first: the merge interleaves nodes

        def call(name, *inner):
            tr.add(f"MPI_{name}()  ", r, 1, t[0])
            for ev, par in inner:
                tr.add(ev, r, par, t[0] + 1)
            tr.add(f"MPI_{name}()  ", r, -1, t[0] + 2)
            t[0] += 5

        tr.add("EV_INIT", r, 3, t[0])
        tr.add("WALL_CLOCK", r, t[0] // 1_000_000, t[0])
        tr.add(".TAU application ", r, 1, t[0])
        call("Init")
        call("Comm_rank")
        call("Comm_size")
        for _ in range(BARRIERS):
            call("Barrier")
        for _ in range(ITERATIONS):
            for tag in range(4):
                call("Irecv")
            for tag in range(4):
                call("Isend", *[("Message size sent to all nodes", n) for n in (0, 4096, 0)],
                     ("MESSAGE_SEND", _msg(tag, 1 - r, 4096)))
            for tag in range(4):
                call("Wait", ("MESSAGE_RECV", _msg(tag, 1 - r, 4096)),
                     ("Message size received in wait", 4096))
            for _ in range(4):
                call("Wait")
            call("Barrier")
        for _ in range(3):
            call("Reduce", *[("Message size for reduce", n) for n in (0, 8, 0)])
        call("Finalize")
        if r == 0:
            tr.add(".TAU application ", 0, 1, t[0], tid=1)
            tr.add(".TAU application ", 0, -1, t[0] + 1, tid=1)
        for name in ("TAU Version | 2.30.1-git", "Command Line | ./osu_allgather -m 16384:16384",
                     f"Hostname | {HOSTS[r]}"):
            for par in (0, 1, 0):
                tr.add(name, r, par, t[0])
        tr.add(".TAU application ", r, -1, t[0] + 1)
        tr.add("FLUSH_CLOSE", r, 0, t[0] + 2)
        tr.add("WALL_CLOCK", r, (t[0] + 2) // 1_000_000, t[0] + 2)
    return tr


def _kinds(data, r):
    return Counter(K.NAME[int(k)] for k in data.actions[data.rank_slice(r)]["kind"])


def _edf_ids(edf, name):
    """Event ids whose name in ``edf`` is ``name`` (read independently of the reader)."""
    ids = []
    for line in edf.read_text().splitlines()[1:]:
        m = re.match(r'(\d+) \S+ -?\d+ "(.*)"', line)
        if m and m[2].strip() == name:
            ids.append(int(m[1]))
    return ids


def _allgather_pattern(data, iterations, barriers):
    """Per rank: init, barriers, 4 isend + 4 irecv of 4096 bytes (tags 0-3, with the other rank)
    and 8 waits per iteration (16384 bytes per allgather and direction), 3 reduces of 8 bytes,
    finalize; no allgather action is made up; it validates."""
    assert data.nranks == 2
    for r in range(2):
        k = _kinds(data, r)
        assert (k["init"], k["finalize"]) == (1, 1)
        assert (k["isend"], k["irecv"], k["wait"]) == (4 * iterations, 4 * iterations,
                                                        8 * iterations)
        assert (k["barrier"], k["reduce"]) == (barriers, 3)
        assert "allgather" not in k
        a = data.actions[data.rank_slice(r)]
        isend = a[a["kind"] == K.CODE["isend"]]
        irecv = a[a["kind"] == K.CODE["irecv"]]
        assert (isend["peer"] == 1 - r).all() and (irecv["peer"] == 1 - r).all()
        assert (isend["bytes_sent"] == 4096).all() and (irecv["bytes_recv"] == 4096).all()
        assert isend["tag"].tolist() == [0, 1, 2, 3] * iterations
        assert irecv["tag"].tolist() == [0, 1, 2, 3] * iterations
        assert int(isend["bytes_sent"].sum()) == iterations * 16384
        # the reduces of one double each (TAU's "Message size for reduce" = 8)
        assert a[a["kind"] == K.CODE["reduce"]]["bytes_sent"].tolist() == [8, 8, 8]
    rep = validate(data)
    assert rep.ok, rep.lines()


def _raw_message_counts(trc, data, iterations):
    """Independent of the reader: decode the records with numpy and the .edf ids."""
    rec = np.fromfile(trc, REC)
    edf = trc.parent / "tau.edf"
    send_ids, recv_ids = _edf_ids(edf, "MESSAGE_SEND"), _edf_ids(edf, "MESSAGE_RECV")
    for r in range(2):
        mine = rec[rec["nid"] == r]
        sends = mine[np.isin(mine["ev"], send_ids)]
        lengths = Counter(decode_message(int(p))[2] for p in sends["par"])
        others = Counter(decode_message(int(p))[1] for p in sends["par"])
        assert lengths == {4096: 4 * iterations} and others == {1 - r: 4 * iterations}
        assert int(np.isin(mine["ev"], recv_ids).sum()) == 4 * iterations
        a = data.actions[data.rank_slice(r)]
        assert int((a["kind"] == K.CODE["isend"]).sum()) == len(sends)


# -- traces written by the tests -----------------------------------------------------------------
def test_osu_like_allgather_pattern(tmp_path):
    data = read_tau(osu_like(tmp_path), tmp_path / "tau.edf")
    _allgather_pattern(data, ITERATIONS, BARRIERS + ITERATIONS)
    assert data.meta["dropped_mpi_calls"] == {"MPI_Comm_rank": 2, "MPI_Comm_size": 2}
    # compute: the time outside calls from leaving MPI_Init to the first barrier, 3 us around
    # each of the dropped MPI_Comm_rank/size: one compute of 9 us over 13 us elapsed
    a = data.actions[data.rank_slice(0)]
    assert K.NAME[int(a["kind"][1])] == "compute" and a["volume"][1] == pytest.approx(9e-6)
    assert a["t_end"][1] - a["t_start"][1] == pytest.approx(13e-6)


def test_message_counts_match_the_raw_records(tmp_path):
    trc = osu_like(tmp_path)
    _raw_message_counts(trc, read_tau(trc), ITERATIONS)


def test_metadata_from_tau_counters(tmp_path):
    m = read_tau(osu_like(tmp_path)).meta
    assert m["source_format"] == "tau" and m["clock_resolution"] == 1e-6
    assert m["producer"] == "TAU 2.30.1-git (converted by minitrace)"
    assert m["command_line"] == "./osu_allgather -m 16384:16384"
    assert m["hosts"] == HOSTS and m["rank_to_node"] == [0, 1]
    assert m["complete"] is True
    assert m["thread_records_skipped"] == 2
    assert m["source_edf"] == str(tmp_path / "tau.edf")


@pytest.mark.parametrize("dtype", [REC.newbyteorder(">"), REC64, REC64.newbyteorder(">")],
                         ids=["big-endian", "64-bit", "64-bit-big-endian"])
def test_other_record_layouts_read_the_same(tmp_path, dtype):
    """The first record (EV_INIT, par 3) tells TAU's record size and byte order apart."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = read_tau(osu_like(tmp_path / "a"))
    b = read_tau(osu_like(tmp_path / "b", dtype))
    size = (tmp_path / "a" / "tau.trc").stat().st_size
    assert (tmp_path / "b" / "tau.trc").stat().st_size == size // REC.itemsize * dtype.itemsize
    assert len(a.actions) == len(b.actions)
    for f in a.actions.dtype.names:
        assert np.array_equal(a.actions[f], b.actions[f], equal_nan=True), f


def test_missing_edf(tmp_path):
    osu_like(tmp_path)
    (tmp_path / "tau.edf").unlink()
    with pytest.raises(MinitraceError) as e:
        read_tau(tmp_path / "tau.trc")
    assert str(tmp_path / "tau.edf") in str(e.value) and "\n" not in str(e.value)


def test_truncated_trc(tmp_path):
    trc = osu_like(tmp_path)
    trc.write_bytes(trc.read_bytes()[:-5])
    with pytest.raises(MinitraceError, match="truncated") as e:
        read_tau(trc)
    assert str(trc) in str(e.value) and "\n" not in str(e.value)


def test_not_a_tau_trace_and_foreign_edf(tmp_path):
    trc = osu_like(tmp_path)
    good = trc.read_bytes()
    trc.write_bytes(b"\x07" * 48)
    with pytest.raises(MinitraceError, match="not a TAU trace"):
        read_tau(trc)
    trc.write_bytes(good)
    (tmp_path / "tau.edf").write_text('2 dynamic_trace_events\n'
                                      '# FunctionId Group Tag "Name Type" Parameters\n'
                                      '1 TRACER 0 "EV_INIT" none\n')
    with pytest.raises(MinitraceError, match="not defined") as e:
        read_tau(trc)
    assert str(tmp_path / "tau.edf") in str(e.value)


def test_detection_and_dispatch(tmp_path):
    from minitrace.converters.otf2 import write_otf2
    from minitrace.converters.simgrid_ti import read_ti
    tau = tmp_path / "tau"
    tau.mkdir()
    osu_like(tau)
    assert detect(tau) == "tau" and detect(tau / "tau.edf") == "tau"
    assert detect(tau / "tau.trc") == "tau"
    write_otf2(read_ti(DATA / "ti" / "types.txt"), tmp_path / "otf2")
    assert detect(tmp_path / "otf2") == "otf2" and detect(tmp_path / "otf2" / "traces.otf2") \
        == "otf2"
    assert detect(DATA / "ti" / "p2p.txt") == "ti" and detect(DATA / "ti" / "split_traces") == "ti"
    data = read_any(tau / "tau.edf")
    assert data.meta["source_format"] == "tau" and data.nranks == 2
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01binary")
    with pytest.raises(MinitraceError, match="cannot tell"):
        detect(tmp_path / "blob.bin")


def test_decode_message_bit_layout():
    # tag 0x1234, other 0x0102, length 0x2ABCDE (22 bits), comm 5, packed the way TAU does
    tag, other, length, comm = 0x1234, 0x0102, 0x2ABCDE, 5
    par = ((length & 0xFFFF) | ((tag & 0xFF) << 16) | ((other & 0xFF) << 24)
           | ((length >> 16) << 32) | (comm << 42) | ((tag >> 8) << 48) | ((other >> 8) << 56))
    assert decode_message(par) == (tag, other, length, comm)


def test_synthetic_blocking_sendrecv_waitall_and_collectives(tmp_path):
    names = {"EV_INIT": ("TRACER", 0, "none"), "MPI_Init()": ("MPI", 0, "EntryExit"),
             "MPI_Send()": ("MPI", 0, "EntryExit"), "MPI_Recv()": ("MPI", 0, "EntryExit"),
             "MPI_Sendrecv()": ("MPI", 0, "EntryExit"), "MPI_Isend()": ("MPI", 0, "EntryExit"),
             "MPI_Irecv()": ("MPI", 0, "EntryExit"), "MPI_Waitall()": ("MPI", 0, "EntryExit"),
             "MPI_Allreduce()": ("MPI", 0, "EntryExit"), "MPI_Bcast()": ("MPI", 0, "EntryExit"),
             "MPI_Finalize()": ("MPI", 0, "EntryExit"), "compute_kernel": ("USER", 0, "EntryExit"),
             "MESSAGE_SEND": ("TAU_MESSAGE", -7, "par"), "MESSAGE_RECV": ("TAU_MESSAGE", -8, "par"),
             "Message size for all-reduce": ("TAUEVENT", 0, "TriggerValue")}
    tr, t = TauTrace(names), [100, 100]

    def call(r, name, inner=()):
        tr.add(name, r, 1, t[r])
        for ev, par in inner:
            tr.add(ev, r, par, t[r] + 1)
        tr.add(name, r, -1, t[r] + 2)
        t[r] += 10

    for r in (0, 1):
        tr.add("EV_INIT", r, 3, t[r])
        call(r, "MPI_Init()")
        tr.add("compute_kernel", r, 1, t[r])
        tr.add("compute_kernel", r, -1, t[r] + 5)
        t[r] += 7
    call(0, "MPI_Send()", [("MESSAGE_SEND", _msg(5, 1, 70000))])
    call(1, "MPI_Recv()", [("MESSAGE_RECV", _msg(5, 0, 70000))])
    for r in (0, 1):
        call(r, "MPI_Sendrecv()", [("MESSAGE_SEND", _msg(6, 1 - r, 8)),
                                   ("MESSAGE_RECV", _msg(6, 1 - r, 8))])
        call(r, "MPI_Irecv()")
        call(r, "MPI_Isend()", [("MESSAGE_SEND", _msg(7, 1 - r, 16))])
        call(r, "MPI_Waitall()", [("MESSAGE_RECV", _msg(7, 1 - r, 16))])
        call(r, "MPI_Allreduce()", [("Message size for all-reduce", 0),
                                    ("Message size for all-reduce", 24),
                                    ("Message size for all-reduce", 0)])
        call(r, "MPI_Bcast()")
        call(r, "MPI_Finalize()")
        tr.close(r, t[r])
    data = read_tau(tr.write(tmp_path), keep_regions=True)
    assert data.strings == ["compute_kernel"]
    k0 = [K.NAME[int(k)] for k in data.actions[data.rank_slice(0)]["kind"]]
    assert k0 == ["init", "compute", "region_begin", "compute", "region_end", "compute", "send",
                  "compute", "sendrecv", "compute", "irecv", "compute", "isend", "compute",
                  "waitall", "compute", "allreduce", "compute", "bcast", "compute", "finalize"]
    a0, a1 = data.actions[data.rank_slice(0)], data.actions[data.rank_slice(1)]
    send = a0[a0["kind"] == K.CODE["send"]][0]
    recv = a1[a1["kind"] == K.CODE["recv"]][0]
    assert (send["peer"], send["tag"], send["bytes_sent"]) == (1, 5, 70000)
    assert (recv["peer"], recv["tag"], recv["bytes_recv"]) == (0, 5, 70000)
    sr = a1[a1["kind"] == K.CODE["sendrecv"]][0]
    assert (sr["peer"], sr["tag"], sr["bytes_sent"], sr["bytes_recv"]) == (0, 6, 8, 8)
    assert data.vectors[sr["vec_off"]:sr["vec_off"] + sr["vec_len"]].tolist() == [0, 6]
    wa = a0[a0["kind"] == K.CODE["waitall"]][0]
    assert data.vectors[wa["vec_off"]:wa["vec_off"] + wa["vec_len"]].tolist() == [0, 1]
    ir = a0[a0["kind"] == K.CODE["irecv"]][0]
    assert (ir["peer"], ir["tag"], ir["bytes_recv"], ir["request"]) == (1, 7, 16, 0)
    ar = a0[a0["kind"] == K.CODE["allreduce"]][0]
    assert (ar["bytes_sent"], ar["bytes_recv"]) == (24, 24)
    bc = a0[a0["kind"] == K.CODE["bcast"]][0]
    assert (bc["peer"], bc["bytes_sent"], bc["bytes_recv"]) == (-1, 0, 0)
    assert data.meta["collectives_without_sizes"] == {"bcast": 2}
    comp = a0[a0["kind"] == K.CODE["compute"]]
    assert comp["volume"][0] == pytest.approx(8e-6)  # init leave (102 us) -> region (110 us)
    assert validate(data).ok, validate(data).lines()


# -- third-party cross-checks: TAU's trace of OSU allgather on 2 ranks -----------------------------
@pytest.mark.thirdparty
def test_osu_allgather_pattern():
    # The trace holds no MPI_Allgather timer: this MPI library ran each allgather as
    # MPI_Isend/MPI_Irecv/MPI_Wait calls, which is what TAU saw (110 iterations = OSU's 10
    # warm-up + 100 timed ones for 16 KiB), and 113 barriers.
    _allgather_pattern(read_tau(OSU / "tau.trc", OSU / "tau.edf"), 110, 113)


@pytest.mark.thirdparty
def test_osu_message_counts_match_the_raw_records():
    _raw_message_counts(OSU / "tau.trc", read_tau(OSU / "tau.trc"), 110)


@pytest.mark.thirdparty
def test_osu_metadata_from_tau_counters():
    m = read_tau(OSU / "tau.trc").meta
    assert m["source_format"] == "tau" and m["clock_resolution"] == 1e-6
    assert m["producer"].startswith("TAU 2.30.1")
    assert m["command_line"].endswith("osu_allgather -m 16384:16384")
    assert m["hosts"] == ["thor001.hpcadvisorycouncil.com", "thor002.hpcadvisorycouncil.com"]
    assert m["rank_to_node"] == [0, 1]
    assert m["complete"] is True


@pytest.mark.thirdparty
def test_osu_big_endian_copy_reads_the_same(tmp_path):
    rec = np.fromfile(OSU / "tau.trc", REC)
    rec.astype(REC.newbyteorder(">")).tofile(tmp_path / "tau.trc")
    shutil.copy(OSU / "tau.edf", tmp_path / "tau.edf")
    a, b = read_tau(OSU / "tau.trc"), read_tau(tmp_path / "tau.trc")
    assert len(a.actions) == len(b.actions)
    for f in a.actions.dtype.names:
        assert np.array_equal(a.actions[f], b.actions[f]), f


@pytest.mark.thirdparty
def test_osu_detection_and_dispatch():
    assert detect(OSU) == "tau" and detect(OSU / "tau.edf") == "tau"
    assert detect(SHARED / "otf2" / "scorep_pingpong") == "otf2"
    assert detect(SHARED / "simgrid_ti" / "actions_allreduce.txt") == "ti"
    assert read_any(OSU / "tau.edf").meta["source_format"] == "tau"


# -- persistent requests, waitany, collective sizes ----------------------------------------------
P_RANKS, P_ITER = 3, 3
PETSC_NAMES = {"EV_INIT": ("TRACER", 0, "none"),
               "MESSAGE_SEND": ("TAU_MESSAGE", -7, "par"),
               "MESSAGE_RECV": ("TAU_MESSAGE", -8, "par"),
               "Message size for broadcast": ("TAUEVENT", 0, "TriggerValue"),
               **{f"MPI_{c}()": ("MPI", 0, "EntryExit")
                  for c in ("Init", "Send_init", "Recv_init", "Start", "Startall", "Waitany",
                            "Waitall", "Bcast", "Request_free", "Finalize")}}


def petsc_like(folder, startall=False, send_inits=2):
    """What TAU records of a PETSc-style halo exchange on a ring of P_RANKS ranks: two
    persistent sends (to the right with tag 5, 8 bytes per rank number + 8; to the left with
    tag 6, 16 bytes) and two persistent receives, P_ITER times started (MPI_Start each, or one
    MPI_Startall) and completed by MPI_Waitany (TAU writes a send's message inside the start, a
    receive's inside the waitany that completes it; the receive from the right completes
    first), then an MPI_Bcast of 256 bytes.  Returns the .trc path."""
    tr, t = TauTrace(PETSC_NAMES), [10] * P_RANKS

    def call(r, name, *inner):
        tr.add(f"MPI_{name}()", r, 1, t[r])
        for ev, par in inner:
            tr.add(ev, r, par, t[r] + 1)
        tr.add(f"MPI_{name}()", r, -1, t[r] + 2)
        t[r] += 10

    for r in range(P_RANKS):
        right, left = (r + 1) % P_RANKS, (r - 1) % P_RANKS
        tr.add("EV_INIT", r, 3, t[r])
        call(r, "Init")
        for name in ("Send_init",) * send_inits + ("Recv_init", "Recv_init"):
            call(r, name)
        for _ in range(P_ITER):
            sends = [("MESSAGE_SEND", _msg(5, right, 8 * r + 8)),
                     ("MESSAGE_SEND", _msg(6, left, 16))]
            if startall:
                call(r, "Startall", *sends)
            else:
                for s in sends:
                    call(r, "Start", s)
                call(r, "Start")
                call(r, "Start")
            call(r, "Waitany", ("MESSAGE_RECV", _msg(6, right, 16)))
            call(r, "Waitany", ("MESSAGE_RECV", _msg(5, left, 8 * left + 8)))
            call(r, "Waitany")
            call(r, "Waitany")
        call(r, "Bcast", ("Message size for broadcast", 256))
        for _ in range(4):
            call(r, "Request_free")
        call(r, "Finalize")
        tr.close(r, t[r])
    return tr.write(folder)


@pytest.mark.parametrize("startall", [False, True], ids=["start", "startall"])
def test_persistent_requests_keep_their_messages(tmp_path, startall):
    trc = petsc_like(tmp_path, startall)
    data = read_tau(trc)
    rep = validate(data)
    assert rep.ok, rep.lines()
    n_msgs = P_RANKS * P_ITER * 2
    assert data.meta["source_messages"] == {"sent": n_msgs, "received": n_msgs}
    assert "unmapped_events" not in data.meta and "requests_never_completed" not in data.meta
    for r in range(P_RANKS):
        right, left = (r + 1) % P_RANKS, (r - 1) % P_RANKS
        a = data.actions[data.rank_slice(r)]
        inits = a[np.isin(a["kind"], [K.CODE["send_init"], K.CODE["recv_init"]])]
        assert inits["request"].tolist() == [0, 1, 2, 3]
        # init -> its message: sends learned at their start, receives at their completion
        # (the receive from the right completes first, so it is the first recv_init's)
        assert [(int(x["peer"]), int(x["tag"]), int(x["bytes_sent"] + x["bytes_recv"]))
                for x in inits] == [(right, 5, 8 * r + 8), (left, 6, 16), (right, 6, 16),
                                    (left, 5, 8 * left + 8)]
        starts = a[np.isin(a["kind"], K.codes(K.STARTS))]
        assert (starts["flags"] & K.FLAG_PERSISTENT).all()
        if startall:
            assert [data.vector(int(data.rank_offsets[r]) + i).tolist()
                    for i in np.nonzero(a["kind"] == K.CODE["startall"])[0]] == [[0, 1, 2, 3]] \
                * P_ITER
        else:
            assert starts["request"].tolist() == [0, 1, 2, 3] * P_ITER
        # each waitany names the request it completed: the two receives, then the sends
        wany = a[a["kind"] == K.CODE["waitany"]]
        assert wany["request"].tolist() == [2, 3, 0, 1] * P_ITER
        bc = a[a["kind"] == K.CODE["bcast"]][0]
        assert (bc["peer"], bc["bytes_sent"], bc["bytes_recv"]) == (-1, 0, 256)
    assert data.meta["collectives_without_root"] == {"bcast": P_RANKS}
    assert "collectives_without_sizes" not in data.meta


def test_lost_messages_are_not_a_valid_trace(tmp_path):
    """Without its MPI_Send_init records (say, a trace filtered by the user), a start's send
    message has no request to describe: counted, and validate reports the missing messages
    (the source recorded more than the trace holds)."""
    data = read_tau(petsc_like(tmp_path, send_inits=1))
    n = P_RANKS * P_ITER
    assert data.meta["unmapped_events"] == {"send message in start without a send_init": n}
    rep = validate(data)
    assert rep.counts["message-count-mismatch"] == 1
    assert f"{n} sent message(s) in the trace but {2 * n} in the source" in "\n".join(rep.lines())


# -- TAU's unmerged per-thread files --------------------------------------------------------------
def _same_actions(a, b):
    assert len(a.actions) == len(b.actions) and a.nranks == b.nranks
    for f in a.actions.dtype.names:
        assert np.array_equal(a.actions[f], b.actions[f], equal_nan=True), f
    assert a.vectors.tolist() == b.vectors.tolist()


@pytest.mark.parametrize("how", ["directory", "files", "edf"])
def test_per_thread_files_read_like_the_merged_trace(tmp_path, how):
    merged = read_tau(osu_like(tmp_path))
    (tmp_path / "pt").mkdir()
    files = osu_trace().write_per_thread(tmp_path / "pt")
    assert [f.name for f in files] == ["tautrace.0.0.0.trc", "tautrace.0.0.1.trc",
                                       "tautrace.1.0.0.trc"]
    assert detect(tmp_path / "pt") == "tau"
    src = {"directory": tmp_path / "pt", "files": files, "edf": tmp_path / "pt" / "events.1.edf"}
    data = read_any(src[how])
    _same_actions(merged, data)
    # thread 1 of node 0 is a thread of rank 0, not a rank
    assert data.nranks == 2 and data.meta["threads"] == {"0": [1]}
    assert data.meta["source_messages"] == merged.meta["source_messages"]
    assert validate(data).ok


def test_per_thread_cli_and_stray_merged_edf(tmp_path):
    import subprocess
    import sys
    (tmp_path / "m").mkdir()
    osu_like(tmp_path / "m")
    files = osu_trace().write_per_thread(tmp_path)
    out = tmp_path / "t.h5"
    r = subprocess.run([sys.executable, "-m", "minitrace", "convert", *map(str, files), "-o",
                        str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "2 ranks" in r.stdout and "3 files" in r.stdout and "valid" in r.stdout
    # one file of several: not a trace on its own
    with pytest.raises(MinitraceError, match="convert their directory"):
        read_any(files[2])
    # a node missing
    with pytest.raises(MinitraceError, match=r"node\(s\) \[0\]"):
        read_any([files[2], files[2]])
    # a per-thread file whose node's events.N.edf is gone, beside a merged trace's tau.edf
    (tmp_path / "events.1.edf").unlink()
    shutil.copy(tmp_path / "m" / "tau.edf", tmp_path / "tau.edf")
    with pytest.raises(MinitraceError, match=r"no events\.1\.edf.*tau\.edf") as e:
        read_any(tmp_path)
    assert str(files[2]) in str(e.value)
    # named otherwise, a tautrace file is still not paired with the merged tau.edf
    odd = tmp_path / "tautrace.1.trc"
    shutil.copy(files[2], odd)
    with pytest.raises(MinitraceError, match="per-thread") as e:
        read_any(odd)
    assert str(odd) in str(e.value)


# -- damaged traces: errors name the file, --keep-going keeps the whole records -------------------
def test_cut_at_a_record_boundary(tmp_path):
    """Node 1's records cut after its 40th (a whole record): no FLUSH_CLOSE for it."""
    trc = osu_like(tmp_path)
    rec = np.fromfile(trc, REC)
    keep = np.ones(len(rec), bool)
    keep[np.nonzero(rec["nid"] == 1)[0][40:]] = False
    rec[keep].tofile(trc)
    with pytest.raises(MinitraceError, match="node 1.*FLUSH_CLOSE.*cut short") as e:
        read_tau(trc)
    assert str(trc) in str(e.value) and "\n" not in str(e.value)
    data = read_tau(trc, keep_going=True)
    assert data.meta["complete"] is False and "node 1" in data.meta["damaged"][0]
    assert _kinds(data, 0)["finalize"] == 1 and _kinds(data, 1)["finalize"] == 0


def test_partial_record_kept_going(tmp_path):
    trc = osu_like(tmp_path)
    whole = trc.read_bytes()
    trc.write_bytes(whole[:-REC.itemsize - 5])      # 5 bytes of the last-but-one record, and
    # the last one (node 0 is the last to close)
    with pytest.raises(MinitraceError, match="truncated"):
        read_tau(trc)
    data = read_tau(trc, keep_going=True)
    assert data.meta["complete"] is False
    assert [d.split(": ", 1)[1][:9] for d in data.meta["damaged"]] == ["truncated", "node 0's "]
    assert data.meta["source_messages"] == read_tau(osu_like(tmp_path)).meta["source_messages"]


def test_per_thread_file_cut_names_its_file(tmp_path):
    files = osu_trace().write_per_thread(tmp_path)
    rec = np.fromfile(files[2], REC)
    rec[:-3].tofile(files[2])
    with pytest.raises(MinitraceError, match="node 1") as e:
        read_any(tmp_path)
    assert str(files[2]) in str(e.value)
    assert read_any(tmp_path, keep_going=True).meta["complete"] is False


# -- the vectorized decoder against the record-by-record reader ----------------------------------
def _same_trace(a, b):
    _same_actions(a, b)
    assert a.strings == b.strings and a.meta == b.meta


@pytest.mark.parametrize("keep_regions", [False, True])
def test_vectorized_decoder_reads_like_the_record_reader(tmp_path, keep_regions):
    """On the OSU-like trace (requests completed in order: the column decoder applies) both
    readers give the same trace, field for field; a trace it cannot take (persistent requests,
    waitall) goes to the record reader."""
    from minitrace.converters.tau_vector import decode
    trc = osu_like(tmp_path)
    fast = read_tau(trc, keep_regions=keep_regions)
    slow = read_tau(trc, keep_regions=keep_regions, vectorized=False)
    _same_trace(fast, slow)
    rec, events = np.fromfile(trc, REC).astype(REC.newbyteorder("=")), {}
    from minitrace.converters.tau import _COLL_BYTES, read_edf
    events = read_edf(tmp_path / "tau.edf")
    rec = rec[rec["tid"] == 0]
    assert decode(rec, events, 2, int(rec["ti"][0]), keep_regions, _COLL_BYTES, -7, -8) \
        is not None
    (tmp_path / "p").mkdir()
    ptrc = petsc_like(tmp_path / "p")
    prec = np.fromfile(ptrc, REC)
    assert decode(prec, read_edf(tmp_path / "p" / "tau.edf"), P_RANKS, int(prec["ti"][0]),
                  keep_regions, _COLL_BYTES, -7, -8) is None
    _same_trace(read_tau(ptrc), read_tau(ptrc, vectorized=False))


@pytest.mark.thirdparty
def test_osu_vectorized_decoder_reads_like_the_record_reader():
    _same_trace(read_tau(OSU / "tau.trc"), read_tau(OSU / "tau.trc", vectorized=False))


@pytest.mark.parametrize("keep_regions", [False, True])
def test_vectorized_decoder_on_every_construct_it_takes(tmp_path, keep_regions):
    """Nested MPI calls, dropped calls (with a message inside), user regions inside and outside
    calls, send/recv, sendrecv, irecv/isend completed by wait and waitany (one wait with two
    messages), sized and unsized collectives, records of another thread: the column decoder
    takes the trace and gives what the record reader gives."""
    from minitrace.converters.tau import _COLL_BYTES, read_edf
    from minitrace.converters.tau_vector import decode
    names = {"EV_INIT": ("TRACER", 0, "none"), "FLUSH_CLOSE": ("TRACER", 0, "none"),
             "MESSAGE_SEND": ("TAU_MESSAGE", -7, "par"),
             "MESSAGE_RECV": ("TAU_MESSAGE", -8, "par"),
             "Message size for reduce": ("TAUEVENT", 0, "TriggerValue"),
             "kernel": ("USER", 0, "EntryExit"),
             **{f"MPI_{c}()": ("MPI", 0, "EntryExit") for c in (
                 "Init", "Comm_rank", "Send", "Recv", "Sendrecv", "Irecv", "Isend", "Wait",
                 "Waitany", "Allreduce", "Reduce", "Bcast", "Finalize")}}
    tr, t = TauTrace(names), [10, 13]

    def call(r, name, *inner, gap=4):
        tr.add(name, r, 1, t[r])
        for i, (ev, par) in enumerate(inner, 1):
            tr.add(ev, r, par, t[r] + i)
        tr.add(name, r, -1, t[r] + len(inner) + 1)
        t[r] += len(inner) + 1 + gap

    for r in (0, 1):
        o = 1 - r
        tr.add("EV_INIT", r, 3, t[r])
        call(r, "MPI_Init()")
        call(r, "MPI_Comm_rank()", ("MESSAGE_SEND", _msg(9, o, 4)), gap=0)
        tr.add("kernel", r, 1, t[r])
        tr.add("kernel", r, -1, t[r] + 3)
        t[r] += 5
        call(r, "MPI_Allreduce()", ("MPI_Isend()", 1), ("MESSAGE_SEND", _msg(1, o, 8)),
             ("MPI_Isend()", -1), ("kernel", 1), ("kernel", -1))
        if r == 0:
            call(0, "MPI_Send()", ("MESSAGE_SEND", _msg(5, 1, 100)))
        else:
            call(1, "MPI_Recv()", ("MESSAGE_RECV", _msg(5, 0, 100)))
        call(r, "MPI_Sendrecv()", ("MESSAGE_SEND", _msg(6, o, 8)), ("MESSAGE_RECV", _msg(6, o, 8)))
        for tag in (2, 3):
            call(r, "MPI_Irecv()")
        for tag in (2, 3):
            call(r, "MPI_Isend()", ("MESSAGE_SEND", _msg(tag, o, 16 * tag)))
        call(r, "MPI_Wait()", ("MESSAGE_RECV", _msg(2, o, 32)), ("MESSAGE_RECV", _msg(3, o, 48)))
        call(r, "MPI_Waitany()")
        call(r, "MPI_Wait()")
        call(r, "MPI_Irecv()")
        call(r, "MPI_Reduce()", ("Message size for reduce", 0), ("Message size for reduce", 24))
        call(r, "MPI_Bcast()")
        call(r, "MPI_Finalize()", gap=0)
        tr.add("kernel", r, 1, t[r], tid=2)
        tr.close(r, t[r] + 1)
    trc = tr.write(tmp_path)
    rec = np.fromfile(trc, REC)
    rec = rec[rec["tid"] == 0]
    events = read_edf(tmp_path / "tau.edf")
    assert decode(rec, events, 2, int(rec["ti"][0]), keep_regions, _COLL_BYTES, -7, -8) \
        is not None
    fast = read_tau(trc, keep_regions=keep_regions)
    _same_trace(fast, read_tau(trc, keep_regions=keep_regions, vectorized=False))
    m = fast.meta
    assert m["requests_never_completed"] == 2 and m["dropped_mpi_calls"] == {"MPI_Comm_rank": 2}
    assert m["collectives_without_sizes"] == {"allreduce": 2, "bcast": 2}
    a = fast.actions[fast.rank_slice(0)]
    # the wait with two messages names the first irecv's request, waitany the first isend,
    # the last wait the second one
    assert a[a["kind"] == K.CODE["wait"]]["request"].tolist() == [0, 3]
    assert a[a["kind"] == K.CODE["waitany"]]["request"].tolist() == [2]
