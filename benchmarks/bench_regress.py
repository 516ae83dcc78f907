"""Regressing a history of 10,000 runs x 100 metrics (50 mean/spread pairs): change points
(E-divisive means, 199 permutations) plus every run tested against its reference, per metric and
per pair (target < 5 s); the per-metric tests as a loop over runs (what vectorizing over runs
as well saves); and ``minitrace regress`` appending one run to that history as a file.

The synthetic history has three change points (+2% on all metrics at run 2,500, -5% on ten
metrics at 5,000, +1% at 7,500) and 100 isolated -10% runs; noise 0.5%.
Then ``minitrace regress HISTORY --plot FILE.png`` on an undamaged history of ``--plot-runs``
runs (1,000; one run every 6 hours) x ``--metrics``, by this installation and by every
``--compare`` interpreter (another installation, e.g. the code before a change): wall and CPU
seconds, lines on stderr (target < 5 s).
Usage: python benchmarks/bench_regress.py [--runs 10000] [--metrics 100] [--repeat 3]
       [--plot-runs 1000] [--compare /other/venv/bin/python] [--only-plot]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from minitrace.analysis import regress as R
from minitrace.analysis import regress_history as H
from minitrace.storage import write_bench


def history(runs: int, metrics: int, rng: np.random.Generator) -> np.ndarray:
    v = (1 + 0.005 * rng.normal(size=(runs, metrics))) * np.geomspace(1e-6, 1.0, metrics)
    v[runs // 4:] *= 1.02
    v[runs // 2:, :10] *= 0.95
    v[3 * runs // 4:] *= 1.01
    v[rng.choice(runs, 100, replace=False)] *= 0.9
    return v


def run_by_run(v: np.ndarray, gamma: float, nmin: int) -> float:
    """Seconds for the per-metric tests written as a loop over runs (Welford updates, numpy
    over the metrics, flagged runs left out): what assess() vectorizes over runs too."""
    n, mean, m2 = (np.zeros(v.shape[1]) for _ in range(3))
    table = R.chew_threshold(np.arange(len(v) + 2), 1, gamma)
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        for x in v:
            d = x - mean
            stat = n / (n + 1) * d * d / (m2 / (n - 1))
            ok = ~((n >= nmin) & (stat > table[n.astype(int)]))
            n += ok
            delta = np.where(ok, d, 0.0)
            mean += delta / np.maximum(n, 1)
            m2 += np.where(ok, delta * (x - mean), 0.0)
    return time.perf_counter() - t0


def best(f, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


def plotted_history(path: str, runs: int, metrics: int) -> None:
    """An undamaged history as ``regress`` writes it, dated one run every 6 hours."""
    v = history(runs, metrics, np.random.default_rng(1))
    dates = (np.datetime64("2024-01-01T00:00") + np.arange(runs) * np.timedelta64(6, "h"))
    H.write(path, H.History([f"suite/m{j // 2}/{('mean', 'sd')[j % 2]}" for j in range(metrics)],
                            np.ones(metrics, np.int8), v,
                            {"date": np.array([f"{d}:00+00:00" for d in dates], dtype=object),
                             "host": np.full(runs, "n1", dtype=object),
                             "source": np.full(runs, "/x.h5", dtype=object),
                             "command_line": np.full(runs, "", dtype=object),
                             "provenance_index": np.zeros(runs, np.int32)}, ["{}"]))


def timed_regress_plot(python: str, hist: str, png: str) -> tuple[float, float, int]:
    """(wall s, CPU s, lines on stderr) of ``minitrace regress HIST --plot PNG``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([python, "-m", "minitrace", "regress", hist, "--plot", png],
                       capture_output=True, text=True, timeout=3600, cwd="/")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert p.returncode == 0, p.stderr
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, len([ln for ln in p.stderr.splitlines() if ln.strip()])


