"""Iteration sampling against the full replay, and the speed of noise replicas (issue 25).

Sampling: generated iterative traces (minitrace/synthetic_loops.py: a stencil, CG with a
drifting SpMV, an AMR-like code with refinement phases and alternating iterations; with and
without jitter and warm-up), each replayed fully and with ``--sample auto`` on the default
generated cluster (one host per rank, 1Gf, 10GBps, 1us), compute rate 1Gf.  Reported per case:
iterations, actions, full and sampled wall time (every replay of the sampled one and its
bookkeeping), their ratio, the relative error of the sampled prediction, the reported bound,
and whether the bound holds.  Targets: error <= 1%, ratio >= 10, bound holds in every case.

Replicas (``--replicas``): 100 replicas of a ~1 M-action stencil with sampling on, 2 workers.

Run: nice -n 10 python benchmarks/bench_sampling.py [--quick] [--skip-replicas]
"""
from __future__ import annotations

import argparse
import os
import time


import minitrace.compress.loop_view  # noqa: F401  (imported before timing)
import minitrace.replay.timeline  # noqa: F401
from minitrace.replay import replay
from minitrace.replay.replicas import replicas
from minitrace.replay.sampling import loops_of, sampled_replay
from minitrace.synthetic_loops import amr, cg, stencil

RATE = "1Gf"


def cases(scale: float):
    n = lambda k: max(int(k * scale), 400)     # noqa: E731
    return [
        ("stencil 16r", stencil(16, n(4000))),
        ("stencil 16r jitter 5% warm-up", stencil(16, n(4000), jitter=0.05, warmup=2.0,
                                                  seed=1)),
        ("cg 16r drift 30% jitter 3%", cg(16, n(4000), jitter=0.03, drift=0.3, seed=2)),
        ("amr 16r 3 phases alternating", amr(16, n(8000), phases=3, alternate=0.3, seed=3)),
        ("amr 16r 4 phases jitter 5%", amr(16, n(8000), phases=4, jitter=0.05, seed=4)),
        ("stencil 2r jitter 20%", stencil(2, n(20000), jitter=0.2, seed=5)),
    ]


def sampling(scale: float) -> None:
    print("| case | iterations | actions | full wall (s) | sampled wall (s) (loop detection) | "
          "speed-up | replayed | error | bound | holds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, (data, bounds) in cases(scale):
        t = time.perf_counter()
        full = replay(data, compute_rate=RATE)
        full_wall = time.perf_counter() - t
        t = time.perf_counter()
        loops, _ = loops_of(data)                                  # minitrace.compress
        detect = time.perf_counter() - t
        s = sampled_replay(data, loops, "auto", compute_rate=RATE)
        wall = detect + s.wall_time
        err = s.simulated_time - full.simulated_time
        print(f"| {name} | {bounds.shape[1] - 1} | {len(data.actions)} | {full_wall:.2f} | "
              f"{wall:.2f} ({detect:.2f}) | {full_wall / wall:.1f}x | {s.replayed_share:.1%} | "
              f"{err / full.simulated_time:+.4%} | {s.bound / full.simulated_time:.4%} | "
              f"{'yes' if abs(err) <= s.bound else 'NO'} |", flush=True)


def replica_speed(scale: float) -> None:
    data, bounds = stencil(16, max(int(8000 * scale), 500), jitter=0.05, seed=7)
    t = time.perf_counter()
    r = replicas(data, 100, "trace", seed=1, sample="auto", workers=2, compute_rate=RATE)
    wall = time.perf_counter() - t
    s = r.summary()
    print(f"\nreplicas: 100 of a {len(data.actions)}-action trace, sampling on, 2 workers: "
          f"{wall:.1f} s wall; median {s['median']:.6g} s, 95% {s['lo']:.6g}-{s['hi']:.6g} s "
          f"(plain {r.plain_time:.6g} s, replayed {r.sampled.replayed_share:.1%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the iterations")
    ap.add_argument("--skip-replicas", action="store_true")
    args = ap.parse_args()
    scale = 0.1 if args.quick else 1.0
    sampling(scale)
    if not args.skip_replicas:
        replica_speed(scale)
    print(f"\nload average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
