"""Predicting on a machine the trace was not recorded on (issue 37), with machine B made from
this one.

Machine A is this machine as it is.  Machine B (``--b``) is one of:

* **valgrind** (the default B): every rank of B's jobs runs under valgrind's no-op tool
  (``mpiexec -n N valgrind --tool=none --trace-children=yes -q PROGRAM``, and ``minitrace
  calibrate -- mpiexec -n 2 valgrind ...`` for B's calibration): the program's machine code is
  translated and run by valgrind's JIT, a slower CPU whose slowdown depends on the instruction
  mix (measured, kernel ratios B/A: chase x1.0-1.1, fma x1.6-1.9, triad_memory x5.9-6.8,
  triad_cache x22-25; programs x4-x12), the same in every run: the uneven, steady B the
  translation is tested against.  MPICH's shared-memory transport and the recorder (its
  LD_PRELOAD shim, loaded beside valgrind's own preloads) work under it; valgrind follows
  ``env``/``sh`` into the program (``--trace-children=yes``).  Its first execution of each
  piece of code is translated (a start-up the probe's first half measures);
* **steal**: the same cores made slower by stolen time: on every core a process at SCHED_FIFO
  priority (benchmarks/steal_cores.c, compiled here) takes ``--steal-us`` (60) of every
  ``--steal-period-us`` (250), at the same instants on every core (a common grid of the
  monotonic clock): all ranks stop together, as under a slower clock, so a rank never waits
  for a partner stopped alone, and every kernel slows by about the share taken (~28%: the
  steal and its wake-up).  While it holds a core it writes through ``--steal-kib`` KiB (64 MiB)
  of its own memory, so that the ranks get the core back with their data out of its caches:
  latency-bound work slows more (measured under load: fma, triad_memory, triad_cache
  x1.38-1.52, chase x1.70-1.78; x1.42 without the writes).  Not steady on the idle machine
  (two runs: kernel ratios x1.5-3.0, programs x1.4-2.9), nearly uniform under load.  Its
  ping-pongs are rarely hit by a stolen slice, so B's calibration holds about A's network,
  while B's MPI calls in a run are longer by the share stolen on average: the replay's part
  of the error, printed apart;
* the earlier B's, kept for comparison (RESULTS.md, issue 37.2): a **co-runner** streaming
  through ``--stream-mib`` MiB (numpy ``a *= c``) in a cgroup (v1 ``cpu``) of its own with a
  quota of ``--corunner-quota`` cores per ``--period-us``: its slowdown fell inside the MPI
  calls (it takes the core of a waiting or yielding rank), not in compute; and a **quota on
  the ranks' cgroup** (``--rank-quota`` cores): CFS throttles the cgroup's cores at
  different instants, for 1-4 ms at a time (measured with a 1 ms period and 1.4 cores on 2
  busy loops: each stopped ~50% of the time, not the 30% asked, both at once 25-30%), stalls
  rather than a slower core.

``--no-yield``: MPICH's waiting ranks never yield their core (A's jobs and B's): on a busy
machine a yielding rank hands its core to another program for a whole time slice.  A's jobs
and B's run in cgroups of equal ``--shares`` (15 by default: the weight of nice 19, the
machine's other users' jobs), so that neither is favoured against the other programs; on a
shared machine ``--shares 262144`` puts both far above the other programs (each program
outside still takes its turn now and then).

For each application (bench_accuracy.py's builds; ``--apps``: compute-bound ``ep``,
memory-bound ``cg3d``, communication-bound ``transpose``, mixed ``jacobi2d``, and
``master_worker``; public mini-apps with ``--extra``, their probes' command lines with
``--extra-probe``), at ``--ranks`` ranks (2) on the 2 cores:

1. calibrate A and B (``minitrace calibrate``, its kernel set included; B's on B);
2. record the application on A (``--volume cputime``) and read its recorded time (A's run);
3. on B: a probe run (the same size per rank, ``--probe-share`` of its iterations, recorded),
   and ``--runs`` recorded runs of the full size: the measured time on B is their median
   recorded time (from the last return from MPI_Init to the last MPI_Finalize, what a
   prediction predicts; a job's wall time adds the launch);
4. predict the recording with B's calibration: without translation (what minitrace answered
   before issue 37: A's run time), by the kernel set (no probe: geometric mean, interval the
   kernels' range) and with the probe; each against the time measured on B.  Also the
   slowdown B/A measured and as each translation predicts it (predicted B over the replay on
   A: the replay's own error on A, its self-check, cancels out), and the compute alone (B's
   recorded compute wall time against the translated compute each replay ran), and the time
   inside MPI calls (B's recorded against the probe's replay: what B's calibration, not the
   translation, answers for; and A's recorded against A's replay, the same-machine part).

    python benchmarks/bench_elsewhere.py [--apps ep,cg3d,transpose,jacobi2d] [--work DIR]
        [--extra NAME=COMMAND --extra-probe NAME=COMMAND ...]

Needs root (cgroup v1 cpu at /sys/fs/cgroup/cpu; SCHED_FIFO for ``--b steal``), a C compiler
and valgrind (``--b valgrind``).  The load
average (1 min) is printed on every row: the machine is shared, and another program's load
changes A as well as B.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_accuracy import SMALL, _apps  # noqa: E402

CGROUPS = Path("/sys/fs/cgroup/cpu")
#: what runs each rank of B's jobs under ``--b valgrind``; UCX's memory hooks (the MPICH
#: wheel's ch4:ucx patches malloc and mmap in MPI_Init) off: under valgrind they corrupted the
#: heap now and then ("corrupted double-linked list" in both ranks of a calibration)
VALGRIND = ["env", "UCX_MEM_MALLOC_HOOKS=no", "UCX_MEM_EVENTS=no", "valgrind", "--tool=none",
            "--trace-children=yes", "-q"]
RANKS, CORUNNER = CGROUPS / "minitrace-bench-b", CGROUPS / "minitrace-bench-b-corunner"
ON_A = CGROUPS / "minitrace-bench-a"
#: which argument of each application counts its iterations (or tasks): the probe runs fewer
_ITERATIONS = {"jacobi2d": -1, "cg3d": -1, "transpose": -1, "master_worker": -2, "ep": -2}
_STREAM = ("import numpy as np, sys\n"
           "a = np.ones(int(sys.argv[1]) * 131072)\n"
           "while True:\n"
           "    a *= 1.0000001\n")


def _group(group: Path, shares: int, cores: float = 0.0, period_us: int = 100000) -> Path:
    """``group`` with ``shares`` (its weight against other programs) and a quota of ``cores``
    (0: none)."""
    group.mkdir(exist_ok=True)
    (group / "cpu.shares").write_text(str(shares))
    (group / "cpu.cfs_period_us").write_text(str(period_us))
    (group / "cpu.cfs_quota_us").write_text(str(int(cores * period_us)) if cores else "-1")
    return group


def _in(group: Path | None, cmd: list[str]) -> list[str]:
    """``cmd`` run inside ``group`` (None: as it is)."""
    if group is None:
        return cmd
    return ["sh", "-c", f'echo $$ > {group}/tasks && exec "$@"', "sh", *cmd]


def _load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def _in_mpi(part: dict) -> float:
    """Seconds inside MPI calls, mean over ranks, of a prediction's measured or predicted
    parts."""
    return statistics.mean(sum(part[k][r] for k in ("p2p", "waiting", "collectives",
                                                    "other_mpi") if k in part)
                           for r in range(len(part["compute"])))


def _recorded(job: list[str], out: Path, cal: Path,
              group: Path | None) -> tuple[float, float, float]:
    """A run of ``job`` recorded (on B when ``group``/B's processes are on): its time from the
    last MPI_Init return to the last MPI_Finalize less the recorder's own time (the
    self-check's; against A's calibration, whose host it is: what an untraced run takes), its
    compute's wall seconds and its seconds inside MPI calls, means over ranks."""
    from minitrace.predict import predict
    subprocess.run(_in(group, [sys.executable, "-m", "minitrace", "record", "-o", str(out),
                               "--volume", "cputime", "--", *job]),
                   check=True, stdout=subprocess.DEVNULL)
    p = predict(str(out), str(cal))
    own = p.recorder_time[p.last_rank] if p.recorder_time else 0.0
    return p.recorded_time - own, statistics.mean(p.measured["compute"]), _in_mpi(p.measured)


