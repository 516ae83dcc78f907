"""Replay throughput: simulated trace actions per second of wall time on SimGrid (SMPI replay).

A generated loop trace of about 300,000 actions on 4 ranks is replayed on a generated cluster:
(a) a ring halo (irecv left, send right, wait, compute) as a TI text file, (b) the same trace as
a minitrace HDF5 file (adds reading it and the TI export), (c) a loop of allreduce + compute.
Reported: actions per second of the whole ``replay()`` call and of SimGrid's simulation loop
alone, and the ratios between the variants (one run, same machine state).
Run: python benchmarks/bench_replay.py [--actions N] [--ranks P]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from minitrace.converters.simgrid_ti import read_ti
from minitrace.platforms import Cluster
from minitrace.replay import replay
from minitrace.storage import write_trace


def ring_trace(path: Path, ranks: int, iters: int) -> int:
    """Each iteration: irecv from the left, send 8 KiB to the right, wait, compute 1 Mflop."""
    with open(path, "w") as fh:
        for r in range(ranks):
            left, right = (r - 1) % ranks, (r + 1) % ranks
            fh.write(f"{r} init\n")
            body = (f"{r} irecv {left} 0 8192\n{r} send {right} 0 8192\n"
                    f"{r} wait {left} {r} 0\n{r} compute 1000000\n")
            fh.write(body * iters)
            fh.write(f"{r} finalize\n")
    return ranks * (4 * iters + 2)


def allreduce_trace(path: Path, ranks: int, iters: int) -> int:
    """Each iteration: allreduce of 8 KiB (with 1 kflop of reduction), compute 1 Mflop."""
    with open(path, "w") as fh:
        for r in range(ranks):
            fh.write(f"{r} init\n" + f"{r} allreduce 8192 1000\n{r} compute 1000000\n" * iters
                     + f"{r} finalize\n")
    return ranks * (2 * iters + 2)


def timed(trace, n: int, cluster: Cluster) -> dict:
    t = time.perf_counter()
    r = replay(trace, cluster=cluster, timeout=1800)
    wall = time.perf_counter() - t
    return {"actions": n, "simulated_s": r.simulated_time, "wall_s": wall, "sim_s": r.wall_time,
            "aps": n / wall, "sim_aps": n / r.wall_time}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--actions", type=int, default=300_000, help="approximate total actions")
    ap.add_argument("--ranks", type=int, default=4)
    args = ap.parse_args()
    P = args.ranks
    cluster = Cluster(P, speed="1Gf", bandwidth="10GBps", latency="1us")
    rows = {}
    with tempfile.TemporaryDirectory() as d:
        ring = Path(d) / "ring.txt"
        n_ring = ring_trace(ring, P, args.actions // (4 * P))
        rows["ring halo, TI text"] = timed(ring, n_ring, cluster)
        h5 = Path(d) / "ring.h5"
        write_trace(str(h5), read_ti(ring))
        rows["ring halo, minitrace HDF5"] = timed(h5, n_ring, cluster)
        coll = Path(d) / "allreduce.txt"
        n_coll = allreduce_trace(coll, P, args.actions // (2 * P))
        rows["allreduce loop, TI text"] = timed(coll, n_coll, cluster)
    base = rows["ring halo, TI text"]
    print(f"{P} ranks on a generated cluster (1Gf, 10GBps, 1us)")
    print("| trace | actions | simulated time | wall (replay call) | actions/s (call) | "
          "SimGrid loop | actions/s (loop) | call time vs ring text |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, m in rows.items():
        print(f"| {name} | {m['actions']:,} | {m['simulated_s']:.6g} s | {m['wall_s']:.2f} s | "
              f"{m['aps']:,.0f} | {m['sim_s']:.2f} s | {m['sim_aps']:,.0f} | "
              f"{m['wall_s'] / base['wall_s']:.2f}x |")


if __name__ == "__main__":
    main()
