"""The model's tail keeps a mode of calls that miss their mean alike whole (``epochs.alike``).
Public miniWeather exchanges halos step after step and computes 4 times as long after one
exchange in three, at the same call site: the long calls, each as far above the site's mean,
filled the tail until it held :data:`epochs.TAIL_SHARE` of the misses (543 of 2r's 604), and
the others took the mean, their volume going to their rank's other steps.  A neighbour then
waited where the recorded run did not: the model's replay was 4-7% slower than the exact
file's (QA of session 30, L1)."""
from __future__ import annotations

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.compress import epochs as E
from minitrace.compress.files import write_compressed
from minitrace.model import TraceBuilder
from minitrace.replay import replay
from tests.support.synthetic import in_turn

STEPS = 600
SHORT, LONG = 2e-4, 2e-3
#: One step in this many computes ``LONG``: the longs are within the tail's budget.
EVERY = 6


def bimodal_trace():
    """2 ranks: an allreduce, then :data:`STEPS` halo exchanges (irecv, isend, waitall), each
    followed by a compute of ``SHORT``, or ``LONG`` (to 4% more) one step in :data:`EVERY`,
    at the same steps on both ranks; an allreduce.  The collectives, alike on both ranks, are
    the anchors: the steps make one epoch, the computes after the waitall one call site."""
    P = 2
    b = TraceBuilder(P)
    for r in range(P):
        add = in_turn(b, r)
        add("init", 1e-6)
        add("allreduce", 1e-5, bytes_sent=8, bytes_recv=8)
        for i in range(STEPS):
            add("irecv", 1e-6, peer=1 - r, tag=1, bytes_recv=4096, request=2 * i)
            add("isend", 1e-6, peer=1 - r, tag=1, bytes_sent=4096, request=2 * i + 1)
            add("waitall", 1e-5, vector=[2 * i, 2 * i + 1])
            v = LONG * (1 + 0.01 * ((7 * i + r) % 5)) if i % EVERY == 0 else SHORT
            add("compute", v, volume=v)
        add("allreduce", 1e-5, bytes_sent=8, bytes_recv=8)
        add("finalize", 1e-6)
    return b.build()


def computes(data, r: int) -> np.ndarray:
    a = data.actions[data.rank_slice(r)]
    return a["volume"][a["kind"] == K.CODE["compute"]]


def test_every_long_compute_keeps_its_value_and_the_replay_its_waits(tmp_path):
    d = bimodal_trace()
    exact, model = tmp_path / "z.h5", tmp_path / "m.h5"
    write_compressed(str(exact), d, "exact")
    write_compressed(str(model), d, "model")
    with minitrace.open(model) as t:
        back, c = t.data(), t._reader.c
    assert c.attrs["epoch_anchor"] == "collectives"
    for r in range(d.nranks):
        was, got = computes(d, r), computes(back, r)
        long = was >= LONG
        assert long.sum() == STEPS // EVERY
        # the two modes where they were: each long one (the tail's) and the shorts' mean
        assert got[long] == pytest.approx(was[long], rel=2 * 0.01)
        assert got[~long] == pytest.approx(SHORT, rel=2 * 0.01)
    # the model replays as the trace: every step's slowest rank is the recorded one's
    sim = {p: replay(str(p), engine="native", compute_rate="1Gf").simulated_time
           for p in (exact, model)}
    assert sim[model] == pytest.approx(sim[exact], rel=0.02)


def test_calls_alike_are_kept_or_lost_together():
    """Equal misses past the share: all kept (within the budget), none cut among them."""
    miss = np.array([5.0] * 20 + [0.1] * 30)
    at = np.zeros(len(miss), np.int64)
    kept = E.tail_calls(miss, at, budget=len(miss))
    assert kept[:20].all() and not kept[20:].any()
    kept = E.tail_calls(miss, at, budget=10)               # (the budget still bounds them)
    assert kept.sum() == 10


def test_misses_that_decline_evenly_are_cut_by_their_share_alone():
    miss = 0.99 ** np.arange(300)
    kept = E.tail_calls(miss, np.zeros(len(miss), np.int64), budget=len(miss))
    share = int(((np.cumsum(miss) - miss) < E.TAIL_SHARE * miss.sum()).sum())
    assert 0 < share < len(miss) and kept.sum() == share and kept[:share].all()
