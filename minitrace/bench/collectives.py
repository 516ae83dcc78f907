"""collectives: barrier, bcast, reduce, allreduce, allgather, alltoall, alltoallv over sizes,
each rank's time per iteration (IMB/OSU style min / mean / max over ranks).  Iterations start
after a barrier, or (--sync window, ReproMPI style) at agreed instants of a common clock after
estimating each rank's clock offset, which avoids the barrier's exit skew."""
from __future__ import annotations

import math

import numpy as np

from ..options import choice_list
from . import common

NAME = "collectives"
HELP = "barrier/bcast/reduce/allreduce/allgather/alltoall/alltoallv, per-rank times"
STORES = ("one row per measured iteration: op, size i8 (bytes per rank, per peer for "
          "alltoall(v)), iter i4, block i4 (executed position of the (op, size) block), "
          "times f8 [rows, nranks] (s, each rank's call), t_min / t_mean / t_max f8; with "
          "--sync window also late bool [rows, nranks], t_global f8 (last end - window start, "
          "common clock) and offsets f8 [nranks]")
OPS = ("barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall", "alltoallv")
REDUCTIONS = ("reduce", "allreduce")


def add_arguments(p) -> None:
    """Options of the suite (shared by ``python -m minitrace.bench`` and ``minitrace bench``)."""
    p.add_argument("--ops", default=",".join(OPS), help="comma-separated subset [%(default)s]")
    p.add_argument("--min-size", type=int, default=4,
                   help="smallest size, bytes (reductions use float32, so sizes are multiples "
                        "of 4) [%(default)s]")
    p.add_argument("--max-size", type=int, default=1 << 16, help="largest size, bytes "
                   "[%(default)s]")
    p.add_argument("--iterations", type=int, default=50, help="measured iterations per "
                   "(op, size) [%(default)s]")
    p.add_argument("--warmup", type=int, default=3, help="unmeasured iterations first "
                   "[%(default)s]")
    p.add_argument("--order", choices=("sequential", "shuffled"), default="sequential",
                   help="order of the (op, size) blocks; shuffled = seeded permutation "
                        "[%(default)s]")
    p.add_argument("--sync", choices=("barrier", "window"), default="barrier",
                   help="barrier: MPI_Barrier before each iteration; window: start every "
                        "iteration at a common-clock instant (ReproMPI style) [%(default)s]")
    p.add_argument("--window", type=float, default=0.0,
                   help="window length in seconds for --sync window (0: 3 x the slowest "
                        "rank's warm-up median, at least 100 us) [%(default)s]")
    p.add_argument("--offset-rounds", type=int, default=20,
                   help="ping-pongs per rank for the clock-offset estimate (minimum round "
                        "trip wins) [%(default)s]")
    common.common_arguments(p)


def clock_offsets(comm, rounds: int, wtime) -> np.ndarray:
    """offset[r] = clock of r minus clock of rank 0, from the ping-pong with the smallest
    round trip (SKaMPI/ReproMPI)."""
    offsets = np.zeros(comm.size)
    msg = np.zeros(1)
    for r in range(1, comm.size):
        if comm.rank == 0:
            best = math.inf
            for _ in range(rounds):
                t0 = wtime()
                comm.Send(msg, r, 31)
                comm.Recv(msg, r, 31)
                t1 = wtime()
                if t1 - t0 < best:
                    best, offsets[r] = t1 - t0, msg[0] - 0.5 * (t0 + t1)
        elif comm.rank == r:
            for _ in range(rounds):
                comm.Recv(msg, 0, 31)
                msg[0] = wtime()
                comm.Send(msg, 0, 31)
    comm.Bcast(offsets, root=0)
    return offsets


