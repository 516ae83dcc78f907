"""Extrapolation (docs/EXTRAPOLATE.md) on generated 1-D halo traces with known laws: the
replayed time of a trace extrapolated to 16 (from 2, 4, 8) and to 64 (from 4, 8, 16) against
the replay of the trace generated at that scale, weak and strong; then how long extrapolating
to 1,024-16,384 ranks takes and how large the file is.

    nice -n 10 python benchmarks/bench_extrapolate.py [--largest 16384]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

from minitrace import storage, synthetic
from minitrace.extrapolate import build as B
from minitrace.extrapolate import check as C
from minitrace.replay import replay


def _runs(tmp: str, scales, scaling: str):
    paths = []
    for p in scales:
        paths.append(os.path.join(tmp, f"{scaling}{p}.h5"))
        storage.write_trace(paths[-1], synthetic.halo_1d_trace(p, scaling, seed=p))
    return C.load_runs(paths)


def accuracy(tmp: str) -> None:
    print("| scaling | from | to | structure | replay extrapolated (s) | replay generated (s) "
          "| error |\n|---|---|---|---|---|---|---|")
    for scaling in ("weak", "strong"):
        for scales, target in (((2, 4, 8), 16), ((4, 8, 16), 64)):
            runs = _runs(tmp, scales, scaling)
            data, _, _ = B.extrapolate(runs, target, scaling)
            out, ref = os.path.join(tmp, "x.h5"), os.path.join(tmp, "ref.h5")
            B.write(out, data)
            direct = synthetic.halo_1d_trace(target, scaling, seed=target)
            storage.write_trace(ref, direct)
            same = C.same_structure(C.ST.load("x", data), C.ST.load("d", direct))
            a, b = (replay(p, compute_rate="1Gf").simulated_time for p in (out, ref))
            print(f"| {scaling} | {scales} | {target} | {'identical' if not same else same[0]} "
                  f"| {a:.6g} | {b:.6g} | {(a - b) / b:+.2%} |")


def speed(tmp: str, largest: int) -> None:
    runs = _runs(tmp, (2, 4, 8), "weak")
    print("\n| ranks | wall (s) | CPU (s) | actions | file (bytes) |\n|---|---|---|---|---|")
    n = 1024
    while n <= largest:
        out = os.path.join(tmp, f"big{n}.h5")
        t, c = time.perf_counter(), time.process_time()
        data, _, _ = B.extrapolate(runs, n, "weak", force=n > 64 * 8)
        B.write(out, data)
        print(f"| {n} | {time.perf_counter() - t:.2f} | {time.process_time() - c:.2f} "
              f"| {len(data.actions)} | {os.path.getsize(out)} |")
        n *= 4


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--largest", type=int, default=16384)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        accuracy(tmp)
        speed(tmp, args.largest)


if __name__ == "__main__":
    main()
