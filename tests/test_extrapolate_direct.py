"""The extrapolated file written from the class programs (extrapolate/direct.py), no rank's
actions made, is the file written of the trace built in memory (extrapolate/build.py), array
for array and attribute for attribute: on rings and lines, open and periodic 2-D and 3-D
grids (a torus falls back to the trace in memory), with an anchored class, with the means
instead of the spread, in blocks of a few ranks."""
import pytest

import minitrace
from minitrace.extrapolate import build as B
from minitrace.extrapolate import check as C
from minitrace.extrapolate import direct as D
from tests.support import synthetic
from tests.support.h5content import content


def _runs(ndims, periodic, scales, root_output=False):
    if ndims == 1:
        datas = [synthetic.halo_1d_trace(p, periodic=periodic, seed=p, root_output=root_output)
                 for p in scales]
    else:
        datas = [synthetic.halo_grid_trace(p, ndims, "weak", periodic, seed=p) for p in scales]
    return C.runs_of([f"{p}.h5" for p in scales], datas)


def _both(tmp_path, runs, target, **kw):
    """(in memory, direct) files of one extrapolation of the runs ``runs()`` makes (each
    its own: composing adds classes to the runs)."""
    data, _, _ = B.extrapolate(runs(), target, "weak", force=True, **kw)
    memory, direct = str(tmp_path / "memory.h5"), str(tmp_path / "direct.h5")
    B.write(memory, data)
    progs, _, _ = B.plan(runs(), target, "weak", force=True, **kw)
    assert D.write(direct, progs) == len(data.actions)
    return memory, direct


@pytest.mark.parametrize("ndims, periodic, scales, target", [
    (1, True, (2, 4, 8), 64), (1, False, (4, 8, 16), 64), (2, False, (4, 8, 16), 64),
    (2, True, (4, 8, 16), 64), (3, False, (8, 16, 32), 128), (3, True, (4, 8, 16), 64)])
def test_the_direct_file_is_the_one_built_in_memory(tmp_path, ndims, periodic, scales,
                                                     target):
    memory, direct = _both(tmp_path, lambda: _runs(ndims, periodic, scales), target)
    assert content(direct) == content(memory)


@pytest.mark.parametrize("kw", [{"spread": False}, {"seed": 3}])
def test_means_and_other_seeds_are_written_the_same(tmp_path, kw):
    memory, direct = _both(tmp_path, lambda: _runs(3, False, (8, 16, 32)), 128, **kw)
    assert content(direct) == content(memory)


def test_an_anchored_class_and_blocks_of_few_ranks(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "BLOCK_ACTIONS", 100)      # a few ranks per block
    memory, direct = _both(tmp_path, lambda: _runs(1, False, (4, 8, 16), root_output=True), 64)
    assert content(direct) == content(memory)
    with minitrace.open(direct) as t:
        data = t.data()
    assert data.nranks == 64 and data.actions["volume"][data.rank_slice(0)].max() > 0


def test_open_grids_are_not_built_in_memory(tmp_path, monkeypatch):
    """The case the direct writer is for: no rank's actions made (the torus above is)."""
    def refuse(progs):
        raise AssertionError("built in memory")
    progs, _, _ = B.plan(_runs(3, False, (8, 16, 32)), 128, "weak", force=True)
    monkeypatch.setattr(B, "materialize", refuse)
    assert D.write(str(tmp_path / "direct.h5"), progs) > 0
    torus, _, _ = B.plan(_runs(3, True, (4, 8, 16)), 64, "weak", force=True)
    with pytest.raises(AssertionError, match="built in memory"):
        D.write(str(tmp_path / "torus.h5"), torus)
