"""The bound of ``--sample auto`` (issue 38): where it is over the tolerance, auto replays a
longer start of the least certain phase while the replay stays GAIN times smaller than the
trace, and says so."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from minitrace.replay import replay
from minitrace.replay.sampling import GAIN, TOLERANCE, loop_window, sampled_replay
from tests.support.synthetic_loops import stencil

RATE = "1Gf"


def _noisy_halo(data, bounds, sigma: float, seed: int):
    """``data`` with the halo messages (over 1000 bytes) of each iteration scaled by a seeded
    factor uniform in 1 +- ``sigma``, alike on every rank (the messages still match): time
    that the iterations' static cost (their compute, their calls) does not explain, as the
    waits on sub-communicators of public miniGhost at 4 ranks (5.3% per iteration about the
    line)."""
    n = bounds.shape[1] - 1
    factor = 1 + sigma * (2 * np.random.default_rng(seed).random(n) - 1)
    acts = data.actions.copy()
    for r in range(len(bounds)):
        rows = np.arange(bounds[r, 0], bounds[r, -1])
        it = np.searchsorted(bounds[r], rows, side="right") - 1
        for f in ("bytes_sent", "bytes_recv"):
            big = acts[f][rows] > 1000
            acts[f][rows[big]] = (acts[f][rows[big]] * factor[it[big]]).astype(acts[f].dtype)
    return replace(data, actions=acts)


def test_a_wide_bound_replays_a_longer_start():
    """1500 iterations whose times depart from their cost by ~6% each: a start of 4 windows
    left the bound at 1.8% of the prediction (auto stopped there and printed the reason);
    doubling the start twice brings it within the tolerance, still many times fewer actions
    than the trace, and the note says what was done."""
    data, bounds = stencil(2, 1500, halo=65536)
    noisy = _noisy_halo(data, bounds, 0.8, seed=1)
    s = sampled_replay(noisy, [bounds], "auto", compute_rate=RATE)
    (p,) = s.phases
    w = loop_window(1500)
    assert p.replayed > 4 * w and p.skipped > 0 and s.replays > 1
    assert any("replayed a longer start" in n for n in s.notes)
    assert s.bound <= TOLERANCE * s.simulated_time
    assert s.replayed_share * GAIN <= 1
    full = replay(noisy, compute_rate=RATE).simulated_time
    assert abs(s.simulated_time - full) <= s.bound


def test_a_longer_start_stops_at_the_gain():
    """300 iterations (a window of 7: a start of 28 and a tail of 7, 8.5x fewer actions than
    the trace), ~5% per iteration about the line: doubling the start would leave the replay
    under GAIN times smaller than the trace, so it grows as far as it stays so, then stops
    with the bound still over the tolerance, and says why it replayed no more."""
    data, bounds = stencil(2, 300, halo=65536)
    noisy = _noisy_halo(data, bounds, 0.8, seed=1)
    s = sampled_replay(noisy, [bounds], "auto", compute_rate=RATE)
    (p,) = s.phases
    w = loop_window(300)
    assert 4 * w < p.replayed < 8 * w and p.skipped > 0
    assert s.replayed_share * GAIN <= 1
    assert s.bound > TOLERANCE * s.simulated_time
    (why,) = [n for n in s.notes if "exceeds the 1% tolerance" in n]
    assert f"under {GAIN:g}x smaller than the trace" in why
    full = replay(noisy, compute_rate=RATE).simulated_time
    assert abs(s.simulated_time - full) <= s.bound


def test_a_fixed_sample_is_not_grown():
    """``--sample K`` replays K iterations whatever the bound: the user chose them."""
    data, bounds = stencil(2, 1500, halo=65536)
    s = sampled_replay(_noisy_halo(data, bounds, 0.8, seed=1), [bounds], 48,
                       compute_rate=RATE)
    assert [p.replayed for p in s.phases] == [48] and s.replays == 1
    assert not any("longer start" in n for n in s.notes)
