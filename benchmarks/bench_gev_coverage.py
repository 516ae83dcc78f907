"""Coverage study of `minitrace.analysis.projection.project`: on synthetic runs whose truth is
known (tests/support/gev_synth.py: every rank's iteration time drawn from a normal, lognormal or GEV
parent), how often does the 95% interval hold the true expected per-iteration maximum at S
ranks, how wide is it, and how biased is the point estimate?

Per method x model x parent x scale factor (S / ranks of the run), over --seeds runs:
* cov: share of runs whose interval holds the truth (all runs; a 95% interval should be
  0.95, the tests accept 0.90-0.99 for every unflagged row);
* cov|ok: the same over the runs whose row carries no flag (what the tests check);
* width: mean interval width / ideal width, where the ideal width is 2 x 1.96 x the standard
  deviation of the point estimate across runs (what a calibrated interval would need);
* bias: mean error of the point estimate as a % of the variability cost E[max_S] - E[X];
* flagged: share of runs whose row carries a flag.
Usage: python benchmarks/bench_gev_coverage.py [--seeds 200] [--jobs 2] [--methods ...]
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minitrace.analysis.projection import project  # noqa: E402
from tests.support.gev_synth import PARENTS, parent_run, parent_truth  # noqa: E402


def one_run(task):
    """All methods' rows for one synthetic run (parent, seed)."""
    parent, seed, args = task
    v = parent_run(parent, args.nodes, args.per_node, args.iterations, seed)
    scales = [v.nranks * f for f in args.factors]
    methods = [m for m in args.methods if m != "mle" or seed < args.mle_seeds]
    df = project(v, scales, methods, replicas=args.replicas, seed=seed)
    df["parent"], df["seed"] = parent, seed
    return df


def summarize(df: pd.DataFrame, nranks: int) -> pd.DataFrame:
    """One row per (method, model, parent, factor): coverage, width ratio, bias, flags."""
    point = "estimate" if "estimate" in df.columns else "median"
    rows = []
    for (method, model, parent, scale), g in df.groupby(["method", "model", "parent", "scale"],
                                                         sort=False):
        t = parent_truth(parent, int(scale))
        cost = t - PARENTS[parent].mean()
        hit = (g.lo <= t) & (t <= g.hi)
        ok = g["flags"] == ""
        est = g[point][np.isfinite(g[point])]
        ideal = 2 * 1.96 * est.std(ddof=1)
        width = (g.hi - g.lo)[np.isfinite(g.hi - g.lo)]
        rows.append(dict(method=method, model=model, parent=parent, factor=scale / nranks,
                         runs=len(g), coverage=hit.mean(),
                         coverage_ok=hit[ok].mean() if ok.any() else np.nan,
                         width=width.mean() / ideal if ideal > 0 else np.nan,
                         bias=100 * (est.mean() - t) / cost, flagged=1 - ok.mean()))
    return pd.DataFrame(rows)


def markdown(s: pd.DataFrame) -> str:
    """The summary as one markdown table: a row per method, model and factor, a column per
    parent holding 'cov (cov|ok) / width / bias / flagged'."""
    parents = list(dict.fromkeys(s.parent))
    head = "| method | model | factor | " + " | ".join(parents) + " |"
    lines = [head, "|" + " --- |" * (3 + len(parents))]
    for (method, model, factor), g in s.groupby(["method", "model", "factor"], sort=False):
        cells = []
        for p in parents:
            r = g[g.parent == p]
            if r.empty:
                cells.append("-")
                continue
            r = r.iloc[0]
            ok = "" if r.flagged in (0, 1) else f" ({r.coverage_ok:.2f})"
            cells.append(f"{r.coverage:.2f}{ok} / {r.width:.2f} / {r.bias:+.1f}% / "
                         f"{r.flagged:.0%} [{r.runs}]")
        lines.append(f"| {method} | {model} | {factor:g}x | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--methods", default="nonparam,pwm,mom,mle")
    ap.add_argument("--mle-seeds", type=int, default=None,
                    help="runs that include the MLE (default: all; lower it to save time)")
    ap.add_argument("--parents", default=",".join(PARENTS))
    ap.add_argument("--factors", default="4,16,64")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--per-node", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--replicas", type=int, default=None)
    ap.add_argument("--csv", help="also write the summary here")
    args = ap.parse_args()
    args.methods = args.methods.split(",")
    args.mle_seeds = args.seeds if args.mle_seeds is None else args.mle_seeds
    args.factors = [int(f) for f in args.factors.split(",")]
    tasks = [(p, s, args) for p in args.parents.split(",") for s in range(args.seeds)]
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    pool = Pool(args.jobs)
    frames = pool.map(one_run, tasks, chunksize=4)
    pool.close()
    pool.join()                  # reaped workers: their CPU time is in RUSAGE_CHILDREN
    elapsed = time.perf_counter() - t0
    load1 = os.getloadavg()
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    s = summarize(pd.concat(frames, ignore_index=True), args.nodes * args.per_node)
    print(f"{args.nodes} nodes x {args.per_node} ranks, {args.iterations} iterations, "
          f"{args.seeds} seeds per parent ({args.mle_seeds} with mle), factors "
          f"{args.factors}, replicas {args.replicas or 'default'}, {args.jobs} jobs")
    print("cell: coverage (coverage of unflagged rows) / width vs ideal / bias in % of "
          "E[max]-E[X] / share flagged [runs]")
    print(markdown(s))
    print(f"\nwall time {elapsed:.1f} s; CPU time of the workers {cpu.ru_utime:.0f} s user + "
          f"{cpu.ru_stime:.0f} s system (on {args.jobs} otherwise idle cores: ~"
          f"{(cpu.ru_utime + cpu.ru_stime) / args.jobs:.0f} s); load average {load0[0]:.2f} at "
          f"start, {load1[0]:.2f} at end (other jobs share the machine)")
    if args.csv:
        s.to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
