"""Cost of the PMPI shim, traced against untraced in one run (same binaries, interleaved).

(a) ns added per MPI call: one rank (MPI_Comm_size loop, 8-byte MPI_Sendrecv to self: no
network, so little load noise) and a tight 8-byte ping-pong between 2 ranks;  (b) slowdown of a
2-D halo exchange (2 ranks) computing between exchanges;  (c) bytes per action of the final
HDF5;  (d) merge speed (raw per-rank files -> TraceColumns, and + HDF5 write), in fresh processes
(cold: what `minitrace record` sees) and repeated in the same process (warm).

Every traced/untraced pair runs back to back, the order alternating between pairs, so that a
change of machine load hits both; figures are medians with the interquartile range (IQR) over
many short pairs.  Usage: python benchmarks/bench_shim.py [--reps 15] [--halo-reps 11]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from minitrace import storage  # noqa: E402
from minitrace.merge import merge_dir  # noqa: E402
from minitrace.record import shim_env  # noqa: E402
from tests.support.mpiutil import mpicc, tool  # noqa: E402

MACHINE = "2-core shared VM, Debian 12, CPython 3.11, MPICH 5.0.2 wheel"


def run(n: int, argv: list[str], env: dict | None) -> str:
    p = subprocess.run([tool("mpiexec"), "-n", str(n), *argv], capture_output=True, text=True,
                       timeout=600, env=env or dict(os.environ))
    if p.returncode:
        raise SystemExit(f"benchmark job failed: {p.stderr}")
    return p.stdout


def paired(name, n, argv, patterns, reps, raw_root):
    """``reps`` back-to-back (untraced, traced) pairs, the order alternating; for each pattern
    the arrays (untraced, traced) of its value (max over ranks); and the last raw dir."""
    plain = {p: [] for p in patterns}
    traced = {p: [] for p in patterns}
    raw = None
    for i in range(reps):
        if raw:
            shutil.rmtree(raw)
        raw = os.path.join(raw_root, f"{name}-raw{i}")
        order = [(plain, None), (traced, shim_env(raw, "auto"))]
        for store, env in (order if i % 2 == 0 else order[::-1]):
            out = run(n, argv, env)
            for p in patterns:
                store[p].append(max(float(x) for x in re.findall(p, out)))
    return ({p: np.array(v) for p, v in plain.items()},
            {p: np.array(v) for p, v in traced.items()}, raw)


# The per-call cost measured inside one traced process: blocks of calls alternate between
# recording and paused (minitrace_pause/resume, found with dlsym: the untraced run just has
# no such symbols), in ABBA order, so that load changes hit both kinds of block alike.
# A paused call still passes through the wrapper (one load and a branch, ~1 ns).
BLOCKS_SRC = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int nblocks = atoi(argv[1]), per = atoi(argv[2]), rank, size, k;
    double x = 1, y;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int (*pause_)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "minitrace_pause");
    int (*resume_)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "minitrace_resume");
    if (!pause_ || !resume_) { fprintf(stderr, "not traced\n"); return 2; }
    for (int b = 0; b < 4 * nblocks; b++) {
        int traced = (b % 4 == 1 || b % 4 == 2);
        if (traced) resume_(); else pause_();
        PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (size == 1) {
            for (int i = 0; i < per; i++) MPI_Comm_size(MPI_COMM_WORLD, &k);
            double t1 = MPI_Wtime();
            for (int i = 0; i < per; i++)
                MPI_Sendrecv(&x, 1, MPI_DOUBLE, 0, 0, &y, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
            double t2 = MPI_Wtime();
            printf("block %d %d comm_size %.3f sendrecv %.3f\n", b, traced,
                   (t1 - t0) / per * 1e9, (t2 - t1) / per * 1e9);
        } else {
            for (int i = 0; i < per; i++) {
                if (rank == 0) {
                    MPI_Send(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
                }
            }
            double t = MPI_Wtime() - t0;
            if (rank == 0) printf("block %d %d pingpong %.3f\n", b, traced, t / (2.0 * per) * 1e9);
        }
    }
    resume_();
    MPI_Finalize();
    return 0;
}
"""


