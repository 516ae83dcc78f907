"""``minitrace gev FILE``: GEV fits of a variability run and projections to more ranks."""
from __future__ import annotations

import ctypes
import ctypes.util
from typing import TYPE_CHECKING

from ..analysis import gev_defaults as D
from ..errors import MinitraceError
from ..outputs import check_disjoint
from ..options import MAX_RANKS, MAX_REPLICAS, MAX_SEED, choice_list, number
from . import COMMANDS

if TYPE_CHECKING:   # pandas, scipy, tqdm: loaded by the fits, not by the parser
    import pandas as pd

CHOICES = ("pwm", "mom", "mle", "nonparam")


def register(sub) -> None:
    """Add the ``gev`` subcommand (listed in minitrace.commands.COMMANDS)."""
    p = sub.add_parser(
        "gev", help=COMMANDS["gev"],
        description="Fit generalized extreme value distributions to the per-iteration maxima "
                    "of a bench 'variability' run (shape = Hosking k = scipy c = -xi) and "
                    "project the mean per-iteration maximum and the run time to larger scales "
                    "with bootstrapped confidence intervals; back-test every method on the "
                    "run itself (from n/8, n/4, n/2 of its ranks to all n) and recommend one "
                    "(see docs/GEV.md).")
    p.add_argument("file", help="minitrace file with a bench 'variability' suite")
    p.add_argument("--method", default="pwm,nonparam",
                   help="comma list of pwm, mom, mle, nonparam, or 'all' (default pwm,nonparam)")
    p.add_argument("--scale", action="append", default=[],
                   help="target rank counts, comma separated or repeated (default 2x, 4x, 8x, "
                        "16x the run's ranks); 'Nx' means N times the run's ranks")
    p.add_argument("--replicas", type=number("--replicas", 1, MAX_REPLICAS, integer=True),
                   default=None,
                   help=f"bootstrap replicas: joint replicas of the whole run for the "
                        f"parametric models (default {D.DEFAULT_REPLICAS}), resamples for "
                        f"nonparam (default {D.DEFAULT_NONPARAM_REPLICAS})")
    p.add_argument("--ci", type=number("--ci", 0, 1, above=True, below=True), default=0.95,
                   help="confidence level (default 0.95)")
    p.add_argument("--seed", type=number("--seed", 0, MAX_SEED, integer=True), default=0,
                   help="random seed (default 0)")
    p.add_argument("--tol", type=number("--tol", 0), default=D.TYPE_TOLERANCE,
                   help=f"|shape| up to this is GEV type I (default {D.TYPE_TOLERANCE})")
    p.add_argument("--plot", metavar="PNG", help="write histogram, QQ and projection plots")
    p.add_argument("--no-backtest", dest="backtest", action="store_false",
                   help="skip the back-test (projections from n/8, n/4, n/2 of the run's "
                        "ranks to all of them) and the recommendation it makes")
    p.add_argument("--check", nargs="+", metavar="FILE", default=[],
                   help="variability runs at larger scale: are their measured mean "
                        "per-iteration maxima inside the predicted intervals?")
    p.set_defaults(func=run)


def parse_scales(items: list[str], nranks: int) -> list[int]:
    """Target rank counts from --scale ('Nx' = N times the run's ranks); default 2x..16x."""
    out = []
    for tok in (t.strip() for item in items for t in item.split(",")):
        if not tok:
            continue
        try:
            v = float(tok[:-1]) * nranks if tok.endswith("x") else float(tok)
        except ValueError:
            raise MinitraceError(f"bad --scale value {tok!r} (a rank count or Nx)") from None
        if not 1 <= v <= MAX_RANKS:     # (NaN too)
            raise MinitraceError(f"--scale {tok!r}: expected 1 to {MAX_RANKS:,} ranks")
        out.append(int(round(v)))
    return out or [nranks * f for f in (2, 4, 8, 16)]


def _print(df: pd.DataFrame, fmt: dict | None = None) -> None:
    import pandas as pd
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.max_colwidth", 80):
        print(df.to_string(index=False, formatters=fmt))


def _flags(df: pd.DataFrame) -> None:
    """One FLAG line per method, model and flag, with the scales it holds at."""
    items = df.assign(flag=df["flags"].str.split("; ")).explode("flag")
    for (method, model, flag), g in items[items.flag != ""].groupby(
            ["method", "model", "flag"], sort=False):
        print(f"FLAG {method} {model} at {','.join(map(str, g.scale))} ranks: {flag}")


def _keep_freed_memory(pad: int = 256 << 20) -> None:
    """Let glibc keep up to ``pad`` bytes of freed memory at the heap top in this process (the
    command's, so no setting to restore): the bootstraps allocate and free the same large
    temporaries hundreds of times, and glibc's default trim faults their pages back in each
    time (a 16-rank projection on the 2-core VM: 1.33 s user + 1.40 s system; 1.11 s + 0.00 s
    with a 256 MB pad).  Nothing without glibc."""
    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt(-2, pad)  # M_TOP_PAD
    except (OSError, AttributeError):
        pass


