"""Coverage of the noise replicas' 95% interval (issue 25) on a program with known injected
noise: benchmarks/apps/noisy_iter.c computes, per iteration and rank, for a CPU time drawn from
a Pareto law (shape 2.5: heavy right tail), then a halo sendrecv and an allreduce.  It is run
and recorded R times at 2 ranks (``minitrace record --volume cputime``); each run draws other
times.  For each recording i, ``replicas(trace_i, N, noise="trace")`` gives a 95% interval; it
should cover the other runs' outcomes in 90-99% of the pairs (i, j != i).  Outcomes: (a) the
measured run time of run j (from the last MPI_Init return to the last MPI_Finalize call, as
``predict`` counts it), the replicas replayed at the compute rate calibrated on run i alone
(its measured time over its plain replay at 1 s of CPU per simulated s, times 1Gf on the 1Gf
hosts of the default cluster: what this machine does with a CPU second); and (b) the plain
replay of recording j at 1Gf (run j's draws on an idle machine: the noise model alone).
Run: nice -n 10 python benchmarks/bench_replica_coverage.py [--runs 40] [--replicas 100]
  [--work DIR]  (recordings in DIR are reused)
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from minitrace import kinds as K
from minitrace.replay import replay
from minitrace.replay.replicas import replicas
from minitrace.trace import open as open_trace

HERE = Path(__file__).resolve().parent
RATE = "1Gf"


def measured(path: Path) -> float:
    """Run time of a recording: last MPI_Init return to the last MPI_Finalize call."""
    with open_trace(str(path)) as t:
        d = t.data()
    a = d.actions
    init = a[a["kind"] == K.code("init")]["t_end"].max()
    fin = a[a["kind"] == K.code("finalize")]["t_start"].max()
    return float(fin - init)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--replicas", type=int, default=100)
    ap.add_argument("--iterations", default="300")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    from minitrace.mpitools import mpi_tool
    mpiexec, mpicc = mpi_tool("mpiexec"), mpi_tool("mpicc")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-coverage-"))
    work.mkdir(parents=True, exist_ok=True)
    exe = work / "noisy_iter"
    subprocess.run([mpicc, "-O2", "-o", str(exe), str(HERE / "apps" / "noisy_iter.c"), "-lm"],
                   check=True)
    load = [os.getloadavg()[0]]
    traces = []
    for i in range(args.runs):
        out = work / f"run{i}.h5"
        if not out.exists():
            subprocess.run([sys.executable, "-m", "minitrace", "record", "-o", str(out),
                            "--volume", "cputime", "--", mpiexec, "-n", "2", str(exe),
                            args.iterations], check=True, stdout=subprocess.DEVNULL)
        traces.append(out)
        load.append(os.getloadavg()[0])
    meas = np.array([measured(p) for p in traces])
    plain = np.array([replay(str(p), compute_rate=RATE).simulated_time for p in traces])
    scale = meas / plain                      # run i's machine seconds per CPU second
    quiet = np.abs(scale - 1) < 0.05          # runs other jobs did not slow down
    rows = []
    for i, p in enumerate(traces):
        others = np.arange(len(traces)) != i
        inside = lambda x, a, b: np.mean((x[others] >= a) & (x[others] <= b))   # noqa: E731
        s = replicas(str(p), args.replicas, "trace", seed=i, workers=2,
                     compute_rate=RATE).summary()
        c = replicas(str(p), args.replicas, "trace", seed=i, workers=2,
                     compute_rate=f"{scale[i]:.6g}Gf").summary()
        quiet_others = others & quiet
        rows.append(((s["hi"] - s["lo"]) / s["median"], (c["hi"] - c["lo"]) / c["median"],
                     inside(plain, s["lo"], s["hi"]), inside(meas, c["lo"], c["hi"]),
                     np.mean((meas[quiet_others] >= c["lo"]) & (meas[quiet_others] <= c["hi"]))
                     if quiet[i] else np.nan))
        print(f"run {i}: measured {meas[i]:.4f} s, replayed {plain[i]:.4f} s (x{scale[i]:.4f});"
              f" replicas {s['median']:.4f} s (95% {s['lo']:.4f}-{s['hi']:.4f}) covers "
              f"{rows[-1][2]:.0%} of the other replays; calibrated {c['median']:.4f} s (95% "
              f"{c['lo']:.4f}-{c['hi']:.4f}) covers {rows[-1][3]:.0%} of the other measured "
              f"times", flush=True)
        load.append(os.getloadavg()[0])
    wp, wm, cp, cm, cq = (np.array(c) for c in zip(*rows))
    print(f"\n{len(traces)} runs x {args.replicas} replicas, {args.iterations} iterations at 2 "
          f"ranks: measured {meas.mean():.4f} +- {meas.std():.4f} s, replays of the recordings "
          f"{plain.mean():.4f} +- {plain.std():.4f} s, measured / replayed "
          f"{scale.mean():.4f} +- {scale.std():.4f}")
    print(f"coverage of the other runs' replays: {cp.mean():.1%} (interval width median "
          f"{np.median(wp):.1%}, range {wp.min():.1%}-{wp.max():.1%} of the median)")
    print(f"coverage of the other runs' measured times (calibrated rate): {cm.mean():.1%} "
          f"(width median {np.median(wm):.1%}, range {wm.min():.1%}-{wm.max():.1%}); "
          f"between the {int(quiet.sum())} runs whose measured time is within 5% of their "
          f"replay (not slowed by other jobs): {np.nanmean(cq):.1%}")
    print(f"load average during the study: {min(load):.1f}-{max(load):.1f}")

if __name__ == "__main__":
    main()
