"""Coverage study of `minitrace.analysis.projection.project`: on synthetic runs whose truth is
known (tests/support/gev_synth.py: every rank's iteration time drawn from a normal, lognormal, GEV,
Frechet, or normal-with-rare-stragglers parent), how often does the 95% interval hold the true
expected per-iteration maximum at S ranks, how wide is it, and how biased is the point estimate?

Per method x model x parent x scale factor (S / ranks of the run), over --seeds runs:
* cov: share of runs whose interval holds the truth (all runs; a 95% interval should be
  0.95, the targets are 0.90-0.99 for every unflagged row);
* cov|ok: the same over the runs whose row carries no flag, [and how many runs those are];
* width: median interval width (ms) over the unflagged runs, and mean width / ideal width
  (2 x 1.96 x the standard deviation of the point estimate across runs);
* bias: mean error of the point estimate as a % of the variability cost E[max_S] - E[X];
* flagged: share of runs whose row carries a flag.
For the --recommend parents, each run is also back-tested and `backtest.recommend` asked for
the largest factor and for 8x: how often it recommends, and how often its interval holds the
truth.  The non-parametric method's trust ratio k/N is chosen from the cov|ok table printed
without its ratio flag (--raw keeps every row; --from re-summarizes them without re-running).
Usage: python benchmarks/bench_gev_coverage.py [--seeds 150] [--jobs 2] [--raw rows.pkl]
"""
from __future__ import annotations

import argparse
import os
import pickle
import re
import resource
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minitrace.analysis import backtest  # noqa: E402
from minitrace.analysis.projection import NONPARAM_MAX_RATIO, project  # noqa: E402
from tests.support.gev_synth import PARENTS, parent_run, parent_truth  # noqa: E402

_RATIO_FLAG = re.compile(r"(; )?scale factor above [^;]*known to miss low")


def one_run(task):
    """All methods' rows for one synthetic run (parent, seed), and its back-test for the
    --recommend parents."""
    parent, seed, args = task
    v = parent_run(parent, args.nodes, args.per_node, args.iterations, seed)
    scales = [v.nranks * f for f in args.factors]
    methods = [m for m in args.methods if m != "mle" or seed < args.first_seed + args.mle_seeds]
    df = project(v, scales, methods, replicas=args.replicas, seed=seed)
    df["parent"], df["seed"] = parent, seed
    bt = None
    if parent in args.recommend:
        bt = backtest.backtest(v, methods, args.replicas, seed=seed)
        bt["parent"], bt["seed"] = parent, seed
    return df, bt


def reflag_nonparam(df: pd.DataFrame, ratio: float, iterations: int) -> pd.DataFrame:
    """The rows with the non-parametric ratio flag recomputed for another trust ratio k/N
    (``ratio`` None: left out), so that the threshold can be chosen from the study."""
    df = df.copy()
    nonparam = df.method == "nonparam"
    flags = df.loc[nonparam, "flags"].str.replace(_RATIO_FLAG, "", regex=True).str.lstrip("; ")
    if ratio is not None:
        above = df.loc[nonparam, "factor"] > ratio * iterations
        flags = flags.where(~above, flags.where(flags == "", flags + "; ") + "ratio")
    df.loc[nonparam, "flags"] = flags
    return df


def summarize(df: pd.DataFrame, nranks: int) -> pd.DataFrame:
    """One row per (method, model, parent, factor): coverage, widths, bias, flags."""
    rows = []
    for (method, model, parent, scale), g in df.groupby(["method", "model", "parent", "scale"],
                                                         sort=False):
        t = parent_truth(parent, int(scale))
        cost = t - PARENTS[parent].mean()
        hit = (g.lo <= t) & (t <= g.hi)
        ok = g["flags"] == ""
        est = g.estimate[np.isfinite(g.estimate)]
        ideal = 2 * 1.96 * est.std(ddof=1)
        width = (g.hi - g.lo)[np.isfinite(g.hi - g.lo)]
        rows.append(dict(method=method, model=model, parent=parent, factor=scale / nranks,
                         runs=len(g), coverage=hit.mean(),
                         coverage_ok=hit[ok].mean() if ok.any() else np.nan, n_ok=int(ok.sum()),
                         width_ms=1e3 * (g.hi - g.lo)[ok].median() if ok.any() else np.nan,
                         width=width.mean() / ideal if ideal > 0 else np.nan,
                         bias=100 * (est.mean() - t) / cost, flagged=1 - ok.mean()))
    return pd.DataFrame(rows)


