"""One-sided communication (MPI RMA) through OTF2 (QA M9): ``convert --to otf2`` writes the
window creations, RMA operations and synchronizations with OTF2's RMA events (RmaWinCreate,
RmaPut, RmaGet, RmaAtomic, RmaCollectiveEnd, RmaRequestLock, RmaReleaseLock, RmaSync,
RmaGroupSync, RmaOpCompleteNonBlocking ...) on RmaWin definitions, which the reader reads
back: targets, bytes, windows and their communicators, requests, displacements, groups and
lock types, field for field; they were regions only, reported as lossy.  A Score-P-like
archive's RMA events are read too, and the otf2 package's own reader sees ours."""
from __future__ import annotations

from collections import Counter

import numpy as np
import otf2
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.converters.otf2 import read_otf2, write_otf2
from minitrace.model import TraceBuilder
from minitrace.validate import validate
from tests.support.record_util import build, record

pytestmark = pytest.mark.timeout(300)

_MPI = ("kind", "flags", "peer", "tag", "comm", "bytes_sent", "bytes_recv", "request")
_R_OPS = ("rput", "rget", "raccumulate", "rget_accumulate")


def _rows(data, r, kinds=None) -> list[tuple]:
    """Rank ``r``'s MPI actions (of ``kinds``, default every one) field for field, with their
    vectors."""
    sl = data.rank_slice(r)
    a = data.actions[sl]
    keep = ~K.mask(K.NON_MPI)[a["kind"]] if kinds is None else K.mask(kinds)[a["kind"]]
    return [(K.NAME[int(a["kind"][i])],) + tuple(int(a[f][i]) for f in _MPI[1:]) +
            (tuple(data.vector(sl.start + i).tolist()),) for i in np.flatnonzero(keep).tolist()]


def _synthetic() -> TraceBuilder:
    """3 ranks: a window of every rank (win_allocate) used in fence epochs (put, get,
    accumulate), under exclusive and shared locks (the atomics, flushes), under lock_all (the
    request-based operations, completed by a wait, a failed then a completed test, a
    waitall) and in a PSCW epoch (start/complete against post/test); a window on a
    sub-communicator whose ranks are not the world's (win_create, a put under a lock), a
    dynamic window; all freed."""
    b = TraceBuilder(3, {"volume_unit": "seconds"})
    b.add_comm(1, [2, 1])                 # (world rank 2 is its rank 0)
    clock = [0.0] * 3

    def add(r, kind, dt=1e-6, **kw):
        b.add(r, kind, t_start=clock[r], t_end=clock[r] + dt, **kw)
        clock[r] += dt + 2e-6

    for r in range(3):
        right, left = (r + 1) % 3, (r + 2) % 3
        add(r, "init")
        add(r, "win_allocate", tag=0, vector=[512, 8])
        add(r, "win_fence", tag=0)
        add(r, "put", peer=right, tag=0, bytes_sent=16, vector=[4])
        add(r, "get", peer=left, tag=0, bytes_recv=8, vector=[0])
        add(r, "accumulate", peer=right, tag=0, bytes_sent=24, vector=[8])
        add(r, "win_fence", tag=0)
        add(r, "win_lock", peer=right, tag=0, vector=[1])
        add(r, "get_accumulate", peer=right, tag=0, bytes_sent=8, bytes_recv=8, vector=[1])
        add(r, "fetch_and_op", peer=right, tag=0, bytes_sent=8, bytes_recv=8, vector=[2])
        add(r, "compare_and_swap", peer=right, tag=0, bytes_sent=16, bytes_recv=8, vector=[3])
        add(r, "win_unlock", peer=right, tag=0)
        add(r, "win_lock", peer=left, tag=0, vector=[0])
        add(r, "win_flush", peer=left, tag=0)
        add(r, "win_flush_local", peer=left, tag=0)
        add(r, "win_unlock", peer=left, tag=0)
        add(r, "compute", volume=3e-6)
        add(r, "win_lock_all", tag=0)
        add(r, "rput", peer=left, tag=0, bytes_sent=32, request=10, vector=[16])
        add(r, "wait", request=10)
        add(r, "rget", peer=left, tag=0, bytes_recv=16, request=11, vector=[20])
        add(r, "test", request=11)
        add(r, "test", request=11, flags=K.FLAG_COMPLETED)
        add(r, "raccumulate", peer=right, tag=0, bytes_sent=8, request=12, vector=[24])
        add(r, "rget_accumulate", peer=right, tag=0, bytes_sent=8, bytes_recv=8, request=13,
            vector=[24])
        add(r, "waitall", vector=[12, 13])
        add(r, "win_flush_all", tag=0)
        add(r, "win_flush_local_all", tag=0)
        add(r, "win_sync", tag=0)
        add(r, "win_unlock_all", tag=0)
    add(0, "win_start", tag=0, vector=[1])
    add(0, "put", peer=1, tag=0, bytes_sent=8, vector=[30])
    add(0, "win_complete", tag=0)
    add(1, "win_post", tag=0, vector=[0])
    add(1, "win_test", tag=0)
    add(1, "win_test", tag=0, flags=K.FLAG_COMPLETED)
    for r in (2, 1):                      # window 1 on comm 1
        add(r, "win_create", tag=1, comm=1, vector=[64, 4])
    add(2, "win_lock", peer=1, tag=1, comm=1, vector=[1])
    add(2, "put", peer=1, tag=1, comm=1, bytes_sent=12, vector=[2])
    add(2, "win_unlock", peer=1, tag=1, comm=1)
    for r in (2, 1):
        add(r, "win_fence", tag=1, comm=1)
    for r in range(3):
        dyn = 1 if r == 0 else 2          # (a rank's windows are numbered in its own order)
        add(r, "win_create_dynamic", tag=dyn)
        add(r, "win_free", tag=0)
        if r:
            add(r, "win_free", tag=1, comm=1)
        add(r, "win_free", tag=dyn)
        add(r, "finalize")
    return b


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    data = _synthetic().build()
    out = tmp_path_factory.mktemp("rma") / "otf2"
    lossy = write_otf2(data, out)
    return data, lossy, out / "traces.otf2"


