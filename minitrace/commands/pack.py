"""``minitrace pack FILE -o ONE.h5``: one self-contained file from a trace written in parts."""
from __future__ import annotations

from ..outputs import check_disjoint, check_output_file
from ..parallel.parts import pack, parts_dir
from . import COMMANDS


def register(sub) -> None:
    p = sub.add_parser("pack", help=COMMANDS["pack"],
                       description="A parallel merge (`mpiexec -n K minitrace merge`) writes "
                                   "OUT.h5 over part files in OUT.parts/; pack copies it, parts "
                                   "included, into one file that needs nothing beside it (any "
                                   "other minitrace file is copied as it is).  Streams a few "
                                   "chunks at a time: memory stays small.")
    p.add_argument("file", help="minitrace HDF5 file (e.g. the OUT.h5 of a parallel merge)")
    p.add_argument("-o", "--output", required=True, help="the single file to write")
    p.set_defaults(func=run)


def run(args) -> int:
    check_output_file(args.output)
    check_disjoint([args.file, parts_dir(args.file)], [args.output])
    pack(args.file, args.output)
    print(f"{args.output}: {args.file} packed into one file")
    return 0
