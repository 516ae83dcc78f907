"""``minitrace compress IN -o OUT``: the compressed form of a trace (loop grammars shared by
ranks, volumes exact or modelled)."""
from __future__ import annotations

import os

from ..compress.volumes import FINEST_PRECISION
from ..options import number
from ..outputs import check_disjoint, check_output_file
from . import COMMANDS


def register(sub) -> None:
    p = sub.add_parser("compress", help=COMMANDS["compress"],
                       description="Write the trace of IN in the compressed form: each rank's "
                                   "calls as rank-relative signatures folded into nested loops, "
                                   "programs shared by ranks; volumes and times kept exactly "
                                   "(lossless: `minitrace expand` gives the trace back) or "
                                   "modelled within --precision.  minitrace reads both forms.")
    p.add_argument("input", help="minitrace HDF5 file (either form)")
    p.add_argument("-o", "--output", required=True, help="compressed file to write")
    p.add_argument("--volumes", default="exact", metavar="exact|bounded:P%|model",
                   help="exact: every volume kept (default); bounded:P%%: each volume within "
                        "P%% of its own; model: the call sites' distributions within "
                        "--precision, per-rank totals exact, times modelled (finer epochs "
                        "where ranks take turns at being the slowest, within 0.2 bytes per "
                        "action where they fit: docs/COMPRESS.md)")
    p.add_argument("--times", default="exact", metavar="exact|bounded:T",
                   help="exact: every start and end kept (default); bounded:T (e.g. 1us): "
                        "each within T of its own")
    p.add_argument("--precision", type=number("--precision", FINEST_PRECISION, 1, below=True),
                   default=0.01,
                   help="relative precision of modelled volumes (default 0.01)")
    p.add_argument("--unpacked", action="store_true",
                   help="each array its own HDF5 dataset and the metadata as HDF5 "
                        "attributes, as files written before the pack (format version 2-5; "
                        "small arrays are otherwise packed into /trace/packed, a model's "
                        "LZMA-coded /trace/packed_lzma (version 14) where smaller, or the "
                        "packed_bytes attribute, and the metadata into packed_meta, version "
                        "6: smaller files, read by minitrace alike)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..compress.files import sizes, write_compressed
    from ..trace import open as open_trace
    check_output_file(args.output)
    check_disjoint([args.input], [args.output])
    before = os.path.getsize(args.input)
    with open_trace(args.input) as t:
        data = t.data()
    took = write_compressed(args.output, data, args.volumes, args.precision, times=args.times,
                            pack=not args.unpacked)
    s = {"actions": len(data.actions), "seconds": took, **sizes(args.output)}
    n = max(s["actions"], 1)
    speed = s["actions"] / s["seconds"] if s["seconds"] > 0 else float("inf")
    print(f"{args.output}: {s['actions']} actions, {s['file_bytes'] / n:.3f} bytes/action "
          f"(structure {s['structure_bytes'] / n:.4f}, {args.volumes} volumes and "
          f"{args.times if args.volumes != 'model' else 'modelled'} times "
          f"{s['side_bytes'] / n:.3f}); {args.input} was {before / n:.3f} bytes/action "
          f"({before / max(s['file_bytes'], 1):.1f}x); compressed in {s['seconds']:.2f} s "
          f"({speed / 1e6:.2f} M actions/s)")
    return 0
