"""MPI-IO through OTF2's I/O events (converters/otf2_io.py): a recorded MPI-IO program
(tests/programs/io.c: explicit offsets, views, non-blocking, shared, ordered, split
collectives, sync, set_size, preallocate, delete) comes back with every file, communicator,
byte count, request and offset (they were regions only: read back, the calls named no file
and the trace was invalid); and an archive written as Score-P writes MPI-IO, with the POSIX
handle the MPI library opens beneath, reads the MPI-IO handles' files only."""
from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.converters.otf2 import read_otf2, write_otf2
from minitrace.model import TraceBuilder
from minitrace.validate import validate
from tests.support.record_util import build, record

pytestmark = pytest.mark.timeout(300)
FIELDS = ("kind", "tag", "comm", "bytes_sent", "bytes_recv", "request", "flags")


def _io_calls(data, r):
    """Rank ``r``'s MPI-IO calls and completions: their fields and vectors."""
    a = data.actions[data.rank_slice(r)]
    rows = np.flatnonzero(K.mask(K.IO_KINDS | K.COMPLETIONS)[a["kind"]])
    return [tuple(int(a[f][i]) for f in FIELDS) +
            (tuple(data.vectors[a["vec_off"][i]:a["vec_off"][i] + a["vec_len"][i]].tolist()),)
            for i in rows.tolist()]


@contextmanager
def _one_rank_archive(path, calls: tuple[str, ...]):
    """An OTF2 archive of one MPI rank written as Score-P writes one, for the test to fill:
    yields (otf2, its definitions, the system node, MPI_COMM_WORLD, the MPI-IO paradigm, the
    regions ``MPI_<call>`` by call, the rank's event writer, a clock of successive ticks)."""
    otf2 = pytest.importorskip("otf2")
    with otf2.writer.open(str(path), timer_resolution=1_000_000_000) as tr:
        d = tr.definitions
        node = d.system_tree_node("machine")
        loc = d.location("Master thread", group=d.location_group("MPI Rank 0",
                                                                 system_tree_parent=node))
        d.group("", group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=otf2.Paradigm.MPI,
                members=[loc])
        world = d.comm("MPI_COMM_WORLD", group=d.group(
            "", group_type=otf2.GroupType.COMM_GROUP, paradigm=otf2.Paradigm.MPI,
            members=[loc]))
        mpiio = d.io_paradigm("MPI-IO", "MPI I/O", io_paradigm_class=otf2.IoParadigmClass.PARALLEL,
                              io_paradigm_flags=otf2.IoParadigmFlag.NONE)
        reg = {k: d.region(f"MPI_{k}", region_role=otf2.RegionRole.FILE_IO,
                           paradigm=otf2.Paradigm.MPI) for k in ("Init", "Finalize") + calls}
        w = tr.event_writer_from_location(loc)
        t = iter(range(1, 1000))
        w(otf2.events.Enter(next(t), reg["Init"]))
        w(otf2.events.Leave(next(t), reg["Init"]))
        yield otf2, d, node, world, mpiio, reg, w, t
        w(otf2.events.Enter(next(t), reg["Finalize"]))
        w(otf2.events.Leave(next(t), reg["Finalize"]))


@pytest.mark.parametrize("name, ranks", [("io", 3), ("file_open_fail", 2)])
def test_a_recorded_mpi_io_program_round_trips(tmp_path, name, ranks):
    """(file_open_fail: an open on MPI_COMM_SELF that fails, as public IOR probes for its file:
    no handle, its communicator an attribute.)"""
    record(tmp_path / "io.h5", ranks, [build(name, tmp_path), str(tmp_path / "data.bin")])
    with minitrace.open(str(tmp_path / "io.h5")) as t:
        data = t.data()
    assert validate(data).ok
    assert write_otf2(data, tmp_path / "otf2") == {}          # nothing written incompletely
    back = read_otf2(tmp_path / "otf2" / "traces.otf2")
    rep = validate(back)
    assert rep.ok, str(rep)
    for r in range(ranks):
        calls = _io_calls(data, r)
        assert len(calls) >= (20 if name == "io" else 3)
        assert _io_calls(back, r) == calls


