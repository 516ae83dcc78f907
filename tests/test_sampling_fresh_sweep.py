"""Seeds of the random sweep its bound was not tuned on (issue 38): benchmarks/
bench_sampling_sweep.py's seeds 1000-1149 (450 runs) failed in 5, two traces, found by session
28's review (strict xfails until session 29): a global change of level by 0.70 inside one
phase's skip (seed 1057: -0.597% from the full replay against a bound of 0.450% at 0.25 Gf;
also at 1 and 4 Gf), and a drift of one of 4 ranks by +13% under 4.6% jitter (seed 1094:
-0.438% against 0.413% at 1 Gf; also at 4 Gf).  Both were which rank is the slowest: an
iteration takes 4-12 us beyond its compute critical path as its slowest rank is 0, 1-2 or 3,
and the start and the tail held another mix of them than the skipped iterations (1057: rank
0 the slowest in 22 of 60 fitted iterations, 34 of 1,132 skipped); the line now takes each
slowest rank's iterations at a level of their own (``sampling._by_slowest``): -0.008% against
0.450% and -0.035% against 0.413% (the bounds as they were)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from minitrace.replay import replay
from minitrace.replay.sampling import sampled_replay

_SWEEP = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sampling_sweep.py"


def _random_case(seed: int):
    """The sweep's trace of ``seed`` (its own builder, loaded from the file)."""
    spec = importlib.util.spec_from_file_location("bench_sampling_sweep", _SWEEP)
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    return sweep.random_case(seed)[0]


@pytest.mark.parametrize("seed, rate", [(1057, "0.25Gf"), (1094, "1Gf")])
def test_the_bound_holds_on_fresh_sweep_seeds(seed, rate):
    data = _random_case(seed)
    s = sampled_replay(data, None, "auto", compute_rate=rate)
    full = replay(data, compute_rate=rate).simulated_time
    assert s.skipped_share > 0, s.notes
    assert abs(s.simulated_time - full) <= s.bound, (s.simulated_time - full, s.bound)
