"""The parallel merge and validate (issue 27): identity with the serial merge, speed-up, memory
per worker, and the per-step figures of the cost model in docs/PARALLEL.md.

Run (nice -n 10; minitrace's venv active, so that mpiexec is MPICH's wheel):
  python benchmarks/bench_parallel_merge.py identity --ranks 1024 16384 [--workers 2]
      generated recordings (tests/support/synthetic_raw.py): serial merge vs mpiexec -n K merge,
      dataset by dataset and validation report; peak RSS of each worker (/usr/bin/time)
  python benchmarks/bench_parallel_merge.py programs
      every C test program (tests/programs) recorded on 4 ranks: the same comparison
  python benchmarks/bench_parallel_merge.py speed --actions 50e6 --ranks 64
      wall time of the serial merge and of 1 and 2 workers, per step, and per-worker RSS
  python benchmarks/bench_parallel_merge.py command --actions 8e6 --ranks 16 [--repeat 3]
      `minitrace merge` in one process against `mpiexec -n 2 minitrace merge`, alternately
  python benchmarks/bench_parallel_merge.py timeline --actions 8e6 --ranks 16 [--old DIR]
      each worker's timeline in `mpiexec -n 2 minitrace merge`: every collective step and
      check with its wall and CPU seconds, and where a worker waits for the other
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from minitrace.mpitools import mpi_tool  # noqa: E402
from minitrace.parallel.parts import differences  # noqa: E402
from tests.support.synthetic_raw import write_run  # noqa: E402

PY = sys.executable
TIME = ["/usr/bin/time", "-f", "maxrss_kb %M"]


def _run(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t, p


def _rss(stderr: str) -> list[int]:
    return [int(x) // 1024 for x in re.findall(r"maxrss_kb (\d+)", stderr)]


def _report(stdout: str) -> list[str]:
    """The validation lines of a merge's output (the summary table comes before)."""
    lines = stdout.splitlines()
    at = next((i for i, ln in enumerate(lines) if ln.startswith("validation")), len(lines))
    return lines[at:]


def compare(raw: str, work: str, workers: int) -> dict:
    """Serial merge vs mpiexec -n K merge of one raw directory."""
    s, p = os.path.join(work, "serial.h5"), os.path.join(work, "par.h5")
    ts, ser = _run([*TIME, PY, "-m", "minitrace", "merge", raw, "-o", s])
    tp, par = _run([mpi_tool("mpiexec"), "-n", str(workers), *TIME, PY, "-m", "minitrace",
                    "merge", raw, "-o", p])
    out = {"serial_s": round(ts, 2), "parallel_s": round(tp, 2),
           "serial_rss_mb": _rss(ser.stderr), "worker_rss_mb": _rss(par.stderr),
           "rc": [ser.returncode, par.returncode],
           "differences": differences(s, p) if os.path.exists(p) else ["no output"],
           "same_report": _report(ser.stdout) == _report(par.stdout),
           "report": (_report(ser.stdout) or ["?"])[0]}
    shutil.rmtree(os.path.splitext(p)[0] + ".parts", ignore_errors=True)
    for f in (s, p):
        if os.path.exists(f):
            os.unlink(f)
    return out


def identity(args) -> None:
    for ranks in args.ranks:
        with tempfile.TemporaryDirectory(dir=args.tmp) as work:
            raw = os.path.join(work, "raw")
            t = time.perf_counter()
            n = write_run(raw, ranks, args.iterations, seed=ranks)
            print(f"{ranks} ranks: {n:,} MPI actions generated in {time.perf_counter() - t:.1f} s")
            print(json.dumps({"ranks": ranks, **compare(raw, work, args.workers)}))


