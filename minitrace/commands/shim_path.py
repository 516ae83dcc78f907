"""``minitrace shim-path [-- COMMAND...]``: the PMPI shim to preload by hand (srun, mpirun -x),
the one ``record`` would use for COMMAND (shims.choose), and why (on stderr)."""
from __future__ import annotations

import sys

from ..shims import choose
from . import COMMANDS


def register(sub) -> None:
    p = sub.add_parser("shim-path", help=COMMANDS["shim-path"],
                       description="Print the path of the PMPI shim to preload by hand, e.g. "
                                   "LD_PRELOAD=$(minitrace shim-path -- ./app) MINITRACE_DIR=raw "
                                   "srun ./app then minitrace merge raw; with a command, the "
                                   "shim for the MPI library its program is linked against "
                                   "(built once if needed), and why on stderr.")
    add_command(p)
    p.set_defaults(func=run)


def add_command(p) -> None:
    p.add_argument("command", nargs="*", metavar="COMMAND",
                   help="the command to be run (after --), e.g. -- srun -n 4 ./app")


def run(args) -> int:
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    choice = choose(cmd)
    print(choice.path)
    print(f"minitrace: {choice.why}", file=sys.stderr)
    return 0