def blocks(exe: str, n: int, nblocks: int, per: int, raw: str) -> dict:
    """ABBA blocks in one traced run: per measure, the added ns of each traced block over the
    mean of its paused neighbours in the same quartet."""
    out = run(n, [exe, str(nblocks), str(per)], shim_env(raw, "auto"))
    rows = re.findall(r"block (\d+) (\d) (.*)", out)
    vals: dict[str, list] = {}
    for b, tr, rest in rows:
        for name, v in re.findall(r"(\w+) ([\d.]+)", rest):
            vals.setdefault(name, []).append((int(b), int(tr), float(v)))
    added = {}
    for name, v in vals.items():
        a = np.array([x[2] for x in sorted(v)]).reshape(-1, 4)      # paused, rec, rec, paused
        added[name] = (a[:, 1:3].mean(axis=1) - a[:, [0, 3]].mean(axis=1), np.median(a[:, [0, 3]]))
    return added


def stats(x: np.ndarray, fmt: str = ".1f") -> str:
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    return f"median {med:{fmt}} (IQR {q1:{fmt}} .. {q3:{fmt}}, n={len(x)})"


_MERGE_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from minitrace.merge import merge_dir
from minitrace import storage
def one():
    c0, w0 = time.process_time(), time.perf_counter()
    d = merge_dir(sys.argv[2])
    c1, w1 = time.process_time(), time.perf_counter()
    storage.write_trace(sys.argv[3], d)
    c2, w2 = time.process_time(), time.perf_counter()
    return [len(d.actions), w1 - w0, c1 - c0, w2 - w1, c2 - c1]
