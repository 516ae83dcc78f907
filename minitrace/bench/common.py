"""What every suite shares: run metadata, topology, the seeded design RNG, progress bar,
OSU-like tables and the rank-0 write.  Imports ``mpi4py.MPI`` lazily so that ``minitrace bench``
can list the suites without initialising MPI."""
from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
import sys

import numpy as np

from .. import __version__
from ..errors import MinitraceError
from ..storage import write_bench


def mpi():
    """mpi4py.MPI, imported on demand: importing it initialises MPI, which listing suites must not
    do."""
    from mpi4py import MPI
    return MPI


def rng(seed: int, *stream: int) -> np.random.Generator:
    """Independent reproducible stream per (seed, purpose, rank...)."""
    return np.random.default_rng([int(seed), *[int(s) for s in stream]])


def topology(comm) -> dict:
    """Hostname per rank, node index per rank (order of first appearance) and local rank
    (rank within ``Split_type(COMM_TYPE_SHARED)``)."""
    MPI = mpi()
    shared = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    local_rank = shared.rank
    shared.Free()
    host = socket.gethostname()
    hosts = comm.allgather(host)
    locals_ = comm.allgather(local_rank)
    order: dict[str, int] = {}
    for h in hosts:
        order.setdefault(h, len(order))
    return {"hosts": hosts, "rank_to_node": [order[h] for h in hosts], "local_rank": locals_}


def metadata(comm, topo: dict) -> dict:
    """Root attributes of the result file (the contract the analyses read)."""
    from .. import provenance
    MPI = mpi()
    import mpi4py
    return {
        "mpi_library": provenance.mpi_version(provenance.mpi_library()),
        "mpi_version": "%d.%d" % MPI.Get_version(),
        "mpi4py_version": mpi4py.__version__,
        "hosts": topo["hosts"], "rank_to_node": topo["rank_to_node"],
        "nranks": comm.size, "cpu_model": provenance.cpu_model(),
        "governor": provenance.cpufreq_governor(),
        "command_line": " ".join([os.path.basename(sys.executable), "-m", "minitrace.bench",
                                  *sys.argv[1:]]),
        "producer": f"minitrace.bench {__version__}",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python_version": platform.python_version(),
    }


def save(comm, path: str, suite: str, columns: dict, attrs: dict, topo: dict) -> None:
    """Rank 0 writes (everything must already be gathered); every rank waits for the file."""
    meta = metadata(comm, topo)
    # The root attributes describe the file's last writer; each group keeps its own command.
    attrs = dict(attrs, command_line=meta["command_line"], date=meta["date"])
    error = None
    if comm.rank == 0:
        try:
            write_bench(path, suite, columns, attrs, meta)
        except (MinitraceError, OSError) as e:
            error = str(e)
    error = comm.bcast(error, root=0)
    if error:
        raise MinitraceError(error)


class Progress:
    """tqdm bar on rank 0's stderr; silent elsewhere, with --quiet or without a terminal."""

    def __init__(self, comm, total: int | None, desc: str, quiet: bool):
        self.bar = None
        if comm.rank == 0 and not quiet and sys.stderr.isatty():
            from tqdm import tqdm
            self.bar = tqdm(total=total or None, desc=desc, file=sys.stderr, leave=False,
                            dynamic_ncols=True)

    def update(self, n: int = 1) -> None:
        """Advance the bar (no-op off rank 0)."""
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        """Remove the bar before the summary table is printed."""
        if self.bar is not None:
            self.bar.close()


def table(title: str, headers: list[str], rows: list[list], out=None) -> None:
    """Print a small OSU-like fixed-width table."""
    out = out or sys.stdout
    cells = [[_fmt(v) for v in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    print(f"# {title}", file=out)
    print("# " + "  ".join(h.rjust(w) for h, w in zip(headers, widths)), file=out)
    for r in cells:
        print("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)), file=out)
    out.flush()


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "nan" if not np.isfinite(v) else f"{v:.2f}"
    return str(v)


def pin_blas_threads(n: int = 1) -> int | None:
    """One BLAS thread per rank (ranks are the parallelism); returns the thread count now in
    effect (None when no BLAS is loaded)."""
    from threadpoolctl import threadpool_info, threadpool_limits
    threadpool_limits(n, user_api="blas")
    nums = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(nums) if nums else None


def require(ok: bool, message: str) -> None:
    """Option checks: one line naming the offending option, raised identically on every rank
    (so rank 0 alone prints it and all ranks exit with the same status)."""
    if not ok:
        raise MinitraceError(message)


def common_arguments(p) -> None:
    """-o/--seed/--quiet, shared so that every suite spells them the same way."""
    p.add_argument("-o", "--output", default="bench.h5", metavar="FILE",
                   help="result file (HDF5; the suite's group /bench/SUITE is replaced, other "
                        "groups kept) [%(default)s]")
    p.add_argument("--seed", type=int, default=1,
                   help="seed of every random draw (design, shuffles, workloads): a run is "
                        "reproducible from it [%(default)s]")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar and no summary table")