class Ops:
    """Buffers and one callable per (op, size)."""

    def __init__(self, comm, max_size: int):
        MPI = common.mpi()
        P = comm.size
        self.comm, self.MPI, self.P = comm, MPI, P
        self.sb = np.ones(max_size * P, np.uint8)
        self.rb = np.zeros(max_size * P, np.uint8)
        self.fs = np.ones(max(1, max_size // 4), np.float32)
        self.fr = np.zeros(max(1, max_size // 4), np.float32)

    def call(self, op: str, size: int):
        """A no-argument callable making the call, built before timing so nothing else is timed."""
        c, MPI, P = self.comm, self.MPI, self.P
        sb, rb = memoryview(self.sb), memoryview(self.rb)
        if op == "barrier":
            return c.Barrier
        if op == "bcast":
            return lambda: c.Bcast(sb[:size], root=0)
        if op in REDUCTIONS:
            n = size // 4
            s, r = self.fs[:n], self.fr[:n]
            if op == "reduce":
                return lambda: c.Reduce(s, r, op=MPI.SUM, root=0)
            return lambda: c.Allreduce(s, r, op=MPI.SUM)
        if op == "allgather":
            return lambda: c.Allgather(sb[:size], rb[:size * P])
        if op == "alltoall":
            return lambda: c.Alltoall(sb[:size * P], rb[:size * P])
        counts = [size] * P
        displs = [i * size for i in range(P)]
        s = [self.sb, (counts, displs), MPI.BYTE]
        r = [self.rb, (counts, displs), MPI.BYTE]
        return lambda: c.Alltoallv(s, r)


def plan(args, ops: list[str]) -> list[tuple[str, int]]:
    """(op, size) blocks in executed order; barrier has the single size 0."""
    sizes = []
    s = args.min_size
    while s <= args.max_size:
        sizes.append(s)
        s *= 2
    blocks = [(op, 0) if op == "barrier" else (op, sz) for op in ops
              for sz in ([0] if op == "barrier" else sizes)]
    if args.order == "shuffled":
        perm = common.rng(args.seed, 3).permutation(len(blocks))
        blocks = [blocks[i] for i in perm]
    return blocks


def run(args) -> int:
    """Measure every block on every rank; rank 0 gathers the per-rank times and writes."""
    MPI = common.mpi()
    comm = MPI.COMM_WORLD
    ops = choice_list(args.ops, OPS, "collectives", "--ops")
    req = common.require
    req(args.min_size >= 4 and args.min_size % 4 == 0,
        "collectives: --min-size must be a positive multiple of 4")
    req(args.max_size >= args.min_size, "collectives: --max-size must be >= --min-size")
    req(args.iterations >= 1, "collectives: --iterations must be >= 1")
    req(args.warmup >= 0, "collectives: --warmup must be >= 0")
    req(args.window >= 0, "collectives: --window must be >= 0")
    req(args.offset_rounds >= 1, "collectives: --offset-rounds must be >= 1")
    topo = common.topology(comm)
    wtime = MPI.Wtime
    blocks = plan(args, ops)
    K = args.iterations
    window = args.sync == "window"
    offsets = clock_offsets(comm, args.offset_rounds, wtime) if window else np.zeros(comm.size)
    my_off = offsets[comm.rank]
    ops_ = Ops(comm, args.max_size)
    n = len(blocks) * K
    times = np.empty(n)
    starts = np.empty(n)  # common clock (window mode)
    ends = np.empty(n)
    late = np.zeros(n, bool)
    windows = np.zeros(len(blocks))
    bar = common.Progress(comm, len(blocks), f"collectives/{args.sync}", args.quiet)
    for b, (op, size) in enumerate(blocks):
        f = ops_.call(op, size)
        warm = np.empty(max(args.warmup, 1))
        for i in range(args.warmup):
            comm.Barrier()
            t = wtime()
            f()
            warm[i] = wtime() - t
        if window:
            w = args.window or max(100e-6, 3 * comm.allreduce(
                float(np.median(warm[:args.warmup])) if args.warmup else 0.0, op=MPI.MAX))
            windows[b] = w
            # Rank 0 fixes the first start, far enough ahead for the broadcast to arrive.
            t_first = comm.bcast(wtime() + 1e-3 + w if comm.rank == 0 else None, root=0)
            for i in range(K):
                start = t_first + i * w
                now = wtime() - my_off
                late[b * K + i] = now > start
                while now < start:
                    now = wtime() - my_off
                t = wtime()
                f()
                e = wtime()
                j = b * K + i
                times[j], starts[j], ends[j] = e - t, start, e - my_off
        else:
            for i in range(K):
                comm.Barrier()
                t = wtime()
                f()
                times[b * K + i] = wtime() - t
        bar.update()
    bar.close()
    all_times = _gather(comm, times)
    all_ends = _gather(comm, ends) if window else None
    all_late = _gather(comm, late.astype(np.float64)) if window else None
    columns = None
    if comm.rank == 0:
        columns = {"op": np.array([op for op, _ in blocks for _ in range(K)], dtype=object),
                   "size": np.array([s for _, s in blocks for _ in range(K)], np.int64),
                   "iter": np.tile(np.arange(K, dtype=np.int32), len(blocks)),
                   "block": np.repeat(np.arange(len(blocks), dtype=np.int32), K),
                   "times": all_times, "t_min": all_times.min(1),
                   "t_mean": all_times.mean(1), "t_max": all_times.max(1)}
        if window:
            columns.update({"late": all_late.astype(bool), "offsets": offsets,
                            "t_global": all_ends.max(1) - starts,
                            "window": np.repeat(windows, K)})
    attrs = {"ops": ops, "min_size": args.min_size, "max_size": args.max_size,
             "iterations": K, "warmup": args.warmup, "order": args.order, "sync": args.sync,
             "seed": args.seed, "nranks": comm.size, "blocks": [[o, s] for o, s in blocks],
             "offset_rounds": args.offset_rounds if window else 0, "timer": "MPI_Wtime",
             "reductions": "float32 MPI_SUM, size/4 elements",
             "size": "bytes per rank (bcast/reduce/allreduce/allgather contribution; "
                     "alltoall(v): bytes per peer)"}
    common.save(comm, args.output, NAME, columns, attrs, topo)
    if comm.rank == 0 and not args.quiet:
        rows = []
        for b, (op, size) in enumerate(blocks):
            sel = slice(b * K, (b + 1) * K)
            rows.append([op, size, columns["t_min"][sel].mean() * 1e6,
                         columns["t_mean"][sel].mean() * 1e6, columns["t_max"][sel].mean() * 1e6])
        rows.sort(key=lambda r: (OPS.index(r[0]), r[1]))
        common.table(f"minitrace collectives: {comm.size} ranks, {K} iterations, "
                     f"{args.sync} sync -> {args.output}",
                     ["op", "size(B)", "min(us)", "avg(us)", "max(us)"], rows)
    return 0


def _gather(comm, local: np.ndarray):
    out = np.empty((comm.size, len(local))) if comm.rank == 0 else None
    comm.Gather(np.ascontiguousarray(local, dtype=np.float64), out, root=0)
    return out.T.copy() if out is not None else None
