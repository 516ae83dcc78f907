"""Iteration sampling against the full replay, and the speed of noise replicas (issue 25).

Sampling: generated iterative traces (tests/support/synthetic_loops.py: a stencil, CG with a
drifting SpMV, an AMR-like code with refinement phases and alternating iterations; with and
without jitter and warm-up), each replayed fully and with ``--sample auto`` on the default
generated cluster (one host per rank, 1Gf, 10GBps, 1us), compute rate 1Gf.  Reported per case:
iterations, actions, full and sampled wall time (every replay of the sampled one and its
bookkeeping; "loops": its loop detection, or for a recorded file its reading and loop
detection), each the fastest of ``--repeat`` alternated runs (the machine is shared), their
ratio, the relative error of the sampled prediction, the reported bound,
and whether the bound holds.  Targets: error <= 1%, ratio >= 10, bound holds in every case.

Recorded traces (``--recorded FILE...``, e.g. ``minitrace record --volume cputime -- mpiexec
-n 2 benchmarks/apps/cg3d 32 50000``): each file replayed fully and sampled from the file (both
read it; the sampled one also finds its loops, or takes a compressed file's stored ones).  The
table gives each trace's ranks and its main loop's iterations (the top-level loop of most
iterations, also where the trace replays fully: the issue's target is on loops of >= 200).

Recorded codes (``--record DIR`` with the built programs' paths, issue 38): each recorded
here under ``minitrace record --volume cputime`` into DIR, then measured as above:
``--lulesh EXE`` (``-i 300 -s 8`` at 8 ranks, oversubscribed: LULESH needs a cube; and
``-i 300 -s 20`` at 1 rank), ``--minife EXE`` (``nx=ny=nz=64`` at 2 ranks: 200 CG iterations),
``--hpccg EXE`` (``40 40 40`` at 2 ranks: 149), ``--hpcg EXE`` (``16 16 16 1`` at 2 ranks: CG
solves of 50 iterations), and tests/programs/pipeline.c (built here; 300 pipelined iterations
with irregular convergence checks at 2 ranks).  The table says how many times fewer actions
the sampled replay replays, and why it replays fully or a phase whole where it does.

Replicas (``--replicas``): 100 replicas of a ~1 M-action stencil with sampling on, 2 workers.

Run: nice -n 10 python benchmarks/bench_sampling.py [--quick] [--skip-replicas]
     [--recorded FILE...] [--record DIR --lulesh EXE --minife EXE --hpccg EXE --hpcg EXE]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import minitrace.compress.loop_view  # noqa: F401  (imported before timing)
import minitrace.replay.timeline  # noqa: F401
from minitrace.errors import MinitraceError
from minitrace.replay import replay
from minitrace.replay.replicas import replicas
from minitrace.replay.sampling import load_trace, loops_of, sampled_replay, top_level

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests.support
from tests.support.synthetic_loops import amr, cg, stencil  # noqa: E402

RATE = "1Gf"


def cases(scale: float):
    n = lambda k: max(int(k * scale), 400)     # noqa: E731
    if not scale:
        return []
    return [
        ("stencil 16r", stencil(16, n(4000))),
        ("stencil 16r jitter 5% warm-up", stencil(16, n(4000), jitter=0.05, warmup=2.0,
                                                  seed=1)),
        ("cg 16r drift 30% jitter 3%", cg(16, n(4000), jitter=0.03, drift=0.3, seed=2)),
        ("amr 16r 3 phases alternating", amr(16, n(8000), phases=3, alternate=0.3, seed=3)),
        ("amr 16r 4 phases jitter 5%", amr(16, n(8000), phases=4, jitter=0.05, seed=4)),
        ("stencil 2r jitter 20%", stencil(2, n(20000), jitter=0.2, seed=5)),
    ]


def sampling(scale: float, recorded: list[str], repeat: int) -> None:
    print("| case | ranks | main loop | iterations | actions | full wall (s) | sampled wall (s) "
          "(loops) | speed-up | replayed | fewer actions | error | bound | holds | "
          "why not skipped |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    warm, _ = stencil(2, 200)                  # first-call costs (imports) out of the timings
    sampled_replay(warm, None, "auto", compute_rate=RATE)
    # (name, what the full replay reads, how the sampled one gets its columns and stored loops)
    runs = [(name, data, lambda d=data: (d, None)) for name, (data, _) in cases(scale)]
    runs += [(os.path.basename(f), f, lambda f=f: (load_trace(f), None)) for f in recorded]
    for name, source, load in runs:
        full_wall, wall, detect = [], [], []
        try:
            for _ in range(repeat):            # alternated; the least disturbed of each kept
                t = time.perf_counter()
                # (lossy in both: what SimGrid's format cannot say, public Branson's one-sided
                # calls, dropped alike; a trace without such calls replays as it is)
                full = replay(source, compute_rate=RATE, lossy=True)
                full_wall.append(time.perf_counter() - t)
                t = time.perf_counter()
                data, loops = load()                               # reads a recorded file
                if loops is None:
                    loops, _ = loops_of(data)                      # minitrace.compress
                detect.append(time.perf_counter() - t)
                s = sampled_replay(data, loops, "auto", compute_rate=RATE, lossy=True)
                wall.append(detect[-1] + s.wall_time)
        except MinitraceError as e:            # (a row that says why, not a traceback)
            print(f"| {name} | {str(e).replace('|', '/')} |" + " |" * 12, flush=True)
            continue
        full_wall, best = min(full_wall), int(np.argmin(wall))
        wall, detect = wall[best], detect[best]
        err = s.simulated_time - full.simulated_time
        main = max((b.shape[1] - 1 for b in top_level(loops)), default="-")
        print(f"| {name} | {data.nranks} | {main} | {sum(p.iterations for p in s.phases) or '-'} | "
              f"{len(data.actions)} | "
              f"{full_wall:.2f} | {wall:.2f} ({detect:.2f}) | {full_wall / wall:.1f}x | "
              f"{s.replayed_share:.1%} | {1 / s.replayed_share:.1f}x | "
              f"{err / full.simulated_time:+.4%} | {s.bound / full.simulated_time:.4%} | "
              f"{'yes' if abs(err) <= s.bound else 'NO'} | {_why(s.notes)} |", flush=True)


def _why(notes: list[str]) -> str:
    """The sampler's notes on what it replayed fully or whole and where its bound exceeds the
    tolerance, for a table cell."""
    return "; ".join(n for n in notes if n.startswith(("replayed ", "bound "))).replace("|", "/")


def record_codes(where: Path, apps: dict) -> list[str]:
    """Record the given built programs (and tests/programs/pipeline.c) into ``where``; returns
    the trace files (a recording that fails is reported and left out)."""
    where.mkdir(parents=True, exist_ok=True)
    pipeline = where / "pipeline"
    subprocess.run(["mpicc", "-O1", "-o", str(pipeline),
                    str(Path(__file__).resolve().parents[1] / "tests/programs/pipeline.c")],
                   check=True)
    runs = [("pipeline-2r.h5", 2, [str(pipeline), "300", "1"])]
    if apps.get("lulesh"):
        runs += [("lulesh-8r-s8.h5", 8, [apps["lulesh"], "-i", "300", "-s", "8"]),
                 ("lulesh-1r-s20.h5", 1, [apps["lulesh"], "-i", "300", "-s", "20"])]
    if apps.get("minife"):
        runs += [("minife-2r-64.h5", 2, [apps["minife"], "nx=64", "ny=64", "nz=64"])]
    if apps.get("hpccg"):
        runs += [("hpccg-2r-40.h5", 2, [apps["hpccg"], "40", "40", "40"])]
    if apps.get("hpcg"):
        runs += [("hpcg-2r-16.h5", 2, [apps["hpcg"], "16", "16", "16", "1"])]
    out = []
    for name, n, argv in runs:
        cmd = [sys.executable, "-m", "minitrace", "record", "--volume", "cputime", "-o",
               str(where / name), "--", "mpiexec", "-n", str(n), *argv]
        p = subprocess.run(cmd, cwd=where, capture_output=True, text=True)
        if p.returncode:
            print(f"recording {name} failed ({p.returncode}): {p.stderr.strip()[-300:]}")
        else:
            out.append(str(where / name))
    return out


def replica_speed(scale: float) -> None:
    data, bounds = stencil(16, max(int(8000 * scale), 500), jitter=0.05, seed=7)
    t = time.perf_counter()
    r = replicas(data, 100, "trace", seed=1, sample="auto", workers=2, compute_rate=RATE)
    wall = time.perf_counter() - t
    s = r.summary()
    print(f"\nreplicas: 100 of a {len(data.actions)}-action trace, sampling on, 2 workers: "
          f"{wall:.1f} s wall; median {s['median']:.6g} s, 95% {s['lo']:.6g}-{s['hi']:.6g} s "
          f"(plain {r.plain_time:.6g} s, replayed {r.sampled.replayed_share:.1%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the iterations")
    ap.add_argument("--skip-replicas", action="store_true")
    ap.add_argument("--recorded", nargs="*", default=[], metavar="FILE",
                    help="recorded traces to sample too")
    ap.add_argument("--skip-generated", action="store_true")
    ap.add_argument("--record", type=Path, metavar="DIR",
                    help="record tests/programs/pipeline.c and the codes below into DIR, and "
                         "sample them")
    for app in ("lulesh", "minife", "hpccg", "hpcg"):
        ap.add_argument(f"--{app}", metavar="EXE", help=f"built {app} program (with --record)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="time each replay this many times, alternately; keep the fastest")
    args = ap.parse_args()
    scale = 0.1 if args.quick else 1.0
    recorded = list(args.recorded)
    if args.record:
        recorded += record_codes(args.record, {k: getattr(args, k) for k in
                                               ("lulesh", "minife", "hpccg", "hpcg")})
    sampling(0 if args.skip_generated else scale, recorded, args.repeat)
    if not args.skip_replicas:
        replica_speed(scale)
    print(f"\nload average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
