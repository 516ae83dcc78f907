"""TAU reader on the real OSU allgather trace (2 ranks), byte order, bad inputs, detection."""
from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.converters.detect import detect, read_any
from minitrace.converters.tau import decode_message, read_tau
from minitrace.errors import MinitraceError
from minitrace.validate import validate

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
OSU = FIXTURES / "tau" / "osu_allgather_2ranks"
needs_fixture = pytest.mark.skipif(not (OSU / "tau.trc").exists(),
                                   reason="shared fixtures absent")
REC = np.dtype([("ev", "<i4"), ("nid", "<u2"), ("tid", "<u2"), ("par", "<i8"), ("ti", "<u8")])


def _kinds(data, r):
    return Counter(K.NAME[int(k)] for k in data.actions[data.rank_slice(r)]["kind"])


def _edf_ids(name):
    """Event ids whose name in the fixture's .edf is ``name`` (read independently)."""
    ids = []
    for line in (OSU / "tau.edf").read_text().splitlines()[1:]:
        m = re.match(r'(\d+) \S+ -?\d+ "(.*)"', line)
        if m and m[2].strip() == name:
            ids.append(int(m[1]))
    return ids


@needs_fixture
def test_osu_allgather_pattern():
    data = read_tau(OSU / "tau.trc", OSU / "tau.edf")
    assert data.nranks == 2
    # The trace holds no MPI_Allgather timer: this MPI library ran each allgather as
    # MPI_Isend/MPI_Irecv/MPI_Wait calls, which is what TAU saw (110 iterations = OSU's 10
    # warm-up + 100 timed ones for 16 KiB): 4 messages of 4096 bytes, tags 0..3, per rank and
    # iteration, i.e. 16384 bytes sent to the other rank per allgather.
    for r in range(2):
        k = _kinds(data, r)
        assert (k["init"], k["finalize"]) == (1, 1)
        assert (k["isend"], k["irecv"], k["wait"]) == (440, 440, 880)
        assert (k["barrier"], k["reduce"]) == (113, 3)
        assert "allgather" not in k
        a = data.actions[data.rank_slice(r)]
        isend = a[a["kind"] == K.CODE["isend"]]
        irecv = a[a["kind"] == K.CODE["irecv"]]
        assert (isend["peer"] == 1 - r).all() and (irecv["peer"] == 1 - r).all()
        assert (isend["bytes_sent"] == 4096).all() and (irecv["bytes_recv"] == 4096).all()
        assert isend["tag"].tolist() == [0, 1, 2, 3] * 110
        assert int(isend["bytes_sent"].sum()) == 110 * 16384
        assert int(irecv["bytes_recv"].sum()) == 110 * 16384
        # OSU's 3 MPI_Reduce calls of one double each (TAU's "Message size for reduce" = 8)
        red = a[a["kind"] == K.CODE["reduce"]]
        assert red["bytes_sent"].tolist() == [8, 8, 8]
    rep = validate(data)
    assert rep.ok, rep.lines()


@needs_fixture
def test_message_counts_match_the_raw_records():
    """Independent of the reader: decode the records with numpy and the .edf ids."""
    rec = np.fromfile(OSU / "tau.trc", REC)
    send_ids, recv_ids = _edf_ids("MESSAGE_SEND"), _edf_ids("MESSAGE_RECV")
    data = read_tau(OSU / "tau.trc")
    for r in range(2):
        mine = rec[rec["nid"] == r]
        sends = mine[np.isin(mine["ev"], send_ids)]
        lengths = Counter(decode_message(int(p))[2] for p in sends["par"])
        others = Counter(decode_message(int(p))[1] for p in sends["par"])
        assert lengths == {4096: 440} and others == {1 - r: 440}
        assert int(np.isin(mine["ev"], recv_ids).sum()) == 440
        a = data.actions[data.rank_slice(r)]
        assert int((a["kind"] == K.CODE["isend"]).sum()) == len(sends)


def test_decode_message_bit_layout():
    # tag 0x1234, other 0x0102, length 0x2ABCDE (22 bits), comm 5, packed the way TAU does
    tag, other, length, comm = 0x1234, 0x0102, 0x2ABCDE, 5
    par = ((length & 0xFFFF) | ((tag & 0xFF) << 16) | ((other & 0xFF) << 24)
           | ((length >> 16) << 32) | (comm << 42) | ((tag >> 8) << 48) | ((other >> 8) << 56))
    assert decode_message(par) == (tag, other, length, comm)


@needs_fixture
def test_metadata_from_tau_counters():
    m = read_tau(OSU / "tau.trc").meta
    assert m["source_format"] == "tau" and m["clock_resolution"] == 1e-6
    assert m["producer"].startswith("TAU 2.30.1")
    assert m["command_line"].endswith("osu_allgather -m 16384:16384")
    assert m["hosts"] == ["thor001.hpcadvisorycouncil.com", "thor002.hpcadvisorycouncil.com"]
    assert m["rank_to_node"] == [0, 1]
    assert m["complete"] is True


