"""Process grids for extrapolation: MPI_Dims_create's factorization (against mpi4py's), grid
offsets and positions, and the grid a run forms, from its cart_create or from its peers."""
import numpy as np
import pytest
from mpi4py import MPI

from tests.support import synthetic
from minitrace.compress import signatures as SG
from minitrace.errors import MinitraceError
from minitrace.extrapolate import grid as GR


def test_dims_create_is_mpis():
    for n in (1, 2, 3):
        for p in range(1, 400):
            assert GR.dims_create(p, n) == tuple(MPI.Compute_dims(p, n)), (p, n)
    assert GR.dims_create(360, 3) == (10, 6, 6)    # smallest spread first, then largest minimum


def test_parse():
    assert GR.parse("8x4x2") == (8, 4, 2) and GR.parse("3x5") == (3, 5)
    for bad in ("8", "0x4", "4x4x4x4", "a"):
        with pytest.raises(MinitraceError, match="--grid"):
            GR.parse(bad)


def test_offsets_shift_and_positions():
    open_, torus = GR.Grid((4, 3), (False, False)), GR.Grid((4, 3), (True, True))
    assert open_.coords([0, 5, 11]).tolist() == [[0, 0], [1, 2], [3, 2]]      # row-major
    assert torus.offsets([0, 0], [9, 2]).tolist() == [[-1, 0], [0, -1]]
    assert open_.offsets([0], [9]).tolist() == [[3, 0]]
    assert torus.shift(np.array([0]), np.array([[-1, -1]])).tolist() == [11]
    with pytest.raises(MinitraceError, match="falls off the open dimension 0"):
        open_.shift(np.array([0]), np.array([[-1, 0]]))
    assert open_.positions([0, 4, 5, 11]) == ["(lo,lo)", "(mid,mid)", "(mid,hi)", "(hi,hi)"]
    assert torus.positions([4]) == ["(*,*)"]
    assert GR.Grid((2, 1), (False, False)).positions([1]) == ["(hi,one)"]
    assert [GR.describe_position(k) for k in ("(lo,lo)", "(mid,hi)", "(mid,mid)",
                                              "(lo,mid,mid)", "(*,*)")] == \
        ["corner", "edge", "interior", "face", "every rank"]
    codes = GR.encode(np.array([[-1, 0, 1], [64, -64, 0]]))
    assert GR.decode(codes, 3).tolist() == [[-1, 0, 1], [64, -64, 0]]


def _relative(data):
    sig = SG.encode(data)
    return sig.table["peer_mode"][sig.ids] == 1


@pytest.mark.parametrize("p, ndims, periodic, want", [
    (16, 2, True, ((4, 4), (True, True))), (12, 2, False, ((4, 3), (False, False))),
    (8, 3, True, ((2, 2, 2), (False, False, False))),       # wrapping unseen at extent 2
    (27, 3, True, ((3, 3, 3), (True, True, True))), (6, 2, False, ((3, 2), (False, False)))])
def test_the_grid_is_inferred_from_the_peers(p, ndims, periodic, want):
    data = synthetic.halo_grid_trace(p, ndims, periodic=periodic, cart=False)
    grid = GR.infer(data, _relative(data))
    assert (grid.dims, grid.periods) == want


def test_a_line_and_a_recorded_grid():
    line = synthetic.halo_1d_trace(16)
    assert GR.infer(line, _relative(line)) is None and GR.recorded(line) is None
    data = synthetic.halo_grid_trace(12, (2, 6), periodic=False)   # not Dims_create's 4x3
    assert GR.recorded(data) == GR.Grid((2, 6), (False, False))
    assert GR.infer(data, _relative(data), 2).dims == (2, 6)


def test_run_grids_share_the_periods_and_refuse_a_misfit():
    datas = [synthetic.halo_grid_trace(p, 2, cart=False) for p in (2, 4, 16)]
    grids = GR.run_grids(["a", "b", "c"], datas, [_relative(d) for d in datas])
    assert [g.dims for g in grids] == [(2, 1), (2, 2), (4, 4)]
    assert all(g.periods == (True, True) for g in grids)      # seen at 16, given to all
    odd = synthetic.halo_1d_trace(7)                         # 7x1 or 1x7 only: +2 fits none
    sends = odd.actions["kind"] == synthetic.K.CODE["isend"]
    odd.actions["peer"][sends] = (odd.rank_of() + 2)[sends] % 7
    rec = synthetic.halo_grid_trace(16, 2)                   # recorded: a misfit is refused
    with pytest.raises(MinitraceError, match="odd.h5 .7 ranks.: its peers are not nearest"):
        GR.run_grids(["odd.h5", "c"], [odd, rec], [_relative(odd), _relative(rec)])
    small = synthetic.halo_grid_trace(4, 2)                  # another run's record: refused
    with pytest.raises(MinitraceError, match="odd.h5 .7 ranks.: its peers are not nearest"):
        GR.run_grids(["odd.h5", "s", "c"], [odd, small, datas[2]],
                     [_relative(odd), _relative(small), _relative(datas[2])])
    notes = []                                               # inferred: a coincidence
    assert GR.run_grids(["odd.h5", "c"], [odd, datas[2]], [_relative(odd), _relative(datas[2])],
                        notes) == [None, None]
    assert notes == ["the largest run's peers fit a 4x4 (periodic, periodic) grid but those "
                     "of odd.h5 (7 ranks) fit no 2-D grid: no grid, peers taken relative to "
                     "the rank"]
    assert GR.target(grids, 64).dims == (8, 8)
    with pytest.raises(MinitraceError, match="--grid 4x4x4"):
        GR.target(grids, 64, (4, 4, 4))


@pytest.mark.parametrize("periodic", [True, False])
def test_periods_of_short_dimensions_from_the_call_counts(periodic):
    # 4x2x2 at most: dimensions 1 and 2 never wrap visibly; a torus sends both directions to
    # the one neighbour (as many calls as the middle of dimension 0 to both of its own)
    datas = [synthetic.halo_grid_trace(p, 3, periodic=periodic, cart=False) for p in (4, 8, 16)]
    grids = GR.run_grids(["a", "b", "c"], datas, [_relative(d) for d in datas])
    assert grids[-1] == GR.Grid((4, 2, 2), (periodic,) * 3)


def test_coordinates_of_many_ranks_in_any_shape():
    # numpy 2.4's unravel_index of an (n, 1) array goes wrong past 8,192 elements: the
    # peers of 16,384 ranks, shifted as (ranks, 1) + (1, offsets), were one rank off
    grid = GR.Grid((16, 32, 32), (False, False, False))
    ranks = np.arange(grid.size)
    flat = grid.coords(ranks)
    assert np.array_equal(flat[:, 2], ranks % 32) and np.array_equal(flat[:, 0], ranks // 1024)
    assert np.array_equal(grid.coords(ranks[:, None])[:, 0], flat)
    assert np.array_equal(grid.rank(grid.coords(ranks[:, None])), ranks[:, None])
    inner = ranks[(flat > 0).all(axis=1) & (flat < np.array(grid.dims) - 1).all(axis=1)]
    assert np.array_equal(grid.shift(inner[:, None], np.array([[[-1, -1, -1], [0, 0, 1]]])),
                          np.stack([inner - 1024 - 32 - 1, inner + 1], axis=1))
