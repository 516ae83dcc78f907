"""Replica intervals against other runs (issue 35, item 2): for each program, ``--runs``
recordings at 2 ranks on this machine (``minitrace record --volume cputime``) and one
calibration, split in two halves (even and odd runs).  Each recording is predicted with
``--replicas N`` and the run-to-run component of its own half (``--runs``), and its 95%
interval is checked against the recorded spans of the other half (out of sample: the runs it
is scored on gave nothing to the interval).  Without ``--runs`` (the per-call-site noise
alone) beside it.

    python benchmarks/bench_replica_runs.py [--runs 10] [--replicas 60] [--apps cg3d,...]
        [--extra NAME=COMMAND ...] [--work DIR]   (recordings in DIR are reused)

Targets (issue 35): the intervals hold 90-99% of the other runs on at least three codes, their
median within 2% of the runs' median; idle machine (the load is printed).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_accuracy import SMALL, _apps  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=12, help="recordings (two halves of 3 or more)")
    ap.add_argument("--replicas", type=int, default=60)
    ap.add_argument("--apps", default="cg3d,jacobi2d,stencil27")
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=COMMAND",
                    help="another program (a public mini-app built elsewhere), its command "
                         "line after the launcher's -n 2, split on spaces")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    from minitrace.mpitools import mpi_tool
    from minitrace.predict.calibration import load
    from minitrace.predict.prediction import replay_options, with_call_costs
    from minitrace.replay.replicas import replicas
    from minitrace.replay.run_to_run import span
    from minitrace.trace import open as open_trace
    mpiexec, mpicc = mpi_tool("mpiexec"), mpi_tool("mpicc")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-replica-runs-"))
    work.mkdir(parents=True, exist_ok=True)
    me = [sys.executable, "-m", "minitrace"]
    apps = {k: v[:-len(SMALL[k])] + SMALL[k] for k, v in _apps(work, mpicc).items()
            if k in args.apps.split(",")}
    for spec in args.extra:
        name, _, cmd = spec.partition("=")
        apps[name] = cmd.split()
    cal_path = work / "machine.h5"
    if not cal_path.exists():
        subprocess.run(me + ["calibrate", "-o", str(cal_path), "--quiet", "--", mpiexec, "-n",
                             "2"], check=True)
    cal = load(str(cal_path))
    print(f"load {os.getloadavg()[0]:.1f}; work dir {work}", flush=True)
    for name, argv in apps.items():
        paths = []
        for i in range(args.runs):
            p = work / f"{name}-{i}.h5"
            if not p.exists():
                subprocess.run(me + ["record", "-o", str(p), "--volume", "cputime", "--",
                                     mpiexec, "-n", "2", *argv], check=True,
                               stdout=subprocess.DEVNULL)
            paths.append(str(p))
        spans = []
        for p in paths:
            with open_trace(p) as t:
                spans.append(span(t.data(), p))
        spans = np.array(spans)
        rows = {"with --runs": [], "trace noise alone": []}
        medians = []
        for i, p in enumerate(paths):
            with open_trace(p) as t:
                data = t.data()
            kw = replay_options(data, cal, p)
            data, _ = with_call_costs(data, cal)      # (as predict --replicas replays it)
            half = [q for j, q in enumerate(paths) if j % 2 == i % 2]
            others = spans[[j for j in range(len(paths)) if j % 2 != i % 2]]
            for label, runs in (("with --runs", half), ("trace noise alone", None)):
                r = replicas(data, args.replicas, seed=i, workers=1, runs=runs, **kw)
                s = r.summary()
                rows[label].append(np.mean((others >= s["lo"]) & (others <= s["hi"])))
                if runs:
                    medians.append(s["median"])
        print(f"{name}: {args.runs} runs, spans {spans.min():.4f}-{spans.max():.4f} s "
              f"(median {np.median(spans):.4f}, sd {spans.std(ddof=1) / spans.mean():.1%}); "
              + "; ".join(f"{k}: the 95% intervals hold {np.mean(v):.0%} of the other half's runs"
                          for k, v in rows.items())
              + f"; replicas' median over the runs' median "
              f"{statistics.median(medians) / np.median(spans) - 1:+.1%}"
              f"; load {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
