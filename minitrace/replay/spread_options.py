"""The ``--sample`` and ``--replicas/--noise/--seed`` options that ``replay`` and ``predict``
share, and how their results are printed."""
from __future__ import annotations

import json
import sys

import numpy as np

from ..errors import MinitraceError
from ..options import MAX_REPLICAS, MAX_SEED, MAX_THREADS, number
from .api import checked, invalid_flag, invalid_note


def add_options(p) -> None:
    """Add iteration sampling and noise replica options to a subcommand's parser."""
    g = p.add_argument_group("long runs and run-to-run spread (docs/REPLAY.md)")
    g.add_argument("--sample", default="off", metavar="auto|off|K",
                   help="iteration sampling: replay the main loop until the time per "
                        "iteration is steady (auto) or K iterations per phase, skip the rest "
                        "and account for it, with an error bound (default off)")
    g.add_argument("--replicas", type=number("--replicas", 1, MAX_REPLICAS, integer=True),
                   metavar="N",
                   help="replay N replicas with compute volumes drawn from --noise; print "
                        "mean, median and 95%% interval of the run time and per-rank lateness")
    g.add_argument("--noise", default="trace", metavar="trace|none|FILE.h5",
                   help="what replicas draw from: the trace's own volumes per call site and "
                        "rank (trace, default), a variability benchmark file, a recorded run "
                        "of the program (its relative spread; for extrapolated traces), or "
                        "none")
    g.add_argument("--runs", nargs="+", metavar="RUN.h5",
                   help="with --replicas: recorded runs of the program on this machine (3 or "
                        "more, the trace may be one of them): each replica's time is "
                        "multiplied by a run factor drawn from their spans, the run-to-run "
                        "component that one recording's noise does not hold")
    g.add_argument("--seed", type=number("--seed", 0, MAX_SEED, integer=True),
                   help="seed of the replicas' draws (default: printed)")
    g.add_argument("--workers", type=number("--workers", 1, MAX_THREADS, integer=True),
                   metavar="P",
                   help="processes for the replicas (default: one per core; under mpiexec "
                        "the MPI ranks)")


def sample_arg(value: str):
    """``--sample``'s value: "off", "auto" or a positive int."""
    if value in ("off", "auto"):
        return value
    try:
        k = int(value)
    except ValueError:
        k = 0
    if not 1 <= k <= MAX_REPLICAS:
        raise MinitraceError(f"--sample wants auto, off or a number of iterations from 1 to "
                             f"{MAX_REPLICAS}, got {value!r}")
    return k


def wanted(args) -> bool:
    """Whether the command line asks for sampling or replicas."""
    return args.replicas is not None or args.sample != "off"


def check(args, conflicting: dict[str, bool]) -> None:
    """Refuse options the sampled or replicated replay does not give (one line)."""
    if args.replicas is None and (args.seed is not None or args.noise != "trace"
                                  or args.workers is not None or args.runs):
        raise MinitraceError("--noise, --runs, --seed and --workers go with --replicas N")
    for name, given in conflicting.items():
        if given and wanted(args):
            raise MinitraceError(f"{name} is not available with --sample or --replicas")


def run(args, trace, source: str, replay_kw: dict, plot: str | None,
        warnings: list[str] = ()) -> int:
    """Sampled replay or replicas of ``trace``: print them (rank 0 under mpiexec), with
    ``warnings`` among their notes (a calibration's flags).  The trace is validated first, as a
    replay's is (:func:`~minitrace.replay.api.checked`)."""
    from .sampling import load_trace
    data = load_trace(trace, source)
    comm = None
    if args.replicas is not None:
        from .replicas import _mpi_world
        comm = _mpi_world()
    check = not getattr(args, "no_check", False)
    if comm is None:
        invalid = checked(data, check)
    else:               # (the replicas' workers: validated once, on the first, whose error
        got = None      # is every worker's: none is left waiting)
        if comm.Get_rank() == 0:
            try:
                got = ("", checked(data, check))
            except MinitraceError as e:
                got = (str(e), "")
            except Exception as e:      # (any failure: the others must not wait for ever)
                got = (f"validating the trace failed: {type(e).__name__}: {e}", "")
        error, invalid = comm.bcast(got, root=0)
        if error:
            raise MinitraceError(error)
    try:
        return _run(args, data, source, replay_kw, plot, invalid, comm, list(warnings))
    except MinitraceError as e:
        if not invalid:
            raise
        raise MinitraceError(f"{e.message}; the trace is not valid ({invalid})", e.path) from None


