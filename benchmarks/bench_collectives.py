"""What changed when collectives began to follow the recorded MPI (issue 32, item 1).

Records the applications of benchmarks/apps (as bench_accuracy.py builds them, small sizes) at
2 and 4 ranks, calibrates this machine once, and predicts every recording twice on the
calibrated machine: as predictions were made before the collective table (world collectives left
to SimGrid's defaults but for ``smpi/allreduce:rdb``, sub-communicator ones lowered MPICH-like:
``--collectives simgrid --cfg smpi/allreduce:rdb``) and as they are now (``auto``: the recorded
MPI's algorithms).  Both predictions replay the same recording with the same calibration, so
their difference is the collectives' alone, whatever the machine's load; the self-check error
(prediction vs the recorded time) of each is printed beside it, with the load.

    python benchmarks/bench_collectives.py [--ranks 2,4] [--work DIR]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_accuracy import SMALL, _apps  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--work", default=None, help="directory kept for inspection")
    args = ap.parse_args()
    from minitrace.predict.calibration import load
    from minitrace.predict.prediction import predict, replay_options
    from minitrace.replay import replay
    from minitrace.trace import open as open_trace
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-colls-"))
    work.mkdir(parents=True, exist_ok=True)
    bindir = Path(sys.executable).parent
    mpiexec, me = str(bindir / "mpiexec"), [sys.executable, "-m", "minitrace"]
    apps = _apps(work, str(bindir / "mpicc"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    cal = work / "cal.h5"
    if not cal.exists():
        subprocess.run(me + ["calibrate", "-o", str(cal), "--quiet", "--", mpiexec, "-n", "2"],
                       check=True, env=env)
    calib = load(str(cal))
    print(f"load average at start {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    print("| app | ranks | before (s) | after (s) | change | error before | error after | "
          "collectives after |")
    print("|---|---|---|---|---|---|---|---|")
    for n in [int(x) for x in args.ranks.split(",")]:
        for name, argv in apps.items():
            argv = argv[:-2] + SMALL[name] if name in SMALL else argv
            trace = work / f"{name}-{n}.h5"
            if not trace.exists():
                subprocess.run(me + ["record", "-o", str(trace), "--volume", "cputime", "--",
                                     mpiexec, "-n", str(n), *argv], check=True, env=env,
                               stdout=subprocess.DEVNULL)
            after = predict(str(trace), calib)
            with open_trace(str(trace)) as t:
                data = t.data()
            kw = replay_options(data, calib, str(trace), collectives="simgrid")
            kw["config"] = {"smpi/allreduce": "rdb", **kw["config"]}
            before = replay(data, **kw).simulated_time
            rec = after.recorded_time
            change = (after.predicted_time - before) / before
            used = sorted({note.split("(point-to-point, ")[-1].rstrip(")")
                           for note in after.notes if "point-to-point" in note})
            res = replay(data, **replay_options(data, calib, str(trace)))
            opts = [f"{k[5:]}:{v}" for k, v in res.config.items() if k.startswith("smpi/")
                    and k[5:] in ("allreduce", "barrier", "bcast", "reduce", "alltoall",
                                  "allgather", "gather", "scatter", "alltoallv")]
            print(f"| {name} | {n} | {before:.5f} | {after.predicted_time:.5f} | "
                  f"{change:+.2%} | {(before - rec) / rec:+.2%} | {after.error:+.2%} | "
                  f"{' '.join(opts + used) or '-'} |", flush=True)
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
