"""Accuracy of the pt2pt harness: its ping-pong and windowed-bandwidth loops
(minitrace.bench.pt2pt.pingpong / .bandwidth, exactly what the suite runs) against the same
loops in C (benchmarks/pingpong_ref.c, built with this environment's mpicc), on the same 2 ranks
in the same MPI job, interleaved round by round (alternating which goes first) so that machine
noise hits both alike.  Reports the best of the rounds, the median of the per-round ratios Python/C, and the fixed cost
mpi4py adds per round trip for small messages.

    python benchmarks/bench_pt2pt_vs_c.py [--rounds 9] [--append]

(launches itself under `mpiexec -n 2`; --append adds the figures to benchmarks/RESULTS.md)."""
from __future__ import annotations

import argparse
import ctypes
import datetime
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
SIZES = [1, 8, 64, 512, 1024, 4096, 16384, 65536, 262144, 1 << 20, 1 << 22]
WINDOW = 64


def iterations(size: int, kind: str) -> int:
    if kind == "bw":
        return 50 if size <= 4096 else (10 if size <= 65536 else 2)
    return 2000 if size <= 4096 else (300 if size <= 65536 else 30)


def build() -> Path:
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"minitrace-pingpong-ref-{os.getuid()}.so"
    subprocess.run([str(BIN / "mpicc"), "-O2", "-shared", "-fPIC", "-o", str(out),
                    str(HERE / "pingpong_ref.c")], check=True, timeout=120)
    return out


def measure(rounds: int) -> list[dict]:
    import numpy as np
    from mpi4py import MPI

    from minitrace.bench import pt2pt

    comm = MPI.COMM_WORLD
    lib_path = comm.bcast(str(build()) if comm.rank == 0 else None, root=0)
    lib = ctypes.CDLL(lib_path)
    lib.ref_pingpong.restype = lib.ref_bandwidth.restype = ctypes.c_double
    peer, first = 1 - comm.rank, comm.rank == 0
    buf = np.zeros(SIZES[-1], np.uint8)
    ack = np.zeros(1, np.uint8)
    cbuf = buf.ctypes.data_as(ctypes.c_char_p)
    cack = ack.ctypes.data_as(ctypes.c_char_p)
    mv = memoryview(buf)
    results = []
    for size in SIZES:
        msg = mv[:size]
        row = {"size": size}
        for kind in ("pp", "bw"):
            n = iterations(size, kind)
            samples = np.empty(n)

            def py():
                if kind == "pp":
                    return pt2pt.pingpong(comm, peer, first, msg, n, MPI.Wtime, samples)[0]
                return pt2pt.bandwidth(comm, peer, first, msg, ack, n, WINDOW, MPI.Wtime,
                                       samples)[0]

            def c():
                if kind == "pp":
                    return lib.ref_pingpong(peer, int(first), cbuf, size, n)
                return lib.ref_bandwidth(peer, int(first), cbuf, size, n, WINDOW, cack)

            py(), c()  # warm-up
            tp, tc = [], []
            for r in range(rounds):
                for f, acc in ((py, tp), (c, tc))[:: 1 if r % 2 == 0 else -1]:
                    comm.Barrier()
                    acc.append(f() / n)
            tp, tc = np.array(tp), np.array(tc)
            row[f"{kind}_py"], row[f"{kind}_c"] = float(tp.min()), float(tc.min())
            row[f"{kind}_paired"] = float(np.median(tp / tc))
        results.append(row)
    return results


def report(rows: list[dict], rounds: int) -> str:
    lines = ["| size (B) | C rtt (us) | py rtt (us) | rtt py/C (min) | rtt py/C (paired) "
             "| C bw (MB/s) | py bw (MB/s) | bw py/C (min) | bw py/C (paired) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        s = r["size"]
        cbw, pbw = s * WINDOW / r["bw_c"] / 1e6, s * WINDOW / r["bw_py"] / 1e6
        lines.append(f"| {s} | {r['pp_c'] * 1e6:.2f} | {r['pp_py'] * 1e6:.2f} | "
                     f"{r['pp_py'] / r['pp_c']:.3f} | {r['pp_paired']:.3f} | {cbw:.1f} | "
                     f"{pbw:.1f} | {pbw / cbw:.3f} | {1 / r['bw_paired']:.3f} |")
    small = [r for r in rows if r["size"] <= 64]
    over = sorted((r["pp_py"] - r["pp_c"]) for r in small)[len(small) // 2] * 1e6  # min-based
    big = [r for r in rows if r["size"] >= 1024]
    worst_rtt = max(abs(r["pp_paired"] - 1) for r in big)
    worst_bw = max(abs(1 / r["bw_paired"] - 1) for r in big)
    lines.append("")
    lines.append(f"Fixed overhead mpi4py + harness add per round trip (median over 1-64 B): "
                 f"{over:.2f} us, i.e. ~{over / 4:.2f} us per MPI call on the critical path "
                 f"(2 Send + 2 Recv per round trip, plus the harness's 2 MPI.Wtime per "
                 f"iteration and rank).  Messages >= 1 KiB: worst |rtt py/C - 1| = "
                 f"{worst_rtt:.1%}, worst |bw py/C - 1| = {worst_bw:.1%} (paired medians) "
                 f"(target 10%: {'met' if max(worst_rtt, worst_bw) <= 0.10 else 'NOT met'}).")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--append", action="store_true", help="append to benchmarks/RESULTS.md")
    args = ap.parse_args()
    if "PMI_RANK" not in os.environ and "OMPI_COMM_WORLD_RANK" not in os.environ:
        cmd = [str(BIN / "mpiexec"), "-n", "2", sys.executable, __file__, *sys.argv[1:]]
        return subprocess.run(cmd, timeout=1800).returncode
    rows = measure(args.rounds)
    from mpi4py import MPI
    if MPI.COMM_WORLD.rank != 0:
        return 0
    text = report(rows, args.rounds)
    print(text)
    if args.append:
        date = datetime.date.today().isoformat()
        with open(HERE / "RESULTS.md", "a") as f:
            f.write(f"\n## pt2pt harness vs C reference ping-pong ({date})\n\n"
                    f"Machine: 2-core shared VM, Debian 12, CPython 3.11, MPICH 5.0.2 wheel "
                    f"(mpi4py {__import__('mpi4py').__version__}); 2 ranks on one node; "
                    f"`python benchmarks/bench_pt2pt_vs_c.py --rounds {args.rounds} --append`.\n"
                    f"Same job, same ranks, C and Python loops interleaved per round; "
                    f"C and py columns: best of {args.rounds} rounds; paired: median over rounds "
                    f"of py/C measured back to back; rtt = round trip per message, "
                    f"bw = window of {WINDOW} Isend + 1-byte ack.\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
