"""partitioned: a sender with T threads, one partition each (seed 004, ch. 4).  Each thread
computes for a Normal(mu, sigma) time with sigma = mu * v**2 (the seed thesis's convention, kept
on purpose), then marks its partition ready; the effective bandwidth is
size / (t_done - t_last), i.e. what is left of the transfer after the last thread is ready.
Baseline: join the threads, then one Send of the whole buffer."""
from __future__ import annotations

import threading

import numpy as np

from ..errors import MinitraceError
from ..options import choice_list
from . import common

NAME = "partitioned"
HELP = "partitioned send (Psend_init/Pready, T threads) vs join + Send, sizes 18*2^k bytes"
STORES = ("one row per measured run (warm-ups excluded): mode, size i8, threads i4, run i4, "
          "mu f8, v f8, t_last f8, t_done f8, bandwidth f8 (B/s), t_ready f8 [rows, threads], "
          "work f8 [rows, threads] (seconds drawn per thread); attrs: emulated, sigma "
          "convention")
MODES = ("partitioned", "baseline")
TAG_DATA, TAG_ACK = 21, 22


def add_arguments(p) -> None:
    """Options of the suite (shared by ``python -m minitrace.bench`` and ``minitrace bench``)."""
    p.add_argument("--threads", type=int, default=2,
                   help="sender threads = partitions; must divide every size [%(default)s]")
    p.add_argument("--mu", type=float, default=1e-4,
                   help="mean compute time per thread per run, seconds [%(default)s]")
    p.add_argument("--v", type=float, default=0.5,
                   help="variability: sigma = mu * v**2 (seed thesis convention) "
                        "[%(default)s]")
    p.add_argument("--min-k", type=int, default=0, help="smallest size 18 * 2**MIN_K bytes "
                   "[%(default)s]")
    p.add_argument("--max-k", type=int, default=16, help="largest size 18 * 2**MAX_K bytes "
                   "[%(default)s]")
    p.add_argument("--warmup", type=int, default=5, help="unmeasured runs per size and mode "
                   "[%(default)s]")
    p.add_argument("--runs", type=int, default=5, help="measured runs per size and mode "
                   "[%(default)s]")
    p.add_argument("--modes", default=",".join(MODES),
                   help="comma-separated subset of partitioned,baseline [%(default)s]")
    p.add_argument("--emulate", action="store_true",
                   help="use the emulation (one Isend per partition at Pready) even when the "
                        "library has MPI-4 partitioned communication")
    common.common_arguments(p)


def native_partitioned(MPI) -> bool:
    """Does this library implement Psend_init/Precv_init?  Tried on COMM_SELF."""
    try:
        sb, rb = np.zeros(8, np.uint8), np.zeros(8, np.uint8)
        r = MPI.COMM_SELF.Precv_init(rb, 2, 0, 0)
        s = MPI.COMM_SELF.Psend_init(sb, 2, 0, 0)
        r.Start()
        s.Start()
        s.Pready_range(0, 1)
        MPI.Request.Waitall([s, r])
        s.Free()
        r.Free()
        return True
    except (NotImplementedError, AttributeError, MPI.Exception):
        return False


class Workers:
    """T persistent threads; ``go(action)`` runs one round: spin (compiled, GIL released),
    stamp the ready time, call ``action(i)``; returns when every thread has finished."""

    def __init__(self, n: int, wtime):
        from . import native
        self.lib = native.load()
        self.n, self.wtime = n, wtime
        self.start, self.done = threading.Barrier(n + 1), threading.Barrier(n + 1)
        self.work = np.zeros(n)
        self.ready = np.zeros(n)
        self.t0 = 0.0
        self.action = None
        self.stop = False
        self.threads = [threading.Thread(target=self._loop, args=(i,), daemon=True)
                        for i in range(n)]
        for t in self.threads:
            t.start()

    def _loop(self, i: int) -> None:
        while True:
            self.start.wait()
            if self.stop:
                return
            self.lib.minitrace_spin(self.work[i])
            self.ready[i] = self.wtime() - self.t0
            if self.action is not None:
                self.action(i)
            self.done.wait()

    def go(self, t0: float, action) -> None:
        """One round of every thread; ``t0`` is the run's start the ready times count from."""
        self.t0, self.action = t0, action
        self.start.wait()
        self.done.wait()

    def close(self) -> None:
        """Release the threads (they are blocked on the start barrier)."""
        self.stop = True
        self.start.wait()
        for t in self.threads:
            t.join()


