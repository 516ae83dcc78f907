"""``minitrace import-tasks TASKS.rec -o FILE.h5``: a StarPU task trace into ``/tasks``."""
from __future__ import annotations

from ..outputs import check_disjoint, check_output_file
from . import COMMANDS


def register(sub) -> None:
    p = sub.add_parser("import-tasks", help=COMMANDS["import-tasks"],
                       description="Read a StarPU (or TiKKi) tasks.rec file (recutils: JobId, "
                                   "SubmitOrder, DependsOn, Handles, Modes, Sizes, StartTime, "
                                   "EndTime, WorkerId...), check its graph and store it as a "
                                   "minitrace file's /tasks group, for simulate-tasks.")
    p.add_argument("trace", metavar="TASKS.rec")
    p.add_argument("-o", "--output", required=True, metavar="FILE.h5", help="file to write")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..tasks.starpu_rec import read_rec
    from ..tasks.taskfile import write_tasks
    from ..tasks.validate import check_graph
    check_output_file(args.output)
    check_disjoint([args.trace], [args.output])
    g = read_rec(args.trace)
    check_graph(g, args.trace)
    write_tasks(args.output, g, meta={"source_format": "starpu-rec"})
    s = g.summary()
    print(f"{args.output}: {s['tasks']} tasks ({s['kernels']} kernels), {s['edges']} "
          f"dependences, {s['handles']} data handles, {s['task_seconds']:.6g} s in tasks")
    return 0
