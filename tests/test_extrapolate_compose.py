"""Grid positions composed from a skeleton and per-direction calls
(minitrace/extrapolate/compose.py): a 3-D 27-point halo on two multigrid levels, its ranks x
fastest (tests/programs/stencil27.c), recorded at 8, 12, 16 and 18 ranks, none of which has an
interior rank, extrapolates to 27 (3x3x3) with the structure of the recorded 27-rank run and
the interior's message sizes; one waitall for every direction's requests is split by
direction (generated open halos at 64 as generated there)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from minitrace.cli import main
from minitrace.errors import MinitraceError
from minitrace.extrapolate import build as B
from minitrace.extrapolate import check as C
from minitrace.extrapolate import compose as CO
from minitrace.extrapolate import grid as GR
from minitrace.extrapolate import structure as ST
from tests.support import synthetic
from tests.support.record_util import record

INTERIOR = "(mid,mid,mid)"


def test_neighbours_of_a_position():
    assert len(CO.neighbours("(mid,mid,mid)")) == 26
    assert len(CO.neighbours("(lo,mid,hi)")) == 11            # 2 x 3 x 2 - itself
    assert {tuple(GR.decode(d, 2)) for d in CO.neighbours("(lo,one)")} == {(1, 0)}
    assert not CO.composable("(*,*)@(0,*)") and CO.composable("(lo,mid)")


def test_recorded_27_point_interior_is_composed(programs, tmp_path, capsys):
    exe = programs("stencil27")
    paths = []
    for p in (8, 12, 16, 18, 27):
        paths.append(str(tmp_path / f"s{p}.h5"))
        record(Path(paths[-1]), p, [str(exe), "3", "8"])
    runs = C.load_runs(paths)
    # x-fastest ranks: 3x2x2 (x, y, z) is the C-order grid 2x2x3, none wraps
    assert [r.grid.dims for r in runs] == [(2, 2, 2), (2, 2, 3), (2, 2, 4), (2, 3, 3),
                                           (3, 3, 3)]
    assert not any(any(r.grid.periods) for r in runs)
    assert not any(INTERIOR in r.classes for r in runs[:-1])
    # --force: volumes of an oversubscribed recording are noisy; the structure is checked
    assert main(["extrapolate", *paths, "--check", "--force"]) == 0
    printed = capsys.readouterr().out
    assert "structure at 27 ranks: identical to the recorded run" in printed
    note = next(line for line in printed.splitlines() if "composed from the skeleton" in line
                and INTERIOR in line)
    assert "runs at 8, 12, 16, 18 ranks" in note
    # the interior's 26 neighbours on both levels, with the recorded sizes, in its order
    data, _, _ = B.extrapolate(C.load_runs(paths[:-1]), 27, force=True)
    made = ST.load("x", data, runs[-1].grid)
    mine, theirs = (r.sig.table[r.classes[INTERIOR].leaves] for r in (made, runs[-1]))
    for field in ("kind", "peer", "bytes_sent", "bytes_recv", "request"):
        assert np.array_equal(mine[field], theirs[field]), field
    assert len(set(mine["peer"][mine["peer_mode"] == 1].tolist())) == 26
    assert sorted(set(mine["bytes_recv"][mine["bytes_recv"] > 0].tolist())) == \
        [8, 32, 64, 128, 512]     # corners 1 double; edges 8, 4; faces 8x8, 4x4 (2 levels)


def test_one_waitall_for_every_direction_is_split_by_direction():
    # the generated open halos complete every direction's requests in one waitall: each
    # composed position lists the requests of its own directions, in posting order
    for ndims, scales in ((2, (4, 8, 16)), (3, (8, 16, 32))):
        runs = C.runs_of([f"h{p}.h5" for p in scales],
                         [synthetic.halo_grid_trace(p, ndims, periodic=False, seed=p)
                          for p in scales])
        interior = "(" + ",".join(["mid"] * ndims) + ")"
        assert sum(interior in r.classes for r in runs) < 3
        data, _, forced = B.extrapolate(runs, 64, "weak")
        direct = synthetic.halo_grid_trace(64, ndims, periodic=False, seed=64)
        assert forced == []
        for field in ("kind", "peer", "tag", "bytes_sent", "bytes_recv", "request", "vec_len"):
            assert np.array_equal(data.actions[field], direct.actions[field]), field
        assert np.array_equal(data.vectors, direct.vectors)
        assert any(interior in n for n in data.meta["extrapolated"]["grid"]["notes"])


def test_target_grid_keeps_the_runs_order_of_extents():
    rising = [GR.Grid(d, (False,) * 3) for d in ((2, 2, 2), (2, 2, 4), (2, 4, 4))]
    assert GR.target(rising, 128).dims == (4, 4, 8)          # MPI_Dims_create: 8x4x4
    assert GR.target(rising, 128, (8, 4, 4)).dims == (8, 4, 4)
    falling = [GR.Grid(d, (False,) * 3) for d in ((2, 2, 2), (4, 2, 2), (4, 4, 2))]
    assert GR.target(falling, 128).dims == (8, 4, 4)


def test_recorded_line_from_two_ranks(programs, tmp_path, capsys):
    # at 2 ranks the last rank is the middle one: the runs' classes differ, so the open line
    # is taken as a 1-D grid whose middle position the 2-rank run composes from its ends
    exe = programs("hashorder")
    paths = []
    for p in (2, 3, 4, 6):
        paths.append(str(tmp_path / f"h{p}.h5"))
        record(Path(paths[-1]), p, [str(exe), "10", "500"])
    assert sorted(C.load_runs(paths)[0].classes) == ["(hi)", "(lo)"]
    assert main(["extrapolate", *paths, "--check", "--force"]) == 0
    printed = capsys.readouterr().out
    assert "grid: 6 (open)" in printed
    assert "in the runs at 2 ranks: rank class(es) (mid)" in printed
    assert "structure at 6 ranks: identical to the recorded run" in printed


def test_a_part_lacking_a_phase_fits_in_the_others():
    # between two skeleton calls one position posts irecvs, isends, then waits; another has
    # no isend there (none of its directions sends then): its waits are the third phase
    class Part:
        def __init__(self, key, kinds):
            self.key, self.kinds = key, kinds
    irecv, isend, wait = (CO.K.code(k) for k in ("irecv", "isend", "wait"))
    full, short = Part("(lo,lo)", {3: (irecv, isend, wait)}), Part("(hi,lo)", {3: (irecv, wait)})
    phase = CO._phases([full, short])
    gap, local = np.array([3, 3, 2]), np.array([0, 1, 0])
    assert phase[0](gap, local).tolist() == [0, 1, 0]
    assert phase[1](gap, local).tolist() == [0, 2, 0]
    with pytest.raises(CO.NotComposable, match=r"different phases \(irecv/isend/wait vs "
                                               r"wait/irecv\)"):
        CO._phases([full, Part("(hi,hi)", {3: (wait, irecv)})])


def test_a_root_position_gives_its_neighbours_not_its_skeleton():
    # rank 0, a root with calls of its own, is the (lo,lo) corner of 2x2: the edges and the
    # interior take the skeleton most positions have, and their calls from the others first
    scales = (4, 8, 16)
    runs = C.runs_of([f"h{p}.h5" for p in scales],
                     [synthetic.halo_grid_trace(p, 2, periodic=False, seed=p, root_output=True)
                      for p in scales])
    data, _, forced = B.extrapolate(runs, 64, "weak")
    direct = synthetic.halo_grid_trace(64, 2, periodic=False, seed=64, root_output=True)
    assert forced == []
    for field in ("kind", "peer", "bytes_sent", "bytes_recv", "request", "vec_len"):
        assert np.array_equal(data.actions[field], direct.actions[field]), field
