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


def test_the_otf2_export_says_what_the_archive_does_not_hold(clover, tmp_path):
    """The recorded program's MPI library is said not written; the compute volumes are when
    they are not the times between the calls (CPU time, instructions), not when they are."""
    import subprocess
    import sys
    from dataclasses import replace

    from minitrace.commands.convert import otf2_not_written

    p = subprocess.run([sys.executable, "-m", "minitrace", "convert", "--to", "otf2", "-o",
                        str(tmp_path / "otf2"), str(clover)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    with open_trace(str(clover)) as t:
        data = t.data()
        library = t.meta["mpi_library"]
    first = " ".join(library.strip().splitlines()[0].split())
    assert f"minitrace: note: the recorded program's MPI library not written ({first})" \
        in p.stderr
    a = data.actions.copy()
    comp = a["kind"] == K.CODE["compute"]
    a["volume"][comp] = a["t_end"][comp] - a["t_start"][comp]
    assert not any("compute volumes" in x for x in otf2_not_written(replace(data, actions=a)))
    a["volume"][comp] *= 0.5
    lost = otf2_not_written(replace(data, actions=a))
    assert any(x.startswith("compute volumes not written (") for x in lost)


def test_seconds_read_back_from_ti_as_flops_are_said(clover, tmp_path):
    """A trace in seconds exported to TI comes back in flops (TI holds no unit), each compute
    below one flop: the import says so; a TI trace of real flops (the bundled demo) not."""
    import subprocess
    import sys
    from importlib import resources

    with open_trace(str(clover)) as t:
        assert t.volume_unit == "seconds"
        write_ti(t.data(), tmp_path / "clover.txt")

    def imported(src, out):
        p = subprocess.run([sys.executable, "-m", "minitrace", "convert", "--from", "ti", "-o",
                            str(tmp_path / out), str(src)], capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        return p.stderr

    assert "minitrace: note: every compute amount is below 1 flop (the largest " in \
        imported(tmp_path / "clover.txt", "back.h5")
    demo = resources.files("minitrace") / "data" / "demo_ring4.txt"
    assert "below 1 flop" not in imported(demo, "demo.h5")
