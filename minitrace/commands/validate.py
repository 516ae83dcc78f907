"""``minitrace validate FILE``: check a trace's consistency (exit 0 if sound, 1 if not)."""
from __future__ import annotations

from ..tasks.taskfile import describe, has_tasks, read_tasks
from ..tasks.validate import check_graph
from ..trace import open as open_trace
from ..validate import validate


def register(sub) -> None:
    p = sub.add_parser("validate", help="check a trace's consistency",
                       description="Check that every rank has init and finalize, that "
                                   "point-to-point messages match across ranks in count, order "
                                   "and bytes, that collectives agree across their communicator "
                                   "and that every request is completed; of a task graph "
                                   "(/tasks), that it has no cycle and names only known tasks "
                                   "and data.  Exit status 0 when no problem is found, 1 "
                                   "otherwise.")
    p.add_argument("file", help="minitrace HDF5 file")
    p.add_argument("--max", type=int, default=50, metavar="N",
                   help="print at most N problems (default 50; 0 = all)")
    p.set_defaults(func=run)


def run(args) -> int:
    with open_trace(args.file) as t:
        if not t.has_trace and has_tasks(args.file):     # a task graph: its checks
            graph = read_tasks(args.file)
            check_graph(graph, args.file)
            print(f"{args.file}: task graph sound: {describe(graph)}")
            return 0
        rep = validate(t.data())
    print(f"{args.file}: {rep.summary()}")
    for line in rep.lines(args.max or None):
        print(f"  {line}")
    return 0 if rep.ok else 1
