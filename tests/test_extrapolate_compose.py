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
from minitrace.extrapolate import build as B
from minitrace.extrapolate import check as C
from minitrace.extrapolate import compose as CO
from minitrace.extrapolate import grid as GR
from minitrace.extrapolate import structure as ST
from minitrace.model import TraceBuilder
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


def _kernel_then_halo(nranks: int, kernel: float = 1e-3, pack: float = 1e-5,
                      gap: float = 1e-7):
    """A 2-D open grid (MPI_Dims_create's, no cart_create): per iteration a kernel (the
    compute opening the halo's stretch), an irecv from each neighbour, a pack then an isend to
    each, one waitall, an allreduce; ``gap`` of compute between the other calls (a recorder
    writes a compute before every call)."""
    grid = GR.Grid(GR.dims_create(nranks, 2), (False, False))
    b = TraceBuilder(nranks, meta={"volume_unit": "seconds"})
    for r in range(nranks):
        c = grid.coords(np.array(r))
        sides = [(k, s) for k in range(2) for s in (-1, 1) if 0 <= c[k] + s < grid.dims[k]]
        peers = [int(grid.rank(c + s * np.eye(2, dtype=int)[k])) for k, s in sides]
        tags = [2 * k + (s > 0) for k, s in sides]
        b.add(r, "init", t_start=0, t_end=1)
        for it in range(4):
            reqs = []
            for i, (q, tag) in enumerate(zip(peers, tags)):
                b.add(r, "compute", volume=kernel if i == 0 else gap, t_start=1, t_end=2)
                reqs.append(len(reqs) + 100 * it)
                b.add(r, "irecv", peer=q, tag=tag, bytes_recv=800, request=reqs[-1],
                      t_start=2, t_end=3)
            for q, tag in zip(peers, tags):
                b.add(r, "compute", volume=pack, t_start=3, t_end=4)
                reqs.append(len(reqs) + 100 * it)
                b.add(r, "isend", peer=q, tag=tag ^ 1, bytes_sent=800, request=reqs[-1],
                      t_start=3, t_end=4)
            for kind in ("waitall", "allreduce"):
                b.add(r, "compute", volume=gap, t_start=4, t_end=5)
                b.add(r, kind, vector=reqs if kind == "waitall" else None,
                      bytes_sent=8 if kind == "allreduce" else 0,
                      bytes_recv=8 if kind == "allreduce" else 0, t_start=4, t_end=5)
        b.add(r, "finalize", t_start=6, t_end=7)
    return b.build()


def _compute(run, key: str) -> float:
    """The compute of one rank of class ``key`` (composed: of its parts)."""
    rc = run.classes[key]
    if rc.parts is not None:
        kinds = run.sig.table["kind"][np.asarray(rc.leaves)[ST.leaf_stream(rc.tree)]]
        return float(rc.parts[kinds == CO.K.code("compute")].sum())
    a = run.data.actions[run.data.rank_slice(int(rc.ranks[0]))]
    return float(a["volume"][a["kind"] == CO.K.code("compute")].sum())


def test_the_compute_opening_a_stretch_is_the_skeletons_once():
    # the interior of 4x4, in no run of 4 and 8 ranks, is composed there from positions
    # that each open their halo with the kernel: it does the kernel once, as recorded at 16
    scales = (4, 8, 16)
    runs = C.runs_of([f"k{p}.h5" for p in scales], [_kernel_then_halo(p) for p in scales])
    assert "(mid,mid)" not in runs[0].classes and "(mid,mid)" not in runs[1].classes
    notes, why = CO.compose(runs, ["(mid,mid)"])
    assert not why and notes
    recorded = _compute(runs[2], "(mid,mid)")
    assert recorded == pytest.approx(4 * (1e-3 + 4 * 1e-5 + 5 * 1e-7))
    for run in runs[:2]:    # but a 1e-7 gap before an irecv that opened a donor's stretch
        assert _compute(run, "(mid,mid)") == pytest.approx(recorded, abs=4 * 3e-7)