def run(args) -> int:
    """Fit, project, back-test and recommend, optionally check and plot; exit status 0
    (errors are MinitraceError)."""
    from ..analysis import gev as G
    from ..analysis import projection as P
    methods = choice_list(args.method, CHOICES, "gev", "--method", every="all")
    if args.replicas is not None and args.replicas < 2:
        raise MinitraceError("--replicas must be at least 2")
    check_disjoint([args.file, *args.check], [args.plot])
    if args.plot:
        from ..analysis.plotting import check_plot_path
        check_plot_path(args.plot)
    var = P.load_variability(args.file)
    _keep_freed_memory()
    if G.degenerate(var.maxima):
        raise MinitraceError("all per-iteration maxima are equal: nothing to fit", args.file)
    checks = [P.load_variability(f) for f in args.check]
    targets = sorted(set(parse_scales(args.scale, var.nranks)) | {c.nranks for c in checks})
    scales = sorted(set(targets) | {var.nranks})
    nodes = len(set(var.node.tolist()))
    x = var.maxima
    print(f"{args.file}: variability run, {var.nranks} ranks on {nodes} node(s), "
          f"{var.iterations} iterations; per-iteration max: mean {x.mean():.6g} s, "
          f"min {x.min():.6g} s, max {x.max():.6g} s")
    fits = P.base_fits(var, [m for m in methods if m != "nonparam"] or ["pwm"], args.tol,
                       seed=args.seed)
    print("\nGEV fits of the per-iteration maxima (shape = Hosking k = scipy c = -xi; "
          "type I Gumbel, II Frechet, III Weibull; p_ad: bootstrap goodness-of-fit p-value):")
    _print(fits)
    for f in fits.attrs["flags"]:
        print(f"FLAG: {f}")
    proj = P.project(var, scales, methods, args.replicas, args.ci, args.seed, progress=None)
    print(f"\nProjected mean per-iteration maximum (s) and run time = {var.iterations} "
          f"iterations x maximum (s): estimate and {args.ci:.0%} CI; factor = units the model "
          f"extrapolates to (unit run: S/{var.nranks}; node: S / ranks per node; rank: S); "
          f"the row at {var.nranks} ranks is the measured scale (measured mean "
          f"{x.mean():.6g} s)")
    _print(proj.drop(columns=["flags"]))
    _flags(proj)
    _excursions(var, scales, args.ci)
    if checks:
        chk = P.check(proj, checks)
        print("\nCheck against measured runs (mean per-iteration maximum, s):")
        _print(chk)
    if args.backtest:
        _backtest(var, methods, proj, max(targets), args)
    if args.plot:
        from ..analysis.gev_plot import plot_gev
        plot_gev(args.plot, var, fits, proj, checks, args.ci)
        print(f"\nplot written to {args.plot}")
    return 0


def _excursions(var, scales, ci: float) -> None:
    """Print the rare excursions found (or how rare unseen ones could be) and the share of
    the iterations they touch at each scale."""
    from ..analysis import stragglers as S
    from ..analysis.genpareto import fit_lmoments
    exc = S.detect(var.times)
    tab = S.table(exc, scales, ci)
    if exc.count:
        p, lo, hi = exc.rate(ci)
        c, scale = (float(a) for a in fit_lmoments(exc.excess))
        print(f"\nExcursions (stragglers): {exc.count} rank-iteration(s) in "
              f"{int(exc.iterations.sum())} iteration(s) above {exc.threshold:.6g} s, far beyond "
              f"the tail of the other times (block test p = {exc.p_value:.2g}); rate per "
              f"rank-iteration {p:.3g} ({ci:.0%} CI {lo:.3g} - {hi:.3g}, Jeffreys); sizes over "
              f"the threshold: mean {exc.excess.mean():.4g} s, generalized Pareto scale "
              f"{scale:.4g} s, xi {c:.3g}" +
              (f" (bounded at {scale / -c:.4g} s)" if c < 0 else "") +
              ".  Share of the iterations in which at least one rank straggles (touched) and "
              "that excursions too rare to be seen here could still touch (unseen):")
    else:
        print(f"\nExcursions (stragglers): none found (block test p = {exc.p_value:.2g}).  "
              f"Share of the iterations that excursions too rare to be seen in these "
              f"{exc.cells:,} rank-iterations could still touch (unseen):")
        tab = tab[["scale", "unseen"]]
    _print(tab, {c: "{:.1%}".format for c in tab.columns if c != "scale"})


def _backtest(var, methods, proj: pd.DataFrame, target: int, args) -> None:
    """Print the back-test from subsets of the run's ranks and the recommended run time."""
    from ..analysis import backtest as B
    bt = B.backtest(var, methods, args.replicas, args.ci, args.seed)
    if bt.empty:
        print("\nBack-test: a run of one rank has no subset to project from")
        return
    print(f"\nBack-test on this run: projections from n/8, n/4, n/2 of its ranks to all "
          f"{var.nranks} (measured mean per-iteration maximum {bt.measured[0]:.6g} s, "
          f"standard error {bt.se[0]:.2g} s):")
    _print(bt[["ranks", "method", "model", "factor", "estimate", "lo", "hi", "error_pct",
               "consistent"]], {"error_pct": "{:+.2f}%".format})
    row, why = B.recommend(bt, proj, target, var.iterations, var.nranks, args.ci)
    if row is None:
        print(f"\nNo recommendation at {target} ranks: {why}")
        return
    print(f"\nRecommended: run time at {target} ranks {row.runtime:.6g} s ({args.ci:.0%} CI "
          f"{row.runtime_lo:.6g} - {row.runtime_hi:.6g} s), per-iteration maximum "
          f"{row.estimate:.6g} s, from {why}")
