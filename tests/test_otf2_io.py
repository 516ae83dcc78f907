"""MPI-IO through OTF2's I/O events (converters/otf2_io.py): a recorded MPI-IO program
(tests/programs/io.c: explicit offsets, views, non-blocking, shared, ordered, split
collectives, sync, set_size, preallocate, delete) comes back with every file, communicator,
byte count, request and offset (they were regions only: read back, the calls named no file
and the trace was invalid); and an archive written as Score-P writes MPI-IO, with the POSIX
handle the MPI library opens beneath, reads the MPI-IO handles' files only."""
from __future__ import annotations

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.converters.otf2 import read_otf2, write_otf2
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
    are numbered by their MPI-IO handles, the bytes are the MPI-IO operations'."""
    otf2 = pytest.importorskip("otf2")
    E = otf2.events
    with otf2.writer.open(str(tmp_path / "a"), timer_resolution=1_000_000_000) as tr:
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
        posix = d.io_paradigm("POSIX", "POSIX I/O", io_paradigm_class=otf2.IoParadigmClass.SERIAL,
                              io_paradigm_flags=otf2.IoParadigmFlag.OS)
        handles = []
        for n in ("a.dat", "b.dat"):
            f = d.io_regular_file(n, scope=node)
            handles.append((d.io_handle(n, f, mpiio, otf2.IoHandleFlag.NONE, world),
                            d.io_handle(n, f, posix, otf2.IoHandleFlag.NONE, None)))
        reg = {k: d.region(f"MPI_{k}", region_role=otf2.RegionRole.FILE_IO,
                           paradigm=otf2.Paradigm.MPI)
               for k in ("Init", "File_open", "File_write", "File_close", "Finalize")}
        w = tr.event_writer_from_location(loc)
        t = iter(range(1, 1000))
        w(E.Enter(next(t), reg["Init"]))
        w(E.Leave(next(t), reg["Init"]))
        mode, none = otf2.IoAccessMode.READ_WRITE, otf2.IoCreationFlag.NONE
        for h, p in reversed(handles):                      # b.dat first: file 0
            w(E.Enter(next(t), reg["File_open"]))
            w(E.IoCreateHandle(next(t), p, mode, none, otf2.IoStatusFlag.NONE))
            w(E.IoCreateHandle(next(t), h, mode, none, otf2.IoStatusFlag.NONE))
            w(E.Leave(next(t), reg["File_open"]))
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
        w(E.Enter(next(t), reg["Finalize"]))
        w(E.Leave(next(t), reg["Finalize"]))
    back = read_otf2(tmp_path / "a" / "traces.otf2")
    calls = [c[:5] for c in _io_calls(back, 0)]
    open_, write, close = K.CODE["file_open"], K.CODE["file_write"], K.CODE["file_close"]
    assert calls == [(open_, 0, 0, 0, 0), (open_, 1, 0, 0, 0), (write, 0, 0, 100, 0),
                     (close, 0, 0, 0, 0), (write, 1, 0, 101, 0), (close, 1, 0, 0, 0)]
    assert validate(back).ok