def test_a_scorep_like_archive_reads_the_mpi_io_handles(tmp_path):
    """Two files opened on the world; under each MPI-IO handle the library's POSIX handle,
    created and used inside the same calls (a tool recording POSIX I/O writes them): the files
    are numbered by their MPI-IO handles, the bytes, offsets and completions are the MPI-IO
    operations' (a POSIX seek beneath was taken for an offset, a POSIX completion in a wait
    for its request, and the program's own POSIX aio test made every event-less MPI_Test a
    completed one: the reviewer, session 32)."""
    calls = ("File_open", "File_write", "File_write_at", "File_iwrite", "Wait", "Test",
             "File_close")
    with _one_rank_archive(tmp_path / "a", calls) as (otf2, d, node, world, mpiio, reg, w, t):
        E = otf2.events
        posix = d.io_paradigm("POSIX", "POSIX I/O", io_paradigm_class=otf2.IoParadigmClass.SERIAL,
                              io_paradigm_flags=otf2.IoParadigmFlag.OS)
        handles = []
        for n in ("a.dat", "b.dat"):
            f = d.io_regular_file(n, scope=node)
            handles.append((d.io_handle(n, f, mpiio, otf2.IoHandleFlag.NONE, world),
                            d.io_handle(n, f, posix, otf2.IoHandleFlag.NONE, None)))
        mode, none = otf2.IoAccessMode.READ_WRITE, otf2.IoCreationFlag.NONE
        for h, p in reversed(handles):                      # b.dat first: file 0
            w(E.Enter(next(t), reg["File_open"]))
            w(E.IoCreateHandle(next(t), p, mode, none, otf2.IoStatusFlag.NONE))
            w(E.IoCreateHandle(next(t), h, mode, none, otf2.IoStatusFlag.NONE))
            w(E.Leave(next(t), reg["File_open"]))
        h, p = handles[1]                               # (file 0)
        w(E.Enter(next(t), reg["File_write_at"]))       # a POSIX seek and write beneath
        w(E.IoSeek(next(t), h, 10, otf2.IoSeekOption.FROM_START, 10))
        w(E.IoOperationBegin(next(t), h, otf2.IoOperationMode.WRITE, otf2.IoOperationFlag.NONE,
                             100, 5))
        w(E.IoSeek(next(t), p, 40960, otf2.IoSeekOption.FROM_START, 40960))
        w(E.IoOperationBegin(next(t), p, otf2.IoOperationMode.WRITE, otf2.IoOperationFlag.NONE,
                             4096, 6))
        w(E.IoOperationComplete(next(t), p, 4096, 6))
        w(E.IoOperationComplete(next(t), h, 100, 5))
        w(E.Leave(next(t), reg["File_write_at"]))
        w(E.Enter(next(t), reg["File_iwrite"]))
        w(E.IoOperationBegin(next(t), h, otf2.IoOperationMode.WRITE,
                             otf2.IoOperationFlag.NON_BLOCKING, 100, 55))
        w(E.IoOperationIssued(next(t), h, 55))
        w(E.Leave(next(t), reg["File_iwrite"]))
        w(E.IoOperationTest(next(t), p, 77))             # the program's own aio_error
        w(E.Enter(next(t), reg["Test"]))                 # (no event: a test of null requests)
        w(E.Leave(next(t), reg["Test"]))
        w(E.Enter(next(t), reg["Wait"]))                 # the library's aio ends beneath
        w(E.IoOperationComplete(next(t), h, 100, 55))
        w(E.IoOperationComplete(next(t), p, 4096, 123456))
        w(E.Leave(next(t), reg["Wait"]))
        for k, (h, p) in enumerate(reversed(handles)):
            w(E.Enter(next(t), reg["File_write"]))
            w(E.IoOperationBegin(next(t), h, otf2.IoOperationMode.WRITE,
                                 otf2.IoOperationFlag.NONE, 100 + k, 7))
            w(E.IoOperationBegin(next(t), p, otf2.IoOperationMode.WRITE,
                                 otf2.IoOperationFlag.NONE, 4096, 8))
            w(E.IoOperationComplete(next(t), p, 4096, 8))
            w(E.IoOperationComplete(next(t), h, 100 + k, 7))
            w(E.Leave(next(t), reg["File_write"]))
            w(E.Enter(next(t), reg["File_close"]))
            w(E.IoDestroyHandle(next(t), h))
            w(E.IoDestroyHandle(next(t), p))
            w(E.Leave(next(t), reg["File_close"]))
    back = read_otf2(tmp_path / "a" / "traces.otf2")
    C = K.CODE
    assert _io_calls(back, 0) == [
        (C["file_open"], 0, 0, 0, 0, -1, 0, ()), (C["file_open"], 1, 0, 0, 0, -1, 0, ()),
        (C["file_write_at"], 0, 0, 100, 0, -1, 0, (10,)),          # (not the POSIX 40960)
        (C["file_iwrite"], 0, 0, 100, 0, 55, 0, ()),
        (C["test"], -1, 0, 0, 0, -1, 0, ()),       # (a POSIX aio test: no MPI test events)
        (C["wait"], -1, 0, 0, 0, 55, 0, ()),                  # (not the POSIX 123456)
        (C["file_write"], 0, 0, 100, 0, -1, 0, ()), (C["file_close"], 0, 0, 0, 0, -1, 0, ()),
        (C["file_write"], 1, 0, 101, 0, -1, 0, ()), (C["file_close"], 1, 0, 0, 0, -1, 0, ())]
    assert validate(back).ok


