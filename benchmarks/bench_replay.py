"""Replay speed: minitrace's replay engines against SimGrid's own replayer, on the same traces.

Three generated traces (per-rank SimGrid TI files named by a list file), each replayed on the same
generated cluster (1Gf, 10GBps, 1us per host) with the same options (network/model:SMPI,
precision/timing:1e-9):
  ring-2     ~200 k actions, 2 ranks: irecv left, send right, wait, compute
  allreduce  64 ranks, a loop of allreduce (8 KiB, 1 kflop) + compute
  ring-16    ~1 M actions, 16 ranks
by (a) SimGrid's replayer (``smpirun -replay`` with ``smpireplaymain`` from the same SimGrid 4.1
build, kept by set-up in the cache), (b) ``replay(engine="native")`` (the compiled replayer),
(c) ``replay(engine="python")`` (SimGrid's Python bindings), (d) the native engine on the same
trace stored as minitrace HDF5 (adds reading it and the TI export).  Wall time of each whole
call, interleaved in one run; ratios are SimGrid's time over ours (>= 0.7 is the target), and the
simulated times must agree.
Run: python benchmarks/bench_replay.py [--scale 1.0] [--skip-python]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

from minitrace.converters.simgrid_ti import read_ti
from minitrace.replay.platforms import Cluster
from minitrace.replay import replay
from minitrace.replay.libsimgrid import library_dir
from minitrace.storage import write_trace

CACHE = Path(os.environ.get("MINITRACE_CACHE", Path.home() / ".cache" / "minitrace"))
SMPIRUN = CACHE / "simgrid-4.1-tools" / "smpirun"


def write_ranks(d: Path, ranks: int, body) -> tuple[Path, int]:
    """Per-rank TI files and their list file; ``body(r)`` is rank r's lines between init and
    finalize.  Returns the list file and the number of actions."""
    d.mkdir()
    n = 0
    names = []
    for r in range(ranks):
        text = f"{r} init\n{body(r)}{r} finalize\n"
        n += text.count("\n")
        (d / f"rank{r}.txt").write_text(text)
        names.append(str(d / f"rank{r}.txt"))
    (d / "list.txt").write_text("\n".join(names) + "\n")
    return d / "list.txt", n


def ring(ranks: int, iters: int):
    def body(r):
        left, right = (r - 1) % ranks, (r + 1) % ranks
        return (f"{r} irecv {left} 0 8192\n{r} send {right} 0 8192\n{r} wait {left} {r} 0\n"
                f"{r} compute 1000000\n") * iters
    return body


def allreduce(iters: int):
    return lambda r: f"{r} allreduce 8192 1000\n{r} compute 1000000\n" * iters


def simgrid_replay(listfile: Path, ranks: int, platform: str, hostfile: str) -> tuple[float, float]:
    env = {**os.environ, "LD_LIBRARY_PATH": str(library_dir())}
    cmd = [str(SMPIRUN), "-np", str(ranks), "-platform", platform, "-hostfile", hostfile,
           "-replay", str(listfile), "--log=smpi_config.thres:warning",
           "--log=xbt_cfg.thres:warning", "--log=smpi_replay.thres:info"]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    m = re.findall(r"Simulation time ([0-9.eE+-]+)", p.stderr + p.stdout)
    if p.returncode or not m:
        raise SystemExit(f"smpirun failed ({p.returncode}): {p.stderr[-500:]}")
    return float(m[-1]), wall


def ours(trace, cluster: Cluster, engine: str) -> tuple[float, float]:
    t = time.perf_counter()
    r = replay(trace, cluster=cluster, engine=engine, timeout=3600)
    return r.simulated_time, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every trace's length")
    ap.add_argument("--skip-python", action="store_true", help="leave out the Python engine")
    args = ap.parse_args()
    if not SMPIRUN.exists():
        raise SystemExit(f"{SMPIRUN} is missing: set-up keeps it when it builds SimGrid")
    s = args.scale
    cases = [("ring-2", 2, ring(2, int(25_000 * s))),
             ("allreduce-64", 64, allreduce(int(1_000 * s))),
             ("ring-16", 16, ring(16, int(15_625 * s)))]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, ranks, body in cases:
            d = Path(tmp) / name
            listfile, n = write_ranks(d, ranks, body)
            cluster = Cluster(ranks, speed="1Gf", bandwidth="10GBps", latency="1us")
            platform, hostfile = cluster.write(d / "platform")
            h5 = d / "trace.h5"
            write_trace(str(h5), read_ti(listfile))
            runs = {"simgrid": simgrid_replay(listfile, ranks, platform, hostfile),
                    "native": ours(listfile, cluster, "native"),
                    "native, from HDF5": ours(h5, cluster, "native")}
            if not args.skip_python:
                runs["python"] = ours(listfile, cluster, "python")
            rows.append((name, ranks, n, runs))
            print(name, {k: f"{v[1]:.2f} s" for k, v in runs.items()}, flush=True)
    print("\n| trace | ranks | actions | SimGrid smpireplaymain | native | native/SimGrid speed "
          "| native from HDF5 | python | simulated times equal |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, ranks, n, runs in rows:
        sg, nat, h5 = runs["simgrid"], runs["native"], runs["native, from HDF5"]
        py = runs.get("python")
        same = all(abs(v[0] - sg[0]) <= 5e-7 for v in runs.values())  # smpirun prints 6 decimals
        print(f"| {name} | {ranks} | {n:,} | {sg[1]:.2f} s ({n / sg[1]:,.0f}/s) | "
              f"{nat[1]:.2f} s ({n / nat[1]:,.0f}/s) | {sg[1] / nat[1]:.2f}x | "
              f"{h5[1]:.2f} s | {'-' if py is None else f'{py[1]:.2f} s'} | "
              f"{'yes' if same else 'NO: ' + str({k: v[0] for k, v in runs.items()})} |")


if __name__ == "__main__":
    main()
