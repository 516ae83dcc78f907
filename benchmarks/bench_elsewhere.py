"""Predicting on a machine the trace was not recorded on (issue 37), with machine B made from
this one.

Machine A is this machine as it is.  Machine B is the same cores with their speed changed
unevenly: every job of B runs in a cgroup (v1 ``cpu``) with a CPU quota of ``--quota`` cores,
beside a co-runner that streams through ``--stream-mib`` MiB of memory in the same cgroup (it
takes a share of the quota and of the memory bandwidth: streaming code slows down more than
cache-resident code).  For each application of benchmarks/apps (bench_accuracy.py's builds):

1. calibrate A and B (``minitrace calibrate``; B's inside the cgroup, co-runner on);
2. record the application on A (``--volume cputime``);
3. on B: a probe run (the same size per rank, ``--probe-share`` of its iterations, recorded),
   and ``--runs`` recorded runs of the full size: the measured time on B is their median
   recorded time (from the last return from MPI_Init to the last MPI_Finalize, what a
   prediction predicts; a job's wall time adds the launch);
4. predict the recording with B's calibration: without translation (what minitrace answered
   before issue 37: A's run time), by the calibrations' rates, and with the probe; each against
   the time measured on B.

    python benchmarks/bench_elsewhere.py [--apps jacobi2d,cg3d] [--quota 1.0] [--work DIR]

Needs root (cgroup v1 cpu at /sys/fs/cgroup/cpu).  The load average is printed at the start and
the end: run it on an idle machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_accuracy import SMALL, _apps  # noqa: E402

CGROUP = Path("/sys/fs/cgroup/cpu/minitrace-bench-b")
#: which argument of each application counts its iterations (or tasks): the probe runs fewer
_ITERATIONS = {"jacobi2d": -1, "cg3d": -1, "transpose": -1, "master_worker": -2}
_STREAM = ("import numpy as np, sys\n"
           "a = np.ones(int(sys.argv[1]) * 131072)\n"
           "while True:\n"
           "    a *= 1.0000001\n")


def _in_b(cmd: list[str]) -> list[str]:
    """``cmd`` run inside B's cgroup."""
    return ["sh", "-c", f'echo $$ > {CGROUP}/tasks && exec "$@"', "sh", *cmd]


def _recorded_time(wrap, me: list[str], job: list[str], out: Path, cal: Path) -> float:
    """A run of ``job`` recorded on B: its time from the last MPI_Init return to the last
    MPI_Finalize (the self-check's recorded time; against A's calibration, whose host it is)."""
    from minitrace.predict import predict
    subprocess.run(wrap(me + ["record", "-o", str(out), "--volume", "cputime", "--", *job]),
                   check=True, stdout=subprocess.DEVNULL)
    return predict(str(out), str(cal)).recorded_time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="jacobi2d,cg3d,transpose,master_worker")
    ap.add_argument("--quota", type=float, default=1.2, help="B's CPU quota, cores")
    ap.add_argument("--stream-mib", type=int, default=256,
                    help="B's co-runner's array (0: no co-runner)")
    ap.add_argument("--period-us", type=int, default=100000,
                    help="B's quota period (CFS throttles within it)")
    ap.add_argument("--probe-share", type=float, default=0.25)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    from minitrace.predict import predict
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-elsewhere-"))
    work.mkdir(parents=True, exist_ok=True)
    bindir = Path(sys.executable).parent
    mpiexec, me = str(bindir / "mpiexec"), [sys.executable, "-m", "minitrace"]
    apps = {k: v for k, v in _apps(work, str(bindir / "mpicc")).items()
            if k in args.apps.split(",")}
    CGROUP.mkdir(exist_ok=True)
    (CGROUP / "cpu.cfs_period_us").write_text(str(args.period_us))
    (CGROUP / "cpu.cfs_quota_us").write_text(str(int(args.quota * args.period_us)))
    stream = subprocess.Popen(_in_b([sys.executable, "-c", _STREAM, str(args.stream_mib)])) \
        if args.stream_mib else None
    try:
        print(f"load average at start {os.getloadavg()[0]:.2f}; B: {args.quota} cores of "
              f"quota, a co-runner streaming {args.stream_mib} MiB; {os.cpu_count()} cores")
        cal_a, cal_b = work / "a.h5", work / "b.h5"
        for cal, wrap in ((cal_a, list), (cal_b, _in_b)):
            if not cal.exists():
                subprocess.run(wrap(me + ["calibrate", "-o", str(cal), "--quiet", "--",
                                          mpiexec, "-n", "2"]), check=True)
        _rename_host(cal_b)
        print("| app | measured on B (s) | no translation | rates | probe (95%) | "
              "probe sites |")
        print("|---|---|---|---|---|---|")
        for name, argv in apps.items():
            argv = argv[:-2] + SMALL[name] if name in SMALL else argv
            job = [mpiexec, "-n", "2", *argv]
            big, probe = work / f"{name}-a.h5", work / f"{name}-probe-b.h5"
            subprocess.run(me + ["record", "-o", str(big), "--volume", "cputime", "--", *job],
                           check=True, stdout=subprocess.DEVNULL)
            short = list(job)
            i = _ITERATIONS[name]
            short[i] = str(max(int(int(short[i]) * args.probe_share), 2))
            subprocess.run(_in_b(me + ["record", "-o", str(probe), "--volume", "cputime", "--",
                                       *short]), check=True, stdout=subprocess.DEVNULL)
            measured = statistics.median(_recorded_time(_in_b, me, job, work / f"{name}-b{i}.h5",
                                                        cal_a) for i in range(args.runs))
            plain = predict(str(big), str(cal_a)).predicted_time
            rates = predict(str(big), str(cal_b), recorded_on=str(cal_a), measured=measured)
            probed = predict(str(big), str(cal_b), recorded_on=str(cal_a), probe=str(probe),
                             measured=measured)
            site_note = next((n for n in probed.notes if "per call site" in n), "")
            err = lambda t: f"{t:.4f} ({(t - measured) / measured:+.1%})"
            lo, hi = probed.interval
            print(f"| {name} | {measured:.4f} | {err(plain)} | {err(rates.predicted_time)} | "
                  f"{err(probed.predicted_time)} [{lo:.4f}-{hi:.4f}] | "
                  f"{site_note.split(': ', 1)[-1]} |", flush=True)
        print(f"load average at end {os.getloadavg()[0]:.2f}")
    finally:
        if stream is not None:
            stream.kill()
            stream.wait()
        for pid in (CGROUP / "tasks").read_text().split():
            subprocess.run(["kill", pid], stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        CGROUP.rmdir()
    return 0


def _rename_host(cal: Path) -> None:
    """B is this machine: its calibration says another host, as a second machine's would."""
    import h5py
    with h5py.File(cal, "r+") as f:
        f["provenance"].attrs["hostname"] = "machine-b"


if __name__ == "__main__":
    sys.exit(main())