def test_synthetic_rma_round_trips_field_for_field(synthetic):
    data, lossy, anchor = synthetic
    assert validate(data).ok, validate(data).lines()
    assert lossy == {}
    back = read_otf2(anchor)
    for r in range(3):
        assert _rows(back, r) == _rows(data, r)
        a, b = data.actions[data.rank_slice(r)], back.actions[back.rank_slice(r)]
        mpi_a, mpi_b = (~K.mask(K.NON_MPI)[a["kind"]]), (~K.mask(K.NON_MPI)[b["kind"]])
        for f in ("t_start", "t_end"):
            assert np.allclose(a[f][mpi_a], b[f][mpi_b], atol=1e-9)
    assert {k: v.tolist() for k, v in back.comms.items()} == {0: [0, 1, 2], 1: [2, 1]}
    assert "unmapped_events" not in back.meta
    rep = validate(back)
    assert rep.ok, rep.lines()


def test_the_otf2_package_reader_sees_the_rma_events(synthetic):
    """The otf2 bindings' own reader: one window per collective creation (on its
    communicator), RmaPut/RmaGet/RmaAtomic with the target as a rank of the window's
    communicator and the bytes, the locks and their types, the request-based operations'
    completions in the waits."""
    _, _, anchor = synthetic
    undefined = otf2.Undefined.UINT32.value
    puts, gets, atomics, locks, done, creates = [], [], Counter(), [], Counter(), Counter()
    with otf2.reader.open(str(anchor)) as tr:
        wins = list(tr.definitions.rma_wins)
        assert sorted((w.comm.name, len(w.comm.group.members)) for w in wins) == \
            [("MPI_COMM_WORLD", 3), ("MPI_COMM_WORLD", 3), ("comm 1", 2)]
        rank = {loc: int(loc.group.name.split()[-1]) for loc in tr.definitions.locations}
        for loc, ev in tr.events:
            r = rank[loc]
            if isinstance(ev, otf2.events.RmaPut):
                puts.append((r, ev.win.comm.name, ev.remote, ev.bytes))
            elif isinstance(ev, otf2.events.RmaGet):
                gets.append((r, ev.remote, ev.bytes))
            elif isinstance(ev, otf2.events.RmaAtomic):
                atomics[(str(ev.type).split(".")[-1], ev.bytes_sent, ev.bytes_received)] += 1
            elif isinstance(ev, otf2.events.RmaRequestLock):    # (lock_all's: no target)
                locks.append((r, ev.win.comm.name, ev.remote if ev.remote != undefined else -1,
                              str(ev.lock_type).split(".")[-1]))
            elif isinstance(ev, otf2.events.RmaOpCompleteNonBlocking):
                done[r] += 1
            elif isinstance(ev, otf2.events.RmaWinCreate):
                creates[ev.win.comm.name] += 1
    world = "MPI_COMM_WORLD"
    assert sorted(puts) == sorted(
        [(r, world, (r + 1) % 3, 16) for r in range(3)] + [(r, world, (r + 2) % 3, 32)
                                                          for r in range(3)]
        + [(0, world, 1, 8), (2, "comm 1", 1, 12)])      # (world rank 1 is comm 1's rank 1)
    assert sorted(gets) == sorted([(r, (r + 2) % 3, 8) for r in range(3)] +
                                  [(r, (r + 2) % 3, 16) for r in range(3)])
    assert atomics == {("ACCUMULATE", 24, 0): 3, ("FETCH_AND_ACCUMULATE", 8, 8): 9,
                       ("COMPARE_AND_SWAP", 16, 8): 3, ("ACCUMULATE", 8, 0): 3}
    assert sorted(locks) == sorted(
        [(r, world, (r + 1) % 3, "EXCLUSIVE") for r in range(3)] +
        [(r, world, (r + 2) % 3, "SHARED") for r in range(3)] + [(2, "comm 1", 1, "EXCLUSIVE")]
        + [(r, world, -1, "SHARED") for r in range(3)])
    assert done == {0: 4, 1: 4, 2: 4}
    assert creates == {world: 6, "comm 1": 2}


