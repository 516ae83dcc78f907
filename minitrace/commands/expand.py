"""``minitrace expand IN -o OUT``: a compressed trace back in the column form."""
from __future__ import annotations

import os

from ..outputs import check_disjoint, check_output_file


def register(sub) -> None:
    p = sub.add_parser("expand", help="write a compressed trace back uncompressed",
                       description="Write the trace of IN (compressed by `minitrace compress`) "
                                   "in the uncompressed column form: action for action the "
                                   "trace that was compressed (with --volumes model, the "
                                   "modelled volumes and times).")
    p.add_argument("input", help="minitrace HDF5 file (either form)")
    p.add_argument("-o", "--output", required=True, help="uncompressed file to write")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..compress.files import expand_file
    check_output_file(args.output)
    check_disjoint([args.input], [args.output])
    n = expand_file(args.input, args.output)
    print(f"{args.output}: {n} actions, {os.path.getsize(args.output) / max(n, 1):.3f} "
          f"bytes/action")
    return 0