def run(args) -> int:
    """Measure on every rank (0 sends, 1 receives, others wait); rank 0 writes the group."""
    MPI = common.mpi()
    comm = MPI.COMM_WORLD
    sizes = [18 << k for k in range(args.min_k, args.max_k + 1)]
    if comm.size < 2:
        raise MinitraceError("partitioned needs at least 2 ranks")
    modes = choice_list(args.modes, MODES, "partitioned", "--modes")
    req = common.require
    req(args.threads >= 1, "partitioned: --threads must be >= 1")
    req(args.min_k >= 0, "partitioned: --min-k must be >= 0")
    req(args.max_k >= args.min_k, "partitioned: --max-k must be >= --min-k")
    req(not any(s % args.threads for s in sizes),
        f"partitioned: --threads {args.threads} must divide every size 18*2^k for k in "
        f"[{args.min_k}, {args.max_k}]")
    req(args.runs >= 1, "partitioned: --runs must be >= 1")
    req(args.warmup >= 0, "partitioned: --warmup must be >= 0")
    req(args.mu >= 0, "partitioned: --mu must be >= 0")
    topo = common.topology(comm)
    emulated = bool(args.emulate) or not comm.bcast(
        native_partitioned(MPI) if comm.rank == 0 else None, root=0)
    T = args.threads
    sigma = args.mu * args.v ** 2
    wtime = MPI.Wtime
    me = comm.rank
    buf = np.zeros(sizes[-1], np.uint8)
    ack = np.zeros(1, np.uint8)
    lock = threading.Lock()
    serialize = MPI.Query_thread() < MPI.THREAD_MULTIPLE
    draws = common.rng(args.seed, 4)
    workers = Workers(T, wtime) if me == 0 else None
    rows = []
    bar = common.Progress(comm, len(sizes) * len(modes) * (args.warmup + args.runs),
                          "partitioned", args.quiet)
    for size in sizes:
        part = size // T
        view = memoryview(buf)[:size]
        parts = [view[i * part:(i + 1) * part] for i in range(T)]
        preq = None
        if "partitioned" in modes and not emulated and me in (0, 1):
            preq = (comm.Psend_init(view, T, 1, TAG_DATA) if me == 0 else
                    comm.Precv_init(view, T, 0, TAG_DATA))
        for mode in modes:
            for run_i in range(args.warmup + args.runs):
                work = np.clip(draws.normal(args.mu, sigma, T), 0, None)
                comm.Barrier()
                if me == 0:
                    workers.work[:] = work
                    t0 = wtime()
                    if mode == "baseline":
                        workers.go(t0, None)
                        comm.Send(view, 1, TAG_DATA)
                    elif emulated:
                        reqs = [None] * T

                        def ready(i, reqs=reqs):
                            with lock:
                                reqs[i] = comm.Isend(parts[i], 1, TAG_DATA + 1 + i)
                        workers.go(t0, ready)
                        MPI.Request.Waitall(reqs)
                    else:
                        preq.Start()
                        if serialize:
                            def ready(i):
                                with lock:
                                    preq.Pready(i)
                        else:
                            ready = preq.Pready
                        workers.go(t0, ready)
                        preq.Wait()
                    comm.Recv(ack, 1, TAG_ACK)
                    t_done = wtime() - t0
                    if run_i >= args.warmup:
                        t_last = float(workers.ready.max())
                        rows.append((mode, size, run_i - args.warmup, t_last, t_done,
                                     workers.ready.copy(), work))
                elif me == 1:
                    if mode == "baseline":
                        comm.Recv(view, 0, TAG_DATA)
                    elif emulated:
                        MPI.Request.Waitall([comm.Irecv(parts[i], 0, TAG_DATA + 1 + i)
                                             for i in range(T)])
                    else:
                        preq.Start()
                        preq.Wait()
                    comm.Send(ack, 0, TAG_ACK)
                bar.update()
        if preq is not None:
            preq.Free()
    bar.close()
    if workers is not None:
        workers.close()
    columns = None
    if me == 0:
        t_last = np.array([r[3] for r in rows])
        t_done = np.array([r[4] for r in rows])
        size_col = np.array([r[1] for r in rows], np.int64)
        columns = {"mode": np.array([r[0] for r in rows], dtype=object), "size": size_col,
                   "threads": np.full(len(rows), T, np.int32),
                   "run": np.array([r[2] for r in rows], np.int32),
                   "mu": np.full(len(rows), args.mu), "v": np.full(len(rows), args.v),
                   "t_last": t_last, "t_done": t_done,
                   "bandwidth": size_col / (t_done - t_last),
                   "t_ready": np.array([r[5] for r in rows]).reshape(len(rows), T),
                   "work": np.array([r[6] for r in rows]).reshape(len(rows), T)}
    attrs = {"emulated": emulated, "forced_emulation": bool(args.emulate),
             "threads": T, "mu": args.mu, "v": args.v, "sigma": sigma,
             "sigma_convention": "sigma = mu * v**2 (seed thesis convention)",
             "sizes": sizes, "warmup": args.warmup, "runs": args.runs, "modes": modes,
             "seed": args.seed, "nranks": comm.size, "sender": 0, "receiver": 1,
             "thread_level": int(MPI.Query_thread()), "serialized_pready": bool(serialize),
             "t_done": "seconds from run start until the receiver's 1-byte completion ack "
                       "arrives at the sender (same for both modes)",
             "timer": "MPI_Wtime"}
    common.save(comm, args.output, NAME, columns, attrs, topo)
    if me == 0 and not args.quiet:
        out = []
        for size in sizes:
            line = [size]
            for mode in MODES:
                sel = (columns["size"] == size) & (columns["mode"] == mode)
                line += [float(np.median(columns["t_done"][sel] - columns["t_last"][sel]) * 1e6)
                         if sel.any() else float("nan"),
                         float(np.median(columns["bandwidth"][sel]) / 1e6)
                         if sel.any() else float("nan")]
            out.append(line)
        common.table(f"minitrace partitioned: {T} threads, mu={args.mu:g}s, v={args.v:g}"
                     f"{' (emulated)' if emulated else ''} -> {args.output}",
                     ["size(B)", "part: after-last(us)", "part: bw(MB/s)",
                      "base: after-last(us)", "base: bw(MB/s)"], out)
    return 0