def markdown(s: pd.DataFrame, factors) -> str:
    """One markdown table: a row per parent and factor, a column per method and model
    holding 'cov|ok [unflagged runs] / median width (ms)' ('-' where every run is flagged)."""
    s = s[s.factor.isin(factors)]
    cols = list(dict.fromkeys(zip(s.method, s.model)))
    lines = ["| parent | factor | " + " | ".join(f"{m} {d}" for m, d in cols) + " |",
             "|" + " --- |" * (2 + len(cols))]
    for (parent, factor), g in s.groupby(["parent", "factor"], sort=False):
        cells = []
        for m, d in cols:
            r = g[(g.method == m) & (g.model == d)]
            if r.empty or r.iloc[0].n_ok == 0:
                cells.append(f"- (all {r.iloc[0].runs if len(r) else 0} flagged)")
                continue
            r = r.iloc[0]
            cells.append(f"{r.coverage_ok:.2f} [{r.n_ok}] / {r.width_ms:.3g}")
        lines.append(f"| {parent} | {factor:g}x | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def recommendations(df: pd.DataFrame, bt: pd.DataFrame, nranks: int, iterations: int,
                    factors) -> pd.DataFrame:
    """Per --recommend parent and factor: share of runs with a recommendation, coverage of
    the recommended intervals, and the rows and reasons."""
    out = []
    for (parent, seed), g in df.groupby(["parent", "seed"], sort=False):
        b = bt[(bt.parent == parent) & (bt.seed == seed)] if bt is not None else None
        if b is None or b.empty:
            continue
        for f in factors:
            scale = nranks * f
            row, why = backtest.recommend(b, g, scale, iterations, nranks)
            # the same choice without the unseen-excursion rule (as if from 10^9 iterations)
            alone, _ = backtest.recommend(b, g, scale, 10 ** 9, nranks)
            t = parent_truth(parent, scale)
            out.append(dict(parent=parent, factor=f, seed=seed, recommended=row is not None,
                            choice="" if row is None else " ".join(row.name),
                            hit=row is not None and bool(row.lo <= t <= row.hi),
                            why=why.split(":")[0] if row is None else "",
                            alone=alone is not None,
                            alone_hit=alone is not None and bool(alone.lo <= t <= alone.hi)))
    r = pd.DataFrame(out)
    if r.empty:
        return r
    return r.groupby(["parent", "factor"]).apply(lambda g: pd.Series({
        "runs": len(g), "recommended": g.recommended.mean(),
        "covered_when_recommended": g.hit[g.recommended].mean() if g.recommended.any()
        else np.nan,
        "covered_or_refused": (g.hit | ~g.recommended).mean(),
        "flag_rule_only_recommended": g.alone.mean(),
        "flag_rule_only_covered": g.alone_hit[g.alone].mean() if g.alone.any() else np.nan,
        "choices": g.choice[g.recommended].value_counts().to_dict(),
        "refusals": g.why[~g.recommended].str[:40].value_counts().to_dict()}),
        include_groups=False)


def report(df, bt, args, nranks):
    """Print the tables: the non-parametric trust ratio study, the coverage table at the
    table factors, the full summary and the recommendations."""
    free = summarize(reflag_nonparam(df[df.method == "nonparam"], None, args.iterations),
                     nranks)
    free["k/N"] = free.factor / args.iterations
    print("Non-parametric coverage of its unflagged runs without the k/N flag, by k/N:")
    print(free.pivot(index="parent", columns="k/N", values="coverage_ok").round(3).to_string())
    df = reflag_nonparam(df, NONPARAM_MAX_RATIO, args.iterations)
    s = summarize(df, nranks)
    print(f"\nWith NONPARAM_MAX_RATIO = {NONPARAM_MAX_RATIO}: cell = coverage of the unflagged "
          f"runs [their number] / median width of their intervals (ms)")
    print(markdown(s, args.table_factors))
    print("\nAll cells: coverage (all runs), coverage|ok, width vs ideal, bias % of cost, "
          "flagged share")
    with pd.option_context("display.width", 200, "display.max_rows", 1000):
        print(s.round(3).to_string(index=False))
        rec = recommendations(df, bt, nranks, args.iterations,
                              sorted(set(args.table_factors) | {max(args.factors)}))
        if not rec.empty:
            print("\nRecommendation (backtest.recommend) on the --recommend parents:")
            print(rec.to_string())
    return s


