"""Issue 38: whether ``--sample auto``'s printed bound holds on random iterative traces, the
"random sweep" of benchmarks/RESULTS.md since session 25 (written there as ``sweep.py``).

Seed s builds, with ``numpy.random.default_rng(100 + s)``, a loop of 400-1,500 iterations on
2-4 ranks: a halo exchange (4 KB-4 MB; the compute overlapped with it in 70% of the traces,
after its wait otherwise), the compute, an allreduce; the compute's base 0.3-0.7 ms, then each
with its probability: a drift of one rank's share (50%), a spike in the middle (40%), a slow
rank switching to another (40%), a global change of level (30%), convergence checks every
k1 then k2 iterations (30%); jitter 0.5-5%.  Each trace is replayed fully and sampled at
1, 0.25 and 4 Gf.  Printed: each failure (or every case with ``-a``), then the count.  A
seed range the bound was tuned on says less than a fresh one.

Run (the code measured is the one importable as ``minitrace``):

    python benchmarks/bench_sampling_sweep.py N START [-a]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from minitrace.replay import replay
from minitrace.replay.sampling import sampled_replay

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests.support
from tests.support.ring_loops import ring_trace  # noqa: E402

RATES = ("1Gf", "0.25Gf", "4Gf")


def random_case(seed: int):
    """(trace, its description) of sweep seed ``seed``."""
    g = np.random.default_rng(100 + seed)
    nr, n = int(g.choice([2, 3, 4])), int(g.integers(400, 1500))
    base = g.uniform(3e-4, 7e-4)
    size = int(g.choice([65536, 1 << 20, 4 << 20]))
    w = np.full((nr, n), base)
    what = [f"nr={nr} n={n} base={base:.1e} size={size}"]
    if g.random() < 0.5:
        r, amp = g.integers(nr), g.uniform(-0.5, 0.5)
        w[r] *= 1 + amp * np.sin(np.pi * g.uniform(0.5, 2) * np.arange(n) / n)
        what.append(f"drift r{r} {amp:+.2f}")
    if g.random() < 0.4:
        a, length, f = int(g.integers(n // 4, n // 2)), int(g.integers(10, 80)), g.uniform(1.3, 3)
        w[:, a:a + length] *= f
        what.append(f"spike {a}+{length} x{f:.1f}")
    if g.random() < 0.4:
        r1, r2 = g.choice(nr, 2, replace=False)
        f, c = g.uniform(1.1, 1.5), int(g.integers(n // 4, 3 * n // 4))
        w[r1, :c] *= f
        w[r2, c:] *= f
        what.append(f"switch {r1}->{r2} at {c} x{f:.2f}")
    if g.random() < 0.3:
        c, f = int(g.integers(n // 4, 3 * n // 4)), g.uniform(0.6, 1.4)
        w[:, c:] *= f
        what.append(f"level x{f:.2f} from {c}")
    jitter = g.uniform(0.005, 0.05)
    w *= 1 + jitter * g.standard_normal(w.shape)
    checks = None
    if g.random() < 0.3:
        k1, k2 = int(g.integers(5, 60)), int(g.integers(5, 60))
        c = int(g.integers(n // 4, 3 * n // 4))
        idx = np.arange(n)
        checks = np.where(idx < c, idx % k1 == 0, idx % k2 == 0)
        what.append(f"checks {k1}->{k2}")
    overlap = bool(g.random() < 0.7)
    what.append(f"overlap={overlap} jitter={jitter:.3f}")
    return ring_trace(nr, np.abs(w), np.full(n, size), checks, overlap), " ".join(what)


def main(n: int, start: int, every: bool) -> None:
    fails = 0
    for seed in range(start, start + n):
        data, what = random_case(seed)
        for rate in RATES:
            s = sampled_replay(data, None, "auto", compute_rate=rate)
            full = replay(data, compute_rate=rate).simulated_time
            err, bound = (s.simulated_time - full) / full, s.bound / full
            fails += abs(err) > bound
            if abs(err) > bound or every:
                print(f"seed {seed} {what} {rate}: err={err:+.4%} bound={bound:.4%} "
                      f"{'held' if abs(err) <= bound else 'FAILED'} "
                      f"x{1 / max(s.replayed_share, 1e-9):.1f}", flush=True)
    print("fails", fails, "of", n * len(RATES))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(int(sys.argv[1]), int(sys.argv[2]), "-a" in sys.argv[3:])
