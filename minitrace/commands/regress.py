"""``minitrace regress HISTORY [NEW ...]``: performance non-regression testing (docs/REGRESS.md).

Exit status 3 when a new run regressed (or changed, for a metric with no better direction),
so that the command can gate a CI job or a cluster health check; 0 otherwise."""
from __future__ import annotations

import re

import numpy as np

from ..errors import MinitraceError
from ..outputs import check_disjoint
from ..options import MAX_REPLICAS, MAX_SEED, number
from . import COMMANDS

EXIT_REGRESSION = 3


def register(sub) -> None:
    """The ``regress`` sub-command (listed in minitrace.commands.COMMANDS)."""
    p = sub.add_parser(
        "regress", help=COMMANDS["regress"],
        description="Append the benchmark results of each NEW file (its /bench/<suite> groups) "
                    "to the history HISTORY (created if absent) and test each new run, metric "
                    "by metric and jointly per group, against the runs since the last change "
                    "point of the history (Chew's test; change points by E-divisive means). "
                    "Exit status 3 when a new run regressed. Without NEW: analyse the history.")
    p.add_argument("history", help="history file (HDF5, written by this command)")
    p.add_argument("new", nargs="*", help="minitrace files with benchmark results, one run each")
    p.add_argument("--average", action="store_true",
                   help="test the mean of the NEW runs (r = their number) instead of each alone")
    p.add_argument("--gamma", type=number("--gamma", 0, 1, above=True, below=True), default=0.9999,
                   help="prediction level: a run outside it is flagged [%(default)s]")
    p.add_argument("--min-reference",
                   type=number("--min-reference", 1, MAX_REPLICAS, integer=True), default=8,
                   metavar="N",
                   help="runs a reference needs before runs are tested against it "
                        "[%(default)s]")
    p.add_argument("--min-segment", type=number("--min-segment", 1, MAX_REPLICAS, integer=True),
                   default=5, metavar="N",
                   help="fewest runs between change points [%(default)s]")
    p.add_argument("--alpha", type=number("--alpha", 0, 1, above=True, below=True), default=0.01,
                   help="significance level of a change point [%(default)s]")
    p.add_argument("--permutations", type=number("--permutations", 1, MAX_REPLICAS, integer=True),
                   default=199,
                   help="permutations of a change point's test [%(default)s]")
    p.add_argument("--seed", type=number("--seed", 0, MAX_SEED, integer=True), default=0,
                   help="seed of the permutations (results are reproducible) [%(default)s]")
    p.add_argument("--plot", metavar="FILE",
                   help="evolution plots of the whole history (PDF: one page per 12 metrics; "
                        "PNG: one file per 12 metrics, FILE, FILE-2, ...)")
    p.add_argument("--metrics", metavar="REGEX",
                   help="only the metrics whose name matches (report and plots)")
    p.add_argument("--only-flagged", action="store_true",
                   help="report only the metrics that are not ok")
    p.add_argument("--dry-run", action="store_true",
                   help="test the new runs without appending them")
    p.set_defaults(func=run)


def _check(args) -> None:
    if not 0 < args.gamma < 1:
        raise MinitraceError(f"--gamma {args.gamma} must be in (0, 1)")
    if not 0 < args.alpha < 1:
        raise MinitraceError(f"--alpha {args.alpha} must be in (0, 1)")
    if args.min_reference < 2:
        raise MinitraceError("--min-reference must be at least 2")
    if args.average and not args.new:
        raise MinitraceError("--average needs NEW files")


def run(args) -> int:
    """Read the new runs, then under the history's lock: test them, append them; then plot."""
    from ..analysis import regress as R
    from ..analysis import regress_history as H
    _check(args)
    check_disjoint(args.new, [args.history])
    check_disjoint([args.history, *args.new], [args.plot])
    if args.plot:
        from ..analysis.plotting import check_plot_path
        check_plot_path(args.plot)
    try:
        pattern = re.compile(args.metrics) if args.metrics else None
    except re.error as e:
        raise MinitraceError(f"--metrics {args.metrics!r} is not a regular expression: {e}") \
            from None
    new = [H.read_run(path) for path in args.new]
    cp_options = dict(min_size=args.min_segment, alpha=args.alpha,
                      permutations=args.permutations, seed=args.seed)
    failed = False
    with H.locked(args.history):
        old = H.read(args.history)
        if not new and not old.nruns:
            raise MinitraceError("no such history, and no NEW file to start it with",
                                 args.history)
        h = old.extended(new)
        if args.plot:     # every page's file, before the history is replaced
            from ..analysis.regress_plots import page_paths, pages_of
            check_disjoint([args.history, *args.new],
                           page_paths(args.plot, pages_of(_selected(h, pattern))))
        if new:
            cps = R.change_points(h.values[:old.nruns], **cp_options)
            a = R.assess(h.values[:old.nruns], h.metrics, h.directions, cps, args.gamma,
                         args.min_reference)
            _describe_reference(args.history, old, cps, a)
            failed = _test_new(args, h, old.nruns, a.final, pattern)
            if not args.dry_run:
                H.write(args.history, h)
    if not new or args.plot:
        cps = R.change_points(h.values, **cp_options)
        a = R.assess(h.values, h.metrics, h.directions, cps, args.gamma, args.min_reference)
        if not new:
            _describe_history(args.history, h, cps, a)
        if args.plot:
            from ..analysis.regress_plots import plot_evolution
            files = plot_evolution(args.plot, h.metrics, h.runs["date"], h.values, a, cps,
                                   _selected(h, pattern), args.gamma)
            print(f"evolution plots: {', '.join(files)}")
    return EXIT_REGRESSION if failed else 0