rows = [one() for _ in range(3)]
print(json.dumps(rows))
"""


def merge_speed(raw: str, out: str, reps: int) -> dict:
    """Fresh processes; in each, the first merge is cold, the next two warm."""
    cold, warm = [], []
    for _ in range(reps):
        p = subprocess.run([sys.executable, "-c", _MERGE_CHILD, str(ROOT), raw, out],
                           capture_output=True, text=True, timeout=600, check=True)
        rows = json.loads(p.stdout)
        cold.append(rows[0])
        warm += rows[1:]
    return {"cold": np.array(cold), "warm": np.array(warm)}


def mpicc_src(src: str, out: Path) -> Path:
    c = out.with_suffix(".c")
    c.write_text(src)
    return mpicc(c, out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15, help="pairs for the per-call costs")
    ap.add_argument("--halo-reps", type=int, default=11, help="pairs for the halo slowdown")
    ap.add_argument("--merge-reps", type=int, default=5, help="fresh processes for (d)")
    ap.add_argument("--iters", type=int, default=50000, help="ping-pong iterations per run")
    ap.add_argument("--blocks", type=int, default=50, help="ABBA quartets of blocks for (a)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-shim-"))
    progs = ROOT / "tests" / "programs"
    pp = str(mpicc(progs / "pingpong.c", work / "pingpong"))
    halo = str(mpicc(progs / "halo.c", work / "halo"))
    cc = str(mpicc(progs / "callcost.c", work / "callcost"))

    blk = str(mpicc_src(BLOCKS_SRC, work / "blocks"))
    cs, sr, pn = r"comm_size_ns ([\d.]+)", r"sendrecv_ns ([\d.]+)", r"ns_per_call ([\d.]+)"
    # (a) in one process: recording and paused blocks alternating (the most robust to load)
    one = blocks(blk, 1, args.blocks, 20000, str(work / "blk1"))
    two = blocks(blk, 2, args.blocks, 5000, str(work / "blk2"))
    # (a) one rank, no network, then the 2-rank ping-pong
    cu, ct, _ = paired("cc", 1, [cc, "200000"], [cs, sr], args.reps, str(work))
    u, t, raw_pp = paired("pp", 2, [pp, str(args.iters)], [pn], args.reps, str(work))
    # (b) halo with ~1 ms of compute per iteration; 2 ranks on the 2 cores (4 would
    # oversubscribe them and measure the scheduler)
    hu, ht, raw_halo = paired("halo", 2, [halo, "400", "300000"], [r"seconds ([\d.]+)"],
                              args.halo_reps, str(work))
    hu, ht = hu[r"seconds ([\d.]+)"], ht[r"seconds ([\d.]+)"]
    slow = 100 * (ht / hu - 1)
    # (c) + (d): a traced ping-pong 8x longer, so that the merge has work
    shutil.rmtree(raw_pp)
    run(2, [pp, str(8 * args.iters)], shim_env(raw_pp, "auto"))
    ms = merge_speed(raw_pp, str(work / "pp.h5"), args.merge_reps)
    n = int(ms["cold"][0, 0])
    bpa = (work / "pp.h5").stat().st_size / n
    hdata = merge_dir(raw_halo)
    storage.write_trace(str(work / "halo.h5"), hdata)
    hbpa = (work / "halo.h5").stat().st_size / len(hdata.actions)

    added_cs, added_sr = ct[cs] - cu[cs], ct[sr] - cu[sr]
    added_pp = t[pn] - u[pn]

    def rate(rows, col):                       # M actions/s from the median time
        return n / np.median(rows[:, col]) / 1e6

    def rate2(rows, a, b):
        return n / np.median(rows[:, a] + rows[:, b]) / 1e6

    c, w = ms["cold"], ms["warm"]
    lines = [
        f"(a) one rank, {args.reps} pairs of 200000 calls: MPI_Comm_size untraced "
        f"{np.median(cu[cs]):.1f} ns, added {stats(added_cs)} ns; 8 B MPI_Sendrecv to self "
        f"untraced {np.median(cu[sr]):.1f} ns, added {stats(added_sr)} ns",
        f"    2-rank 8 B ping-pong, {args.reps} pairs of {args.iters} iterations: untraced "
        f"{np.median(u[pn]):.0f} ns per call, added {stats(added_pp)} ns",
        f"    in one traced process, {args.blocks} ABBA quartets of recording/paused blocks: "
        f"MPI_Comm_size (paused {one['comm_size'][1]:.1f} ns) added {stats(one['comm_size'][0])} ns; "
        f"Sendrecv to self (paused {one['sendrecv'][1]:.1f} ns) added {stats(one['sendrecv'][0])} ns; "
        f"2-rank ping-pong (paused {two['pingpong'][1]:.0f} ns) added {stats(two['pingpong'][0])} ns",
        f"    target <= 100 ns (medians): one rank {'met' if max(np.median(added_cs), np.median(added_sr)) <= 100 else 'NOT met'} "
        f"(pairs), {'met' if max(np.median(one['comm_size'][0]), np.median(one['sendrecv'][0])) <= 100 else 'NOT met'} "
        f"(blocks); ping-pong {'met' if np.median(added_pp) <= 100 else 'NOT met'} (pairs), "
        f"{'met' if np.median(two['pingpong'][0]) <= 100 else 'NOT met'} (blocks)",
        f"(b) halo 2 ranks x 400 iterations with compute, {args.halo_reps} pairs: untraced "
        f"median {np.median(hu):.4f} s; slowdown {stats(slow, '.2f')} %; target <= 3%: "
        f"{'met' if np.median(slow) <= 3 else 'NOT met'}",
        f"(c) bytes per action in the HDF5: ping-pong {bpa:.2f} ({n} actions incl. compute), "
        f"halo {hbpa:.2f} ({len(hdata.actions)} actions); target <= 8: "
        f"{'met' if max(bpa, hbpa) <= 8 else 'NOT met'}",
        f"(d) merge of {n} actions, {args.merge_reps} fresh processes: raw -> TraceColumns cold "
        f"{rate(c, 1):.1f} M/s wall ({rate(c, 2):.1f} M/s CPU), warm {rate(w, 1):.1f} M/s wall "
        f"({rate(w, 2):.1f} M/s CPU); with the HDF5 write cold {rate2(c, 1, 3):.1f} M/s wall "
        f"({rate2(c, 2, 4):.1f} CPU), warm {rate2(w, 1, 3):.1f} M/s wall ({rate2(w, 2, 4):.1f} CPU)",
        f"    target >= 5 M/s (merge, cold wall): {'met' if rate(c, 1) >= 5 else 'NOT met'}; "
        f"with the write: {'met' if rate2(c, 1, 3) >= 5 else 'NOT met'}",
        f"    volume measure: {hdata.meta['volume_source']}, clock: {hdata.meta['clock']}",
    ]
    print(f"Machine: {MACHINE}; load average {os.getloadavg()[0]:.1f} at the end")
    print("\n".join(lines))
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