class MachineB:
    """B's processes (stolen time, the co-runner) on while in a ``with`` block; the ranks'
    cgroup."""

    def __init__(self, args, work: Path):
        self.args, self.stream, self.stealers = args, None, []
        self.group = _group(RANKS, args.shares, args.rank_quota, args.period_us)
        self.steal = work / "steal_cores"
        #: what runs each rank on B, after the launcher's ``-n N``
        self.wrap = VALGRIND if args.b == "valgrind" else []
        if args.b == "valgrind" and shutil.which("valgrind") is None:
            raise SystemExit("--b valgrind: valgrind is not installed (apt-get install valgrind)")
        if args.b == "steal" and args.steal_us:
            subprocess.run(["cc", "-O2", "-o", str(self.steal), str(HERE / "steal_cores.c")],
                           check=True)

    def __enter__(self):
        a = self.args
        if a.b == "steal" and a.steal_us:
            self.stealers = [subprocess.Popen([str(self.steal), str(cpu),
                                               str(a.steal_period_us), str(a.steal_us),
                                               str(a.steal_kib)])
                             for cpu in sorted(os.sched_getaffinity(0))]
            time.sleep(0.5)
            if any(s.poll() is not None for s in self.stealers):
                self.__exit__()
                raise SystemExit("steal_cores did not start (it needs root: SCHED_FIFO)")
        if a.stream_mib:
            _group(CORUNNER, 1024, a.corunner_quota, a.period_us)
            self.stream = subprocess.Popen(_in(CORUNNER, [sys.executable, "-c", _STREAM,
                                                          str(a.stream_mib)]))
            time.sleep(1.0)                          # its pages touched before B runs
        return self

    def __exit__(self, *exc):
        for proc in self.stealers + ([self.stream] if self.stream else []):
            proc.kill()
            proc.wait()
        self.stream, self.stealers = None, []


