"""A replay refused with --sample names the trace, as replay without it does: public Intel MPI
Benchmarks IMB-RMA (one-sided calls, which SimGrid's TI replay cannot express) was refused in a
line naming no file under --sample and by predict (minitrace.errors.naming); so does the
replay of its compressed file, streamed (helper QA, session 29: public PRK transpose-get)."""
from __future__ import annotations

import subprocess
import sys

import pytest

import minitrace
import minitrace.converters.simgrid_ti as simgrid_ti
import minitrace.replay.api
import minitrace.replay.sampling
from minitrace.compress.files import write_compressed
from minitrace.errors import MinitraceError
from minitrace.model import TraceBuilder
from minitrace.replay import replay
from minitrace.storage import write_trace


def _rma(tmp_path):
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "win_fence")
        b.add(r, "put", peer=1 - r, bytes_sent=8)
        b.add(r, "win_fence")
        b.add(r, "finalize")
    h5, z = tmp_path / "rma.h5", tmp_path / "rma_z.h5"
    write_trace(h5, b.build())
    write_compressed(str(z), b.build())
    return h5, z


def test_sampled_replay_refusal_names_the_trace(tmp_path):
    h5, z = _rma(tmp_path)
    for h5, extra in ((h5, []), (h5, ["--sample", "auto"]), (z, [])):
        p = subprocess.run([sys.executable, "-m", "minitrace", "replay", str(h5),
                            "--compute-rate", "1Gf", *extra],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
        assert p.stderr.startswith(f"minitrace: error: {h5}: cannot replay: SimGrid's TI format "
                                   "cannot express 2 put, 4 win_fence"), (extra, p.stderr)


def test_one_sided_calls_are_refused_before_any_work(tmp_path, monkeypatch):
    """Public Branson (2.4 M actions, one-sided calls) was validated and exported for 173 s
    before the export's count of what it dropped refused it: kinds the TI format has no line
    for are now refused first, in the file and in a compressed file's distinct actions."""
    def worked(*args, **kwargs):
        raise AssertionError("validated, lowered or exported before refusing")
    monkeypatch.setattr(minitrace.replay.api, "checked", worked)
    monkeypatch.setattr(simgrid_ti, "lower", worked)
    monkeypatch.setattr(simgrid_ti, "RankWriter", worked)
    monkeypatch.setattr(minitrace.replay.sampling, "loops_of", worked)
    h5, z = _rma(tmp_path)
    for path in (h5, z):
        with pytest.raises(MinitraceError, match="cannot express 2 put, 4 win_fence") as e:
            replay(path, compute_rate="1Gf", check=True)
        assert e.value.path == str(path)
        with minitrace.open(path) as t, \
                pytest.raises(MinitraceError, match="cannot express 2 put, 4 win_fence"):
            minitrace.replay.sampling.sampled_replay(t.data(), None, compute_rate="1Gf")
    # a compressed file: counted from its grammar, not expanded (the review of 08501ba)
    monkeypatch.setattr(minitrace.replay.api, "_rank_traces", worked)
    with pytest.raises(MinitraceError, match="cannot express 2 put, 4 win_fence"):
        replay(z, compute_rate="1Gf", engine="native")


def test_intercommunicator_collectives_are_refused_before_any_work(tmp_path, monkeypatch):
    from minitrace import kinds as K
    b = TraceBuilder(2)
    b.add_comm(3, [0, 1])
    for r in range(2):
        b.add(r, "init")
        b.add(r, "bcast", peer=0, comm=3, bytes_sent=8, bytes_recv=8, flags=K.FLAG_INTERCOMM)
        b.add(r, "finalize")
    write_trace(tmp_path / "inter.h5", b.build())
    monkeypatch.setattr(minitrace.replay.api, "checked", lambda *a: pytest.fail("validated"))
    with pytest.raises(MinitraceError, match="cannot express 2 bcast on an intercommunicator"):
        replay(tmp_path / "inter.h5", compute_rate="1Gf")
