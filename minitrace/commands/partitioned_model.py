"""``minitrace partitioned-model``: what partitioned communication gains under thread-time
variability (Algorithm 1), optionally against a bench ``partitioned`` run."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .. import partitioned_model as PM
from ..errors import MinitraceError

_SIZE_UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 2 ** 10, "mib": 2 ** 20,
               "gib": 2 ** 30}
_TIME_UNITS = {"": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0, "ns": 1e-9}


def _quantity(text: str, units: dict, what: str) -> float:
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).lower() not in units:
        raise MinitraceError(f"bad {what} {text!r} (units: "
                             f"{', '.join(u for u in units if u) or 'none'})")
    try:
        return float(m.group(1)) * units[m.group(2).lower()]
    except ValueError:
        raise MinitraceError(f"bad {what} {text!r}") from None


def _list(items, conv):
    return [conv(t) for item in items for t in item.split(",") if t.strip()]


def register(sub) -> None:
    p = sub.add_parser(
        "partitioned-model",
        help="model the gain of MPI partitioned communication under thread variability",
        description="Algorithm 1 (seed 004 ch. 4): T threads compute for normal(mu, sigma) "
                    "times; partitions of early threads are sent while the last one computes. "
                    "Prints last-thread time (EMMA), single-send and per-partition times, "
                    "partitions hidden, extra time and effective bandwidth.  Sizes: MB = 10^6 "
                    "bytes (MiB = 2^20); times: plain numbers are microseconds.  Display: "
                    "times truncated to whole us, bandwidths rounded to whole MB/s.  The "
                    "defaults are the thesis's worked example.")
    p.add_argument("--threads", action="append", default=[],
                   help="thread counts, comma separated or repeated (default 4)")
    p.add_argument("--size", action="append", default=[],
                   help="buffer sizes, e.g. 16MB, 4MiB, 65536 (default 16MB)")
    p.add_argument("--mu", default="100000us", help="mean compute time (default 100000us)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--sigma", default=None, help="compute time standard deviation "
                                                  "(default 1000us)")
    g.add_argument("--v", type=float, default=None,
                   help="variability v instead of sigma (sigma = mu v^2)")
    p.add_argument("--latency", default="5us", help="constant latency (default 5us)")
    p.add_argument("--bandwidth", type=float, default=10_000.0,
                   help="constant bandwidth in MB/s (default 10000)")
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
    if args.table:
        return PM.load_table(args.table)
    if args.bench:
        from .. import open as mt_open
        with mt_open(args.bench) as t:
            if "pt2pt" in t.suites:
                return PM.table_from_pt2pt(args.bench)
    return PM.LinkTable.constant(_quantity(args.latency, _TIME_UNITS, "--latency"),
                                 args.bandwidth * PM.MB)


def run(args) -> int:
    if args.bandwidth <= 0:
        raise MinitraceError("--bandwidth must be positive")
    table = _table(args)
    print(f"latency/bandwidth: {table.source}")
    compare = None
    if args.bench:
        compare = PM.compare_bench(args.bench, table)
        threads = sorted(compare.threads.unique().tolist())
        sizes = sorted(compare["size"].unique().tolist())
        mu, sigma = float(compare.mu.median()), float(compare.sigma.median())
    else:
        threads = _list(args.threads, int) or [4]
        sizes = _list(args.size, lambda t: _quantity(t, _SIZE_UNITS, "--size")) or [16 * PM.MB]
        mu = _quantity(args.mu, _TIME_UNITS, "--mu")
        sigma = (mu * args.v ** 2 if args.v is not None else
                 _quantity(args.sigma or "1000us", _TIME_UNITS, "--sigma"))
    if min(threads) < 1 or min(sizes) <= 0 or mu <= 0 or sigma < 0:
        raise MinitraceError("threads >= 1, sizes > 0, mu > 0 and sigma >= 0 are required")
    model = PM.model_frame(threads, sizes, mu, sigma, table)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(PM.display(model).to_string(index=False))
        if compare is not None:
            print(f"\nbench {args.bench} (median over runs) vs model, MB/s:")
            out = compare.assign(measured_MBps=np.rint(compare.measured_bw / PM.MB),
                                 model_MBps=np.rint(compare.model_bw / PM.MB),
                                 ratio=(compare.measured_bw / compare.model_bw).round(3))
            print(out[["mode", "size", "threads", "runs", "measured_MBps", "model_MBps",
                       "ratio", "model_hidden"]].to_string(index=False))
    if args.plot:
        from ..plots_gev import plot_partitioned
        grid = np.unique(np.concatenate([np.geomspace(min(sizes) / 4, max(sizes) * 4, 40),
                                         sizes]))
        plot_partitioned(args.plot, PM.model_frame(threads, grid, mu, sigma, table), compare,
                         f"mu {mu / PM.US:g} us, sigma {sigma / PM.US:g} us; {table.source}")
        print(f"plot written to {args.plot}")
    return 0
