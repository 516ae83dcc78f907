"""``minitrace extrapolate RUN_A RUN_B RUN_C ... --ranks N -o BIG.h5``: a trace at a scale
that was not recorded, from runs at three or more smaller ones (docs/EXTRAPOLATE.md)."""
from __future__ import annotations

from ..errors import MinitraceError
from ..outputs import check_disjoint, check_output_file
from ..options import MAX_RANKS, MAX_SEED, number
from . import COMMANDS


def register(sub) -> None:
    p = sub.add_parser("extrapolate", help=COMMANDS["extrapolate"],
                       description="Check that the runs are one program at several scales, fit "
                                   "each loop count, message size and compute volume per rank "
                                   "class as c0 + c1 * p^i * log2(p)^j (chosen by leave-one-"
                                   "scale-out error) and write the compressed trace at --ranks. "
                                   "Programs on a 2-D or 3-D process grid (cart_create, or "
                                   "nearest-neighbour peers) are extrapolated by grid position "
                                   "(corners, edges, faces, interior) onto the target grid. "
                                   "Refuses targets more than 64x the largest run and fits "
                                   "whose leave-one-out error exceeds --threshold, unless "
                                   "--force.")
    p.add_argument("runs", nargs="+", metavar="RUN.h5", help="traces at 3 or more scales")
    p.add_argument("--ranks", type=number("--ranks", 1, MAX_RANKS, integer=True), metavar="N",
                   help="target number of ranks (with --check: the largest run's)")
    p.add_argument("-o", "--output", help="extrapolated trace to write")
    p.add_argument("--scaling", choices=("weak", "strong"), default="weak",
                   help="strong also searches decreasing laws (p^-i); default weak")
    p.add_argument("--threshold", type=number("--threshold", 0, 1, above=True), default=0.05,
                   help="leave-one-out SMAPE above which a fit is refused (default 0.05)")
    p.add_argument("--force", action="store_true",
                   help="extrapolate despite peer mismatches, poor fits or a far target "
                        "(and say which)")
    p.add_argument("--grid", metavar="AxB[xC]",
                   help="target process grid of a 2-D or 3-D program (default: as "
                        "MPI_Dims_create makes it for --ranks)")
    p.add_argument("--spread", choices=("sample", "none"), default="sample",
                   help="sample (default): each action's volume is its call's fitted typical "
                        "volume times a recorded ratio to it, each rank and time step taking "
                        "those of one recorded rank drawn from its class (the imbalance "
                        "between ranks, a rank's slow stretches together); none: the means "
                        "(a smaller file, an optimistic replay)")
    p.add_argument("--seed", type=number("--seed", 0, MAX_SEED, integer=True), default=0,
                   help="seed of --spread sample (default 0)")
    p.add_argument("--check", action="store_true",
                   help="extrapolate the largest run from the others and compare structure "
                        "and replayed time")
    p.add_argument("--compute-rate", metavar="RATE", default="1Gf",
                   help="for --check's replays: flops per unit of compute volume "
                        "(default 1Gf)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..extrapolate import build as B
    from ..extrapolate import check as C
    from ..extrapolate import direct as D
    from ..extrapolate import grid as GR
    runs = C.load_runs(args.runs)
    if args.check:
        if args.grid:
            raise MinitraceError("--check extrapolates to the largest run's grid: no --grid")
        return C.report(C.self_check(runs, args.scaling, args.threshold, args.force,
                                     args.compute_rate, args.output,
                                     args.spread == "sample", args.seed))
    if args.ranks is None or args.output is None:
        raise MinitraceError("extrapolate: --ranks N and -o OUTPUT are needed (or --check)")
    check_output_file(args.output)
    check_disjoint(args.runs, [args.output])
    dims = GR.parse(args.grid) if args.grid else None
    progs, parameters, forced = B.plan(runs, args.ranks, args.scaling, args.force,
                                       args.threshold, dims, args.spread == "sample", args.seed)
    B.print_table(parameters, args.ranks)
    for line in forced:
        print(f"forced: {line}")
    B.print_grid(progs.meta["extrapolated"])
    nactions = D.write(args.output, progs)
    print(f"{args.output}: {progs.nranks} ranks, {nactions} actions, extrapolated "
          f"({args.scaling} scaling) from {', '.join(r.path for r in runs)}")
    return 0
