"""``minitrace shim build [--mpicc PATH]`` and ``minitrace shim path [-- COMMAND...]``: PMPI
shims for the MPI libraries of this machine (minitrace/shims.py), built once into the cache."""
from __future__ import annotations

from ..errors import MinitraceError
from ..mpitools import mpi_tool
from ..shims import build
from . import COMMANDS, shim_path


def register(sub) -> None:
    p = sub.add_parser("shim", help=COMMANDS["shim"],
                       description="build: compile the PMPI shim with an MPI's mpicc into the "
                                   "cache (MINITRACE_CACHE, else ~/.cache/minitrace), once per "
                                   "MPI library; path: which shim record would use for a "
                                   "command, and why (as shim-path).")
    what = p.add_subparsers(dest="action", required=True)
    b = what.add_parser("build", help="build the shim for an MPI (its mpicc)")
    b.add_argument("--mpicc", help="that MPI's C compiler wrapper (default: this "
                                   "environment's mpicc)")
    b.set_defaults(func=run_build)
    shim_path.add_command(what.add_parser("path", help="the shim record would use"))
    what.choices["path"].set_defaults(func=shim_path.run)


def run_build(args) -> int:
    mpicc = args.mpicc or mpi_tool("mpicc")
    if not mpicc:
        raise MinitraceError("no mpicc next to the interpreter nor on PATH: give --mpicc PATH")
    print(build(mpicc))
    return 0
