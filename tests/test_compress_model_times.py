"""Model files' time means below the clocks' nanosecond (``store.TIME_RESOLUTION``) stored as
0: contiguous actions' gaps, end - start on float seconds of a run 2,000 s into the clock, are
+-1e-15..1e-13 s of rounding, each stored as a log code as dear as a real mean (public
Nekbone 4r's model file 7.6% smaller without them)."""
from __future__ import annotations

import numpy as np
import pytest

import minitrace
from minitrace.compress import store as ST
from minitrace.compress.files import write_compressed
from minitrace.model import TraceBuilder

T0 = 1940.604065439          # (a clock's seconds since boot, as recordings have them)


def contiguous_trace(P: int = 2, steps: int = 50, gap: float = 2e-7):
    """Each step: a compute right after the action before it (a gap of 0), a barrier
    ``gap`` after it, then a sendrecv right after that."""
    b = TraceBuilder(P)
    for r in range(P):
        t = T0 + 1e-3 * r
        for s in range(steps):
            dur = 1.234567e-4 * (1 + 0.01 * ((s * 7 + r) % 5))
            b.add(r, "compute", t_start=t, t_end=t + dur, volume=dur)
            t += dur + gap
            b.add(r, "barrier", t_start=t, t_end=t + 3.3e-6)
            t += 3.3e-6
            b.add(r, "sendrecv", t_start=t, t_end=t + 1.1e-5, peer=(r + 1) % P, tag=1,
                  bytes_sent=64, bytes_recv=64, vector=[(r - 1) % P, 1])
            t += 1.1e-5
    return b.build()


def test_gaps_of_contiguous_actions_are_stored_as_0(tmp_path):
    d = contiguous_trace()
    out = tmp_path / "m.h5"
    write_compressed(str(out), d, "model")
    with minitrace.open(out) as t:
        back, c = t.data(), t._reader.c
    st = c.side["stats"]
    gaps = st[st["what"] == 2]["mean"].to_numpy()
    assert (gaps == 0).sum() == 2 * st["group"].nunique()     # (compute, sendrecv a program)
    assert gaps.max() == pytest.approx(2e-7, rel=0.02)        # (the barrier's, kept)
    assert np.abs(gaps).min() == 0 and (np.abs(gaps[gaps != 0]) >= ST.TIME_RESOLUTION).all()
    for r in range(d.nranks):                 # (the spans exact, as before)
        a, b = d.actions[d.rank_slice(r)], back.actions[back.rank_slice(r)]
        assert b["t_start"][0] == pytest.approx(a["t_start"][0], abs=1e-9)
        assert b["t_end"][-1] == pytest.approx(a["t_end"][-1], abs=1e-9)


def test_info_says_means_below_the_resolution_are_0(tmp_path, capsys):
    """What ``info`` says a model file lost names the means stored as 0 (a gap of 1e-13 s is
    not within the precision of its 0)."""
    from minitrace import cli
    out = tmp_path / "m.h5"
    write_compressed(str(out), contiguous_trace(), "model")
    assert cli.main(["info", str(out)]) == 0
    assert f"or 0 below {ST.TIME_RESOLUTION * 1e9:g} ns)" in capsys.readouterr().out
