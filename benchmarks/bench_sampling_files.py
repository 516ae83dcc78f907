"""Issue 38: ``--sample auto`` on recorded traces against their full replay, the figures that
benchmarks/RESULTS.md gives per recording since session 25 (written there as ``rates.py``).

For each file and compute rate: how many times fewer actions the sampled replay replays
(``1 / replayed_share``), its error against the full replay of the same trace on the same
generated platform, the bound it prints (both relative to the full replay), and whether the
bound held.  Replays are deterministic: load moves only how long this takes.

Run (the code measured is the one importable as ``minitrace``; PYTHONPATH picks another):

    python benchmarks/bench_sampling_files.py 1Gf,0.25Gf A.h5 B.h5 ...
"""
from __future__ import annotations

import os
import sys

from minitrace.replay import replay
from minitrace.replay.sampling import load_trace, sampled_replay


def main(rates: list[str], paths: list[str]) -> None:
    for path in paths:
        data, loops = load_trace(path)
        for rate in rates:
            s = sampled_replay(data, loops, "auto", compute_rate=rate)
            full = replay(data, compute_rate=rate).simulated_time
            err, bound = (s.simulated_time - full) / full, s.bound / full
            print(f"{os.path.basename(path):18s} {rate:6s} {1 / max(s.replayed_share, 1e-9):6.1f}x "
                  f"err={err:+.4%} bound={bound:.4%} {'held' if abs(err) <= bound else 'FAILED'}",
                  flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1].split(","), sys.argv[2:])
