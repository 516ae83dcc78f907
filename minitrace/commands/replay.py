"""``minitrace replay FILE``: predict a run time by replaying the trace on a SimGrid platform."""
from __future__ import annotations

import json
import math

import numpy as np

from ..collectives import CHOICES
from ..errors import MinitraceError, naming
from ..outputs import check_disjoint, check_output_file
from ..replay.platforms import DEFAULT_BANDWIDTH, DEFAULT_LATENCY, DEFAULT_SPEED, Cluster
from ..replay import DEFAULT_CONFIG, ENGINES, invalid_flag, replay
from ..replay import spread_options
from ..options import MAX_RANKS, MAX_SECONDS, MAX_THREADS, number
from . import COMMANDS


def register(sub) -> None:
    """Add the ``replay`` subcommand (listed in minitrace.commands.COMMANDS)."""
    p = sub.add_parser(
        "replay", help=COMMANDS["replay"],
        description="Replay a time-independent trace with SimGrid's SMPI replay and print the "
                    "simulated run time.  FILE is a minitrace HDF5 file, a SimGrid TI trace "
                    "(all ranks in one file) or a list file naming one TI trace per rank.  "
                    "Without --platform, a cluster of one host per rank is generated "
                    f"({DEFAULT_SPEED}, {DEFAULT_BANDWIDTH}, {DEFAULT_LATENCY} unless given).")
    p.add_argument("file", help="trace to replay")
    plat = p.add_argument_group("platform (a SimGrid XML file, or a generated cluster)")
    plat.add_argument("--platform", metavar="XML", help="SimGrid platform file")
    plat.add_argument("--hostfile", metavar="F",
                      help="host of each rank, one per line ('host:N' = N ranks); default: the "
                           "platform's hosts in order")
    plat.add_argument("--cluster", metavar="N",
                      type=number("--cluster", 1, MAX_RANKS, integer=True),
                      help="generate a cluster of N hosts (default: one per rank)")
    plat.add_argument("--speed", metavar="FLOPS", help=f"host speed (default {DEFAULT_SPEED})")
    plat.add_argument("--bandwidth", metavar="BW",
                      help=f"bandwidth of each host's link (default {DEFAULT_BANDWIDTH})")
    plat.add_argument("--latency", metavar="T",
                      help=f"latency of each host's link (default {DEFAULT_LATENCY})")
    plat.add_argument("--ranks-per-host", metavar="K",
                      type=number("--ranks-per-host", 1, MAX_THREADS, integer=True),
                      help="K consecutive ranks per generated host (K cores, a loopback link "
                           "of the host link's bandwidth and latency between them; default 1)")
    p.add_argument("--np", type=number("--np", 1, MAX_RANKS, integer=True), metavar="N",
                   help="number of ranks (checked against the trace)")
    p.add_argument("--cfg", action="append", default=[], metavar="KEY:VALUE",
                   help="SimGrid option, repeatable (defaults: "
                        + ", ".join(f"{k}:{v}" for k, v in DEFAULT_CONFIG.items()) + ")")
    p.add_argument("--compute-rate", metavar="RATE",
                   help="flops per unit of a minitrace file's compute volume when it is not "
                        "flops: the recording machine's speed for seconds (e.g. 2.5Gf), flops "
                        "per instruction (or cycle) for instructions (or cycles) from counters")
    p.add_argument("--reduction-rate", metavar="BW",
                   help="bytes/s at which the recording machine reduces data (MPI_SUM on "
                        "doubles), for traces timed in seconds: reductions then do bytes/BW of "
                        "work; without it they do none (the time measured inside an MPI call "
                        "is waiting, which the simulation models, never replayed as work)")
    p.add_argument("--lossy", action="store_true",
                   help="replay a minitrace file even if the TI export must drop actions")
    p.add_argument("--no-check", action="store_true",
                   help="replay without validating the trace first (a prediction from an "
                        "invalid trace is flagged; validating a compressed trace expands it)")
    p.add_argument("--timeout", type=number("--timeout", 0, MAX_SECONDS, above=True),
                   default=600.0,
                   metavar="S",
                   help="give up after S seconds of wall time (default 600)")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="native: the compiled replayer (SimGrid's fast contexts); python: "
                        "SimGrid's Python bindings (~6x slower); auto (default): native when "
                        "set-up built it")
    p.add_argument("--collectives", choices=CHOICES, default="auto",
                   help="whose collective algorithms: the MPI library that ran the program "
                        "(auto, default; SimGrid's defaults when the trace does not say), mpich, "
                        "ompi or simgrid (docs/REPLAY.md, 'Collectives')")
    p.add_argument("--breakdown", action="store_true",
                   help="also print where each rank's simulated time goes (compute, "
                        "point-to-point, collectives, waiting; native engine)")
    p.add_argument("--critical-path", action="store_true",
                   help="also print the chain of actions that determined the end time "
                        "(native engine)")
    p.add_argument("--perfetto", metavar="JSON",
                   help="write the replayed timeline (critical path marked) as Perfetto/Chrome "
                        "trace-event JSON, beside the recorded one when FILE is a timed "
                        "minitrace file (open it in ui.perfetto.dev)")
    p.add_argument("--plot", metavar="PNG",
                   help="draw that breakdown as stacked bars per rank (implies --breakdown); "
                        "with --replicas, the histogram of the replicas' run times")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    spread_options.add_options(p)
    p.set_defaults(func=run)


