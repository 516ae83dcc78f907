"""``minitrace merge DIR``: turn the shim's per-rank raw files into one HDF5 trace."""
from __future__ import annotations

import os

from ..merge import merge_to_file


def register(sub) -> None:
    p = sub.add_parser("merge", help="merge raw per-rank files of the recorder into a trace",
                       description="Read the rank-*.mtr files the PMPI shim wrote into DIR "
                                   "(also those of a killed run: it is marked incomplete), write "
                                   "one HDF5 trace, validate it and print its summary.  Exit "
                                   "status 1 when the trace is incomplete or invalid.")
    p.add_argument("dir", help="directory of rank-*.mtr files (MINITRACE_DIR of the run)")
    p.add_argument("-o", "--output", help="trace file to write (default: DIR.h5)")
    p.set_defaults(func=run)


def run(args) -> int:
    out = args.output or os.path.normpath(args.dir) + ".h5"
    return 0 if merge_to_file(args.dir, out) else 1
