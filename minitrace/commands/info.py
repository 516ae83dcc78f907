"""``minitrace info FILE``: what a file holds (metadata, provenance, per-rank summary, bench
suites)."""
from __future__ import annotations

from ..parallel.world import launched_size
from . import COMMANDS

_META_SHOWN = ("producer", "producer_version", "format_version", "created", "volume_unit",
               "mpi_library", "command_line", "complete", "nranks", "hosts", "source")


def register(sub) -> None:
    """The ``info`` sub-command (listed in minitrace.commands.COMMANDS)."""
    p = sub.add_parser("info", help=COMMANDS["info"],
                       description="Print a file's metadata and provenance, a per-rank summary "
                                   "of its trace "
                                   "(counts by kind, bytes, compute volume, time span) and the "
                                   "benchmark suites it holds.  Under `mpiexec -n K` the K "
                                   "processes share the per-rank summary.")
    p.add_argument("file", help="minitrace HDF5 file")
    p.add_argument("--kinds", action="store_true", help="show the count of every kind per rank")
    p.add_argument("--loops", action="store_true",
                   help="show each rank program's loops: iterations, body, where they sit and "
                        "their share of the actions and time")
    p.set_defaults(func=run)


def run(args) -> int:
    """Print the summary; bench suites get their headline numbers from
    minitrace.analysis.bench_summary.  Under ``mpiexec -n K`` the per-rank summary is shared
    among the K processes."""
    from .. import provenance
    from ..storage import read_provenance
    from ..tasks.taskfile import describe, read_tasks, task_ranks
    from ..trace import open as open_trace
    summary = None
    if launched_size() > 1:
        from ..parallel.summary import summary_parallel
        from ..parallel.world import World
        world = World()
        with open_trace(args.file) as t:
            has_trace = t.has_trace
        if has_trace:
            summary = summary_parallel(world, args.file)
        if not world.root:
            return 0
    with open_trace(args.file) as t:
        print(f"{args.file}: minitrace format {t.meta.get('format_version')}")
        for k in _META_SHOWN:
            if k in t.meta and k != "format_version":
                v = t.meta[k]
                if isinstance(v, list) and len(v) > 8:
                    v = f"{v[:8]} ... ({len(v)} entries)"
                print(f"  {k}: {v}")
        if "extrapolated" in t.meta:
            from ..extrapolate.build import extrapolation_line
            print(f"  {extrapolation_line(t.meta['extrapolated'])}")
        p = read_provenance(args.file)
        if p:
            print("provenance (of the file's last writer; `minitrace diff` compares two):")
            for line in provenance.summary_lines(p):
                print(f"  {line}")
        if t.has_trace:
            import pandas as pd
            from ..compress.store import lost
            from ..summary import folded_note, in_call_volumes, persistent_note, shown_kinds
            s = t.summary() if summary is None else summary
            print(f"trace: {t.nranks} ranks, {t.nactions} actions, volume unit "
                  f"{t.volume_unit}{'' if t.complete else ' (INCOMPLETE: a rank died)'}"
                  f"{', compressed: ' + lost(t.compressed_form) if t.compressed else ''}")
            base = ["actions", "bytes_sent", "bytes_recv", "volume", "span"]
            in_calls = in_call_volumes(t, s)
            if in_calls is not None:
                s = s.assign(compute=s["volume"] - in_calls, in_calls=in_calls)
                base[3:4] = ["compute", "in_calls"]
            kinds, left_out = shown_kinds(s, args.kinds)
            with pd.option_context("display.width", 160, "display.max_columns", 40,
                                   "display.max_rows", 64):
                print(s[base + kinds].to_string(float_format=lambda x: f"{x:.6g}"))
            if left_out:
                print(left_out)
            for note in (persistent_note(s), folded_note(t.meta)):
                if note:
                    print(note)
            if in_calls is not None:
                print(f"in_calls: {t.volume_unit} inside the reductions, mostly waiting (a "
                      f"replay leaves them out); compute: the rest of the volume")
            if args.loops:
                from ..compress.loop_view import loop_lines
                lines = loop_lines(t.loops())
                print("loops:" if lines else _no_loops(t))
                for line in lines:
                    print(f"  {line}")
        ranks = task_ranks(args.file)
        for rank in ranks:
            who = f" of rank {rank}" if t.has_trace or len(ranks) > 1 else ""
            print(f"tasks{who}: {describe(read_tasks(args.file, rank))}")
        if t.has_calibration:
            _calibration(args.file)
        for suite in t.suites:
            from ..analysis.bench_summary import summarize as summarize_suite
            b = t.bench(suite)
            shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in sorted(b.arrays.items()))
            print(f"bench/{suite}: {shapes}")
            for line in summarize_suite(b, args.file):
                print(f"  {line}")
            params = {k: v for k, v in b.attrs.items() if k != "created"}
            if params:
                print(f"  parameters: {params}")
    return 0


def _calibration(path: str) -> None:
    """The runs of a calibration file and, once fitted, what the fit found."""
    from ..predict import calibration as C
    runs = C.read_runs(path)
    print(f"calibration: {len(runs)} run(s): " + ", ".join(
        f"{r['name']} ({len(r['columns']['kind'])} measurements, {r['attrs'].get('date', '?')})"
        for r in runs))
    cal = C.load(path, missing_ok=True)
    print("  " + C.summary(cal, path).replace("\n", "\n  ") if cal else
          "  not fitted yet (minitrace calibrate -o FILE fits it)")


def _no_loops(t) -> str:
    """The line of ``info --loops`` when no loop is listed: none at all, or only loops each
    under the listed share of its rank's actions (public Intel MPI Benchmarks: 20 iterations
    of each benchmark at each of 13 message sizes, hundreds of loops that compress folds, were
    said to have "no repetition found")."""
    from ..compress.loop_view import MIN_SHARE, loop_summary
    small = loop_summary(t, 0.0)
    if not len(small):
        return "loops: none (no repetition found)"
    big = small.loc[small["share_actions"].idxmax()]
    most = int(small.groupby("ranks").size().max())
    return (f"loops: none listed (up to {most} loops per rank, each under {MIN_SHARE:.0%} of "
            f"its rank's actions; the largest: {big['iterations']} iterations of "
            f"{big['per_iteration']} actions, {big['share_actions']:.1%} of ranks "
            f"{big['ranks']}'s actions)")

