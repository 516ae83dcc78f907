"""Issue 2 benchmark: write and read back 10 M actions (mixed kinds, 64 ranks).

Reports actions/s for write (TraceColumns -> HDF5) and read (HDF5 -> pandas, every rank), and bytes
per action on disk, for a loop-like trace without timestamps (time-independent) and with them
(as the recorder writes: ns timestamps with jitter).  Run: python benchmarks/bench_storage.py
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import minitrace
from minitrace.model import TraceColumns
from minitrace.storage import write_trace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests.support
from tests.support.synthetic import loop_trace  # noqa: E402


def measure(data: TraceColumns, path: str) -> dict:
    n = len(data.actions)
    t = time.perf_counter()
    write_trace(path, data)
    t_write = time.perf_counter() - t
    t = time.perf_counter()
    with minitrace.open(path) as tr:
        frames = [tr.actions(r) for r in tr.ranks]
    t_read = time.perf_counter() - t
    assert sum(len(f) for f in frames) == n
    return {"write_aps": n / t_write, "read_aps": n / t_read,
            "bytes_per_action": os.path.getsize(path) / n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--actions", type=int, default=10_000_000)
    ap.add_argument("--ranks", type=int, default=64)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for timed in (False, True):
            data = loop_trace(args.ranks, args.actions, timed)
            r = measure(data, os.path.join(d, "t.h5"))
            label = "timed" if timed else "time-independent"
            print(f"{label:17s} {len(data.actions):,} actions, {args.ranks} ranks: "
                  f"write {r['write_aps'] / 1e6:.2f} M actions/s, "
                  f"read into pandas {r['read_aps'] / 1e6:.2f} M actions/s, "
                  f"{r['bytes_per_action']:.2f} bytes/action on disk")


if __name__ == "__main__":
    main()
