"""``minitrace diff A B``: what differs in the provenance of two minitrace files."""
from __future__ import annotations

import h5py

from .. import provenance as prov
from ..errors import MinitraceError
from ..storage import read_attrs, read_provenance
from . import COMMANDS

EXIT_DIFFERENT = 3

#: The file's own attributes that describe the run it holds, compared as ``run.KEY``: the
#: provenance's MPI library is the writer's (the one mpi4py loads), not the recorded
#: program's, so UK-MAC CloverLeaf recorded under MPICH 4.0.2 and under Open MPI 4.1.4 differed
#: only by command line, directory and date.
RUN_KEYS = ("mpi_library", "command_line", "nranks", "hosts", "volume_unit", "complete")


def register(sub) -> None:
    """The ``diff`` sub-command (listed in minitrace.commands.COMMANDS)."""
    p = sub.add_parser(
        "diff", help=COMMANDS["diff"],
        description="Print every provenance entry (command line, versions, MPI library, host, "
                    "CPU, caches, memory, governor, MPI environment variables, lstopo's XML) "
                    "that differs between two minitrace files, as 'key: A -> B', and the "
                    "recorded run's own MPI library, command, ranks, hosts and volume unit "
                    "(run.*). Exit status 0 when nothing differs, 3 when something does.")
    p.add_argument("a", help="first minitrace file")
    p.add_argument("b", help="second minitrace file")
    p.add_argument("--ignore", action="append", default=[], metavar="KEY",
                   help="leave out a key and the keys under it (e.g. date, cwd, versions); "
                        "repeatable")
    p.set_defaults(func=run)


def run(args) -> int:
    """Print the differences, one key per line (a unified diff for multi-line text)."""
    records = []
    for path in (args.a, args.b):
        p = read_provenance(path)
        if p is None:
            raise MinitraceError("has no provenance (written before minitrace recorded it)",
                                 path)
        records.append({**p, "run": _run_attrs(path)})
    diffs = [d for d in prov.differences(*records)
             if not any(d[0] == k or d[0].startswith(k + ".") for k in args.ignore)]
    if not diffs:
        print(f"no difference in provenance between {args.a} and {args.b}")
        return 0
    print(f"provenance: {len(diffs)} differences between A = {args.a} and B = {args.b}")
    for key, va, vb in diffs:
        for line in prov.describe_difference(key, va, vb):
            print(f"  {line}")
    return EXIT_DIFFERENT


def _run_attrs(path: str) -> dict:
    """The file's attributes of :data:`RUN_KEYS` it has (a trace's; a bench file has none)."""
    with h5py.File(path, "r") as f:
        attrs = read_attrs(f)
    return {k: attrs[k] for k in RUN_KEYS if k in attrs}
