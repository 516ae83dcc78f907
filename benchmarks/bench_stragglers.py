"""Excursion detection (`minitrace.analysis.stragglers.detect`): how often it fires on runs
without excursions (false detections, per parent and run shape), and how many injected
stragglers it finds on normal(1, 0.05) ranks (power, per rate and size).
Usage: python benchmarks/bench_stragglers.py [--runs 300]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minitrace.analysis.stragglers import detect  # noqa: E402
from tests.support.gev_synth import PARENTS, Straggling  # noqa: E402

NULL = {**{p: PARENTS[p] for p in ("normal", "lognormal", "lognormal-0.1", "gev", "frechet")},
        "gumbel": stats.gumbel_r(1.0, 0.02), "gev k=-0.3": stats.genextreme(-0.3, 1.0, 0.05),
        "frechet xi=0.33": stats.invweibull(3, loc=0.8, scale=0.2)}
SHAPES = ((300, 16), (300, 2), (200, 8))
STRAGGLERS = ((0.01, 0.3), (0.05, 0.3), (0.01, 0.15), (0.01, 0.5), (0.01, 1.0), (0.002, 1.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = [{"parent": name, **{f"{i}x{r}": np.mean([detect(d.rvs(size=(i, r), random_state=rng))
                                                     .count > 0 for _ in range(args.runs)])
                                for i, r in SHAPES}} for name, d in NULL.items()]
    print(f"Share of {args.runs} runs with a detection, no excursion in the data "
          f"(iterations x ranks):")
    print(pd.DataFrame(rows).to_string(index=False))
    rows = []
    for share, size in STRAGGLERS:
        d = Straggling(share, size)
        got = []
        for _ in range(args.runs):
            body = rng.normal(1.0, 0.05, (300, 16))
            mask = rng.random(body.shape) < d.p
            t = body + size * mask
            visible = mask & (t > t[~mask].max())
            e = detect(t)
            got.append((mask.sum(), visible.sum(), e.count, (e.mask & visible).sum(),
                        (e.mask & ~mask).sum()))
        g = np.array(got, dtype=float)
        rows.append(dict(share_at_16=share, size_s=size, injected=g[:, 0].mean(),
                         above_body=g[:, 1].mean(), detected=g[:, 2].mean(),
                         found_share=g[:, 3].sum() / max(g[:, 1].sum(), 1),
                         false=g[:, 4].mean(), runs_with_some=np.mean(g[:, 2] > 0),
                         runs_with_events_none_found=np.mean((g[:, 0] > 0) & (g[:, 2] == 0))))
    print(f"\nInjected stragglers, normal(1, 0.05) ranks, 300 x 16, {args.runs} runs (means per "
          f"run; found_share: of those above the body's largest time):")
    print(pd.DataFrame(rows).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
