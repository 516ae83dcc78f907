"""``minitrace import TEXT_OR_LIST -o FILE.h5``: a SimGrid TI text trace into a minitrace file."""
from __future__ import annotations

from ..converters.simgrid_ti import read_ti
from ..storage import write_trace
from ..validate import validate


def register(sub) -> None:
    """Add the ``import`` subcommand (discovered by minitrace.cli)."""
    p = sub.add_parser("import", help="import a SimGrid time-independent text trace",
                       description="Read a SimGrid 4.1 time-independent trace (one file holding "
                                   "all ranks, or a list file: one line = a trace shared by all "
                                   "ranks, N lines = rank i's trace on line i), validate it and "
                                   "store it as a minitrace HDF5 file.  Older variants (Isend, "
                                   "allReduce, recv without size, ...) are accepted.")
    p.add_argument("trace", metavar="TEXT_TRACE_OR_LIST", help="trace file or list file")
    p.add_argument("-o", "--output", required=True, metavar="FILE.h5", help="file to write")
    p.set_defaults(func=run)


def run(args) -> int:
    """Read, validate and store a TI trace; validation problems are reported, not fatal."""
    data = read_ti(args.trace)
    rep = validate(data)
    write_trace(args.output, data)
    ignored = data.meta.get("ignored_actions")
    note = f"; ignored {ignored}" if ignored else ""
    check = "valid" if rep.ok else f"{rep.summary()} (see: minitrace validate {args.output})"
    print(f"{args.output}: {data.nranks} ranks, {len(data.actions)} actions from "
          f"{args.trace}; {check}{note}")
    return 0
