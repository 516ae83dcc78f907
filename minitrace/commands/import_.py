"""``minitrace import TEXT_OR_LIST -o FILE.h5``: a SimGrid TI text trace into a minitrace file
(the older spelling of ``minitrace convert --from ti``, which it says)."""
from __future__ import annotations

from . import COMMANDS
from .convert import into_minitrace, replaced_by


def register(sub) -> None:
    """Add the ``import`` subcommand (listed in minitrace.commands.COMMANDS)."""
    p = sub.add_parser("import", help=COMMANDS["import"],
                       description="Read a SimGrid 4.1 time-independent trace (one file holding "
                                   "all ranks, or a list file: one line = a trace shared by all "
                                   "ranks, N lines = rank i's trace on line i), validate it and "
                                   "store it as a minitrace HDF5 file.  Older variants (Isend, "
                                   "allReduce, recv without size, ...) are accepted.")
    p.add_argument("trace", metavar="TEXT_TRACE_OR_LIST", help="trace file or list file")
    p.add_argument("-o", "--output", required=True, metavar="FILE.h5", help="file to write")
    p.set_defaults(func=run)


def run(args) -> int:
    """``minitrace convert --from ti``: read, validate and store a TI trace."""
    status = into_minitrace(args.trace, args.output, "ti")
    replaced_by("import", "convert --from ti")
    return status
