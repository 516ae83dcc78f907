"""A phase fitted once, then replayed whole (issue 38): a short solve like a longer one but
fitted alone (:func:`minitrace.replay.sampling._apart`) grows its start to four windows,
which covers its iterations; nothing of it is skipped, so nothing of it is predicted (its
first fit's skipped time stayed and was added to the prediction: +1.9e-2 s from the full
replay against a bound of 5.6e-4 s)."""
from __future__ import annotations

from minitrace.replay import replay
from minitrace.replay.sampling import sampled_replay
from tests.support.overlapped_solves import overlapped_solves

RATE = "1Gf"


def test_a_phase_replayed_whole_after_its_fit_predicts_nothing():
    data = overlapped_solves([200, 18, 18, 18])     # (its first solve fitted alone)
    s = sampled_replay(data, None, "auto", compute_rate=RATE)
    whole = [p for p in s.phases if not p.skipped]
    assert whole, s.notes
    assert all(p.skipped_time == 0 and p.variance == 0 for p in whole)
    full = replay(data, compute_rate=RATE)
    assert abs(s.simulated_time - full.simulated_time) <= s.bound, s.notes
