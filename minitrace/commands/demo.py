"""``minitrace demo``: the main job, end to end on bundled inputs, printing each command it runs.

Each step is an ordinary minitrace command, so the output doubles as a tutorial.
"""
from __future__ import annotations

import shlex
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

from ..errors import MinitraceError
from ..mpitools import mpi_tool
from . import COMMANDS


def register(sub) -> None:
    p = sub.add_parser("demo", help=COMMANDS["demo"],
                       description="Import the bundled SimGrid time-independent trace, store, "
                                   "validate and summarize it, export it back, and replay it "
                                   "on two simulated platforms (SimGrid); compile, record and "
                                   "replay a bundled MPI program; run a variability "
                                   "benchmark on 2 ranks and project its maxima to larger "
                                   "scale with GEV fits; calibrate this machine and predict the "
                                   "recorded run, with its error.  Every step is printed as "
                                   "the command it runs.")
    p.add_argument("-o", "--out", default="out", help="output directory (default: out)")
    p.set_defaults(func=run)


def _step(title: str, argv: list[str], cwd: Path) -> None:
    shown = " ".join(shlex.quote(a) for a in argv)
    print(f"\n== {title}\n$ {shown}", flush=True)
    t = time.perf_counter()
    rc = subprocess.run(argv, cwd=cwd).returncode
    if rc != 0:
        raise MinitraceError(f"demo step failed with exit status {rc}: {shown}")
    print(f"   ({time.perf_counter() - t:.1f} s)", flush=True)


def run(args) -> int:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    me = [sys.executable, "-m", "minitrace"]
    mpiexec, mpicc = mpi_tool("mpiexec") or "mpiexec", mpi_tool("mpicc") or "mpicc"
    data = resources.files("minitrace") / "data"
    demo_trace, jacobi = str(data / "demo_ring4.txt"), str(data / "jacobi2d.c")

    _step("import the bundled SimGrid time-independent trace into HDF5",
          me + ["import", demo_trace, "-o", "demo.h5"], out)
    _step("validate it", me + ["validate", "demo.h5"], out)
    _step("summarize it", me + ["info", "demo.h5"], out)
    _step("export it back to SimGrid text (one file per rank + list file)",
          me + ["export", "demo.h5", "--format", "ti", "-o", "demo_ti"], out)
    _step("predict its run time on a cluster of 1 Gflop/s hosts, 10 GB/s links (SimGrid)",
          me + ["replay", "demo.h5", "--speed", "1Gf", "--bandwidth", "10GBps"], out)
    _step("... and on 2 Gflop/s hosts with 100 MB/s links",
          me + ["replay", "demo.h5", "--speed", "2Gf", "--bandwidth", "100MBps"], out)
    _step("compile the bundled 2-D Jacobi solver with the environment's mpicc",
          [mpicc, "-O2", "-o", "jacobi2d", jacobi, "-lm"], out)
    # 1024x1024, 400 sweeps: ~0.3 s, long enough that its first calls (connections, page
    # faults) do not dominate the prediction's self-check at the end
    _step("record it, unmodified, on 2 ranks (PMPI shim via LD_PRELOAD), merge and validate",
          me + ["record", "-o", "jacobi.h5", "--", mpiexec, "-n", "2", "./jacobi2d", "1024",
                "400"], out)
    _step("predict the recorded run on hosts 4x faster than this one's assumed 1 Gflop/s",
          me + ["replay", "jacobi.h5", "--compute-rate", "1Gf", "--speed", "4Gf"], out)
    _step("benchmark: variability of an FTQ workload, 2 ranks, 200 iterations",
          [mpiexec, "-n", "2", sys.executable, "-m", "minitrace.bench", "variability",
           "--workload", "ftq", "--iterations", "200", "--mu", "2e-4", "--sigma", "2e-5",
           "--quiet", "-o", "variability.h5"], out)
    _step("project the slowest rank's cost to 4x-64x the ranks (GEV fits, bootstrap CIs)",
          me + ["gev", "variability.h5", "--method", "all", "--scale", "8,32,128",
                "--plot", "gev.png"], out)
    _step("model partitioned communication: 4 threads, 16 MB, the thesis's worked example",
          me + ["partitioned-model"], out)
    _step("calibrate this machine: network, compute and reductions on 2 ranks (docs/PREDICT.md)",
          me + ["calibrate", "-o", "machine.h5", "--", mpiexec, "-n", "2"], out)
    _step("predict the recorded Jacobi run with that calibration, checked against the recording "
          "(measured, predicted, error)",
          me + ["predict", "jacobi.h5", "--calibration", "machine.h5", "--timeline",
                "jacobi_timeline.png"], out)
    print(f"\nAll steps done; files in {out}")
    return 0
