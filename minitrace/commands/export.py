"""``minitrace export FILE --format ti|csv|perfetto -o OUT``: a trace as SimGrid TI text, CSV or
a Perfetto/Chrome trace-event JSON timeline."""
from __future__ import annotations

import sys

from ..converters.simgrid_ti import write_ti
from ..export_csv import write_csv
from ..export_perfetto import write_perfetto
from ..outputs import check_output_file
from ..trace import open as open_trace


def register(sub) -> None:
    """Add the ``export`` subcommand (discovered by minitrace.cli)."""
    p = sub.add_parser("export", help="write a trace as SimGrid TI text, CSV or a Perfetto "
                                      "timeline",
                       description="Export a trace.  ti: SimGrid 4.1 time-independent text "
                                   "(per-rank files plus a list file, or one file); actions "
                                   "SimGrid cannot express are an error unless --lossy, and "
                                   "every drop or approximation is listed.  csv: one row per "
                                   "action.  perfetto: trace-event JSON for ui.perfetto.dev or "
                                   "chrome://tracing (a track per rank, MPI calls and compute "
                                   "as slices, messages as arrows).")
    p.add_argument("file", help="minitrace HDF5 file")
    p.add_argument("--format", required=True, choices=("ti", "csv", "perfetto"))
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output (ti per-rank: the list file; its rank files go to OUT_files/)")
    p.add_argument("--layout", choices=("per-rank", "single"), default="per-rank",
                   help="ti only: one file per rank plus a list file (default), or one file")
    p.add_argument("--lossy", action="store_true",
                   help="ti only: drop what SimGrid cannot express (with a warning) "
                        "instead of failing")
    p.set_defaults(func=run)


def run(args) -> int:
    """Export as TI, CSV or Perfetto JSON; TI drops/approximations become warnings on stderr."""
    check_output_file(args.output)
    with open_trace(args.file) as t:
        data = t.data()
    if args.format == "csv":
        n = write_csv(data, args.output)
        print(f"{args.output}: {n} actions")
        return 0
    if args.format == "perfetto":
        n = write_perfetto(data, args.output)
        print(f"{args.output}: {data.nranks} ranks, {n} trace events (open in "
              "https://ui.perfetto.dev)")
        return 0
    rep = write_ti(data, args.output, layout=args.layout, lossy=args.lossy)
    for line in rep.lines():
        print(f"minitrace: warning: {line}", file=sys.stderr)
    extra = f" + {len(rep.files) - 1} rank files" if args.layout == "per-rank" else ""
    print(f"{args.output}{extra}: {data.nranks} ranks, "
          f"{'exact' if rep.exact else 'with the warnings above'}")
    return 0
