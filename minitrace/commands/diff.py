"""``minitrace diff A B``: what differs in the provenance of two minitrace files."""
from __future__ import annotations

from .. import provenance as prov
from ..errors import MinitraceError
from ..storage import read_provenance

EXIT_DIFFERENT = 3


def register(sub) -> None:
    """The ``diff`` sub-command (discovered by minitrace.cli)."""
    p = sub.add_parser(
        "diff", help="compare the provenance of two minitrace files",
        description="Print every provenance entry (command line, versions, MPI library, host, "
                    "CPU, caches, memory, governor, MPI environment variables, lstopo's XML) "
                    "that differs between two minitrace files, as 'key: A -> B'. Exit status "
                    "0 when nothing differs, 3 when something does.")
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
        records.append(p)
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
