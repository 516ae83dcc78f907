"""Runs are one program at several scales, or the check says where they are not."""
import numpy as np
import pytest

from tests.support import synthetic
from minitrace.errors import MinitraceError
from minitrace.extrapolate import build as B
from minitrace.extrapolate import structure as ST


def _runs(scales, **kw):
    return [ST.load(f"halo{p}.h5", synthetic.halo_1d_trace(p, **kw)) for p in scales]


def test_a_periodic_halo_is_one_program_from_two_ranks_on():
    runs = _runs((2, 4, 8))
    assert ST.differences(runs) == [] and ST.check(runs) == []
    assert [list(r.classes) for r in runs] == [["bulk"]] * 3
    assert [[lp.count for lp in r.classes["bulk"].loops] for r in runs] == [[6], [8], [10]]
    # at 2 ranks the left and right neighbours are one rank: still -1 and +1 modulo 2
    assert ST.signed(np.array([1, 3, 5, 7]), 8).tolist() == [1, 3, -3, -1]


def test_a_line_has_its_ends_as_classes():
    runs = _runs((4, 8, 16), periodic=False)
    assert ST.differences(runs) == []
    assert sorted(runs[-1].classes) == ["-1", "0", "bulk"]
    assert runs[-1].classes["-1"].ranks.tolist() == [15]


def test_different_programs_are_refused_saying_where():
    runs = _runs((2, 4)) + [ST.load("line8.h5", synthetic.halo_1d_trace(8, periodic=False))]
    found = ST.differences(runs)
    assert found and "halo2.h5 (2 ranks) vs line8.h5 (8 ranks): rank classes differ" in found[0]
    with pytest.raises(MinitraceError, match="not one program"):
        ST.check(runs)
    # --force: the bulk agrees, the line's ends are in one run only: no law for them
    assert ST.check(runs, force=True) == []
    with pytest.raises(MinitraceError, match=r"rank class -1 \(anchored\) is in 1 run\(s\) "
                                             r"\(8 ranks\): 3 are needed"):
        B.extrapolate(runs, 16, "weak", force=True)


def test_a_changed_call_is_located():
    bad = synthetic.halo_1d_trace(4)
    bad.actions["tag"][bad.actions["tag"] == 1] = 5        # one direction's tag changes
    runs = _runs((2, 8)) + [ST.load("bad4.h5", bad)]
    (line,) = ST.differences(runs)
    assert "bad4.h5 (4 ranks)" in line and "rank class bulk: item 2/item 2: irecv (tag 5" in line


def test_force_leaves_out_what_differs_and_says_so():
    bad = synthetic.halo_1d_trace(4)
    bad.actions["tag"][bad.actions["tag"] == 1] = 5
    runs = _runs((2, 8, 16)) + [ST.load("bad4.h5", bad)]
    left = ST.check(runs, force=True)
    assert left == ["left out: bad4.h5 (4 ranks), rank class bulk: item 2/item 2: irecv (tag 5, "
                    "comm 0) vs irecv (tag 1, comm 0)"]
    runs = _runs((2, 8, 16)) + [ST.load("bad4.h5", bad)]
    data, parameters, forced = B.extrapolate(runs, 32, "weak", force=True)   # from 2, 8, 16
    assert forced == left and data.nranks == 32
    (loop,) = [x for x in parameters if x.name == "loop 1: iterations"]
    assert loop.values.tolist() == [6, 10, 12] and loop.at_target == 14


def test_peers_that_do_not_map_need_force():
    odd = synthetic.halo_1d_trace(4)
    right = (odd.actions["kind"] == synthetic.K.CODE["isend"]) & (odd.actions["tag"] == 1)
    odd.actions["peer"][right] = (odd.rank_of()[right] + 2) % 4     # +2, not +1: a new offset
    runs = _runs((2, 8)) + [ST.load("odd4.h5", odd)]
    with pytest.raises(MinitraceError, match="peers differ"):
        ST.check(runs)
    forced = ST.check(runs, force=True)
    assert forced and "odd4.h5" in forced[0] and "peer" in forced[0]


def test_any_source_receives_need_force():
    runs = []
    for p in (2, 4, 8):
        data = synthetic.halo_1d_trace(p)
        data.actions["flags"][data.actions["kind"] == synthetic.K.CODE["irecv"]] |= \
            synthetic.K.FLAG_ANY_SOURCE
        runs.append(ST.load(f"any{p}.h5", data))
    assert ST.differences(runs) == []
    with pytest.raises(MinitraceError, match="MPI_ANY_SOURCE"):
        ST.check(runs)
    forced = ST.check(runs, force=True)
    assert len(forced) == 2 and "any8.h5, rank class bulk, call 2 (irecv)" in forced[0]


def test_classes_apart_say_where_a_class_leaves_the_bulk():
    """A vector that differs per rank (here comm_split_type's key = rank; comm_split's was
    public NPB FT's, helper QA, session 29, which split_comms.py now reads as laws of the rank:
    tests/test_extrapolate_split.py) makes each rank a class of its own; the refusal says
    where such a class leaves the bulk's program, not only that the classes differ."""
    from minitrace.model import TraceBuilder
    runs = []
    for P in (2, 3, 4):
        b = TraceBuilder(P, {"volume_unit": "seconds"})
        for r in range(P):
            b.add(r, "init")
            b.add(r, "comm_split_type", comm=0, request=1, vector=[0, r])
            for _ in range(5):
                b.add(r, "compute", volume=1e-3)
                b.add(r, "alltoall", comm=1, bytes_sent=8 * P, bytes_recv=8 * P)
            b.add(r, "finalize")
        data = b.build()
        data.comms[1] = list(range(P))
        runs.append(ST.load(f"split{P}.h5", data))
    said = ST.differences(runs)
    assert said and all("rank classes differ" in s for s in said)
    assert all("differs from the bulk at item 2: comm_split_type" in s and
               "differing in vector" in s for s in said), said