def test_recorded_rma_program_round_trips(tmp_path):
    """tests/programs/rma.c (4 ranks, every one-sided call) recorded, exported, read back:
    nothing reported lossy but the communicator queries, every MPI action as recorded."""
    record(tmp_path / "t.h5", 4, [build("rma", tmp_path)])
    with minitrace.open(str(tmp_path / "t.h5")) as t:
        data = t.data()
    lossy = write_otf2(data, tmp_path / "otf2")
    assert not set(lossy) & K.ONE_SIDED and set(lossy) <= K.COMM_KINDS, lossy
    back = read_otf2(tmp_path / "otf2" / "traces.otf2")
    kinds = (set(K.NAME.values()) - K.NON_MPI) - set(lossy)
    for r in range(4):
        assert _rows(back, r, kinds) == _rows(data, r, kinds)
        assert sum(1 for x in _rows(back, r) if x[0] in K.ONE_SIDED) == \
            (32 if r % 2 == 0 else 31)
    rep = validate(back)
    assert rep.ok, rep.lines()


RES = 1_000_000_000


def scorep_rma(folder):
    """2 ranks, as Score-P records MPI RMA: a window made by MPI_Win_create on a communicator
    of both ranks in reverse order (RmaCollectiveBegin, RmaWinCreate, RmaCollectiveEnd),
    fences (RmaCollectiveEnd), MPI_Put / MPI_Get / MPI_Accumulate (RmaPut, RmaGet, RmaAtomic,
    their targets ranks of that communicator, completed remotely at the next fence), a
    shared lock (RmaRequestLock ... RmaReleaseLock), MPI_Win_free (RmaWinDestroy)."""
    E = otf2.events
    undefined = otf2.Undefined.UINT32.value
    with otf2.writer.open(str(folder), timer_resolution=RES) as tr:
        d = tr.definitions
        machine = d.system_tree_node("machine")
        locs = [d.location("Master thread", group=d.location_group(
            f"MPI Rank {r}", system_tree_parent=d.system_tree_node(f"n{r}", parent=machine)))
            for r in range(2)]
        d.group("MPI", group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=otf2.Paradigm.MPI,
                members=locs)

        def comm(name, members):
            return d.comm(name, group=d.group(name, group_type=otf2.GroupType.COMM_GROUP,
                                              paradigm=otf2.Paradigm.MPI, members=members))
        comm("MPI_COMM_WORLD", locs)
        rev = comm("reversed", locs[::-1])
        win = d.rma_win("MPI window 0", rev)
        regions = {}

        def region(name):
            if name not in regions:
                regions[name] = d.region(name, region_role=otf2.RegionRole.FUNCTION,
                                         paradigm=otf2.Paradigm.MPI)
            return regions[name]
        level = otf2.RmaSyncLevel.PROCESS | otf2.RmaSyncLevel.MEMORY
        for r in range(2):
            w = tr.event_writer_from_location(locs[r])
            other = r           # (the other world rank's rank in the reversed comm)
            t = [1000 + 10 * r]

            def call(name, *events):
                reg = region(name)
                w(E.Enter(t[0], reg))
                for i, ev in enumerate(events, 1):
                    w(ev(t[0] + i))
                w(E.Leave(t[0] + 10, reg))
                t[0] += 20

            fence = (E.RmaCollectiveBegin,
                     lambda t: E.RmaCollectiveEnd(t, otf2.CollectiveOp.BARRIER, level, win,
                                                  undefined, 0, 0))
            call("MPI_Init")
            call("MPI_Win_create", E.RmaCollectiveBegin, lambda t: E.RmaWinCreate(t, win),
                 lambda t: E.RmaCollectiveEnd(t, otf2.CollectiveOp.CREATE_HANDLE, level, win,
                                              undefined, 0, 0))
            call("MPI_Win_fence", *fence)
            call("MPI_Put", lambda t: E.RmaPut(t, win, other, 40 + r, 7))
            call("MPI_Get", lambda t: E.RmaGet(t, win, other, 16, 8))
            call("MPI_Accumulate", lambda t: E.RmaAtomic(t, win, other,
                                                         otf2.RmaAtomicType.ACCUMULATE, 24, 0,
                                                         9))
            call("MPI_Win_fence", *fence, lambda t: E.RmaOpCompleteRemote(t, win, 7),
                 lambda t: E.RmaOpCompleteRemote(t, win, 8),
                 lambda t: E.RmaOpCompleteRemote(t, win, 9))
            call("MPI_Win_lock", lambda t: E.RmaRequestLock(t, win, other, 1,
                                                            otf2.LockType.SHARED))
            call("MPI_Put", lambda t: E.RmaPut(t, win, other, 8, 10))
            call("MPI_Win_unlock", lambda t: E.RmaOpCompleteRemote(t, win, 10),
                 lambda t: E.RmaReleaseLock(t, win, other, 1))
            call("MPI_Win_free", E.RmaCollectiveBegin, lambda t: E.RmaWinDestroy(t, win),
                 lambda t: E.RmaCollectiveEnd(t, otf2.CollectiveOp.DESTROY_HANDLE, level, win,
                                              undefined, 0, 0))
            call("MPI_Finalize")
    return folder / "traces.otf2"


