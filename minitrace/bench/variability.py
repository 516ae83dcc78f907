"""variability: K iterations of Barrier -> workload -> Barrier, each rank's time per iteration
(seed 004, ch. 3).  The per-iteration maximum over ranks is what a bulk-synchronous step costs;
it is reduced to rank 0 after the loop, never inside the timed region."""
from __future__ import annotations

import time

import numpy as np

from . import common

NAME = "variability"
HELP = "per-rank workload times between barriers (FTQ, FWQ, DGEMM, SPMV, optional halo)"
STORES = ("times f8 [iterations, nranks] (s, workload + halo per rank), maxima f8 [iterations] "
          "(max over ranks), work f8 [iterations, nranks] (units drawn), barrier_times f8 "
          "[iterations, nranks] (with --time-barrier), node i4 [nranks], local_rank i4 [nranks]")
WORKLOADS = ("ftq", "fwq", "dgemm", "spmv")


def add_arguments(p) -> None:
    """Options of the suite (shared by ``python -m minitrace.bench`` and ``minitrace bench``)."""
    p.add_argument("--workload", choices=WORKLOADS, default="ftq",
                   help="ftq: busy-spin for a Normal(mu, sigma) duration; fwq: a Normal amount "
                        "of fixed integer work (compiled xorshift loop); dgemm: Normal number of "
                        "n x n matrix products (numpy BLAS, one thread per rank); spmv: Normal "
                        "number of sparse matrix-vector products (scipy.sparse, 5-point "
                        "Laplacian) [%(default)s]")
    p.add_argument("--iterations", type=int, default=100, help="measured iterations "
                   "[%(default)s]")
    p.add_argument("--warmup", type=int, default=5, help="unmeasured iterations first "
                   "[%(default)s]")
    p.add_argument("--mu", type=float, default=1e-3,
                   help="mean work per iteration, in seconds of this machine (converted to work "
                        "units by a calibration on rank 0, so every rank does the same amount) "
                        "[%(default)s]")
    p.add_argument("--sigma", type=float, default=1e-4,
                   help="standard deviation of the work per iteration, seconds (0: fixed work; "
                        "negative draws are clipped to 0) [%(default)s]")
    p.add_argument("--halo", action="store_true",
                   help="after the workload, exchange halos with the 4 neighbours of a periodic "
                        "2-D Cartesian communicator (MPI_Sendrecv, included in the time)")
    p.add_argument("--halo-bytes", type=int, default=1 << 20,
                   help="bytes of each halo message (one per neighbour and direction) "
                        "[%(default)s]")
    p.add_argument("--time-barrier", action="store_true",
                   help="also time the trailing barrier of each iteration (barrier_times)")
    p.add_argument("--dgemm-n", type=int, default=64, help="matrix order for dgemm "
                   "[%(default)s]")
    p.add_argument("--spmv-grid", type=int, default=128,
                   help="spmv matrix: 5-point Laplacian on a G x G grid [%(default)s]")
    common.common_arguments(p)


class Workload:
    """One work *unit* and a way to run ``n`` of them; unit_seconds comes from calibration."""

    def __init__(self, kind: str, args):
        self.kind = kind
        self.blas_threads = None
        if kind in ("ftq", "fwq"):
            from . import native
            self.lib = native.load()
        if kind == "dgemm":
            r = common.rng(args.seed, 99)
            n = args.dgemm_n
            self.a, self.b = r.random((n, n)), r.random((n, n))
            self.c = np.empty((n, n))
            self.blas_threads = common.pin_blas_threads(1)
        if kind == "spmv":
            import scipy.sparse as sp
            g = args.spmv_grid
            t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(g, g))
            self.m = (sp.kron(t, sp.identity(g)) + sp.kron(sp.identity(g), t)).tocsr()
            self.x = np.ones(g * g)
            self.blas_threads = common.pin_blas_threads(1)

    @property
    def unit(self) -> str:
        """What one unit of work is, stored with the draws so they can be read."""
        return {"ftq": "seconds of spinning", "fwq": "xorshift steps",
                "dgemm": "matrix products", "spmv": "sparse mat-vec products"}[self.kind]

    def run(self, units: float) -> None:
        """Run ``units`` units of work (whole units except for ftq's seconds)."""
        if self.kind == "ftq":
            self.lib.minitrace_spin(units)
        elif self.kind == "fwq":
            self.lib.minitrace_fwq(int(units), 88172645463325252)
        elif self.kind == "dgemm":
            for _ in range(int(units)):
                np.matmul(self.a, self.b, out=self.c)
        else:
            for _ in range(int(units)):
                self.m @ self.x

    def calibrate(self) -> float:
        """Seconds per unit (median of a few timed batches)."""
        if self.kind == "ftq":
            return 1.0
        batch = {"fwq": 1 << 20, "dgemm": 4, "spmv": 4}[self.kind]
        self.run(batch)
        samples = []
        for _ in range(7):
            t = time.perf_counter()
            self.run(batch)
            samples.append((time.perf_counter() - t) / batch)
        return float(np.median(samples))


