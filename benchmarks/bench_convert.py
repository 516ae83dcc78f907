"""OTF2 conversion speed: events/s of write_otf2 and read_otf2 on a generated ~1 M event archive.

The archive is a 4-rank loop (irecv/isend ring + waitall + allreduce + compute) written with
write_otf2.  The reader's cost is reported against a bare pass over the same events with the
otf2 bindings (``for loc, ev in tr.events: pass``), measured in the same run, so the ratio says
how much minitrace adds to decoding.  Run: python benchmarks/bench_convert.py [--events N]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import otf2

from minitrace.converters.otf2 import read_otf2, write_otf2
from minitrace.model import TraceBuilder

EVENTS_PER_ITERATION = 14        # per rank: irecv 3, isend 3, waitall 4, allreduce 4


def loop_trace(nranks: int, iterations: int):
    b = TraceBuilder(nranks, {"volume_unit": "seconds"})
    for r in range(nranks):
        t, nxt, prv = 0.0, (r + 1) % nranks, (r - 1) % nranks
        b.add(r, "init", t_start=t, t_end=t + 1e-6)
        t += 1e-6
        for i in range(iterations):
            q = 2 * i
            b.add(r, "irecv", peer=prv, tag=i % 100, bytes_recv=4096, request=q,
                  t_start=t, t_end=t + 1e-7)
            b.add(r, "isend", peer=nxt, tag=i % 100, bytes_sent=4096, request=q + 1,
                  t_start=t + 1e-7, t_end=t + 3e-7)
            b.add(r, "compute", volume=1e-6, t_start=t + 3e-7, t_end=t + 1.3e-6)
            b.add(r, "waitall", vector=[q, q + 1], t_start=t + 1.3e-6, t_end=t + 2e-6)
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8, t_start=t + 2e-6, t_end=t + 3e-6)
            t += 3e-6
        b.add(r, "finalize", t_start=t, t_end=t + 1e-6)
    return b.build()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=1_000_000, help="approximate archive size")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2, help="interleaved repetitions (best kept)")
    args = ap.parse_args()
    iterations = max(1, args.events // (EVENTS_PER_ITERATION * args.ranks))
    data = loop_trace(args.ranks, iterations)
    with tempfile.TemporaryDirectory() as d:
        arch = Path(d) / "a"
        t = time.perf_counter()
        write_otf2(data, arch)
        t_write = time.perf_counter() - t
        t_bare, t_read = [], []
        for _ in range(args.repeat):     # interleaved, best of each: the VM is shared
            t = time.perf_counter()
            n = 0
            with otf2.reader.open(str(arch / "traces.otf2")) as tr:
                for _ in tr.events:
                    n += 1
            t_bare.append(time.perf_counter() - t)
            t = time.perf_counter()
            back = read_otf2(arch / "traces.otf2")
            t_read.append(time.perf_counter() - t)
        t_bare, t_read = min(t_bare), min(t_read)
    assert len(back.actions) == len(data.actions)
    print(f"{n} OTF2 events, {len(data.actions)} actions, {args.ranks} ranks")
    print(f"write_otf2: {t_write:.2f} s, {n / t_write:,.0f} events/s")
    print(f"bare otf2 event loop: {t_bare:.2f} s, {n / t_bare:,.0f} events/s")
    print(f"read_otf2: {t_read:.2f} s, {n / t_read:,.0f} events/s "
          f"({t_read / t_bare:.2f}x the bare loop)")


if __name__ == "__main__":
    main()
