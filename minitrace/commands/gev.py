"""``minitrace gev FILE``: GEV fits of a variability run and projections to more ranks."""
from __future__ import annotations

import pandas as pd

from ..analysis import gev as G
from ..analysis import projection as P
from ..errors import MinitraceError
from ..options import choice_list

CHOICES = ("pwm", "mom", "mle", "nonparam")


def register(sub) -> None:
    """Add the ``gev`` subcommand (discovered by minitrace.cli)."""
    p = sub.add_parser(
        "gev", help="fit GEVs to per-iteration maxima and project them to more ranks",
        description="Fit generalized extreme value distributions to the per-iteration maxima "
                    "of a bench 'variability' run (shape = Hosking k = scipy c = -xi) and "
                    "project the mean per-iteration maximum and the run time to larger scales "
                    "with bootstrapped confidence intervals (see docs/GEV.md).")
    p.add_argument("file", help="minitrace file with a bench 'variability' suite")
    p.add_argument("--method", default="pwm,nonparam",
                   help="comma list of pwm, mom, mle, nonparam, or 'all' (default pwm,nonparam;"
                        " mle refits with scipy in a loop: slow)")
    p.add_argument("--scale", action="append", default=[],
                   help="target rank counts, comma separated or repeated (default 2x, 4x, 8x, "
                        "16x the run's ranks); 'Nx' means N times the run's ranks")
    p.add_argument("--replicas", type=int, default=None,
                   help=f"bootstrap replicas: per node / slot for the parametric models "
                        f"(default {P.DEFAULT_REPLICAS}), in all for nonparam (default "
                        f"{P.DEFAULT_NONPARAM_REPLICAS})")
    p.add_argument("--ci", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--tol", type=float, default=G.TYPE_TOLERANCE,
                   help=f"|shape| up to this is GEV type I (default {G.TYPE_TOLERANCE})")
    p.add_argument("--plot", metavar="PNG", help="write histogram, QQ and projection plots")
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
        if v < 1:
            raise MinitraceError(f"--scale {tok!r} is below one rank")
        out.append(int(round(v)))
    return out or [nranks * f for f in (2, 4, 8, 16)]


def _print(df: pd.DataFrame, fmt: dict | None = None) -> None:
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.max_colwidth", 80):
        print(df.to_string(index=False, formatters=fmt))


def run(args) -> int:
    """Fit, project, optionally check and plot; exit status 0 (errors are MinitraceError)."""
    methods = choice_list(args.method, CHOICES, "gev", "--method", every="all")
    if not 0 < args.ci < 1:
        raise MinitraceError(f"--ci must be between 0 and 1, got {args.ci}")
    if args.replicas is not None and args.replicas < 2:
        raise MinitraceError("--replicas must be at least 2")
    if args.plot:
        from ..analysis.plotting import check_plot_path
        check_plot_path(args.plot)
    var = P.load_variability(args.file)
    if G.degenerate(var.maxima):
        raise MinitraceError("all per-iteration maxima are equal: nothing to fit", args.file)
    checks = [P.load_variability(f) for f in args.check]
    scales = sorted(set(parse_scales(args.scale, var.nranks)) | {c.nranks for c in checks})
    nodes = len(set(var.node.tolist()))
    x = var.maxima
    print(f"{args.file}: variability run, {var.nranks} ranks on {nodes} node(s), "
          f"{var.iterations} iterations; per-iteration max: mean {x.mean():.6g} s, "
          f"min {x.min():.6g} s, max {x.max():.6g} s")
    fits = P.base_fits(var, [m for m in methods if m != "nonparam"] or ["pwm"], args.tol)
    print("\nGEV fits of the per-iteration maxima (shape = Hosking k = scipy c = -xi; "
          "type I Gumbel, II Frechet, III Weibull):")
    _print(fits)
    for f in fits.attrs["flags"]:
        print(f"FLAG: {f}")
    proj = P.project(var, scales, methods, args.replicas, args.ci, args.seed, progress=None)
    print(f"\nProjected mean per-iteration maximum (s) and run time = {var.iterations} "
          f"iterations x maximum (s): median and {args.ci:.0%} CI")
    _print(proj.drop(columns=["flags"]))
    for r in proj[proj["flags"] != ""].drop_duplicates(["method", "model", "flags"]).itertuples():
        print(f"FLAG {r.method} {r.model}: {r.flags}")
    if checks:
        chk = P.check(proj, checks)
        print("\nCheck against measured runs (mean per-iteration maximum, s):")
        _print(chk)
    if args.plot:
        from ..analysis.gev_plot import plot_gev
        plot_gev(args.plot, var, fits, proj, checks, args.ci)
        print(f"\nplot written to {args.plot}")
    return 0