class Halo:
    """Periodic 2-D halo exchange: 4 Sendrecv of ``nbytes`` each way."""

    def __init__(self, comm, nbytes: int):
        MPI = common.mpi()
        self.dims = MPI.Compute_dims(comm.size, 2)
        self.cart = comm.Create_cart(self.dims, periods=[True, True], reorder=False)
        self.send = np.ones(nbytes, np.uint8)
        self.recv = np.empty(nbytes, np.uint8)
        self.pairs = []
        for d in (0, 1):
            lo, hi = self.cart.Shift(d, 1)
            self.pairs += [(hi, lo), (lo, hi)]

    def exchange(self) -> None:
        """One halo exchange (both directions of both dimensions)."""
        for dest, src in self.pairs:
            self.cart.Sendrecv(self.send, dest, 7, self.recv, src, 7)


def run(args) -> int:
    """Measure on every rank; rank 0 gathers the per-rank times and writes."""
    MPI = common.mpi()
    comm = MPI.COMM_WORLD
    req = common.require
    req(args.iterations >= 1, "variability: --iterations must be >= 1")
    req(args.warmup >= 0, "variability: --warmup must be >= 0")
    req(args.mu >= 0, "variability: --mu must be >= 0")
    req(args.sigma >= 0, "variability: --sigma must be >= 0")
    req(args.halo_bytes >= 0, "variability: --halo-bytes must be >= 0")
    req(args.dgemm_n >= 1, "variability: --dgemm-n must be >= 1")
    req(args.spmv_grid >= 1, "variability: --spmv-grid must be >= 1")
    topo = common.topology(comm)
    work = Workload(args.workload, args)
    unit_seconds = comm.bcast(work.calibrate() if comm.rank == 0 else None, root=0)
    draws = np.clip(common.rng(args.seed, 1, comm.rank).normal(
        args.mu, args.sigma, args.warmup + args.iterations), 0, None) / unit_seconds
    if args.workload != "ftq":
        draws = np.rint(draws)
    halo = Halo(comm, args.halo_bytes) if args.halo else None
    times = np.empty(args.iterations)
    barrier_times = np.full(args.iterations, np.nan)
    bar = common.Progress(comm, args.warmup + args.iterations, f"variability/{args.workload}",
                          args.quiet)
    wtime = MPI.Wtime
    for i in range(args.warmup + args.iterations):
        comm.Barrier()
        t0 = wtime()
        work.run(draws[i])
        if halo is not None:
            halo.exchange()
        t1 = wtime()
        comm.Barrier()
        t2 = wtime()
        if i >= args.warmup:
            times[i - args.warmup] = t1 - t0
            barrier_times[i - args.warmup] = t2 - t1
        bar.update()
    bar.close()
    # Reduction and gathers happen after the loop: nothing but the workload is timed.
    maxima = np.empty(args.iterations) if comm.rank == 0 else None
    comm.Reduce(times, maxima, op=MPI.MAX, root=0)
    all_times = _gather(comm, times)
    all_work = _gather(comm, draws[args.warmup:].copy())
    all_barrier = _gather(comm, barrier_times)
    columns = None
    if comm.rank == 0:
        columns = {"times": all_times, "maxima": maxima, "work": all_work,
                   "node": np.asarray(topo["rank_to_node"], np.int32),
                   "local_rank": np.asarray(topo["local_rank"], np.int32)}
        if args.time_barrier:
            columns["barrier_times"] = all_barrier
    attrs = {"workload": args.workload, "iterations": args.iterations, "warmup": args.warmup,
             "nranks": comm.size, "seed": args.seed, "mu": args.mu, "sigma": args.sigma,
             "halo": bool(args.halo), "halo_bytes": args.halo_bytes if args.halo else 0,
             "halo_dims": list(halo.dims) if halo else None,
             "unit": work.unit, "unit_seconds": unit_seconds,
             "blas_threads": work.blas_threads,
             "dgemm_n": args.dgemm_n if args.workload == "dgemm" else None,
             "spmv_grid": args.spmv_grid if args.workload == "spmv" else None,
             "timer": "MPI_Wtime", "time_barrier": bool(args.time_barrier)}
    common.save(comm, args.output, NAME, columns, attrs, topo)
    if comm.rank == 0 and not args.quiet:
        rows = [_stats("per-rank time", all_times)]
        rows.append(_stats("per-iteration max", maxima))
        if args.time_barrier:
            rows.append(_stats("trailing barrier", all_barrier))
        common.table(f"minitrace variability: {args.workload}, {comm.size} ranks, "
                     f"{args.iterations} iterations{', halo' if args.halo else ''} "
                     f"-> {args.output}",
                     ["quantity", "mean(us)", "sd(us)", "min(us)", "p50(us)", "max(us)"], rows)
    return 0


def _gather(comm, local: np.ndarray) -> np.ndarray | None:
    """[len(local), nranks] on rank 0."""
    out = np.empty((comm.size, len(local))) if comm.rank == 0 else None
    comm.Gather(np.ascontiguousarray(local, dtype=np.float64), out, root=0)
    return out.T.copy() if out is not None else None


def _stats(name: str, a: np.ndarray) -> list:
    a = np.asarray(a, float).ravel() * 1e6
    return [name, a.mean(), a.std(), a.min(), np.median(a), a.max()]
