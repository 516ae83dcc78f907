"""``minitrace convert``: the one command between formats.  Foreign traces (OTF2, TAU, SimGrid
TI) into a minitrace file; a minitrace file into OTF2, SimGrid TI text, CSV or a Perfetto
timeline (``--to``); the conversion is ``minitrace.converters.convert``, this module says what
it did.  ``minitrace import`` (``--from ti``) and ``minitrace export FILE --format X`` (``--to
X``) are its older spellings, which say so."""
from __future__ import annotations

import sys

import numpy as np

from .. import kinds as K
from ..converters import EXPORTS, Converted, convert
from ..converters.detect import FORMATS
from ..errors import MinitraceError
from ..kinds import VECTOR_KINDS
from . import COMMANDS


def register(sub) -> None:
    """Add the ``convert`` subcommand (listed in minitrace.commands.COMMANDS)."""
    p = sub.add_parser("convert", help=COMMANDS["convert"],
                       description="Convert a Score-P OTF2 archive, a merged TAU trace "
                                   "(tau.trc + tau.edf) or a SimGrid TI text trace into a "
                                   "minitrace HDF5 file (the format is detected unless --from "
                                   "is given), validating the result; or, with --to, write a "
                                   "minitrace file as an OTF2 archive in a new directory (otf2), "
                                   "SimGrid 4.1 time-independent text (ti: per-rank files plus "
                                   "a list file, or one file; actions SimGrid cannot express are "
                                   "an error unless --lossy, and every drop or approximation is "
                                   "listed), one row per action (csv), or trace-event JSON for "
                                   "ui.perfetto.dev or chrome://tracing (perfetto: a track per "
                                   "rank, MPI calls and compute as slices, messages as arrows). "
                                   "'minitrace import' and 'minitrace export' are older "
                                   "spellings of the same command.")
    p.add_argument("input", metavar="INPUT", nargs="+",
                   help="OTF2 anchor or its directory, tau.trc/tau.edf or their directory, TAU "
                        "per-thread tautrace.N.C.T.trc files or their directory, TI trace or "
                        "list file; or a minitrace .h5 file with --to otf2|ti|csv|perfetto")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="minitrace file to write (.h5), the directory of the OTF2 archive, or "
                        "the exported file (ti per-rank: the list file; its rank files go to "
                        "OUT_files/)")
    p.add_argument("--from", dest="source", choices=("auto",) + FORMATS, default="auto",
                   help="input format (default: detect)")
    p.add_argument("--to", choices=("minitrace",) + EXPORTS, default="minitrace",
                   help="output format (default: minitrace)")
    p.add_argument("--keep-regions", action="store_true",
                   help="keep non-MPI regions (functions) as region_begin/region_end markers "
                        "instead of dropping them")
    p.add_argument("--keep-going", action="store_true",
                   help="keep the whole records of a damaged OTF2/TAU/TI input (cut short, a "
                        "file missing) and mark the trace incomplete, instead of failing")
    add_export_options(p)
    p.set_defaults(func=run)


def add_export_options(p) -> None:
    """The options of writing a minitrace file out (shared with the ``export`` spelling)."""
    p.add_argument("--layout", choices=("per-rank", "single"), default="per-rank",
                   help="ti only: one file per rank plus a list file (default), or one file")
    p.add_argument("--lossy", action="store_true",
                   help="ti only: drop what SimGrid cannot express (with a warning) "
                        "instead of failing")


def run(args) -> int:
    """Convert into minitrace (validated) or, with --to, out of it; exit status 0."""
    if args.to != "minitrace":
        if len(args.input) != 1:
            raise MinitraceError(f"--to {args.to} reads one minitrace file")
        if args.source not in ("auto",):
            raise MinitraceError(f"--from applies to conversions into minitrace; --to {args.to} "
                                 "reads a minitrace file", args.input[0])
        return export(args.input[0], args.output, args.to, args.layout, args.lossy)
    path = args.input[0] if len(args.input) == 1 else args.input
    return into_minitrace(path, args.output, args.source, args.keep_regions, args.keep_going)