def test_scorep_rma_archive_reads_with_targets_and_bytes(tmp_path):
    back = read_otf2(scorep_rma(tmp_path / "sp"))
    assert {k: v.tolist() for k, v in back.comms.items()} == {0: [0, 1], 1: [1, 0]}
    for r in range(2):
        other = 1 - r
        assert _rows(back, r) == [
            ("init", 0, -1, -1, 0, 0, 0, -1, ()),
            ("win_create", 0, -1, 0, 1, 0, 0, -1, ()),
            ("win_fence", 0, -1, 0, 1, 0, 0, -1, ()),
            ("put", 0, other, 0, 1, 40 + r, 0, -1, ()),
            ("get", 0, other, 0, 1, 0, 16, -1, ()),
            ("accumulate", 0, other, 0, 1, 24, 0, -1, ()),
            ("win_fence", 0, -1, 0, 1, 0, 0, -1, ()),
            ("win_lock", 0, other, 0, 1, 0, 0, -1, (0,)),
            ("put", 0, other, 0, 1, 8, 0, -1, ()),
            ("win_unlock", 0, other, 0, 1, 0, 0, -1, ()),
            ("win_free", 0, -1, 0, 1, 0, 0, -1, ()),
            ("finalize", 0, -1, -1, 0, 0, 0, -1, ())]
    assert "unmapped_events" not in back.meta
    rep = validate(back)
    assert rep.ok, rep.lines()