def _config(items: list[str]) -> dict[str, str]:
    cfg = {}
    for item in items:
        key, sep, value = item.partition(":")
        if not sep or not key:
            raise MinitraceError(f"--cfg wants KEY:VALUE, got {item!r}")
        cfg[key] = value
    return cfg


def run(args) -> int:
    """Replay and print the prediction (text or JSON); exit status 0."""
    from ..converters.detect import read_paths
    generated = [o for o in ("cluster", "speed", "bandwidth", "latency", "ranks_per_host")
                 if getattr(args, o) is not None]
    if args.platform and generated:
        raise MinitraceError(f"--{generated[0].replace('_', '-')} describes a generated "
                             f"cluster: drop it or --platform")
    cluster = None
    if not args.platform:
        cluster = Cluster(args.cluster, args.speed or DEFAULT_SPEED,
                          args.bandwidth or DEFAULT_BANDWIDTH, args.latency or DEFAULT_LATENCY,
                          ranks_per_host=args.ranks_per_host or 1)
    check_disjoint([*read_paths(args.file), args.platform, args.hostfile],
                   [args.plot, args.perfetto])
    spread_options.check(args, {"--breakdown": args.breakdown,
                                "--critical-path": args.critical_path,
                                "--perfetto": bool(args.perfetto),
                                "--plot without --replicas": bool(args.plot)
                                and args.replicas is None})
    if args.plot:
        from ..analysis.plotting import check_plot_path
        check_plot_path(args.plot)
    if args.perfetto:
        check_output_file(args.perfetto)
    if spread_options.wanted(args):
        kw = dict(platform=args.platform, hostfile=args.hostfile, np=args.np,
                  config=_config(args.cfg), cluster=cluster, compute_rate=args.compute_rate,
                  lossy=args.lossy, timeout=args.timeout, engine=args.engine,
                  collectives=args.collectives,
                  reduction_rate=args.reduction_rate)
        with naming(args.file):
            return spread_options.run(args, args.file, args.file, kw, args.plot)
    r = replay(args.file, platform=args.platform, hostfile=args.hostfile, np=args.np,
               config=_config(args.cfg), cluster=cluster, compute_rate=args.compute_rate,
               lossy=args.lossy, timeout=args.timeout, engine=args.engine,
               collectives=args.collectives, check=False if args.no_check else None,
               reduction_rate=args.reduction_rate,
               timeline=args.breakdown or args.critical_path or bool(args.plot or args.perfetto))
    if args.json:
        out = r.to_dict()
        if args.critical_path:
            out["critical_path"] = r.critical_path().to_dict(orient="records")
        print(json.dumps({"trace": args.file, **out}, indent=1))
        return 0
    print(f"predicted run time: {r.simulated_time:.9g} s  ({args.file}, {r.nranks} "
          f"ranks{invalid_flag(r.invalid)})")
    print(f"  platform: {r.platform}")
    ends = r.rank_end_times
    if len(ends) <= 8:
        print("  rank end times (s): " + " ".join(f"{t:.6g}" for t in ends))
    else:
        slowest = max(range(len(ends)), key=ends.__getitem__)
        print(f"  rank end times (s): min {min(ends):.6g}, mean {math.fsum(ends) / len(ends):.6g},"
              f" max {ends[slowest]:.6g} (rank {slowest})")
    print("  SimGrid options: " + " ".join(f"{k}:{v}" for k, v in r.config.items()))
    print(f"  simulation took {r.wall_time:.3g} s ({r.engine} replayer)")
    for note in r.notes:
        print(f"  note: {note}")
    if r.timeline is not None:
        _print_breakdown(r.breakdown())
        if args.plot:
            from ..replay.timeline import plot_breakdown
            plot_breakdown(r.breakdown(), args.plot, f"{args.file}: replayed time per rank")
            print(f"  plot: {args.plot}")
        if args.critical_path:
            _print_critical_path(r.critical_path())
        if args.perfetto:
            n = _write_perfetto(args.file, r, args.perfetto)
            print(f"  timeline: {args.perfetto} ({n} events)")
    return 0


