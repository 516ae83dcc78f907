"""Cost of the PMPI shim, traced against untraced in one run (same binaries, interleaved).

(a) ns added per MPI call on a tight 8-byte ping-pong (2 ranks);  (b) slowdown of a 2-D halo
exchange (2 ranks) computing between exchanges;  (c) bytes per action of the final HDF5;
(d) merge speed (raw per-rank files -> TraceData, and -> HDF5 file).
Usage: python benchmarks/bench_shim.py [--reps 5] [--append-results]
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from minitrace import storage  # noqa: E402
from minitrace.merge import merge_dir  # noqa: E402
from minitrace.record import shim_env  # noqa: E402
from tests.mpiutil import mpicc, tool  # noqa: E402

MACHINE = "2-core shared VM, Debian 12, CPython 3.11, MPICH 5.0.2 wheel"


def run(n: int, argv: list[str], env: dict | None, pattern: str) -> list[float]:
    p = subprocess.run([tool("mpiexec"), "-n", str(n), *argv], capture_output=True, text=True,
                       timeout=600, env=env or dict(os.environ))
    if p.returncode:
        raise SystemExit(f"benchmark job failed: {p.stderr}")
    return [float(x) for x in re.findall(pattern, p.stdout)]


def paired(name, n, argv, pattern, reps, raw_root, reduce=max):
    """Alternate untraced / traced runs; returns arrays (untraced, traced) and the last raw dir."""
    plain, traced, raw = [], [], None
    for i in range(reps):
        plain.append(reduce(run(n, argv, None, pattern)))
        raw = os.path.join(raw_root, f"{name}-raw{i}")
        traced.append(reduce(run(n, argv, shim_env(raw, "auto"), pattern)))
        if i < reps - 1:
            shutil.rmtree(raw)
    return np.array(plain), np.array(traced), raw


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--iters", type=int, default=200000, help="ping-pong iterations")
    ap.add_argument("--append-results", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-shim-"))
    progs = ROOT / "tests" / "programs"
    pp = str(mpicc(progs / "pingpong.c", work / "pingpong"))
    halo = str(mpicc(progs / "halo.c", work / "halo"))
    cc = str(mpicc(progs / "callcost.c", work / "callcost"))

    # (a') the shim's own cost on one rank (no network: far less sensitive to a loaded machine)
    cu, ct, _ = paired("cs", 1, [cc, "500000"], r"comm_size_ns ([\d.]+)", args.reps, str(work))
    su, st, _ = paired("sr", 1, [cc, "500000"], r"sendrecv_ns ([\d.]+)", args.reps, str(work))

    # (a) ping-pong
    u, t, raw_pp = paired("pp", 2, [pp, str(args.iters)], r"ns_per_call ([\d.]+)", args.reps, str(work))
    added = t - u
    # (b) halo with compute between exchanges (about 1 ms of compute per iteration); 2 ranks on
    # the 2 cores: 4 would oversubscribe them and measure the scheduler
    hu, ht, raw_halo = paired("halo", 2, [halo, "400", "300000"], r"seconds ([\d.]+)", args.reps,
                              str(work))
    slow = ht / hu - 1
    # (c)+(d) merge the last traced ping-pong run, write it, measure
    t0 = time.perf_counter()
    data = merge_dir(raw_pp)
    t_merge = time.perf_counter() - t0
    out = work / "pp.h5"
    t0 = time.perf_counter()
    storage.write_trace(str(out), data)
    t_write = time.perf_counter() - t0
    n = len(data.actions)
    bpa = out.stat().st_size / n
    hdata = merge_dir(raw_halo)
    storage.write_trace(str(work / "halo.h5"), hdata)
    hbpa = (work / "halo.h5").stat().st_size / len(hdata.actions)

    lines = [
        f"(a) ping-pong 8 B, {args.iters} iterations, ns per MPI call untraced "
        f"{np.round(u, 1).tolist()} traced {np.round(t, 1).tolist()}",
        f"    added per call: median of paired differences {np.median(added):.1f} ns "
        f"(min {added.min():.1f}, max {added.max():.1f}); target <= 100 ns: "
        f"{'met' if np.median(added) <= 100 else 'NOT met'}",
        f"(b) halo 2 ranks x 400 iterations with compute: untraced {np.round(hu, 4).tolist()} s, "
        f"traced {np.round(ht, 4).tolist()} s; slowdown median {100 * np.median(slow):.2f}% "
        f"(min {100 * slow.min():.2f}%, max {100 * slow.max():.2f}%); target <= 3%: "
        f"{'met' if np.median(slow) <= 0.03 else 'NOT met'}",
        f"(a') one rank, no network: MPI_Comm_size {np.median(cu):.1f} -> {np.median(ct):.1f} ns "
        f"(added {np.median(ct - cu):.1f} ns), 8 B MPI_Sendrecv to self {np.median(su):.1f} -> "
        f"{np.median(st):.1f} ns (added {np.median(st - su):.1f} ns), medians of {args.reps} pairs",
        f"(c) bytes per action in the HDF5: ping-pong {bpa:.2f} ({n} actions incl. compute), "
        f"halo {hbpa:.2f} ({len(hdata.actions)} actions); target <= 8: "
        f"{'met' if max(bpa, hbpa) <= 8 else 'NOT met'}",
        f"(d) merge of {n} actions: raw -> TraceData {t_merge:.3f} s = {n / t_merge / 1e6:.1f} M "
        f"actions/s; + HDF5 write {t_write:.3f} s = {n / (t_merge + t_write) / 1e6:.1f} M "
        f"actions/s end to end; target >= 5 M/s: {'met' if n / t_merge >= 5e6 else 'NOT met'} "
        f"(merge), {'met' if n / (t_merge + t_write) >= 5e6 else 'NOT met'} (with write)",
        f"    volume measure: {data.meta['volume_source']}, clock: {data.meta['clock']}",
    ]
    print("\n".join(lines))
    if args.append_results:
        with open(ROOT / "benchmarks" / "RESULTS.md", "a") as f:
            f.write(f"\n## PMPI shim overhead (benchmarks/bench_shim.py, "
                    f"{dt.date.today().isoformat()})\n\nMachine: {MACHINE}. Traced vs untraced "
                    f"runs interleaved, {args.reps} pairs, same binaries.\n\n")
            f.write("\n".join(f"- {x}" if not x.startswith("    ") else f"  {x.strip()}"
                              for x in lines) + "\n")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
