"""Runs whose process grid has one rank along a dimension (MPI_Dims_create's 2-D grid at 2, 3
and 5 ranks: 2x1, 3x1, 5x1, as public UK-MAC TeaLeaf makes it) are not extrapolated to a grid
that spans that dimension (8 ranks: 4x2): no run made its calls along it.  TeaLeaf at 2, 3, 5
-> 8 was written with no halo along y and the reduce's root receiving nothing, without a
word.  A grid the runs cover (--grid 8x1) is extrapolated."""
from __future__ import annotations

from minitrace import storage
from minitrace.cli import main
from tests.support import synthetic


def _paths(tmp_path):
    paths = []
    for p in (2, 3, 5):
        paths.append(str(tmp_path / f"g{p}.h5"))
        storage.write_trace(paths[-1], synthetic.halo_grid_trace(p, 2, periodic=False, seed=p))
    return paths


def test_a_dimension_no_run_spans_is_refused(tmp_path, capsys):
    out = str(tmp_path / "x8.h5")
    assert main(["extrapolate", *_paths(tmp_path), "--ranks", "8", "-o", out]) == 1
    assert "the target grid 4x2 spans dimension(s) 2 along which every run's grid (2x1, 3x1, " \
        "5x1) has one rank" in capsys.readouterr().err


def test_a_grid_the_runs_cover_is_extrapolated(tmp_path, capsys):
    out = str(tmp_path / "x8.h5")
    assert main(["extrapolate", *_paths(tmp_path), "--ranks", "8", "--grid", "8x1",
                 "-o", out]) == 0
    assert "grid: 8x1 (open, open)" in capsys.readouterr().out
    assert main(["validate", out]) == 0
