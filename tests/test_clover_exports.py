"""Exports of UK-MAC CloverLeaf's pattern (tests/programs/clover2d.c; its own code is not in
the repository): on 2 ranks the mesh is cut across x only, so every step's bottom/top
exchange is an MPI_Waitall of no request.  The TI export left those out without a word
(CloverLeaf, 240x240 cells, 300 steps: 33102 actions written, 29500 read back, 3602 waitalls
gone and no warning), though it lists every other call it leaves out."""
from __future__ import annotations

import pytest

from minitrace import kinds as K
from minitrace.converters.simgrid_ti import write_ti
from minitrace.trace import open as open_trace
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def clover(programs, tmp_path_factory):
    """clover2d recorded on 2 ranks, 3 steps of a 16x16 mesh."""
    out = tmp_path_factory.mktemp("clover") / "clover.h5"
    record(out, 2, [programs("clover2d"), "3", "16", "16"], timeout=300)
    return out


def test_an_empty_waitall_left_out_of_the_ti_export_is_said(clover, tmp_path):
    """Each waitall of no request is counted as left out (no request), as a wait of
    MPI_REQUEST_NULL is; nothing is dropped."""
    with open_trace(str(clover)) as t:
        data = t.data()
    a = data.actions
    empty = int(((a["kind"] == K.CODE["waitall"]) & (a["vec_len"] == 0)).sum())
    assert empty > 0
    rep = write_ti(data, tmp_path / "clover.txt")
    assert not rep.dropped
    assert rep.approximated["waitall (left out: no request)"] == empty