def _print_breakdown(table) -> None:
    """Per rank (or min/mean/max over ranks beyond 8), seconds of simulated time by category."""
    cols = list(table.columns)
    print("  where the time goes (simulated s): " + ", ".join(cols))
    rows = table if len(table) <= 8 else table.agg(["min", "mean", "max"])
    for name, row in rows.iterrows():
        label = f"rank {name}" if len(table) <= 8 else name
        print(f"    {label:>8}: " + " ".join(f"{v:.6g}" for v in row))


def _print_critical_path(path, longest: int = 8) -> None:
    """The critical path's time per rank and category, and its longest actions."""
    span = path["end"] - path["start"]
    print(f"  critical path: {len(path)} actions, {span.sum():.6g} s of simulated time")
    by = span.groupby([path["rank"], path["category"]], observed=True).sum()
    for (rank, cat), sec in by[by > 0].sort_values(ascending=False).head(longest).items():
        print(f"    rank {rank} {cat}: {sec:.6g} s")
    top = path.assign(seconds=span).nlargest(min(longest, len(path)), "seconds")
    print("  longest actions on it: " + ", ".join(
        f"rank {a.rank} #{a.seq} {a.action} {a.seconds:.4g} s" for a in top.itertuples()))


def _write_perfetto(source: str, result, path: str) -> int:
    """The replayed timeline (process group 1), and the recorded one (group 0, shifted to start
    at 0 like the replay) when ``source`` is a minitrace file with timestamps."""
    from ..converters.perfetto import slices_events, trace_events, write_json
    from ..replay.timeline import perfetto_slices
    events = slices_events(1, "replayed (predicted)",
                           perfetto_slices(result.timeline, result.critical_path()),
                           cat="replay")
    with open(source, "rb") as fh:
        is_h5 = fh.read(8) == b"\x89HDF\r\n\x1a\n"
    if is_h5:
        from ..trace import open as open_trace
        with open_trace(source) as t:
            data = t.data()
        start = data.actions["t_start"]
        if len(start) and np.isfinite(start).any():
            t0 = float(np.nanmin(start))
            for col in ("t_start", "t_end"):
                data.actions[col] -= t0
            events += trace_events(data, 0, "recorded")
    return write_json(path, events)