def _run(args, data, source: str, replay_kw: dict, plot: str | None, invalid: str,
         comm, warnings: list[str]) -> int:
    """:func:`run` of the trace's columns ``data`` (``invalid``: what its validation found;
    ``comm``: the replicas' MPI world, None without one)."""
    from .sampling import sampled_replay
    sample = sample_arg(args.sample)
    if args.replicas is not None:
        from .replicas import replicas
        r = replicas(data, args.replicas, args.noise, args.seed, sample,
                     workers=args.workers, progress=sys.stderr.isatty(), runs=args.runs,
                     **replay_kw)
        r.notes += warnings
        if invalid:
            r.notes.append(invalid_note(invalid))
        if comm is not None and comm.Get_rank() != 0:
            return 0
        if args.json:
            print(json.dumps({"trace": source, "invalid": invalid, **r.to_dict()}, indent=1))
        else:
            print(replicas_text(r, source, invalid))
        if plot:
            r.plot(plot, f"{source}: {len(r.times)} replicas, noise {r.noise}")
            if not args.json:
                print(f"  plot: {plot}")
        return 0
    s = sampled_replay(data, None, sample, **replay_kw)
    s.notes += warnings
    if invalid:
        s.notes.append(invalid_note(invalid))
    if args.json:
        print(json.dumps({"trace": source, "invalid": invalid, **s.to_dict()}, indent=1))
    else:
        print(sampled_text(s, source, invalid))
    return 0


def sampled_text(s, source: str, invalid: str = "") -> str:
    """A sampled replay as text (``invalid``: validate's summary of an invalid trace)."""
    lines = [f"predicted run time: {s.simulated_time:.9g} s +- {s.bound:.3g} s  ({source}, "
             f"{s.nranks} ranks, iteration sampling{invalid_flag(invalid)})" if s.phases else
             f"predicted run time: {s.simulated_time:.9g} s  ({source}, {s.nranks} "
             f"ranks{invalid_flag(invalid)})",
             f"  platform: {s.result.platform}"]
    if s.phases:
        lines.append(f"  replayed {s.replayed_share:.1%} of the actions, skipped "
                     f"{s.skipped_share:.1%}; {s.replays} replay(s), {s.wall_time:.3g} s of "
                     f"wall time; bound: 3 sd of the skipped iterations' prediction, plus "
                     f"the shifts, levels and variants fitted once the notes name")
        t = s.table()
        lines.append("  phases: loop first iterations replayed steady_from s/iteration "
                     "spread skipped_s bound_s")
        for p in t.itertuples():
            lines.append(f"    {p.loop} {p.first} {p.iterations} {p.replayed} "
                         f"{p.steady_from} {p.per_iteration:.6g} {p.spread:.3g} "
                         f"{p.skipped_time:.6g} {p.bound:.3g}")
    lines += [f"  note: {n}" for n in s.notes]
    return "\n".join(lines)


def replicas_text(r, source: str, invalid: str = "") -> str:
    """Replicas as text: the interval, the noise model's assumptions, per-rank lateness
    (``invalid``: validate's summary of an invalid trace)."""
    s = r.summary()
    lines = [f"predicted run time: {s['median']:.6g} s (95%: {s['lo']:.6g}-{s['hi']:.6g} s) "
             f"over {s['replicas']} replicas  ({source}, {r.rank_end_times.shape[1]} "
             f"ranks{invalid_flag(invalid)})",
             f"  mean {s['mean']:.6g} s, median {s['median']:.6g} s, sd {s['sd']:.3g} s; without "
             f"noise {r.plain_time:.6g} s; seed {r.seed}"]
    lines += [f"  noise: {a}" for a in r.assumptions]
    late = r.lateness()
    if len(late) > 8:
        late = late.nlargest(8, "mean_lateness")
        lines.append("  per-rank lateness vs without noise (s), the 8 latest ranks:")
    else:
        lines.append("  per-rank lateness vs without noise (s):")
    lines.append("    rank     mean      p95  finished last")
    for rank, row in late.iterrows():
        lines.append(f"    {rank:>4} {row.mean_lateness:>8.3g} {row.p95_lateness:>8.3g} "
                     f"{row.last_share:>8.0%}")
    if r.sampled is not None:
        lines.append(f"  sampling: replayed {r.sampled.replayed_share:.1%} of the actions per "
                     f"replica, skipped {r.sampled.skipped_share:.1%} (plain: "
                     f"{r.plain_time:.6g} s +- {r.sampled.bound:.3g} s)")
    lines += [f"  note: {n}" for n in r.notes]
    if np.ptp(r.times) == 0 and r.noise != "none":
        lines.append("  note: every replica gave the same time (the drawn volumes do not "
                     "change the critical path)")
    return "\n".join(lines)