def test_a_file_on_a_comm_self_type_communicator(tmp_path):
    """Score-P defines MPI_COMM_SELF with a group of type COMM_SELF, one communicator per rank
    that uses it: a file opened on it reads with that rank's own communicator (its id was
    given before the files' communicators were read: a KeyError, an internal error)."""
    calls = ("File_open", "File_write", "File_close")
    with _one_rank_archive(tmp_path / "a", calls) as (otf2, d, node, world, mpiio, reg, w, t):
        E = otf2.events
        own = d.comm("MPI_COMM_SELF", group=d.group("", group_type=otf2.GroupType.COMM_SELF,
                                                    paradigm=otf2.Paradigm.MPI, members=[]))
        h = d.io_handle("a.dat", d.io_regular_file("a.dat", scope=node), mpiio,
                        otf2.IoHandleFlag.NONE, own)
        w(E.Enter(next(t), reg["File_open"]))
        w(E.IoCreateHandle(next(t), h, otf2.IoAccessMode.READ_WRITE, otf2.IoCreationFlag.NONE,
                           otf2.IoStatusFlag.NONE))
        w(E.Leave(next(t), reg["File_open"]))
        w(E.Enter(next(t), reg["File_write"]))
        w(E.IoOperationBegin(next(t), h, otf2.IoOperationMode.WRITE, otf2.IoOperationFlag.NONE,
                             64, 1))
        w(E.IoOperationComplete(next(t), h, 64, 1))
        w(E.Leave(next(t), reg["File_write"]))
        w(E.Enter(next(t), reg["File_close"]))
        w(E.IoDestroyHandle(next(t), h))
        w(E.Leave(next(t), reg["File_close"]))
    back = read_otf2(tmp_path / "a" / "traces.otf2")
    calls = _io_calls(back, 0)
    self_comm = calls[0][2]
    assert self_comm != 0 and back.comms[self_comm].tolist() == [0]
    assert [c[:5] for c in calls] == [(K.CODE["file_open"], 0, self_comm, 0, 0),
                                      (K.CODE["file_write"], 0, self_comm, 64, 0),
                                      (K.CODE["file_close"], 0, self_comm, 0, 0)]
    assert validate(back).ok


def _sub_communicator_trace():
    """Two ranks and comm 1, both of them: an isend/irecv on it, and a file opened on it
    written by an iwrite_at that a failed test, then a wait, complete (times: one per call)."""
    b = TraceBuilder(2)
    b.add_comm(1, np.array([0, 1]))
    clock = [0.0, 0.0]

    def add(r, kind, **kw):
        clock[r] += 1e-3
        b.add(r, kind, t_start=clock[r], t_end=clock[r] + 5e-4, **kw)

    for r in range(2):
        add(r, "init")
        add(r, "file_open", tag=0, comm=1)
    add(0, "isend", peer=1, tag=3, comm=1, bytes_sent=8, request=1)
    add(1, "irecv", peer=0, tag=3, comm=1, bytes_recv=8, request=1)
    for r in range(2):
        add(r, "wait", request=1, comm=1)
        add(r, "file_iwrite_at", tag=0, comm=1, bytes_sent=100, request=2, vector=[40 * r])
        add(r, "test", request=2, comm=1)
        add(r, "wait", request=2, comm=1)
        add(r, "file_close", tag=0, comm=1)
        add(r, "finalize")
    return b.build()


