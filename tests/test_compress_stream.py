"""Replaying a compressed trace (issue 23): the TI lines streamed from the grammar range by
range are the whole-trace export's, byte for byte, and the native replayer fed through named
pipes predicts the same times as from the expanded trace."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import minitrace
from minitrace import storage
from tests.support import synthetic
from minitrace.compress.expand import Expander
from minitrace.compress.files import write_compressed
from minitrace.compress.store import compress
from minitrace.model import TraceBuilder
from minitrace.replay.stream import RankText, streamable
from minitrace.converters.simgrid_ti import ExportReport, read_ti, write_ti
from minitrace.replay.replayer_build import binary
from minitrace.replay.work import in_flops
from tests.support import fixtures

pytestmark = pytest.mark.timeout(300)


def _traces():
    yield "ring", synthetic.ring_trace(4, 4 * 2002), 1e9
    yield "stencil", synthetic.stencil_trace(8, 60), 1e9
    yield "loop", synthetic.loop_trace(3, 6000, True), 1e9      # (no init: not replayable)
    for name in ("p2p.txt", "collectives.txt"):
        yield name, read_ti(fixtures.DATA / "ti" / name), None


@pytest.mark.parametrize("name,data,rate", list(_traces()), ids=lambda x: x
                         if isinstance(x, str) else "")
@pytest.mark.parametrize("rows", [50, 1000])
def test_streamed_lines_are_the_export(tmp_path, name, data, rate, rows):
    c = compress(data)
    c.meta = dict(data.meta)
    assert streamable(c) is None
    flops, _ = in_flops(data, rate, None, None)
    write_ti(flops, tmp_path / "list.txt", free_tests=True)    # (as the replay writes it)
    exp, rep, counts = Expander(c), ExportReport(), Counter()
    for r in range(data.nranks):
        text = b"".join(RankText(exp, r, rate, None, None, rep, counts, rows,
                                 free_tests=True))
        assert text == (tmp_path / "list.txt_files" / f"{r}.txt").read_bytes(), r


def test_a_trace_the_export_lowers_is_not_streamed():
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2)
    b.add_comm(1, [0, 1])
    for r in range(2):
        b.add(r, "allreduce", comm=1, bytes_sent=8, bytes_recv=8)
    assert "lowers" in streamable(compress(b.build()))


@pytest.mark.parametrize("name,data,rate", list(_traces())[:2] + list(_traces())[3:], ids=lambda x: x
                         if isinstance(x, str) else "")
def test_replay_from_the_compressed_file_predicts_the_same_times(tmp_path, name, data, rate):
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(plain, data)
    write_compressed(str(packed), data)
    kw = dict(compute_rate=rate) if rate else {}
    a = minitrace.replay.replay(str(plain), engine="native", **kw)
    b = minitrace.replay.replay(str(packed), engine="native", **kw)
    assert b.simulated_time == a.simulated_time and b.rank_end_times == a.rank_end_times
    assert b.notes == a.notes
    assert np.isfinite(b.simulated_time) and b.simulated_time > 0
    # and it was streamed: the compressed file gets named pipes, the plain one TI files
    from minitrace.replay.api import _feeder
    (tmp_path / "w1").mkdir()
    (tmp_path / "w2").mkdir()
    assert _feeder(str(plain), tmp_path / "w1", rate, None, None, binary(), False, "auto",
                   {})[0] is None
    assert _feeder(str(packed), tmp_path / "w2", rate, None, None, binary(), False, "auto",
                   {})[0] is not None


@pytest.mark.parametrize("library,name", [("MPICH Version:\t4.0.2", "MPICH"),
                                          ("Open MPI v4.1.4", "Open MPI")])
def test_the_streamed_replay_says_whose_collectives_as_the_plain_one(tmp_path, library, name):
    """The compressed file's replay (streamed) names the library whose collective algorithms
    it used, as the plain file's does (its note was left out: public CoMD 2r, helper QA)."""
    b = TraceBuilder(2, {"volume_unit": "flops", "mpi_library": library})
    for r in range(2):
        b.add(r, "init")
        for _ in range(20):
            b.add(r, "compute", volume=1e6)
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
        b.add(r, "finalize")
    data = b.build()
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(plain, data)
    write_compressed(str(packed), data)
    a = minitrace.replay.replay(str(plain), engine="native")
    b = minitrace.replay.replay(str(packed), engine="native")
    assert f"collectives as {name} runs them (--collectives; docs/REPLAY.md)" in a.notes
    assert b.notes == a.notes and b.simulated_time == a.simulated_time


def test_a_rank_without_init_is_refused_as_from_the_column_form(tmp_path):
    from minitrace import MinitraceError
    data = synthetic.loop_trace(2, 200, True)
    packed = tmp_path / "packed.h5"
    write_compressed(str(packed), data)
    with pytest.raises(MinitraceError, match="rank 0 must start with '0 init', found '0 compute"):
        minitrace.replay.replay(str(packed), engine="native", compute_rate=1e9)
