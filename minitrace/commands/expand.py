"""``minitrace expand IN -o OUT``: a compressed trace back in the column form."""
from __future__ import annotations

import os

from ..outputs import check_disjoint, check_output_file
from . import COMMANDS


def register(sub) -> None:
    p = sub.add_parser("expand", help=COMMANDS["expand"],
                       description="Write the trace of IN (compressed by `minitrace compress`) "
                                   "in the uncompressed column form: action for action the "
                                   "trace that was compressed (with --volumes model, the "
                                   "modelled volumes and times).")
    p.add_argument("input", help="minitrace HDF5 file (either form)")
    p.add_argument("-o", "--output", required=True, help="uncompressed file to write")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..compress.files import content_meta
    from ..storage import write_trace
    from ..trace import open as open_trace
    check_output_file(args.output)
    check_disjoint([args.input], [args.output])
    with open_trace(args.input) as t:
        data = t.data()
    data.meta = content_meta(data.meta)
    write_trace(args.output, data)
    n = len(data.actions)
    print(f"{args.output}: {n} actions, {os.path.getsize(args.output) / max(n, 1):.3f} "
          f"bytes/action")
    return 0
