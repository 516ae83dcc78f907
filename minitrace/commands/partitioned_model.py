"""``minitrace partitioned-model``: what partitioned communication gains under thread-time
variability (Algorithm 1), optionally against a bench ``partitioned`` run."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import MinitraceError
from ..options import MAX_THREADS, number
from . import COMMANDS

if TYPE_CHECKING:   # scipy, pandas, the replay package: loaded by the model, not its parser
    from ..analysis import partitioned_model as PM

#: Units of a bare number, kept from before these options took SimGrid units.
_BARE_TIME, _BARE_BANDWIDTH = "us", "MBps"


def _time(text: str) -> float:
    """Seconds of a --mu/--sigma/--latency value: SimGrid units, bare numbers microseconds."""
    from ..replay.platforms import parse_quantity
    return parse_quantity(text, "time", bare=_BARE_TIME)


def _bandwidth(text: str) -> float:
    """Bytes/s of --bandwidth: SimGrid units, a bare number MB/s."""
    from ..replay.platforms import parse_quantity
    return parse_quantity(text, "bandwidth", bare=_BARE_BANDWIDTH)


def _list(items, conv):
    return [conv(t) for item in items for t in item.split(",") if t.strip()]


def register(sub) -> None:
    """Add the ``partitioned-model`` subcommand (listed in minitrace.commands.COMMANDS)."""
    p = sub.add_parser(
        "partitioned-model",
        help=COMMANDS["partitioned-model"],
        description="Algorithm 1 (seed 004 ch. 4): T threads compute for normal(mu, sigma) "
                    "times; partitions of early threads are sent while the last one computes. "
                    "Prints last-thread time (EMMA), single-send and per-partition times, "
                    "partitions hidden, extra time and effective bandwidth.  Quantities take "
                    "SimGrid's units, as in 'minitrace replay': sizes 16MB, 4MiB, 64kB (MB = "
                    "10^6 bytes, MiB = 2^20; b = bits), times 5us, 2ms, bandwidths 10GBps, "
                    "100Gbps.  Bare numbers keep their old meaning: bytes for sizes, "
                    "microseconds for times, MB/s for the bandwidth.  Display: times in us "
                    "with enough decimals to recompute the printed bandwidths (size / time), "
                    "bandwidths rounded to whole MB/s; with one thread T_last = mu.  The "
                    "defaults are the thesis's worked example.")
    p.add_argument("--threads", action="append", default=[],
                   help="thread counts, comma separated or repeated (default 4)")
    p.add_argument("--size", action="append", default=[],
                   help="buffer sizes, e.g. 16MB, 4MiB, 65536 (bytes) (default 16MB)")
    p.add_argument("--mu", default="100000us",
                   help="mean compute time, e.g. 100ms; a bare number is in us (default 100000us)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--sigma", default=None, help="compute time standard deviation; a bare "
                                                  "number is in us (default 1000us)")
    g.add_argument("--v", type=number("--v", 0), default=None,
                   help="variability v instead of --sigma: sigma = mu v^2 (the bench "
                        "'partitioned' suite's convention; v is dimensionless, e.g. --mu 100ms "
                        "--v 0.1 gives sigma = 1 ms)")
    p.add_argument("--latency", default="5us",
                   help="constant latency; a bare number is in us (default 5us)")
    p.add_argument("--bandwidth", default="10000MBps",
                   help="constant bandwidth, e.g. 10GBps or 100Gbps; a bare number is in MB/s "
                        "(default 10000MBps)")
    p.add_argument("--table", help="latency/bandwidth table instead of the constants: "
                                   "lassen or quartz (shipped, REPRESENTATIVE values, not the "
                                   "thesis's), a CSV (size_bytes,latency_us,bandwidth_MBps) or a "
                                   "minitrace file with a bench pt2pt suite")
    p.add_argument("--bench", metavar="FILE",
                   help="compare with the bench 'partitioned' results of FILE (sizes, threads, "
                        "mu and v taken from it; its pt2pt suite is the table unless --table)")
    p.add_argument("--plot", metavar="PNG", help="bandwidth against size: model and bench")
    p.set_defaults(func=run)


def _table(args) -> PM.LinkTable:
    from ..analysis import partitioned_model as PM
    if args.table:
        return PM.load_table(args.table)
    if args.bench:
        from .. import open as mt_open
        with mt_open(args.bench) as t:
            if "pt2pt" in t.suites:
                return PM.table_from_pt2pt(args.bench)
    return PM.LinkTable.constant(_time(args.latency), _bandwidth(args.bandwidth))


def run(args) -> int:
    """Print the model (and the bench comparison, plot); exit status 0."""
    import numpy as np
    import pandas as pd

    from ..analysis import partitioned_model as PM
    from ..replay.platforms import parse_quantity
    _bandwidth(args.bandwidth)          # refused even when a table makes it unused
    if args.plot:
        from ..analysis.plotting import check_plot_path
        check_plot_path(args.plot)
    table = _table(args)
    print(f"latency/bandwidth: {table.source}")
    compare = None
    if args.bench:
        compare = PM.compare_bench(args.bench, table)
        threads = sorted(compare.threads.unique().tolist())
        sizes = sorted(compare["size"].unique().tolist())
        mu, sigma = float(compare.mu.median()), float(compare.sigma.median())
    else:
        threads = _list(args.threads, number("--threads", 1, MAX_THREADS, integer=True)) or [4]
        sizes = _list(args.size, lambda t: parse_quantity(t, "size")) or [16 * PM.MB]
        if not all(0 < s <= 1 << 50 for s in sizes):      # (inf and NaN too)
            raise MinitraceError("--size: expected sizes above 0 and at most 1 PiB")
        mu = _time(args.mu)
        sigma = mu * args.v ** 2 if args.v is not None else _time(args.sigma or "1000us")
    if min(threads) < 1 or min(sizes) <= 0 or mu <= 0 or sigma < 0:
        raise MinitraceError("threads >= 1, sizes > 0, mu > 0 and sigma >= 0 are required")
    model = PM.model_frame(threads, sizes, mu, sigma, table)
    shown = PM.display(model)
    fmt = {f"{c}_us": f"{{:.{shown.attrs['decimals']}f}}".format for c in PM.TIME_COLUMNS}
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(shown.to_string(index=False, formatters=fmt))
        if compare is not None:
            print(f"\nbench {args.bench} (median over runs) vs model, MB/s:")
            out = compare.assign(measured_MBps=np.rint(compare.measured_bw / PM.MB),
                                 model_MBps=np.rint(compare.model_bw / PM.MB),
                                 ratio=(compare.measured_bw / compare.model_bw).round(3))
            print(out[["mode", "size", "threads", "runs", "measured_MBps", "model_MBps",
                       "ratio", "model_hidden"]].to_string(index=False))
    if args.plot:
        from ..analysis.partitioned_plot import plot_partitioned
        grid = np.unique(np.concatenate([np.geomspace(min(sizes) / 4, max(sizes) * 4, 40),
                                         sizes]))
        plot_partitioned(args.plot, PM.model_frame(threads, grid, mu, sigma, table), compare,
                         f"mu {mu / PM.US:g} us, sigma {sigma / PM.US:g} us; {table.source}")
        print(f"plot written to {args.plot}")
    return 0
