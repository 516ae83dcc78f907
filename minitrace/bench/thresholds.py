"""thresholds: the message sizes where the MPI library switches protocol (seed 000, ch. 5), by
bisection with two probes.  Deadlock probe: both ranks Send then Recv in a *child* MPI job; if
it finishes, Send did not wait for the receiver (eager), if it hangs past the timeout it is
killed (rendezvous).  Corruption probe: Isend, overwrite the buffer at once; the receiver,
after a delay, checks whether the original bytes arrived (copied at Isend) or not."""
from __future__ import annotations

import math
import os
import select
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

from ..errors import MinitraceError
from ..mpitools import mpi_tool
from ..options import choice_list
from . import common

NAME = "thresholds"
HELP = "protocol switch sizes by bisection: deadlock probe (child job) and corruption probe"
STORES = ("one row per probe in executed order: probe ('deadlock'/'corruption'), size i8, "
          "step i4, switched bool (send waited / buffer read late), outcome, times f8 "
          "[probes, nranks] (deadlock: rank 0's wall time from the child's start-up barrier; "
          "corruption: each rank's Isend..Wait / sleep..Recv time, NaN elsewhere), "
          "corrupted_fraction f8; attrs: <probe>_threshold = [last size without switch, "
          "first size with it] or the 'no switch found' result")
PROBES = ("deadlock", "corruption")
TAG = 41

# The child job: stdlib + mpi4py only, so it starts fast.
CHILD = r"""
import sys
from mpi4py import MPI
c = MPI.COMM_WORLD
n = int(sys.argv[1])
buf, rbuf = bytearray(n), bytearray(n)
c.Barrier()
if c.rank == 0:
    print("ready", flush=True)
c.Send(buf, 1 - c.rank, 5)
c.Recv(rbuf, 1 - c.rank, 5)
c.Barrier()
if c.rank == 0:
    print("done", flush=True)
"""


def add_arguments(p) -> None:
    """Options of the suite (shared by ``python -m minitrace.bench`` and ``minitrace bench``)."""
    p.add_argument("--probes", default=",".join(PROBES), help="comma-separated subset "
                   "[%(default)s]")
    p.add_argument("--min-size", type=int, default=1, help="bytes [%(default)s]")
    p.add_argument("--max-size", type=int, default=1 << 24, help="bytes [%(default)s]")
    p.add_argument("--refine", type=int, default=4,
                   help="linear bisection steps after the power-of-two bracket is found "
                        "[%(default)s]")
    p.add_argument("--probe-timeout", type=float, default=2.0,
                   help="seconds after the child job's start-up barrier before a deadlock "
                        "probe counts as hung and is killed [%(default)s]")
    p.add_argument("--startup-timeout", type=float, default=60.0,
                   help="seconds allowed for a child job to start [%(default)s]")
    p.add_argument("--delay", type=float, default=0.05,
                   help="receiver's sleep before Recv in the corruption probe, s "
                        "[%(default)s]")
    p.add_argument("--mpiexec", default=None,
                   help="launcher for the deadlock probe's child job (default: the mpiexec "
                        "next to this Python, else on PATH); the child runs 2 ranks on this "
                        "node, so the threshold found is the intra-node one")
    common.common_arguments(p)


def bisect(probe, lo: int, hi: int, refine: int):
    """Smallest switching size in [lo, hi], assuming one switch (monotone outcome).
    Returns (last without, first with), or None with the common outcome of lo and hi."""
    a_sw, b_sw = probe(lo), probe(hi)
    if a_sw == b_sw:
        return None, a_sw
    a, b = lo, hi
    while b > 2 * a:  # geometric stage: powers of two
        m = 1 << round((math.log2(a) + math.log2(b)) / 2)
        m = min(max(m, a + 1), b - 1)
        if probe(m):
            b = m
        else:
            a = m
    for _ in range(refine):  # linear stage inside the bracket
        if b - a <= 1:
            break
        m = (a + b) // 2
        if probe(m):
            b = m
        else:
            a = m
    return (a, b), None