def test_completions_come_back_on_their_requests_communicator(tmp_path):
    """The reviewer's L1 of session 32: a wait (or test) of a request on a sub-communicator,
    an I/O request of a file opened on it as an isend's, came back on comm 0 (the recorder
    writes a single completion on its request's communicator)."""
    data = _sub_communicator_trace()
    assert validate(data).ok
    assert write_otf2(data, tmp_path / "otf2") == {}
    back = read_otf2(tmp_path / "otf2" / "traces.otf2")
    for r in range(2):
        assert _io_calls(back, r) == _io_calls(data, r)
        assert sum(1 for c in _io_calls(data, r) if c[0] in (K.CODE["wait"], K.CODE["test"])
                   and c[2] == 1) == 3
    assert validate(back).ok


def test_mpi_io_calls_with_posix_handles_only_are_said(tmp_path):
    """The reviewer's L2 of session 32: an archive whose MPI_File calls hold only a POSIX
    handle's events (a tool that records POSIX I/O, no MPI-IO handle) reads every call on file
    -1, as no MPI-IO handle says which file; now said (meta, and a note of convert)."""
    calls = ("File_open", "File_write", "File_close")
    with _one_rank_archive(tmp_path / "a", calls) as (otf2, d, node, world, mpiio, reg, w, t):
        E = otf2.events
        posix = d.io_paradigm("POSIX", "POSIX I/O", io_paradigm_class=otf2.IoParadigmClass.SERIAL,
                              io_paradigm_flags=otf2.IoParadigmFlag.OS)
        p = d.io_handle("a.dat", d.io_regular_file("a.dat", scope=node), posix,
                        otf2.IoHandleFlag.NONE, None)
        for call, events in (
                ("File_open", [E.IoCreateHandle(0, p, otf2.IoAccessMode.READ_WRITE,
                                                otf2.IoCreationFlag.NONE,
                                                otf2.IoStatusFlag.NONE)]),
                ("File_write", [E.IoOperationBegin(0, p, otf2.IoOperationMode.WRITE,
                                                   otf2.IoOperationFlag.NONE, 4096, 8),
                                E.IoOperationComplete(0, p, 4096, 8)]),
                ("File_close", [E.IoDestroyHandle(0, p)])):
            w(E.Enter(next(t), reg[call]))
            for ev in events:
                ev.time = next(t)
                w(ev)
            w(E.Leave(next(t), reg[call]))
    back = read_otf2(tmp_path / "a" / "traces.otf2")
    assert [c[1] for c in _io_calls(back, 0)] == [-1, -1, -1]
    assert back.meta["io_calls_without_mpi_io_handles"] == {"file_close": 1, "file_open": 1,
                                                            "file_write": 1}
    p = subprocess.run([sys.executable, "-m", "minitrace", "convert",
                        str(tmp_path / "a" / "traces.otf2"), "-o", str(tmp_path / "a.h5")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "note: MPI-IO calls read without their file (-1): their I/O events name another " \
           "paradigm's handles only (e.g. POSIX), no MPI-IO one: {'file_close': 1, " \
           "'file_open': 1, 'file_write': 1}" in p.stderr


def test_a_waitany_or_testany_vector_is_said_not_written(tmp_path):
    """The reviewer's L3 of session 32: a failed testany with a vector of request ids (an I/O
    request's, as an MPI one's) came back without it, unsaid.  The format gives waitany and
    testany no vector (they name their request in ``request``; the recorder writes a failed
    one naming none), so the export writes none for either, and says so."""
    b = TraceBuilder(1)
    for kind, kw in (("init", {}), ("file_open", {"tag": 0}),
                     ("file_iwrite", {"tag": 0, "bytes_sent": 10, "request": 1, "vector": [0]}),
                     ("irecv", {"peer": -1, "tag": 0, "request": 2}),
                     ("testany", {"vector": [1]}), ("testany", {"vector": [2]}),
                     ("waitall", {"vector": [1, 2]}), ("file_close", {"tag": 0}),
                     ("finalize", {})):
        b.add(0, kind, **kw)
    assert write_otf2(b.build(), tmp_path / "otf2") == {
        "waitany, testany (their vector of request ids, which the format does not give them: "
        "not written)": 2}
