"""Issue 38: ``--sample auto`` on recorded traces against their full replay, the figures that
benchmarks/RESULTS.md gives per recording since session 25 (written there as ``rates.py``).

For each file and compute rate: how many times fewer actions the sampled replay replays
(``1 / replayed_share``), its error against the full replay of the same trace on the same
generated platform, the bound it prints (both relative to the full replay), and whether the
bound held.  Replays are deterministic: load moves only how long this takes.

``--sampled-only``: no full replay; the sampled replay's prediction and bound in seconds, to
all their digits, and its factor: two codes' outputs that must agree compared line for line
(a change of the sampling's own speed).

Run (the code measured is the one importable as ``minitrace``; PYTHONPATH picks another):

    python benchmarks/bench_sampling_files.py [--sampled-only] 1Gf,0.25Gf A.h5 B.h5 ...
"""
from __future__ import annotations

import os
import sys

from minitrace.replay import replay
from minitrace.replay.sampling import load_trace, sampled_replay


def main(rates: list[str], paths: list[str], sampled_only: bool = False) -> None:
    for path in paths:
        data = load_trace(path)
        for rate in rates:
            s = sampled_replay(data, None, "auto", compute_rate=rate)
            factor = f"{os.path.basename(path):18s} {rate:6s} " \
                     f"{1 / max(s.replayed_share, 1e-9):6.1f}x"
            if sampled_only:
                print(f"{factor} time={s.simulated_time!r} bound={s.bound!r} "
                      f"replayed={s.replayed_share!r}", flush=True)
                continue
            full = replay(data, compute_rate=rate).simulated_time
            err, bound = (s.simulated_time - full) / full, s.bound / full
            print(f"{factor} err={err:+.4%} bound={bound:.4%} "
                  f"{'held' if abs(err) <= bound else 'FAILED'}", flush=True)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--sampled-only"]
    if len(args) < 2:
        sys.exit(__doc__)
    main(args[0].split(","), args[1:], sampled_only=len(args) < len(sys.argv) - 1)