#: Provenance keys a reader leaves in ``meta`` when it left something out, and what they say.
_LEFT_OUT = (("user_regions_dropped", "user regions dropped (--keep-regions keeps them)"),
             ("collectives_without_sizes", "collectives without recorded sizes"),
             ("collectives_without_root", "rooted collectives whose root the source does not "
              "record (peer -1)"),
             ("unmapped_events", "events not attached to an MPI call"),
             ("requests_never_completed", "requests never completed"),
             ("tests_outcome_unknown", "MPI_Test/Testall calls without events, read as not "
              "completed (the archive has no MpiRequestTest event: a test of null handles "
              "cannot be told from a failed one)"),
             ("ignored_actions", "TI actions with nothing to keep in the model"),
             ("collective_vectors_estimated", "alltoallv/alltoallw per-member bytes estimated "
              "(the source keeps each member's totals: its sends shared out in proportion to "
              "what the others receive, exact for a uniform exchange)"),
             ("io_calls_without_mpi_io_handles", "MPI-IO calls read without their file (-1): "
              "their I/O events name another paradigm's handles only (e.g. POSIX), no MPI-IO "
              "one"))


def _counted(counts: dict) -> str:
    """``{"comm_split": 10}`` as ``comm_split x10``."""
    return ", ".join(f"{k} x{v}" for k, v in counts.items())


def _seconds_as_flops(data) -> list[str]:
    """A note when a trace read as flops has every compute amount below one flop: seconds
    written as flops (TI text holds no unit; minitrace's TI export of a trace in seconds writes
    them so, and says it), which a replay takes as almost no compute.  UK-MAC CloverLeaf
    exported to TI and read back was predicted at 0.011 s instead of 0.902 s."""
    if data.meta.get("volume_unit") != "flops":
        return []
    vol = data.actions["volume"][data.actions["kind"] == K.code("compute")]
    if not len(vol) or not 0 < float(vol.max()) < 1:
        return []
    return [f"every compute amount is below 1 flop (the largest {float(vol.max()):.3g}): "
            f"seconds written as flops? TI holds no unit (minitrace's TI export writes "
            f"seconds so); a replay takes them as flops, almost no compute"]


def into_minitrace(path, output, fmt: str = "auto", keep_regions: bool = False,
                   keep_going: bool = False) -> int:
    """Convert a foreign trace and say (on stderr) what was left out: the one path of
    ``minitrace convert`` and ``minitrace import``.  Validation problems are reported, not
    fatal."""
    c = convert(path, output, "minitrace", fmt, keep_regions, keep_going)
    data, rep, m = c.data, c.validation, c.data.meta
    notes = []
    if m.get("dropped_mpi_calls"):
        notes.append("MPI calls without an action kind dropped: "
                     + _counted(m["dropped_mpi_calls"]))
    notes += [f"{what}: {m[key]}" for key, what in _LEFT_OUT if m.get(key)]
    if m.get("comm_calls_without_comms"):
        notes.append("communicator calls kept without their communicators (the source does "
                     "not say which; comm 0, a new communicator -1): "
                     + _counted(m["comm_calls_without_comms"]))
    if m.get("requests_linked_in_order"):
        notes.append("non-blocking collectives without request events, each linked to the "
                     "next wait without events in order: "
                     + _counted(m["requests_linked_in_order"]))
    if m.get("volume_source"):
        notes.append(f"compute volume in {m['volume_unit']}: {m['volume_source']}")
    notes += _seconds_as_flops(data)
    for n in notes:
        print(f"minitrace: note: {n}", file=sys.stderr)
    for d in m.get("damaged", []):
        print(f"minitrace: warning: damaged input, trace marked incomplete: {d}", file=sys.stderr)
    check = "valid" if rep.ok else f"{rep.summary()} (see: minitrace validate {output})"
    where = f"{len(path)} files" if isinstance(path, (list, tuple)) else path
    print(f"{output}: {data.nranks} ranks, {len(data.actions)} actions from "
          f"{m.get('source_format', fmt)} {where}; {check}")
    return 0