def programs(args) -> None:
    from tests.record_util import build, record
    from pathlib import Path
    with tempfile.TemporaryDirectory(dir=args.tmp) as work:
        work = Path(work)
        for src in sorted(glob.glob(os.path.join(os.path.dirname(HERE), "tests", "programs",
                                                 "*.c"))):
            name = os.path.basename(src)[:-2]
            if name in ("nompi", "selfkill", "spawn"):
                continue        # no MPI; killed on purpose; needs more processes than ranks
            try:
                exe = build(name, work)
                p = record(work / f"{name}.h5", 4, [exe], extra=["--keep-raw"], expect_rc=None,
                           timeout=120)
            except (AssertionError, subprocess.SubprocessError) as e:
                print(json.dumps({"program": name, "not recorded": str(e)[:200]}))
                continue
            m = re.search(r"raw files kept in (\S+)", p.stdout)
            if not m:
                print(json.dumps({"program": name, "not recorded": p.stderr[-200:]}))
                continue
            print(json.dumps({"program": name, **compare(m.group(1), str(work), args.workers)}))
            shutil.rmtree(m.group(1), ignore_errors=True)


_PHASES = r"""
import json, sys, time, resource
from minitrace.parallel import world as W
from minitrace.parallel.merge import merge_parallel
from minitrace.parallel.validate import validate_parallel
times, step = {}, W.World.step
def timed(self, fn, what):
    t = time.perf_counter()
    try:
        return step(self, fn, what)
    finally:
        times[what.split(" /")[0]] = times.get(what, 0) + time.perf_counter() - t
W.World.step = timed
w = W.World()
w.comm.Barrier(); t0 = time.perf_counter()
meta, share = merge_parallel(w, sys.argv[1], sys.argv[2], say=lambda *a: None, keep=True)
w.comm.Barrier(); t1 = time.perf_counter()
rss_merge = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
rep = validate_parallel(w, sys.argv[2], share)
w.comm.Barrier(); t2 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(json.dumps({"worker": w.rank, "merge_s": round(t1 - t0, 2), "validate_s": round(t2 - t1, 2),
                  "steps": {k: round(v, 2) for k, v in times.items()},
                  "rss_merge_mb": rss_merge, "rss_mb": rss}))
"""

