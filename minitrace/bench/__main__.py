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
from . import add_suite_parsers, suite_module  # noqa: E402


def execute(args) -> int:
    """Run the suite chosen in ``args`` on every rank of MPI_COMM_WORLD."""
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    try:
        return int(suite_module(args.suite).run(args) or 0)
    except MinitraceError as e:
        # Raised identically on every rank (argument checks, the broadcast write status).
        if comm.rank == 0:
            print(f"minitrace bench: error: {e}", file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        comm.Abort(1)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minitrace.bench",
        description="minitrace benchmark suites; run under mpiexec, e.g. "
                    "`mpiexec -n 4 python -m minitrace.bench variability -o run.h5`.")
    sub = parser.add_subparsers(dest="suite", metavar="SUITE", required=True)
    add_suite_parsers(sub)
    return execute(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
