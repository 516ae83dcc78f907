"""Replay at scale: how many ranks the native replayer handles here, and what bounds it.

For each rank count, a small trace per rank (init; 4 x [irecv left, send 8 KiB right, wait,
compute 1 Mflop]; allreduce; finalize) is written as per-rank TI files and replayed on a
generated cluster with ``replay(engine="native")``.  Reported: wall time, simulated time, the
child's peak resident memory (ru_maxrss of the replay child, read per run from a fresh process)
and per rank, and the limits that would bound a larger run (open files: one trace file per rank
stays open; max_map_count: every actor stack is a mapping).
Run: python benchmarks/bench_replay_scale.py [--ranks 1024,16384]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from minitrace.replay.platforms import Cluster
from minitrace.replay import replay
listfile, ranks = sys.argv[1], int(sys.argv[2])
t = time.perf_counter()
r = replay(listfile, cluster=Cluster(ranks), engine="native", timeout=3600)
print(json.dumps({"wall": time.perf_counter() - t, "simulated": r.simulated_time,
                  "sim_loop": r.wall_time,
                  "peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def write(d: Path, ranks: int) -> tuple[Path, int]:
    d.mkdir()
    names, n = [], 0
    for r in range(ranks):
        left, right = (r - 1) % ranks, (r + 1) % ranks
        body = (f"{r} irecv {left} 0 8192\n{r} send {right} 0 8192\n{r} wait {left} {r} 0\n"
                f"{r} compute 1000000\n") * 4
        text = f"{r} init\n{body}{r} allreduce 8 0\n{r} finalize\n"
        n += text.count("\n")
        (d / f"r{r}.txt").write_text(text)
        names.append(str(d / f"r{r}.txt"))
    (d / "list.txt").write_text("\n".join(names) + "\n")
    return d / "list.txt", n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="1024,16384")
    args = ap.parse_args()
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    maps = Path("/proc/sys/vm/max_map_count").read_text().strip()
    print(f"limits: open files {nofile[0]} (hard {nofile[1]}), vm.max_map_count {maps}")
    print("| ranks | actions | wall | SimGrid loop | simulated | peak RSS | per rank |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in (int(x) for x in args.ranks.split(",")):
            listfile, n = write(Path(tmp) / f"p{ranks}", ranks)
            p = subprocess.run([sys.executable, "-c", CHILD, str(listfile), str(ranks)],
                               capture_output=True, text=True)
            if p.returncode:
                print(f"| {ranks} | {n:,} | failed: {p.stderr.strip().splitlines()[-1]} |")
                continue
            m = json.loads(p.stdout.strip().splitlines()[-1])
            print(f"| {ranks:,} | {n:,} | {m['wall']:.1f} s | {m['sim_loop']:.1f} s | "
                  f"{m['simulated']:.6g} s | {m['peak_mb']:.0f} MB | "
                  f"{m['peak_mb'] * 1024 / ranks:.1f} KB |", flush=True)


if __name__ == "__main__":
    main()