_SERIAL = r"""
import json, sys, time, resource
from minitrace.merge import merge_dir
from minitrace import storage
from minitrace.validate import validate
t0 = time.perf_counter(); d = merge_dir(sys.argv[1]); t1 = time.perf_counter()
storage.write_trace(sys.argv[2], d); t2 = time.perf_counter()
rss_merge = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
rep = validate(d); t3 = time.perf_counter()
print(json.dumps({"serial": True, "actions": len(d.actions), "merge_s": round(t1 - t0, 2),
                  "write_s": round(t2 - t1, 2), "validate_s": round(t3 - t2, 2),
                  "ok": rep.ok, "rss_merge_mb": rss_merge,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def speed(args) -> None:
    work = tempfile.mkdtemp(dir=args.tmp)
    try:
        raw = os.path.join(work, "raw")
        iters = int(args.actions) // (12 * args.ranks)
        t = time.perf_counter()
        write_run(raw, args.ranks, iters, seed=1)
        size = sum(os.path.getsize(f) for f in glob.glob(os.path.join(raw, "*.mtr")))
        print(json.dumps({"ranks": args.ranks, "iterations": iters, "raw_bytes": size,
                          "generated_s": round(time.perf_counter() - t, 1)}))
        for k in args.workers:
            out = os.path.join(work, f"k{k}.h5")
            if k == 0:
                t, p = _run([PY, "-c", _SERIAL, raw, out])
            else:
                t, p = _run([mpi_tool("mpiexec"), "-n", str(k), PY, "-c", _PHASES, raw, out])
            print(json.dumps({"workers": k or "serial", "wall_s": round(t, 2),
                              "load": os.getloadavg()[0]}))
            print(p.stdout.strip() or p.stderr[-2000:])
            parts = [f for f in glob.glob(os.path.join(work, f"k{k}.parts", "*", "*.h5"))]
            print(json.dumps({"stored_bytes": os.path.getsize(out) + sum(map(os.path.getsize,
                                                                               parts))}))
            if k:
                shutil.rmtree(os.path.join(work, f"k{k}.parts"))
            os.unlink(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def command(args) -> None:
    """``minitrace merge RAW`` in one process against ``mpiexec -n 2 minitrace merge RAW``
    (merge, validate, summary: what a user runs), alternately, on one generated recording;
    wall and CPU seconds (children's user + system) of each run and the load beside it.  Every
    run starts in the work directory: ``-m``/``-c`` put the current directory first on the
    path, where a repository's own package would shadow ``--old``'s.  The generated files are
    synced and each variant run once unmeasured first (the first run after the generation
    merged 10-20% slower: writeback of the fresh files), and every other repetition runs the
    variants in reverse order (a drift of the machine weighs on both alike)."""
    work = os.path.abspath(tempfile.mkdtemp(dir=args.tmp))
    try:
        raw = os.path.join(work, "raw")
        iters = int(args.actions) // (12 * args.ranks)
        write_run(raw, args.ranks, iters, seed=1)
        os.sync()
        print(json.dumps({"ranks": args.ranks, "iterations": iters, "raw_bytes": sum(
            os.path.getsize(f) for f in glob.glob(os.path.join(raw, "*.mtr")))}))
        runs = [(1, None), (2, None)] + ([(2, args.old)] if args.old else [])
        walls: dict = {r: [] for r in runs}
        for rep in range(-1, args.repeat):
            for k, code in (runs if rep % 2 == 0 else runs[::-1]):
                out = os.path.join(work, f"k{k}.h5")
                cmd = [PY, "-m", "minitrace", "merge", raw, "-o", out]
                if k > 1:
                    cmd = [mpi_tool("mpiexec"), "-n", str(k), *cmd]
                env = dict(os.environ, PYTHONPATH=code) if code else None
                load = os.getloadavg()[0]
                c0 = os.times()
                t = time.perf_counter()
                p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work)
                t = time.perf_counter() - t
                c1 = os.times()
                cpu = c1.children_user - c0.children_user + c1.children_system - \
                    c0.children_system
                if rep >= 0:
                    walls[k, code].append(t)
                print(json.dumps({"run": rep if rep >= 0 else "warm-up", "workers": k,
                                  "code": code or "this",
                                  "rc": p.returncode,
                                  "wall_s": round(t, 2), "cpu_s": round(cpu, 2),
                                  "load_before": load, "load_after": os.getloadavg()[0]}),
                      flush=True)
                shutil.rmtree(os.path.join(work, f"k{k}.parts"), ignore_errors=True)
                if os.path.exists(out):
                    os.unlink(out)
        for k, code in runs[1:]:
            pairs = [a / b for a, b in zip(walls[1, None], walls[k, code])]
            print(json.dumps({"code": code or "this", "speedup_per_run": [round(x, 2)
                                                                         for x in pairs],
                              "speedup_median": round(float(np.median(pairs)), 2),
                              "speedup_of_fastest": round(min(walls[1, None]) /
                                                          min(walls[k, code]), 2)}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


_TIMELINE = r"""
import contextlib, io, json, resource, sys, time
from minitrace.parallel import world as W, validate as PV
from minitrace.validate import collectives as VC
from minitrace.cli import main
ev, T0 = [], time.perf_counter()
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
def timed(obj, name, label):
    orig = getattr(obj, name)
    def f(*a, **k):
        what = f"step: {a[2][:40]}" if name == "step" else label
        t, c = time.perf_counter(), cpu()
        try:
            return orig(*a, **k)
        finally:
            ev.append((what, t - T0, time.perf_counter() - T0, cpu() - c))
    setattr(obj, name, f)
for n in ("step", "allgather", "gather", "bcast", "alltoall"):
    timed(W.World, n, f"wait/exchange: {n}")
for mod, names in ((PV.V, ("check_local_before_p2p", "check_local_after_collectives")),
                   (PV.VP, ("message_halves", "match_messages", "check_sizes_match")),
                   (PV.VD, ("first_blocking_receives", "check_recv_cycles")),
                   (PV, ("_collectives",)), (VC, ("check_collectives_of",))):
    for n in names:
        if hasattr(mod, n):
            timed(mod, n, f"validate: {n}")
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(["merge", sys.argv[1], "-o", sys.argv[2]])
    except SystemExit:
        pass
w = W.World()
with open(f"{sys.argv[2]}.w{w.rank}.json", "w") as fh:    # one file each: lines over 4 KB
    json.dump({"worker": w.rank, "end_s": time.perf_counter() - T0, "cpu_s": cpu(),
               "events": ev}, fh)                     # interleave on a shared pipe
"""


def timeline(args) -> None:
    """Each worker's steps, checks and exchanges in ``mpiexec -n 2 minitrace merge`` (wall
    from the worker's start, wall and CPU seconds; an exchange's time is the wait for the other
    worker: MPICH polls, so a wait costs CPU too); with ``--old``, the same for that code."""
    work = os.path.abspath(tempfile.mkdtemp(dir=args.tmp))
    try:
        raw = os.path.join(work, "raw")
        write_run(raw, args.ranks, int(args.actions) // (12 * args.ranks), seed=1)
        for code in [None] + ([args.old] if args.old else []):
            out = os.path.join(work, "t.h5")
            for f in glob.glob(f"{out}.w*.json"):      # (a failed run's: not this run's)
                os.unlink(f)
            env = dict(os.environ, PYTHONPATH=code) if code else None
            p = subprocess.run([mpi_tool("mpiexec"), "-n", "2", PY, "-c", _TIMELINE, raw, out],
                               capture_output=True, text=True, env=env, cwd=work)
            if p.returncode:
                print(p.stderr[-2000:])
                continue
            workers = []
            for f in sorted(glob.glob(f"{out}.w*.json")):
                with open(f) as fh:
                    workers.append(json.load(fh))
                os.unlink(f)
            workers.sort(key=lambda w: w["worker"])
            print(f"code: {code or 'this'}, load {os.getloadavg()[0]:.1f}")
            for w in workers:
                waits = sum(e[2] - e[1] for e in w["events"] if e[0].startswith("wait"))
                print(f"worker {w['worker']}: end {w['end_s']:.2f} s, CPU {w['cpu_s']:.2f} s, "
                      f"in exchanges {waits:.2f} s")
                for what, t0, t1, c in sorted(w["events"], key=lambda e: e[1]):
                    if t1 - t0 >= args.min:
                        print(f"  {what:52s} {t0:7.2f} {t1:7.2f}  wall {t1 - t0:5.2f}  "
                              f"CPU {c:5.2f}")
            shutil.rmtree(os.path.join(work, "t.parts"), ignore_errors=True)
            os.unlink(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tmp", default=None, help="where to write (default: $TMPDIR)")
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("identity")
    p.add_argument("--ranks", type=int, nargs="+", default=[1024, 16384])
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--workers", type=int, default=2)
    p.set_defaults(func=identity)
    p = sub.add_parser("programs")
    p.add_argument("--workers", type=int, default=2)
    p.set_defaults(func=programs)
    p = sub.add_parser("speed")
    p.add_argument("--actions", type=float, default=50e6)
    p.add_argument("--ranks", type=int, default=64)
    p.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2],
                   help="0 = the serial merge")
    p.set_defaults(func=speed)
    p = sub.add_parser("command")
    p.add_argument("--actions", type=float, default=8e6)
    p.add_argument("--ranks", type=int, default=16)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--old", metavar="DIR", help="also mpiexec -n 2 with the minitrace package "
                   "of DIR (PYTHONPATH), e.g. an earlier commit's `git archive`")
    p.set_defaults(func=command)
    p = sub.add_parser("timeline")
    p.add_argument("--actions", type=float, default=8e6)
    p.add_argument("--ranks", type=int, default=16)
    p.add_argument("--min", type=float, default=0.05, help="show events of this wall or more")
    p.add_argument("--old", metavar="DIR", help="also the minitrace package of DIR")
    p.set_defaults(func=timeline)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
