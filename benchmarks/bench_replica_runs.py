"""Replica intervals against other runs (issue 35, item 2): for each program, ``--runs``
recordings at 2 ranks on this machine (``minitrace record --volume cputime``) and a
calibration of the MPI library it runs on (``calibrate --libmpi`` for a program built with
another MPI than this environment's, as the public codes built with Debian's MPICH).  Each
recording is predicted with ``--replicas N``, and each other run j is scored against the 95%
interval made with ``--runs`` = every run but j (out of sample: the run scored
gave nothing to the interval; N(N - 1) comparisons, as a user with N - 1 runs predicting the
next).  Beside it: ``--runs`` of the trace's half (even or odd runs, 6 of 12) scored on the
other half (the design of 2026-11-28, session 8), and the per-call-site noise alone.

    python benchmarks/bench_replica_runs.py [--runs 10] [--replicas 60] [--apps cg3d,...]
        [--extra NAME=COMMAND ...] [--work DIR [--reuse]]

Each run of it calibrates and records anew in a new or empty --work directory; ``--reuse``
takes the calibration and recordings already there (an offline re-analysis), and the output
says when each was made: session 10's figures came from a work directory that held a
calibration and three cg3d recordings of 9 hours before, made with older code under load.
Every replica is replayed as ``predict --replicas`` replays it (the background and the
after-compute costs of the calibration), and the runs' spans are those of untraced runs (less
the recorder's own time, as the self-check: :func:`minitrace.replay.run_to_run.span`).

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
    ap.add_argument("--reuse", action="store_true",
                    help="take the calibration and recordings already in --work")
    args = ap.parse_args()
    if args.runs < 6:
        ap.error("--runs: at least 6 (two halves of 3, the fewest --runs takes)")
    from minitrace.mpitools import mpi_tool
    from minitrace.predict.calibration import load
    from minitrace.predict.calibration import read_runs
    from minitrace.predict.prediction import replay_options, with_modelled_terms
    from minitrace.replay.replicas import replicas
    from minitrace.replay.run_to_run import RunToRun, span
    from minitrace.trace import open as open_trace
    mpiexec, mpicc = mpi_tool("mpiexec"), mpi_tool("mpicc")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-replica-runs-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    if not args.reuse and any(work.glob("*.h5")):
        ap.error(f"--work {work} holds files of an earlier run: give a new directory, or "
                 f"--reuse to take them")
    me = [sys.executable, "-m", "minitrace"]
    apps = {k: v[:-len(SMALL[k])] + SMALL[k] for k, v in _apps(work, mpicc).items()
            if k in args.apps.split(",")}
    for spec in args.extra:
        name, _, cmd = spec.partition("=")
        apps[name] = cmd.split()
    from minitrace.shims import linked_mpi
    mine = linked_mpi(str(work / "cg3d"))            # this environment's MPI (its mpicc's)

    def calibration(program: str):
        """The calibration of the MPI library ``program`` runs on (calibrate --libmpi for
        another library than this environment's: the public codes built with Debian's
        MPICH), made once."""
        lib = linked_mpi(program)
        lib = None if lib in (None, mine) else lib
        path = work / ("machine.h5" if lib is None else f"machine-{Path(lib).name}.h5")
        if not path.exists():
            subprocess.run(me + ["calibrate", "-o", str(path), "--quiet",
                                 *(["--libmpi", lib] if lib else []), "--", mpiexec, "-n",
                                 "2"], check=True)
        cal = load(str(path))
        made = [r["attrs"]["date"] for r in read_runs(str(path))]
        print(f"load {os.getloadavg()[0]:.1f}; work dir {work}; {path.name} "
              f"({cal.mpi_library}) made {', '.join(made)} (background {cal.background:.2%}, "
              f"after-compute costs {'measured' if cal.after_compute else 'none'})", flush=True)
        return cal

    for name, argv in apps.items():
        cal = calibration(argv[0])
        paths = []
        for i in range(args.runs):
            p = work / f"{name}-{i}.h5"
            if not p.exists():
                subprocess.run(me + ["record", "-o", str(p), "--volume", "cputime", "--",
                                     mpiexec, "-n", "2", *argv], check=True,
                               stdout=subprocess.DEVNULL, cwd=work)
            paths.append(str(p))
        spans, dates = [], []
        for p in paths:
            with open_trace(p) as t:
                data = t.data()
            spans.append(span(data, p))
            dates.append(str(data.meta.get("created", "?")))
        spans = np.array(spans)
        n = len(paths)
        held, halves, alone, medians = [], [], [], []
        for i, p in enumerate(paths):
            with open_trace(p) as t:
                data = t.data()
            kw = replay_options(data, cal, p)
            data = with_modelled_terms(data, cal).data    # (as predict --replicas does)
            # the per-call-site noise alone; --runs multiplies these same draws by run factors
            # drawn with the generator below (replicas(): tests/test_replay_spread.py)
            noise = replicas(data, args.replicas, seed=i, workers=1, **kw).times
            own = spans[i]

            def interval(runs):
                f = RunToRun.of_spans([paths[j] for j in runs], spans[runs]).draw(
                    np.random.default_rng([i, 1]), len(noise), own)
                return np.percentile(noise * f, [2.5, 50, 97.5])
            for j in range(n):           # each other run held out: the others are --runs
                if j != i:
                    lo, med, hi = interval([k for k in range(n) if k != j])
                    held.append(lo <= spans[j] <= hi)
                    medians.append(med)
            half = [k for k in range(n) if k % 2 == i % 2]
            others = spans[[k for k in range(n) if k % 2 != i % 2]]
            lo, _, hi = interval(half)
            halves.append(np.mean((others >= lo) & (others <= hi)))
            lo, hi = np.percentile(noise, [2.5, 97.5])
            alone.append(np.mean((np.delete(spans, i) >= lo) & (np.delete(spans, i) <= hi)))
        print(f"{name}: {n} runs (recorded {min(dates)} .. {max(dates)}), spans less the "
              f"recorder's time {spans.min():.4f}-{spans.max():.4f} s "
              f"(median {np.median(spans):.4f}, sd {spans.std(ddof=1) / spans.mean():.1%}); "
              f"95% intervals with --runs (the {n - 1} runs but the one scored) hold "
              f"{np.mean(held):.0%} of the {len(held)} held-out comparisons; with --runs of "
              f"the trace's half (even/odd runs) {np.mean(halves):.0%} of the other half; the "
              f"trace's noise alone {np.mean(alone):.0%} of the other runs; replicas' median "
              f"over the runs' median {statistics.median(medians) / np.median(spans) - 1:+.1%}"
              f"; load {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
