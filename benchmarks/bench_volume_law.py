"""Coverage of the replicas' volume laws without any replay (issue 25): R simulated recordings of
2 ranks x 300 iterations of a Pareto(2.5) compute (mean 1, the law of benchmarks/apps/
noisy_iter.c); a run's time is taken as the sum over iterations of the slower rank's compute.
For each recording, N replicas drawn (a) with :mod:`minitrace.replay.volume_law` (each replica's
law drawn with its uncertainty, GPD tail), (b) by a plain bootstrap of the recording, (c) the
plain bootstrap widened by sqrt(2) around its median (the previous rule); each 95% interval
is checked against the other recordings' times.
Run: python benchmarks/bench_volume_law.py [--recordings 150] [--replicas 100] [--seed 5]
"""
from __future__ import annotations

import argparse

import numpy as np

from minitrace.replay.volume_law import SiteVolumes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recordings", type=int, default=150)
    ap.add_argument("--replicas", type=int, default=100)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    recs = 0.6 / rng.random((args.recordings, 2, 300)) ** (1 / 2.5)
    truth = recs.max(axis=1).sum(axis=1)
    site = np.repeat([0, 1], 300)
    cover = {"volume_law": [], "bootstrap": [], "bootstrap x sqrt(2)": []}
    width = []
    for i, r in enumerate(recs):
        sites = SiteVolumes.of(np.sort(r, axis=1).ravel(), np.array([0, 300]),
                               np.array([300, 300]))
        law = [sites.law(rng).quantile(site, rng.random(600)).reshape(2, 300).max(0).sum()
               for _ in range(args.replicas)]
        boot = [np.stack([rng.choice(x, 300) for x in r]).max(0).sum()
                for _ in range(args.replicas)]
        others = np.delete(truth, i)

        def inside(lo, hi):
            return np.mean((others >= lo) & (others <= hi))
        lo, med, hi = np.percentile(law, [2.5, 50, 97.5])
        cover["volume_law"].append(inside(lo, hi))
        width.append((hi - lo) / med)
        lo, med, hi = np.percentile(boot, [2.5, 50, 97.5])
        cover["bootstrap"].append(inside(lo, hi))
        k = np.sqrt(2)
        cover["bootstrap x sqrt(2)"].append(inside(med - k * (med - lo), med + k * (hi - med)))
    for name, c in cover.items():
        print(f"{name}: {np.mean(c):.1%} of the other recordings' times covered")
    print(f"volume_law interval width: median {np.median(width):.1%} of the median")


if __name__ == "__main__":
    main()