def _selected(h, pattern) -> list[int]:
    """Indices of the metrics ``--metrics`` selects (all without it)."""
    return [j for j, m in enumerate(h.metrics) if not pattern or pattern.search(m)]


def _segment_text(h, cps) -> str:
    if not cps:
        return "no change point"
    return "change points at " + ", ".join(f"run {c} ({h.runs['date'][c] or '?'})"
                                           for c in cps)


def _describe_reference(path, old, cps, a) -> None:
    start = cps[-1] if cps else 0
    n = int(np.nanmax(a.final.n, initial=0))
    print(f"{path}: {old.nruns} runs, {len(old.metrics)} metrics; "
          f"{_segment_text(old, cps)}; reference: runs {start}..{old.nruns - 1} since the last "
          f"change point (up to {n} per metric after leaving out flagged runs)")


def _describe_history(path, h, cps, a) -> None:
    from ..analysis.regress import VERDICTS
    counts = {VERDICTS[k]: int((a.verdict == k).sum()) for k in range(len(VERDICTS))}
    print(f"{path}: {h.nruns} runs, {len(h.metrics)} metrics; {_segment_text(h, cps)}")
    print("  tests of every run against the runs before it since its change point: " +
          ", ".join(f"{v} {k}" for k, v in counts.items() if v))


def _test_new(args, h, first, ref, pattern) -> bool:
    """Print the verdicts of the new runs; True when one regressed or changed."""
    from ..analysis import regress as R
    rows = range(first, h.nruns)
    if args.average:
        block = h.values[first:]
        r = np.isfinite(block).sum(axis=0)
        with np.errstate(invalid="ignore"):
            m = np.where(r > 0, np.nansum(block, axis=0) / np.maximum(r, 1), np.nan)
        tests = [(f"mean of the {len(block)} new runs", m, np.maximum(r, 1))]
    else:
        tests = [(f"{h.runs['source'][i]} ({h.runs['date'][i] or 'no date'}, "
                  f"{h.runs['host'][i] or 'unknown host'})", h.values[i], 1) for i in rows]
    groups = R.metric_groups(h.metrics)
    failed = False
    bad = (R.REGRESSION, R.CHANGED)
    for title, m, r in tests:
        t = ref.test(m, r, h.directions.astype(float))
        lines = []
        for j, name in enumerate(h.metrics):
            if pattern and not pattern.search(name):
                continue
            lines.append((name, t["verdict"][j], m[j], t["ref_mean"][j], t["stat"][j],
                          t["threshold"][j], t["n_ref"][j]))
        for g, ix in enumerate(groups):
            name = f"{h.metrics[ix[0]].rsplit('/', 1)[0]} (joint, p={len(ix)})"
            if pattern and not any(pattern.search(h.metrics[j]) for j in ix):
                continue
            lines.append((name, t["group_verdict"][g], np.nan, np.nan, t["group_stat"][g],
                          t["group_threshold"][g], np.nan))
        counts = {}
        for line in lines:
            counts[R.VERDICTS[line[1]]] = counts.get(R.VERDICTS[line[1]], 0) + 1
        failed |= any(line[1] in bad for line in lines)
        print(f"{title}: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
        shown = [x for x in lines if not (args.only_flagged and x[1] == R.OK)]
        shown.sort(key=lambda x: (x[1] in (R.OK, R.NO_REFERENCE, R.MISSING), x[0]))
        if shown:
            width = max(len(x[0]) for x in shown)
            print(f"  {'metric':<{width}}  {'verdict':<12} {'value':>11} {'ref mean':>11} "
                  f"{'statistic':>11} {'threshold':>11} {'n ref':>5}")
        for name, v, value, mean, stat, thr, n in shown:
            verdict = R.VERDICTS[v].upper() if v in bad else R.VERDICTS[v]
            print(f"  {name:<{width}}  {verdict:<12} {_num(value)} {_num(mean)} {_num(stat)} "
                  f"{_num(thr)} {'' if np.isnan(n) else int(n):>5}")
    return failed


def _num(x) -> str:
    """11 columns: blank for NaN (not tested), ``inf`` for a constant metric that moved."""
    return f"{'':>11}" if np.isnan(x) else f"{x:>11.5g}"
