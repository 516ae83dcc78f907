"""Known failures of `--sample auto` (strict xfails), found by session 28's review (issue 38)
on seeds of the random sweep its bound was not tuned on: benchmarks/bench_sampling_sweep.py's
seeds 1000-1149 (450 runs) fail in 5, two traces, both the same before session 28 (5776b6b): a
global change of level by 0.70 inside one phase's skip (seed 1057: -0.597% from the full replay
against a bound of 0.450% at 0.25 Gf; also at 1 and 4 Gf), and a drift of one of 4 ranks by
+13% under 4.6% jitter, one drift phase never cut (seed 1094: -0.438% against 0.413% at 1 Gf;
also at 4 Gf)."""
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


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="review s28: fresh sweep seeds "
                   "whose printed bound fails (1057: -0.597% against 0.450%; 1094: -0.438% "
                   "against 0.413%)")
@pytest.mark.parametrize("seed, rate", [(1057, "0.25Gf"), (1094, "1Gf")])
def test_the_bound_holds_on_fresh_sweep_seeds(seed, rate):
    data = _random_case(seed)
    s = sampled_replay(data, None, "auto", compute_rate=rate)
    full = replay(data, compute_rate=rate).simulated_time
    assert s.skipped_share > 0, s.notes
    assert abs(s.simulated_time - full) <= s.bound, (s.simulated_time - full, s.bound)