def export(path: str, output: str, fmt: str, layout: str = "per-rank",
           lossy: bool = False) -> int:
    """Write a minitrace file as OTF2, TI, CSV or Perfetto JSON and say what the format could
    not say: the one path of ``minitrace convert --to`` and ``minitrace export``."""
    c = convert(path, output, fmt, layout=layout, lossy=lossy)
    data = c.data
    if fmt == "otf2":
        _otf2_notes(c)
        print(f"{output}/traces.otf2: {data.nranks} ranks, {len(data.actions)} actions")
    elif fmt == "csv":
        print(f"{output}: {c.written} actions")
    elif fmt == "perfetto":
        print(f"{output}: {data.nranks} ranks, {c.written} trace events (open in "
              "https://ui.perfetto.dev)")
    else:
        for line in c.ti.lines():
            print(f"minitrace: warning: {line}", file=sys.stderr)
        extra = f" + {len(c.ti.files) - 1} rank files" if layout == "per-rank" else ""
        print(f"{output}{extra}: {data.nranks} ranks, "
              f"{'exact' if c.ti.exact else 'with the warnings above'}")
    return 0


def _otf2_notes(c: Converted) -> None:
    for kind, n in sorted(c.lossy.items()):
        what = ("written without their per-peer byte vector (OTF2 keeps totals)"
                if kind in VECTOR_KINDS else "" if " (" in kind else     # says it itself
                "written as MPI regions only (OTF2 has no event for their arguments)")
        print(f"minitrace: note: {n} {kind} action(s) {what}".rstrip(), file=sys.stderr)
    for line in otf2_not_written(c.data):
        print(f"minitrace: note: {line}", file=sys.stderr)


def otf2_not_written(data) -> list[str]:
    """What an OTF2 archive of ``data`` does not hold, though an import back would replay it
    otherwise: the compute volumes when they are not the times between the calls (the archive
    has no metric for them; an import takes the time outside MPI calls), and the recorded
    program's MPI library (an import's replay takes the calibrated MPI's collectives).  UK-MAC
    CloverLeaf recorded under Open MPI on a loaded machine came back with 5.10 s of compute for
    its 2.18 s of CPU time (wall time between the calls) and MPICH's collectives, and was
    predicted at 4.25 s, not 1.26 s, without a word."""
    a = data.actions
    comp = a["kind"] == K.code("compute")
    out = []
    vol = float(a["volume"][comp].sum())
    unit = data.meta.get("volume_unit", "seconds")
    timed = bool(np.any(a["t_end"]))
    gap = float((a["t_end"][comp] - a["t_start"][comp]).sum()) if timed else vol
    if comp.any() and (unit != "seconds" or abs(vol - gap) > 0.01 * max(gap, vol)):
        out.append(f"compute volumes not written ({vol:.6g} {unit}; OTF2 holds times, no "
                   f"metric is written): an import takes each compute's time outside MPI "
                   f"calls ({gap:.6g} s)")
    lib = data.meta.get("mpi_library")
    if lib:
        first = " ".join(str(lib).strip().splitlines()[0].split()) if str(lib).strip() else ""
        out.append(f"the recorded program's MPI library not written ({first}): an import's "
                   f"replay takes the calibrated MPI's collectives unless --collectives says")
    return out


def replaced_by(old: str, new: str) -> None:
    """Say (on stderr, after the work) that an older spelling has a replacement."""
    print(f"minitrace: note: 'minitrace {old}' is replaced by 'minitrace {new}' (the same "
          "conversion)", file=sys.stderr)
