"""``minitrace validate FILE``: check a trace's consistency (exit 0 if sound, 1 if not)."""
from __future__ import annotations

from ..options import number
from ..parallel.world import World, launched_size
from . import COMMANDS


def register(sub) -> None:
    p = sub.add_parser("validate", help=COMMANDS["validate"],
                       description="Check that every rank has init and finalize, that "
                                   "point-to-point messages match across ranks in count, order "
                                   "and bytes, that collectives agree across their communicator "
                                   "and that every request is completed; of a task graph "
                                   "(/tasks), that it has no cycle and names only known tasks "
                                   "and data.  Exit status 0 when no problem is found, 1 "
                                   "otherwise.  Under `mpiexec -n K` the K processes share the "
                                   "ranks (the same report).")
    p.add_argument("file", help="minitrace HDF5 file")
    p.add_argument("--max", type=number("--max", 0, integer=True), default=50, metavar="N",
                   help="print at most N problems (default 50; 0 = all)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..tasks.taskfile import describe, read_tasks, task_ranks
    from ..tasks.validate import check_graph
    from ..trace import open as open_trace
    from ..validate import validate
    parallel = launched_size() > 1
    with open_trace(args.file) as t:
        sound = []                # task graphs (of each rank of an MPI+OpenMP recording)
        for rank in task_ranks(args.file):
            graph = read_tasks(args.file, rank)
            check_graph(graph, args.file + (f" (rank {rank})" if t.has_trace else ""))
            sound.append(f"{args.file}: task graph{f' of rank {rank}' if t.has_trace else ''}"
                         f" sound: {describe(graph)}")
        if not t.has_trace and sound:
            if not parallel or World().root:
                print("\n".join(sound))
            return 0
        if not parallel:
            rep = validate(t.data())
    if parallel:      # under mpiexec -n K: the workers share the ranks
        from ..parallel.validate import validate_parallel
        world = World()
        rep = validate_parallel(world, args.file)
        if not world.root:
            return 0 if world.bcast(None) else 1
        world.bcast(rep.ok)
    print("\n".join([*sound, f"{args.file}: {rep.summary()}"]))
    for line in rep.lines(args.max or None):
        print(f"  {line}")
    return 0 if rep.ok else 1

