"""``minitrace predict TRACE --calibration F``: predict a run time from a calibrated machine."""
from __future__ import annotations

import json

from ..collectives import CHOICES
from ..errors import MinitraceError, naming
from ..outputs import check_disjoint
from ..replay import ENGINES
from ..replay import spread_options
from ..options import MAX_RANKS, MAX_SECONDS, MAX_THREADS, number
from . import COMMANDS


def register(sub) -> None:
    """Add the ``predict`` subcommand (listed in minitrace.commands.COMMANDS)."""
    p = sub.add_parser(
        "predict", help=COMMANDS["predict"],
        description="Replay TRACE with the SMPI options, platform, compute and reduction "
                    "rates of a calibration file ('minitrace calibrate'): no knob to guess.  "
                    "On the calibrated machine (no --platform/--cluster), a timed trace is "
                    "also checked against its recording: error in total and per rank, "
                    "MPI_Init as its own term, where the time goes, and whether the recording "
                    "is comparable (ranks descheduled).")
    p.add_argument("trace", help="minitrace trace file")
    p.add_argument("--calibration", required=True, metavar="F", help="calibration file")
    plat = p.add_argument_group("platform (default: the calibrated machine)")
    plat.add_argument("--platform", metavar="XML", help="another machine's SimGrid platform")
    plat.add_argument("--hostfile", metavar="F", help="host of each rank (with --platform)")
    plat.add_argument("--cluster", metavar="N",
                      type=number("--cluster", 1, MAX_RANKS, integer=True),
                      help="a generated cluster of N calibrated hosts")
    plat.add_argument("--ranks-per-node", metavar="K",
                      type=number("--ranks-per-node", 1, MAX_THREADS, integer=True),
                      help="ranks per generated host (default: as calibrated)")
    p.add_argument("--timeline", metavar="PNG",
                   help="plot recorded vs replayed time per rank (self-check)")
    p.add_argument("--lossy", action="store_true",
                   help="replay even if the TI export must drop actions")
    p.add_argument("--timeout", type=number("--timeout", 0, MAX_SECONDS, above=True),
                   default=600.0,
                   metavar="S")
    p.add_argument("--engine", choices=ENGINES, default="auto")
    p.add_argument("--collectives", choices=CHOICES, default="auto",
                   help="whose collective algorithms: the MPI library that ran the program "
                        "(auto, default; the calibrated job's MPI when the trace does not say), "
                        "mpich, "
                        "ompi or simgrid (docs/REPLAY.md, 'Collectives')")
    other = p.add_argument_group("another machine (docs/PREDICT.md, 'Another machine')")
    other.add_argument("--recorded-on", metavar="A.h5",
                       help="calibration of the machine the trace was recorded on, when "
                            "--calibration is another machine's: its compute is translated")
    other.add_argument("--probe", metavar="RUN.h5",
                       help="a short run of the same program recorded on the calibrated "
                            "machine: each call site's speed ratio, and an interval")
    other.add_argument("--measured", type=number("--measured", 0, above=True), metavar="SECONDS",
                       help="the run time measured on the target, to compare with")
    p.add_argument("--no-range", action="store_true",
                   help="one replay: no range of the after-compute cost (its two kernels "
                        "alone) nor of a translation (its low and high ratios), each two more "
                        "replays")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--plot", metavar="PNG",
                   help="with --replicas: the histogram of the replicas' run times")
    spread_options.add_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..converters.detect import read_paths
    from ..predict import predict, report
    if args.platform and (args.cluster or args.ranks_per_node):
        raise MinitraceError("--cluster and --ranks-per-node describe a generated cluster: "
                             "drop them or --platform")
    if args.hostfile and not args.platform:
        raise MinitraceError("--hostfile needs --platform")
    check_disjoint([*read_paths(args.trace), args.calibration, args.platform, args.hostfile],
                   [args.timeline, args.plot])
    spread_options.check(args, {"--timeline": bool(args.timeline),
                                "--plot without --replicas": bool(args.plot)
                                and args.replicas is None})
    for png in (args.timeline, args.plot):
        if png:
            from ..analysis.plotting import check_plot_path
            check_plot_path(png)
    if spread_options.wanted(args):
        from ..predict.calibration import load
        from ..predict.prediction import (load_flags, replay_options, translated,
                                          with_modelled_terms)
        from ..replay.sampling import load_trace
        data = load_trace(args.trace, args.trace)
        cal = load(args.calibration)
        source = load(args.recorded_on) if args.recorded_on else None
        data, translation, _ = translated(data, cal, source, args.probe, args.trace)
        data = with_modelled_terms(data, cal, translation).data
        kw = replay_options(data, cal, args.trace, platform=args.platform,
                            hostfile=args.hostfile, hosts=args.cluster,
                            ranks_per_host=args.ranks_per_node, timeout=args.timeout,
                            engine=args.engine, collectives=args.collectives, lossy=args.lossy)
        with naming(args.trace):
            return spread_options.run(args, data, args.trace, kw, args.plot,
                                      warnings=load_flags(cal, source))
    with naming(args.trace):
        p = predict(args.trace, args.calibration, platform=args.platform,
                    hostfile=args.hostfile, hosts=args.cluster,
                    ranks_per_host=args.ranks_per_node, timeline=args.timeline,
                    timeout=args.timeout, engine=args.engine, collectives=args.collectives,
                    lossy=args.lossy, recorded_on=args.recorded_on, probe=args.probe,
                    measured=args.measured, ranges=not args.no_range)
    print(json.dumps(p.to_dict(), indent=1) if args.json else report(p))
    return 0
