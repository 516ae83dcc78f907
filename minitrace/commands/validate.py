"""``minitrace validate FILE``: check a trace's consistency (exit 0 if sound, 1 if not)."""
from __future__ import annotations

from ..parallel.world import launched_size
from ..trace import open as open_trace
from ..validate import validate


def register(sub) -> None:
    p = sub.add_parser("validate", help="check a trace's consistency",
                       description="Check that every rank has init and finalize, that "
                                   "point-to-point messages match across ranks in count, order "
                                   "and bytes, that collectives agree across their communicator "
                                   "and that every request is completed.  Exit status 0 when no "
                                   "problem is found, 1 otherwise.  Under `mpiexec -n K` the K "
                                   "processes share the ranks (the same report).")
    p.add_argument("file", help="minitrace HDF5 file")
    p.add_argument("--max", type=int, default=50, metavar="N",
                   help="print at most N problems (default 50; 0 = all)")
    p.set_defaults(func=run)


def run(args) -> int:
    if launched_size() > 1:      # under mpiexec -n K: the workers share the ranks
        from ..parallel.validate import validate_parallel
        from ..parallel.world import World
        world = World()
        rep = validate_parallel(world, args.file)
        if not world.root:
            return 0 if world.bcast(None) else 1
        world.bcast(rep.ok)
    else:
        with open_trace(args.file) as t:
            rep = validate(t.data())
    print(f"{args.file}: {rep.summary()}")
    for line in rep.lines(args.max or None):
        print(f"  {line}")
    return 0 if rep.ok else 1
