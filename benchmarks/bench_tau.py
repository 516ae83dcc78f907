"""TAU conversion speed: records/s of read_tau on a generated merged trace (~1 M records), against
a raw numpy read of the same file (np.fromfile, the file in the page cache) measured in the
same run (the ratio is what minitrace adds to reading the bytes), and optionally the
record-by-record reader.

The trace is a P-rank ring in TAU's layout: per iteration and rank MPI_Irecv, MPI_Isend (its
message inside), MPI_Wait completing the receive (its message inside), MPI_Wait for the send,
MPI_Allreduce with TAU's "Message size for all-reduce" counter, 2 us of computation between
calls; 15 records per iteration.  The 1-minute load average is printed with the figures: on the
shared machine they vary with it.  Run: python benchmarks/bench_tau.py [--records N]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from minitrace.converters.tau import read_tau

REC = np.dtype([("ev", "<i4"), ("nid", "<u2"), ("tid", "<u2"), ("par", "<i8"), ("ti", "<u8")])
NAMES = [("EV_INIT", "TRACER", 0, "none"), ("FLUSH_CLOSE", "TRACER", 0, "none"),
         ("MESSAGE_SEND", "TAU_MESSAGE", -7, "par"), ("MESSAGE_RECV", "TAU_MESSAGE", -8, "par"),
         ("Message size for all-reduce", "TAUEVENT", 0, "TriggerValue")] + [
    (f"MPI_{c}()", "MPI", 0, "EntryExit")
    for c in ("Init", "Irecv", "Isend", "Wait", "Allreduce", "Finalize")]
ID = {n[0]: i + 1 for i, n in enumerate(NAMES)}
#: One iteration of a rank: (event, par, time offset in us; a message's par is computed).
STEP = [("MPI_Irecv()", 1, 0), ("MPI_Irecv()", -1, 1),
        ("MPI_Isend()", 1, 3), ("MESSAGE_SEND", None, 4), ("MPI_Isend()", -1, 5),
        ("MPI_Wait()", 1, 7), ("MESSAGE_RECV", None, 8), ("MPI_Wait()", -1, 9),
        ("MPI_Wait()", 1, 11), ("MPI_Wait()", -1, 12), ("MPI_Allreduce()", 1, 14),
        ("Message size for all-reduce", 0, 15), ("Message size for all-reduce", 8, 15),
        ("Message size for all-reduce", 0, 15), ("MPI_Allreduce()", -1, 16)]
PER_ITERATION = len(STEP)


def _msg(tag: np.ndarray, other: np.ndarray, length: int) -> np.ndarray:
    """TAU's packing of a message record's parameter (tag and other node below 256)."""
    return (length & 0xFFFF) | (tag << 16) | (other << 24) | ((length >> 16) << 32)


def ring_trace(folder: Path, nranks: int, iterations: int) -> Path:
    """Write tau.trc + tau.edf of the ring (records of all ranks interleaved in time order)."""
    (folder / "tau.edf").write_text("\n".join(
        [f"{len(NAMES)} dynamic_trace_events", '# FunctionId Group Tag "Name Type" Parameters']
        + [f'{ID[n]} {g} {t} "{n}" {p}' for n, g, t, p in NAMES]) + "\n")
    it = np.arange(iterations, dtype=np.int64)
    tag = it % 200
    parts = []
    for r in range(nranks):
        nxt, prv = (r + 1) % nranks, (r - 1) % nranks
        t0 = 100 + 20 * it
        cols = []
        for name, par, dt in STEP:
            p = (_msg(tag, np.full_like(it, nxt), 4096) if name == "MESSAGE_SEND" else
                 _msg(tag, np.full_like(it, prv), 4096) if name == "MESSAGE_RECV" else
                 np.full_like(it, par))
            cols.append((np.full_like(it, ID[name]), p, t0 + dt))
        ev = np.stack([c[0] for c in cols], 1).ravel()
        par = np.stack([c[1] for c in cols], 1).ravel()
        ti = np.stack([c[2] for c in cols], 1).ravel()
        end = int(ti[-1]) + 10
        head = [(ID["EV_INIT"], 3, 0), (ID["MPI_Init()"], 1, 1), (ID["MPI_Init()"], -1, 50)]
        tail = [(ID["MPI_Finalize()"], 1, end), (ID["MPI_Finalize()"], -1, end + 5),
                (ID["FLUSH_CLOSE"], 0, end + 6)]
        rec = np.zeros(len(ev) + 6, REC)
        rec["ev"] = np.concatenate([[h[0] for h in head], ev, [x[0] for x in tail]])
        rec["par"] = np.concatenate([[h[1] for h in head], par, [x[1] for x in tail]])
        rec["ti"] = np.concatenate([[h[2] for h in head], ti, [x[2] for x in tail]])
        rec["nid"] = r
        parts.append(rec)
    rec = np.concatenate(parts)
    rec = rec[np.argsort(rec["ti"], kind="stable")]
    rec.tofile(folder / "tau.trc")
    return folder / "tau.trc"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=1_000_000, help="approximate trace size")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="interleaved repetitions (best kept)")
    ap.add_argument("--record-reader", action="store_true",
                    help="also time the record-by-record reader (vectorized=False), once")
    args = ap.parse_args()
    iterations = max(1, args.records // (PER_ITERATION * args.ranks))
    with tempfile.TemporaryDirectory() as d:
        trc = ring_trace(Path(d), args.ranks, iterations)
        n = trc.stat().st_size // REC.itemsize
        t_raw, t_read = [], []
        for _ in range(args.repeat):      # interleaved, best of each: the machine is shared
            t = time.perf_counter()
            raw = np.fromfile(trc, REC)
            _ = raw["ev"].sum() + raw["ti"].max()
            t_raw.append(time.perf_counter() - t)
            t = time.perf_counter()
            data = read_tau(trc)
            t_read.append(time.perf_counter() - t)
        t_raw, t_read = min(t_raw), min(t_read)
        if args.record_reader:
            t = time.perf_counter()
            slow = read_tau(trc, vectorized=False)
            t_slow = time.perf_counter() - t
            assert len(slow.actions) == len(data.actions)
    print(f"{n:,} TAU records, {args.ranks} ranks, {len(data.actions):,} actions, "
          f"{data.meta['source_messages']} messages; load average {os.getloadavg()[0]:.2f}")
    print(f"raw numpy read: {t_raw:.3f} s, {n / t_raw:,.0f} records/s")
    print(f"read_tau: {t_read:.3f} s, {n / t_read:,.0f} records/s "
          f"({t_read / t_raw:.1f}x the raw read)")
    if args.record_reader:
        print(f"record-by-record reader: {t_slow:.3f} s, {n / t_slow:,.0f} records/s "
              f"({t_slow / t_read:.1f}x the column decoder)")


if __name__ == "__main__":
    main()