@needs_fixture
def test_big_endian_copy_reads_the_same(tmp_path):
    rec = np.fromfile(OSU / "tau.trc", REC)
    rec.astype(REC.newbyteorder(">")).tofile(tmp_path / "tau.trc")
    shutil.copy(OSU / "tau.edf", tmp_path / "tau.edf")
    a, b = read_tau(OSU / "tau.trc"), read_tau(tmp_path / "tau.trc")
    assert len(a.actions) == len(b.actions)
    for f in a.actions.dtype.names:
        assert np.array_equal(a.actions[f], b.actions[f]), f


@needs_fixture
def test_missing_edf(tmp_path):
    shutil.copy(OSU / "tau.trc", tmp_path / "tau.trc")
    with pytest.raises(MinitraceError) as e:
        read_tau(tmp_path / "tau.trc")
    assert str(tmp_path / "tau.edf") in str(e.value) and "\n" not in str(e.value)


@needs_fixture
def test_truncated_trc(tmp_path):
    raw = (OSU / "tau.trc").read_bytes()
    (tmp_path / "tau.trc").write_bytes(raw[:-5])
    shutil.copy(OSU / "tau.edf", tmp_path / "tau.edf")
    with pytest.raises(MinitraceError, match="truncated") as e:
        read_tau(tmp_path / "tau.trc")
    assert str(tmp_path / "tau.trc") in str(e.value)


@needs_fixture
def test_not_a_tau_trace_and_foreign_edf(tmp_path):
    (tmp_path / "tau.trc").write_bytes(b"\x07" * 48)
    shutil.copy(OSU / "tau.edf", tmp_path / "tau.edf")
    with pytest.raises(MinitraceError, match="not a TAU trace"):
        read_tau(tmp_path / "tau.trc")
    shutil.copy(OSU / "tau.trc", tmp_path / "tau.trc")
    (tmp_path / "tau.edf").write_text('2 dynamic_trace_events\n'
                                      '# FunctionId Group Tag "Name Type" Parameters\n'
                                      '91 TRACER 0 "EV_INIT" none\n')
    with pytest.raises(MinitraceError, match="not defined") as e:
        read_tau(tmp_path / "tau.trc")
    assert str(tmp_path / "tau.edf") in str(e.value)


@needs_fixture
def test_detection_and_dispatch(tmp_path):
    assert detect(OSU) == "tau" and detect(OSU / "tau.edf") == "tau"
    assert detect(FIXTURES / "otf2" / "scorep_pingpong") == "otf2"
    ti = FIXTURES / "simgrid_ti" / "actions_allreduce.txt"
    if ti.exists():
        assert detect(ti) == "ti"
    data = read_any(OSU / "tau.edf")
    assert data.meta["source_format"] == "tau"
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01binary")
    with pytest.raises(MinitraceError, match="cannot tell"):
        detect(tmp_path / "blob.bin")


def _write_tau(tmp_path, records, names):
    """A small merged TAU trace from (ev name, nid, par, ti) tuples; ids numbered from 1."""
    ids = {n: i + 1 for i, n in enumerate(names)}
    lines = [f"{len(names)} dynamic_trace_events",
             '# FunctionId Group Tag "Name Type" Parameters']
    for n, (group, tag, param) in names.items():
        lines.append(f'{ids[n]} {group} {tag} "{n}" {param}')
    (tmp_path / "tau.edf").write_text("\n".join(lines) + "\n")
    rec = np.array([(ids[n], nid, 0, par, ti) for n, nid, par, ti in records], dtype=REC)
    rec.tofile(tmp_path / "tau.trc")
    return tmp_path / "tau.trc"


def _msg(tag, other, length):
    return (length & 0xFFFF) | (tag << 16) | (other << 24) | ((length >> 16) << 32)


def test_synthetic_blocking_sendrecv_waitall_and_collectives(tmp_path):
    names = {"EV_INIT": ("TRACER", 0, "none"), "MPI_Init()": ("MPI", 0, "EntryExit"),
             "MPI_Send()": ("MPI", 0, "EntryExit"), "MPI_Recv()": ("MPI", 0, "EntryExit"),
             "MPI_Sendrecv()": ("MPI", 0, "EntryExit"), "MPI_Isend()": ("MPI", 0, "EntryExit"),
             "MPI_Irecv()": ("MPI", 0, "EntryExit"), "MPI_Waitall()": ("MPI", 0, "EntryExit"),
             "MPI_Allreduce()": ("MPI", 0, "EntryExit"), "MPI_Bcast()": ("MPI", 0, "EntryExit"),
             "MPI_Finalize()": ("MPI", 0, "EntryExit"), "compute_kernel": ("USER", 0, "EntryExit"),
             "MESSAGE_SEND": ("TAU_MESSAGE", -7, "par"), "MESSAGE_RECV": ("TAU_MESSAGE", -8, "par"),
             "Message size for all-reduce": ("TAUEVENT", 0, "TriggerValue")}
    recs, t = [], [100, 100]

    def call(r, name, inner=()):
        recs.append((name, r, 1, t[r]))
        for ev, par in inner:
            recs.append((ev, r, par, t[r] + 1))
        recs.append((name, r, -1, t[r] + 2))
        t[r] += 10

    for r in (0, 1):
        recs.append(("EV_INIT", r, 3, t[r]))
        call(r, "MPI_Init()")
        recs.append(("compute_kernel", r, 1, t[r]))
        recs.append(("compute_kernel", r, -1, t[r] + 5))
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
    data = read_tau(_write_tau(tmp_path, recs, names), keep_regions=True)
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
