"""``minitrace convert``: foreign traces (OTF2, TAU, SimGrid TI) into a minitrace file, or a
minitrace file into an OTF2 archive."""
from __future__ import annotations

import sys

from ..converters.detect import FORMATS, read_any
from ..errors import MinitraceError
from ..kinds import VECTOR_KINDS
from ..outputs import check_output_dir, check_output_file
from ..storage import write_trace
from ..trace import open as open_trace
from ..validate import validate


def register(sub) -> None:
    """Add the ``convert`` subcommand (discovered by minitrace.cli)."""
    p = sub.add_parser("convert", help="convert OTF2/TAU/TI traces to minitrace, or to OTF2",
                       description="Convert a Score-P OTF2 archive, a merged TAU trace "
                                   "(tau.trc + tau.edf) or a SimGrid TI text trace into a "
                                   "minitrace HDF5 file (the format is detected unless --from "
                                   "is given), validating the result; or, with --to otf2, write "
                                   "a minitrace file as an OTF2 archive in a new directory.")
    p.add_argument("input", metavar="INPUT", nargs="+",
                   help="OTF2 anchor or its directory, tau.trc/tau.edf or their directory, TAU "
                        "per-thread tautrace.N.C.T.trc files or their directory, TI trace or "
                        "list file; or a minitrace .h5 file with --to otf2")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="minitrace file to write (.h5), or the directory of the OTF2 archive")
    p.add_argument("--from", dest="source", choices=("auto",) + FORMATS, default="auto",
                   help="input format (default: detect)")
    p.add_argument("--to", choices=("minitrace", "otf2"), default="minitrace",
                   help="output format (default: minitrace)")
    p.add_argument("--keep-regions", action="store_true",
                   help="keep non-MPI regions (functions) as region_begin/region_end markers "
                        "instead of dropping them")
    p.add_argument("--keep-going", action="store_true",
                   help="keep the whole records of a damaged OTF2/TAU input (cut short, a "
                        "file missing) and mark the trace incomplete, instead of failing")
    p.set_defaults(func=run)


def run(args) -> int:
    """Convert into minitrace (validated) or, with --to otf2, out of it; exit status 0."""
    if args.to == "otf2":
        if len(args.input) != 1:
            raise MinitraceError("--to otf2 reads one minitrace file")
        args.input = args.input[0]
        return _to_otf2(args)
    path = args.input[0] if len(args.input) == 1 else args.input
    return into_minitrace(path, args.output, args.source, args.keep_regions, args.keep_going)


#: Provenance keys a reader leaves in ``meta`` when it left something out, and what they say.
_LEFT_OUT = (("user_regions_dropped", "user regions dropped (--keep-regions keeps them)"),
             ("collectives_without_sizes", "collectives without recorded sizes"),
             ("collectives_without_root", "rooted collectives whose root the source does not "
              "record (peer -1)"),
             ("unmapped_events", "events not attached to an MPI call"),
             ("requests_never_completed", "requests never completed"),
             ("ignored_actions", "TI actions with nothing to keep in the model"))


def into_minitrace(path, output, fmt: str = "auto", keep_regions: bool = False,
                   keep_going: bool = False) -> int:
    """Read a foreign trace, validate it, store it and say (on stderr) what was left out: the
    one path of ``minitrace convert`` and ``minitrace import``.  Validation problems are
    reported, not fatal."""
    check_output_file(output)
    data = read_any(path, fmt, keep_regions=keep_regions, keep_going=keep_going)
    rep = validate(data)
    write_trace(output, data)
    m = data.meta
    notes = []
    if m.get("dropped_mpi_calls"):
        notes.append("MPI calls without an action kind dropped: "
                     + ", ".join(f"{k} x{v}" for k, v in m["dropped_mpi_calls"].items()))
    notes += [f"{what}: {m[key]}" for key, what in _LEFT_OUT if m.get(key)]
    if m.get("volume_source"):
        notes.append(f"compute volume in {m['volume_unit']}: {m['volume_source']}")
    for n in notes:
        print(f"minitrace: note: {n}", file=sys.stderr)
    for d in m.get("damaged", []):
        print(f"minitrace: warning: damaged input, trace marked incomplete: {d}", file=sys.stderr)
    check = "valid" if rep.ok else f"{rep.summary()} (see: minitrace validate {output})"
    where = f"{len(path)} files" if isinstance(path, (list, tuple)) else path
    print(f"{output}: {data.nranks} ranks, {len(data.actions)} actions from "
          f"{m.get('source_format', fmt)} {where}; {check}")
    return 0


def _to_otf2(args) -> int:
    from ..converters.otf2 import write_otf2
    if args.source not in ("auto",):
        raise MinitraceError("--from applies to conversions into minitrace; --to otf2 reads a "
                             "minitrace file", args.input)
    check_output_dir(args.output)
    with open_trace(args.input) as t:
        if not t.has_trace:
            raise MinitraceError("no trace in this file", args.input)
        data = t.data()
    lossy = write_otf2(data, args.output)
    for kind, n in sorted(lossy.items()):
        what = ("written without their per-peer byte vector (OTF2 keeps totals)"
                if kind in VECTOR_KINDS else
                "written as MPI regions only (OTF2 has no event for their arguments)")
        print(f"minitrace: note: {n} {kind} action(s) {what}", file=sys.stderr)
    print(f"{args.output}/traces.otf2: {data.nranks} ranks, {len(data.actions)} actions")
    return 0