def plot_comparison(args) -> None:
    with tempfile.TemporaryDirectory() as d:
        hist = os.path.join(d, "history.h5")
        plotted_history(hist, args.plot_runs, args.metrics)
        print(f"'minitrace regress HISTORY --plot FILE.png', {args.plot_runs} runs x "
              f"{args.metrics} metrics, best of {args.repeat} (load average "
              f"{os.getloadavg()[0]:.1f} at the start):")
        for python in [sys.executable, *args.compare]:
            runs = [timed_regress_plot(python, hist, os.path.join(d, "p.png"))
                    for _ in range(args.repeat)]
            wall, cpu, noise = min(runs)
            print(f"  {python}: {wall:.2f} s wall, {cpu:.2f} s CPU, {noise} line(s) on stderr "
                  f"(target < 5 s: {'met' if wall < 5 else 'MISSED'})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--metrics", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--loop-runs", type=int, default=2000,
                    help="runs tested by the run-by-run loop (extrapolated to all)")
    ap.add_argument("--plot-runs", type=int, default=1000)
    ap.add_argument("--compare", action="append", default=[], metavar="PYTHON",
                    help="also time the --plot run with this interpreter's minitrace")
    ap.add_argument("--only-plot", action="store_true", help="only the --plot comparison")
    args = ap.parse_args()
    if args.only_plot:
        plot_comparison(args)
        return
    rng = np.random.default_rng(0)
    v = history(args.runs, args.metrics, rng)
    # the names (and unknown directions) that a group 'suite' of datasets m0, m1, ... of two
    # numbers each gets from regress_metrics.generic, so that a file can be appended below
    names = [f"suite/m{j // 2}/{j % 2}" for j in range(args.metrics)]
    directions = np.zeros(args.metrics)

    t_cp, cps = best(lambda: R.change_points(v), args.repeat)
    t_as, a = best(lambda: R.assess(v, names, directions, cps), args.repeat)
    flagged = int(np.isin(a.verdict, (R.REGRESSION, R.IMPROVEMENT, R.CHANGED)).sum())
    print(f"{args.runs} runs x {args.metrics} metrics, best of {args.repeat}:")
    print(f"  change points: {t_cp:.2f} s -> {cps}")
    print(f"  assessment of every run (per metric + {len(a.groups)} pairs): {t_as:.2f} s, "
          f"{flagged} metric tests flagged")
    print(f"  total: {t_cp + t_as:.2f} s (target < 5 s: "
          f"{'met' if t_cp + t_as < 5 else 'MISSED'})")

    k = args.loop_runs
    t_loop = run_by_run(v[:k], 0.9999, 8)
    print(f"  per-metric tests run by run (a loop over runs, numpy over metrics): {k} runs in "
          f"{t_loop:.2f} s -> {t_loop * args.runs / k:.1f} s for {args.runs} (extrapolated; "
          f"the vectorized assessment above also runs the pair tests)")

    with tempfile.TemporaryDirectory() as d:
        hist = os.path.join(d, "history.h5")
        dates = np.array([f"2026-01-01T00:00:{i % 60:02d}+00:00" for i in range(args.runs)],
                         dtype=object)
        h = H.History(names, directions.astype(np.int8), v,
                      {"date": dates, "host": np.full(args.runs, "n1", dtype=object),
                       "source": np.full(args.runs, "x.h5", dtype=object),
                       "command_line": np.full(args.runs, "", dtype=object),
                       "provenance_index": np.zeros(args.runs, np.int32)}, ["{}"])
        t_w, _ = best(lambda: H.write(hist, h), 1)
        new = os.path.join(d, "new.h5")
        write_bench(new, "suite", {f"m{j}": v[-1, 2 * j:2 * j + 2]
                                   for j in range(args.metrics // 2)})
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "minitrace.cli", "regress", hist, new],
                           capture_output=True, text=True, timeout=600)
        t_cli = time.perf_counter() - t0
        assert p.returncode in (0, 3) and H.read(hist).nruns == args.runs + 1, p.stderr
        print(f"  history file: written in {t_w:.2f} s ({os.path.getsize(hist) / 1e6:.1f} MB); "
              f"'minitrace regress' appending one run to it: {t_cli:.2f} s end to end "
              "(interpreter start-up and imports included)")
    plot_comparison(args)


if __name__ == "__main__":
    main()
