"""``minitrace shim-path``: the PMPI shim library, for LD_PRELOAD by hand (srun, mpirun -x)."""
from __future__ import annotations

from ..record import shim_path


def register(sub) -> None:
    p = sub.add_parser("shim-path", help="print the path of the PMPI shim library",
                       description="Print the path of the PMPI shim to preload by hand, e.g. "
                                   "LD_PRELOAD=$(minitrace shim-path) MINITRACE_DIR=raw srun ./app "
                                   "then minitrace merge raw.")
    p.set_defaults(func=run)


def run(args) -> int:
    print(shim_path())
    return 0