def _save(args, out, t0, load0, done: bool):
    """The rows so far, their back-tests and a line saying how they were run (written to
    --raw)."""
    df = pd.concat([d for d, _ in out], ignore_index=True)
    bts = [b for _, b in out if b is not None]
    bt = pd.concat(bts, ignore_index=True) if bts else None
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN if done else resource.RUSAGE_SELF)
    ran = (f"{args.nodes} nodes x {args.per_node} ranks, {args.iterations} iterations, "
           f"{len(out)} runs of {args.seeds} seeds per parent ({args.mle_seeds} with mle), "
           f"factors {args.factors}, replicas {args.replicas or 'default'}, {args.jobs} jobs; "
           f"wall time {time.perf_counter() - t0:.1f} s"
           + (f"; CPU time of the workers {cpu.ru_utime:.0f} s user + {cpu.ru_stime:.0f} s "
              f"system" if done else "") +
           f"; load average {load0[0]:.2f} at start, {os.getloadavg()[0]:.2f} now (other jobs "
           f"share the machine)")
    if args.raw:
        with open(args.raw, "wb") as f:
            pickle.dump((df, bt, ran), f)
    return df, bt, ran


def _load(paths):
    """The rows of several --raw files (other seeds add runs; a row of the same parent, seed,
    method, model and scale in a later file replaces the earlier one)."""
    frames, bts, ran = [], [], []
    for path in paths:
        with open(path, "rb") as f:
            d, b, r = pickle.load(f)
        frames.append(d)
        bts += [b] if b is not None else []
        ran.append(f"{path}: {r}")
    df = pd.concat(frames, ignore_index=True).drop_duplicates(
        ["parent", "seed", "method", "model", "scale"], keep="last")
    bt = pd.concat(bts, ignore_index=True).drop_duplicates(
        ["parent", "seed", "ranks", "method", "model"], keep="last") if bts else None
    return df, bt, "\n".join(ran)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=150)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--methods", default="nonparam,pwm,mle",
                    help="default nonparam,pwm,mle (mom is always flagged)")
    ap.add_argument("--mle-seeds", type=int, default=None,
                    help="runs that include the MLE (default: all; lower it to save time)")
    ap.add_argument("--parents", default=",".join(PARENTS))
    ap.add_argument("--recommend", default="straggle-1%-0.3s",
                    help="parents whose runs are back-tested and asked for a recommendation")
    ap.add_argument("--factors", default="2,4,8,16,64")
    ap.add_argument("--table-factors", default="8,64")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--per-node", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--replicas", type=int, default=None)
    ap.add_argument("--raw", help="write every row (pickle) here")
    ap.add_argument("--from", dest="source",
                    help="summarize the rows of earlier --raw files (comma list)")
    ap.add_argument("--csv", help="also write the summary here")
    args = ap.parse_args()
    args.methods = args.methods.split(",")
    args.mle_seeds = args.seeds if args.mle_seeds is None else args.mle_seeds
    args.factors = [int(f) for f in args.factors.split(",")]
    args.table_factors = [int(f) for f in args.table_factors.split(",")]
    args.recommend = args.recommend.split(",")
    nranks = args.nodes * args.per_node
    if args.source:
        df, bt, ran = _load(args.source.split(","))
        print(ran)
        report(df, bt, args, nranks)
        return
    # seeds outermost: a study stopped early (--raw is rewritten every 50 runs) has every parent
    tasks = [(p, s, args) for s in range(args.first_seed, args.first_seed + args.seeds)
             for p in args.parents.split(",")]
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    out = []
    with Pool(args.jobs) as pool:
        for i, res in enumerate(pool.imap(one_run, tasks), 1):
            out.append(res)
            if args.raw and (i % 50 == 0 or i == len(tasks)):
                _save(args, out, t0, load0, i == len(tasks))
        pool.close()
        pool.join()              # reaped workers: their CPU time is in RUSAGE_CHILDREN
    df, bt, ran = _save(args, out, t0, load0, True)
    print(ran)
    s = report(df, bt, args, nranks)
    if args.csv:
        s.to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