def _cleanup() -> None:
    for group in (RANKS, CORUNNER, ON_A):
        if group.exists():
            for pid in (group / "tasks").read_text().split():
                subprocess.run(["kill", pid], stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            group.rmdir()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="ep,cg3d,transpose,jacobi2d")
    ap.add_argument("--size", choices=("full", "small"), default="full",
                    help="bench_accuracy's full or small sizes")
    ap.add_argument("--b", choices=("valgrind", "steal"), default="valgrind",
                    help="machine B: B's ranks under valgrind's no-op tool, or A's cores with "
                         "time stolen by SCHED_FIFO processes (the module's docstring)")
    ap.add_argument("--steal-us", type=int, default=60,
                    help="--b steal: microseconds of every period taken from every core (0: none)")
    ap.add_argument("--steal-period-us", type=int, default=250)
    ap.add_argument("--steal-kib", type=int, default=65536,
                    help="memory the stealing processes write through (each core's caches "
                         "emptied; 0: they only spin)")
    ap.add_argument("--stream-mib", type=int, default=0,
                    help="B's co-runner's array (0: no co-runner)")
    ap.add_argument("--corunner-quota", type=float, default=0.5,
                    help="the co-runner's CPU quota, cores")
    ap.add_argument("--rank-quota", type=float, default=0.0,
                    help="B's ranks' CPU quota, cores (0: none)")
    ap.add_argument("--period-us", type=int, default=2000,
                    help="the quotas' period (CFS throttles within it)")
    ap.add_argument("--shares", type=int, default=15,
                    help="cpu.shares of A's and B's jobs (15: the weight of nice 19, as the "
                         "machine's other users' jobs)")
    ap.add_argument("--no-yield", action="store_true",
                    help="MPICH's ranks never yield their core while they wait "
                         "(MPIR_CVAR_POLLS_BEFORE_YIELD=0, A's and B's jobs)")
    ap.add_argument("--ranks", type=int, default=2,
                    help="ranks of each application's job (1: no waiting rank to poll while "
                         "the other programs of a shared machine take its partner's core)")
    ap.add_argument("--probe-share", type=float, default=0.25)
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=COMMAND",
                    help="another program (a public mini-app built elsewhere): its command "
                         "line after the launcher's -n N, split on spaces")
    ap.add_argument("--extra-probe", action="append", default=[], metavar="NAME=COMMAND",
                    help="its probe's command line (the same size per rank, fewer "
                         "iterations: how is the program's own)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    from minitrace.predict import predict
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    if args.no_yield:
        os.environ["MPIR_CVAR_POLLS_BEFORE_YIELD"] = "0"
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-elsewhere-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.chdir(work)                  # what the programs write (HPCCG's yaml) goes there
    bindir = Path(sys.executable).parent
    mpiexec, me = str(bindir / "mpiexec"), [sys.executable, "-m", "minitrace"]
    apps = {k: v for k, v in _apps(work, str(bindir / "mpicc")).items()
            if k in args.apps.split(",")}
    probes = {}
    for spec, into in [(x, apps) for x in args.extra] + [(x, probes) for x in args.extra_probe]:
        name, _, cmd = spec.partition("=")
        into[name] = cmd.split()
    b = MachineB(args, work)
    a = _group(ON_A, args.shares)
    try:
        machine = (" ".join(VALGRIND) if args.b == "valgrind" else
                   f"{args.steal_us} us of every {args.steal_period_us} us taken from every "
                   f"core, writing through {args.steal_kib} KiB")
        print(f"load average at start {_load()}; B: {machine}; co-runner streaming "
              f"{args.stream_mib or 'none'} MiB with "
              f"{args.corunner_quota} cores of quota, ranks' quota "
              f"{args.rank_quota or 'none'}, period {args.period_us} us; "
              f"{os.cpu_count()} cores; work {work}", flush=True)
        cal_a, cal_b = work / "a.h5", work / "b.h5"
        if not cal_a.exists():
            subprocess.run(_in(a, me + ["calibrate", "-o", str(cal_a), "--quiet", "--",
                                        mpiexec, "-n", "2"]), check=True)
        for attempt in range(3 if b.wrap else 1):
            if cal_b.exists():
                break
            # (CPython under valgrind aborts now and then, "corrupted double-linked list" in
            # both ranks: a new attempt, said)
            with b:
                done = subprocess.run(_in(b.group, me + ["calibrate", "-o", str(cal_b),
                                                         "--quiet", "--", mpiexec, "-n", "2",
                                                         *b.wrap]))
            if done.returncode:
                print(f"B's calibration failed (attempt {attempt + 1})", flush=True)
            else:
                _rename_host(cal_b)
        if not cal_b.exists():
            raise SystemExit("B's calibration failed")
        from minitrace.predict.calibration import load
        from minitrace.predict.translate import kernel_ratios
        ratios = kernel_ratios(load(str(cal_a)), load(str(cal_b)))
        print("kernel ratios B/A: " + ", ".join(f"{k} x{v:.3f}" for k, v in ratios.items()))
        print("| app | load | on A (s), self-check | measured on B (s) [runs' range] | "
              "no translation | "
              "kernels [range] | probe [95%] | probe sites | B/A: measured, kernels, probe | "
              "compute on B (s): measured, kernels, probe | in MPI on B (s): measured, "
              "probe's replay | in MPI on A (s): measured, replay |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name, argv in apps.items():
            argv = argv[:-2] + SMALL[name] if args.size == "small" and name in SMALL else argv
            job = [mpiexec, "-n", str(args.ranks), *argv]
            job_b = [mpiexec, "-n", str(args.ranks), *b.wrap, *argv]
            load0 = _load()
            big, probe = work / f"{name}-a.h5", work / f"{name}-probe-b.h5"
            subprocess.run(_in(a, me + ["record", "-o", str(big), "--volume", "cputime", "--",
                                        *job]), check=True, stdout=subprocess.DEVNULL)
            own = predict(str(big), str(cal_a))     # A's recorded time and the replay's error
            on_a = own.recorded_time
            if name in probes:
                short = [mpiexec, "-n", str(args.ranks), *b.wrap, *probes[name]]
            else:
                short = list(job_b)
                i = _ITERATIONS[name]
                short[i] = str(max(int(int(short[i]) * args.probe_share), 2))
            with b:
                subprocess.run(_in(b.group, me + ["record", "-o", str(probe), "--volume",
                                                  "cputime", "--", *short]),
                               check=True, stdout=subprocess.DEVNULL)
                runs = [_recorded(job_b, work / f"{name}-b{r}.h5", cal_a, b.group)
                        for r in range(args.runs)]
            measured = statistics.median(t for t, _, _ in runs)
            compute_b = statistics.median(c for _, c, _ in runs)
            mpi_b = statistics.median(m for _, _, m in runs)
            plain = own.predicted_time
            kern = predict(str(big), str(cal_b), recorded_on=str(cal_a), measured=measured)
            probed = predict(str(big), str(cal_b), recorded_on=str(cal_a), probe=str(probe),
                             measured=measured)
            site_note = next((n for n in probed.notes if "per call site" in n), "")
            err = lambda t: f"{t:.4f} ({(t - measured) / measured:+.1%})"     # noqa: E731
            span = lambda p: (f" [{p.interval[0]:.4f}-{p.interval[1]:.4f}]"    # noqa: E731
                              if p.interval else "")
            # the slowdown B/A measured and as each translation predicts it (the replay's own
            # error on A, the self-check, cancels out of the predicted one)
            slow = f"x{measured / on_a:.3f}, " + ", ".join(
                f"x{q:.3f} ({q * on_a / measured - 1:+.1%})"
                for q in (kern.predicted_time / plain, probed.predicted_time / plain))
            # the compute alone: B's recorded wall time in compute (mean over ranks, median
            # over runs) and the translated compute each replay ran
            part = f"{compute_b:.4f}, " + ", ".join(
                f"{c:.4f} ({(c - compute_b) / compute_b:+.1%})"
                for c in (statistics.mean(q.predicted["compute"]) for q in (kern, probed)))
            print(f"| {name} | {load0}-{_load()} | {on_a:.4f} ({own.error:+.1%}) | "
                  f"{measured:.4f} [{min(t for t, _, _ in runs):.4f}-"
                  f"{max(t for t, _, _ in runs):.4f}] | {err(plain)} | "
                  f"{err(kern.predicted_time)}{span(kern)} | "
                  f"{err(probed.predicted_time)}{span(probed)} | "
                  f"{site_note.split(': ', 1)[-1]} | {slow} | {part} | {mpi_b:.4f}, "
                  f"{_in_mpi(probed.predicted):.4f} | {_in_mpi(own.measured):.4f}, "
                  f"{_in_mpi(own.predicted):.4f} |", flush=True)
        print(f"load average at end {_load()}")
    finally:
        b.__exit__()
        _cleanup()
    return 0


def _rename_host(cal: Path) -> None:
    """B is this machine: its calibration says another host, as a second machine's would."""
    import h5py
    with h5py.File(cal, "r+") as f:
        f["provenance"].attrs["hostname"] = "machine-b"


if __name__ == "__main__":
    sys.exit(main())
