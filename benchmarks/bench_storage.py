"""Issue 2 benchmark: write and read back 10 M actions (mixed kinds, 64 ranks).

Reports actions/s for write (TraceData -> HDF5) and read (HDF5 -> pandas, every rank), and bytes
per action on disk, for a loop-like trace without timestamps (time-independent) and with them
(as the recorder writes: ns timestamps with jitter).  Run: python benchmarks/bench_storage.py
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import minitrace
from minitrace import kinds as K
from minitrace.model import TraceData, empty_actions
from minitrace.storage import write_trace

LOOP = ["compute", "irecv", "isend", "waitall", "compute", "allreduce", "compute", "send",
        "recv", "alltoallv"]


def loop_trace(nranks: int, total: int, timed: bool, seed: int = 0) -> TraceData:
    """A regular trace: each rank repeats LOOP with ring peers, jittered compute and times."""
    rng = np.random.default_rng(seed)
    per = total // nranks
    a = empty_actions(per * nranks)
    pattern = np.array([K.CODE[k] for k in LOOP], dtype=np.uint8)
    kind = np.tile(pattern, per // len(LOOP) + 1)[:per]
    offsets = np.arange(nranks + 1, dtype=np.int64) * per
    vectors = []
    for r in range(nranks):
        s = slice(offsets[r], offsets[r + 1])
        a["kind"][s] = kind
        p2p = np.isin(kind, [K.CODE[k] for k in ("irecv", "isend", "send", "recv")])
        a["peer"][s] = np.where(p2p, (r + 1) % nranks, -1)
        a["tag"][s] = np.where(p2p, 7, -1)
        a["bytes_sent"][s] = np.where(np.isin(kind, [K.CODE["isend"], K.CODE["send"]]), 8192, 0)
        a["bytes_recv"][s] = np.where(np.isin(kind, [K.CODE["irecv"], K.CODE["recv"]]), 8192, 0)
        comp = kind == K.CODE["compute"]
        a["volume"][s] = np.where(comp, np.rint(rng.normal(2e-4, 1e-5, per) * 1e9) / 1e9, 0)
        a["vec_len"][s] = np.where(kind == K.CODE["alltoallv"], 2 * nranks, 0)
        n_vec = int((kind == K.CODE["alltoallv"]).sum())
        vectors.append(np.tile(np.full(2 * nranks, 1024, np.int64), n_vec))
        if timed:
            dur = np.where(comp, a["volume"][s], rng.exponential(2e-6, per))
            gap = rng.exponential(1e-7, per)
            start = np.cumsum(dur + gap) - dur
            a["t_start"][s] = np.rint(start * 1e9) / 1e9
            a["t_end"][s] = np.rint((start + dur) * 1e9) / 1e9
    return TraceData(a, offsets, np.concatenate(vectors), meta={"volume_unit": "seconds"})


def measure(data: TraceData, path: str) -> dict:
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
