"""Halo sizes under strong scaling on grids that change shape (minitrace/extrapolate/grid_laws.py).

UK-MAC CloverLeaf's halo messages hold the block's edge plus its corner cells, 8 * (240 / d + 5)
bytes per field and depth on a 240-cell mesh: no law of p fits them (the grids 2x2, 3x2, 4x2,
3x3, 4x3, 4x4 are not similar), nor the face law ``c * d_k / p`` (the rim).  Recorded at 4-16
ranks, its extrapolation was refused on 192 message sizes; forced, it wrote wrong sizes and 640
sends and receives that did not match.  ``a + c * d_k / p`` is fitted where three faces
validate it, and serves the same message in rank classes recorded at fewer grids."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import minitrace
from minitrace.cli import main
from minitrace.extrapolate import grid_laws as GL
from minitrace.validate import validate
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(600)


def _runs(*dims):
    return [SimpleNamespace(grid=SimpleNamespace(dims=d), nranks=int(np.prod(d))) for d in dims]


def _halo(runs, axis, mesh=240, rim=5, per=16):
    """CloverLeaf's size of a halo along ``axis``: the block's extent across it plus a rim."""
    return np.array([per * (mesh * r.grid.dims[axis] / r.nranks + rim) for r in runs])


TARGET = SimpleNamespace(dims=(6, 6))


def test_a_face_without_rim_is_the_plain_face_law():
    runs = _runs((2, 2), (2, 3), (2, 4))
    law = GL.face_law(_halo(runs, 0, rim=0), runs, 0, TARGET, 0.05)
    assert law.a == 0 and law(36) == pytest.approx(16 * 240 / 6)


def test_a_rimmed_face_is_fitted_from_three_faces_and_kept_for_others():
    runs = _runs((2, 2), (3, 2), (4, 2), (3, 3), (4, 3))     # faces across axis 1: 1/2 1/3 1/4
    rims: list = []
    law = GL.face_law(_halo(runs, 1), runs, 1, TARGET, 0.05, rims)
    assert law.a == pytest.approx(16 * 5) and law.c == pytest.approx(16 * 240)
    assert law(36) == pytest.approx(16 * (240 / 6 + 5)) and law.loo_error < 1e-9
    assert rims == [law] and not law.flagged and str(law) == "80 + 3840 * d1 / p"
    # two faces alone do not make a line: refused, unless the same message's law is known
    two = _runs((3, 3), (4, 3), (3, 4))                       # across axis 1: 1/3 1/4 1/3
    assert GL.face_law(_halo(two, 1), two, 1, TARGET, 0.05) is None
    pooled = GL.face_law(_halo(two, 1), two, 1, TARGET, 0.05, rims)
    assert pooled.a == law.a and pooled(36) == pytest.approx(law(36))
    # not along another axis, nor for another message
    assert GL.face_law(_halo(two, 0), two, 0, TARGET, 0.05, rims) is None
    assert GL.face_law(_halo(two, 1, per=24), two, 1, TARGET, 0.05, rims) is None


def test_faces_off_any_line_are_not_a_law():
    runs = _runs((2, 2), (3, 2), (4, 2), (3, 3))
    sizes = _halo(runs, 1) * np.array([1.0, 1.0, 1.1, 1.0])
    assert GL.face_law(sizes, runs, 1, TARGET, 0.05) is None


@pytest.fixture(scope="module")
def clover(tmp_path_factory):
    """tests/programs/clover2d.c on one 240x240 mesh at 4, 6, 8, 9, 12 and 16 ranks (its own
    grids 2x2 .. 4x4)."""
    from tests.support.record_util import build
    d = tmp_path_factory.mktemp("clover")
    exe = build("clover2d", d)
    paths = []
    for p in (4, 6, 8, 9, 12, 16):
        paths.append(str(d / f"c{p}.h5"))
        record(Path(paths[-1]), p, [str(exe), "6", "240", "240"])
    return paths


def test_clover_halos_extrapolate_exactly_under_strong_scaling(clover, tmp_path):
    """To 36 ranks (6x6): every message size as the program would send it there, every send
    matched by its receive.  Forced: the compute volumes of an oversubscribed recording are
    noise, which this test does not judge."""
    out = tmp_path / "x36.h5"
    assert main(["extrapolate", *clover, "--ranks", "36", "--scaling", "strong", "--force",
                 "-o", str(out)]) == 0
    with minitrace.open(str(out)) as t:
        data = t.data()
        assert validate(data).ok
        for r in (0, 14, 35):                          # a corner, an interior rank, a corner
            a = t.actions(rank=r)
            sends = a[a.kind == "isend"]
            assert set(sends.bytes_sent) == {8 * f * 2 * (240 // 6 + 5) for f in (1, 3)}


def test_a_forced_check_whose_sizes_disagreed_is_replayed(clover, capsys):
    """16 ranks (4x4) from 4-12, whose grids have two extents only along one dimension: no
    law validates those faces, and the forced fits of two classes disagreed on a message
    (SMPI aborted the check's replay, MPI_ERR_TRUNCATE; then it was said and not replayed).
    A send and its receive now take one size (extrapolate/agree.py): the check replays."""
    assert main(["extrapolate", *clover, "--check", "--force", "--scaling", "strong"]) == 0
    out = capsys.readouterr().out
    assert "structure at 16 ranks: identical to the recorded run" in out
    assert "replayed time: extrapolated" in out, out
    assert "another size at their receive than at their send" not in out, out