def _child_env() -> dict:
    """This job's environment minus its process-manager handles, so that the child mpiexec
    starts an independent job."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("PMI_", "PMIX_", "HYDI_", "HYDRA_", "OMPI_", "MPIR_"))}


def _mpiexec(args) -> str:
    """The launcher of the probe's child jobs: --mpiexec (a path or a name on PATH) if given,
    else this environment's mpiexec."""
    exe = shutil.which(args.mpiexec) if args.mpiexec else mpi_tool("mpiexec")
    if not exe:
        raise MinitraceError(f"thresholds: no {args.mpiexec or 'mpiexec'} found for the "
                             "deadlock probe; pass --mpiexec")
    return exe


class DeadlockProbe:
    """Runs on rank 0 only: one child job per size."""

    def __init__(self, args, exe: str):
        self.args = args
        self.exe = exe
        self.env = _child_env()

    def __call__(self, size: int) -> tuple[bool, float]:
        p = subprocess.Popen([self.exe, "-n", "2", sys.executable, "-c", CHILD, str(size)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             env=self.env, start_new_session=True, bufsize=0)
        self.pending = b""
        try:
            first = self._line(p, self.args.startup_timeout)
            if first != "ready":
                why = (f"did not start within {self.args.startup_timeout}s" if first is None
                       else "exited before its start-up barrier")
                raise MinitraceError(f"thresholds: the deadlock probe's child job {why}",
                                     self.exe)
            t0 = time.monotonic()
            line = self._line(p, self.args.probe_timeout)
            elapsed = time.monotonic() - t0
            if line == "done":
                return False, elapsed
            if line is not None:  # output closed without "done": a failure, not a hang
                p.wait(timeout=10)
                raise MinitraceError(f"thresholds: the deadlock probe's child job failed "
                                     f"(exit status {p.returncode}) at {size} bytes", self.exe)
            return True, elapsed
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            p.stdout.close()

    def _line(self, p, timeout: float) -> str | None:
        """The child's next line ("" at end of output), or None after ``timeout``.  Reads
        the pipe unbuffered: a line already read must not hide behind select()."""
        end = time.monotonic() + timeout
        fd = p.stdout.fileno()
        while b"\n" not in self.pending:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return ""
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode().strip()


def corruption_probe(comm, size: int, buf, rbuf, delay: float, wtime):
    """Collective over ranks 0 and 1; returns (switched, fraction of bytes not original,
    this rank's time)."""
    t = float("nan")
    frac = None
    comm.Barrier()
    if comm.rank == 0:
        view = buf[:size]
        view[:] = 0xA5
        t0 = wtime()
        req = comm.Isend(view, 1, TAG)
        view[:] = 0x5A
        req.Wait()
        t = wtime() - t0
    elif comm.rank == 1:
        time.sleep(delay)
        t0 = wtime()
        comm.Recv(rbuf[:size], 0, TAG)
        t = wtime() - t0
        frac = float(np.count_nonzero(rbuf[:size] != 0xA5)) / size
    frac = comm.bcast(frac, root=1)
    return frac > 0, frac, t


def _idle_wait(comm) -> None:
    """Ranks other than 0 wait for rank 0 without busy-polling (it runs child jobs)."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(0.01)


def run(args) -> int:
    """Bisect with each probe (deadlock: rank 0 runs child jobs; corruption: ranks 0 and 1); rank 0
    writes."""
    MPI = common.mpi()
    comm = MPI.COMM_WORLD
    probes = choice_list(args.probes, PROBES, "thresholds", "--probes")
    if comm.size < 2 and "corruption" in probes:
        raise MinitraceError("thresholds: the corruption probe needs at least 2 ranks")
    req = common.require
    req(args.min_size >= 1, "thresholds: --min-size must be >= 1")
    req(args.max_size > args.min_size, "thresholds: --max-size must be > --min-size")
    req(args.refine >= 0, "thresholds: --refine must be >= 0")
    req(args.probe_timeout > 0, "thresholds: --probe-timeout must be > 0")
    req(args.startup_timeout > 0, "thresholds: --startup-timeout must be > 0")
    req(args.delay >= 0, "thresholds: --delay must be >= 0")
    # resolved on every rank, so that a missing launcher fails everywhere, not on rank 0 alone
    launcher = _mpiexec(args) if "deadlock" in probes else None
    topo = common.topology(comm)
    wtime = MPI.Wtime
    rows = []  # (probe, size, switched, outcome, times[nranks], frac)
    results = {}
    bar = common.Progress(comm, 0, "thresholds", args.quiet)
    if "deadlock" in probes:
        if comm.rank == 0:
            dl = DeadlockProbe(args, launcher)

            def probe(size):
                sw, secs = dl(size)
                times = np.full(comm.size, np.nan)
                times[0] = secs
                rows.append(("deadlock", size, sw, "send waited (killed)" if sw else
                             "send returned (eager)", times, np.nan))
                bar.update()
                return sw
            try:
                found, common_outcome = bisect(probe, args.min_size, args.max_size,
                                               args.refine)
                outcome = (found, common_outcome, None)
            except MinitraceError as e:
                outcome = (None, None, str(e))
            comm.Ibarrier().Wait()
        else:
            _idle_wait(comm)
            outcome = None
        found, common_outcome, error = comm.bcast(outcome, root=0)
        if error:
            raise MinitraceError(error)
        results["deadlock"] = (found, common_outcome)
    if "corruption" in probes:
        buf = np.zeros(args.max_size, np.uint8)
        rbuf = np.zeros(args.max_size, np.uint8)

        def probe(size):
            sw, frac, t = corruption_probe(comm, size, buf, rbuf, args.delay, wtime)
            times = np.empty(comm.size) if comm.rank == 0 else None
            comm.Gather(np.array([t]), times, root=0)
            rows.append(("corruption", size, sw, "buffer read after Isend returned" if sw
                         else "original data arrived", times, frac))
            bar.update()
            return sw
        results["corruption"] = bisect(probe, args.min_size, args.max_size, args.refine)
    bar.close()
    columns = None
    if comm.rank == 0:
        n = len(rows)
        columns = {"probe": np.array([r[0] for r in rows], dtype=object),
                   "size": np.array([r[1] for r in rows], np.int64),
                   "step": np.arange(n, dtype=np.int32),
                   "switched": np.array([r[2] for r in rows], bool),
                   "outcome": np.array([r[3] for r in rows], dtype=object),
                   "times": np.array([r[4] for r in rows]).reshape(n, comm.size),
                   "corrupted_fraction": np.array([r[5] for r in rows], float)}
    attrs = {"probes": probes, "min_size": args.min_size, "max_size": args.max_size,
             "refine": args.refine, "probe_timeout": args.probe_timeout, "delay": args.delay,
             "seed": args.seed, "nranks": comm.size,
             "deadlock_job": "2 ranks on the launching node (intra-node threshold)",
             "assumption": "one switch in the range (monotone outcome)"}
    summary = []
    for name, (found, same) in results.items():
        if found:
            attrs[f"{name}_threshold"] = list(found)
            summary.append([name, found[0], found[1], "switch"])
        else:
            what = "switched" if same else "not switched"
            attrs[f"{name}_threshold"] = (f"no switch found in [{args.min_size}, "
                                          f"{args.max_size}]: {what} at both ends")
            summary.append([name, "-", "-", f"no switch found ({what} at both ends)"])
    common.save(comm, args.output, NAME, columns, attrs, topo)
    if comm.rank == 0 and not args.quiet:
        common.table(f"minitrace thresholds in [{args.min_size}, {args.max_size}] B "
                     f"-> {args.output}",
                     ["probe", "last without(B)", "first with(B)", "result"], summary)
    return 0
