"""Entry point under MPI: ``mpiexec -n N python -m minitrace.bench SUITE [options]``.

Errors a user can fix print one line (from rank 0) and exit 1; any other exception aborts the
whole MPI job so that no rank is left waiting in a collective."""
from __future__ import annotations

import os

# Ranks are the parallelism: libraries loaded from now on start one thread each (the BLAS
# already loaded with numpy is pinned at run time by common.pin_blas_threads).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402

from ..errors import MinitraceError  # noqa: E402
from ..storage import check_appendable  # noqa: E402
from . import add_suite_parsers, suite_module  # noqa: E402


def run_mpi_job(comm, prog: str, job) -> int:
    """``job()`` on every rank, as its exit status.  A MinitraceError is raised alike on every
    rank (argument checks, broadcast write status): rank 0 prints it as one line, exit 1.
    Anything else prints its traceback and aborts the job: a rank left waiting would hang it."""
    try:
        return int(job() or 0)
    except MinitraceError as e:
        if comm.rank == 0:
            print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        comm.Abort(1)
        return 1


def on_root(comm, fn) -> None:
    """``fn()`` on rank 0 only (a write, a check of the output); its MinitraceError is raised
    on every rank, so that all of them leave the job the same way."""
    error = None
    if comm.rank == 0:
        try:
            fn()
        except MinitraceError as e:
            error = str(e)
    error = comm.bcast(error, root=0)
    if error:
        raise MinitraceError(error)


def execute(args) -> int:
    """Run the suite chosen in ``args`` on every rank of MPI_COMM_WORLD."""
    from mpi4py import MPI
    comm = MPI.COMM_WORLD

    def job() -> int:
        on_root(comm, lambda: check_appendable(args.output))
        return suite_module(args.suite).run(args)
    return run_mpi_job(comm, "minitrace bench", job)


def main(argv: list[str] | None = None) -> int:
    """The ``python -m minitrace.bench`` command line (the same parsers as ``minitrace bench``)."""
    parser = argparse.ArgumentParser(
        prog="python -m minitrace.bench",
        description="minitrace benchmark suites; run under mpiexec, e.g. "
                    "`mpiexec -n 4 python -m minitrace.bench variability -o run.h5`.")
    sub = parser.add_subparsers(dest="suite", metavar="SUITE", required=True)
    add_suite_parsers(sub)
    return execute(parse_quietly_off_root(parser, argv))


def parse_quietly_off_root(parser, argv):
    """Parse on every rank (each needs the options) but let only rank 0 print usage errors and
    --help: under mpiexec -n 64 one message, not 64; the others exit with the same status."""
    from mpi4py import MPI
    if MPI.COMM_WORLD.rank == 0:
        return parser.parse_args(argv)
    saved = sys.stdout, sys.stderr
    with open(os.devnull, "w") as null:
        sys.stdout = sys.stderr = null
        try:
            return parser.parse_args(argv)
        finally:
            sys.stdout, sys.stderr = saved


if __name__ == "__main__":
    sys.exit(main())
