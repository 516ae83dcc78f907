"""``minitrace bench``: list the benchmark suites, their options and what each stores;
``minitrace bench SUITE --help`` documents a suite; ``minitrace bench SUITE ...`` runs it on
the ranks this process belongs to (normally: ``mpiexec -n N python -m minitrace.bench``)."""
from __future__ import annotations

import textwrap

from ..bench import SUITES, add_suite_parsers, suite_module
from . import COMMANDS


def register(sub) -> None:
    """The ``bench`` sub-command (listed in minitrace.commands.COMMANDS), one sub-parser per
    suite."""
    p = sub.add_parser(
        "bench", help=COMMANDS["bench"],
        description="Benchmark suites, run under MPI: `mpiexec -n N python -m minitrace.bench "
                    "SUITE [options] -o FILE`.  Without SUITE, list every suite with its "
                    "options and what it stores; `minitrace bench SUITE --help` documents "
                    "each option.")
    s = p.add_subparsers(dest="suite", metavar="SUITE")
    global _parsers
    _parsers = add_suite_parsers(s)
    for q in _parsers.values():
        q.set_defaults(func=run_suite)
    p.set_defaults(func=list_suites)


_parsers: dict = {}


def list_suites(args) -> int:
    """Without SUITE: what each suite does, its options and what it stores."""
    print("minitrace benchmark suites; run: mpiexec -n N python -m minitrace.bench SUITE "
          "[options] -o FILE\n")
    for name in SUITES:
        mod = suite_module(name)
        usage = " ".join(_parsers[name].format_usage().split()[4:])
        print(f"{name}: {mod.HELP}")
        print(textwrap.fill(usage, 96, initial_indent="  options: ",
                            subsequent_indent=" " * 4, break_on_hyphens=False))
        print(textwrap.fill(mod.STORES, 96, initial_indent=f"  stores /bench/{name}: ",
                            subsequent_indent=" " * 4) + "\n")
    print("`minitrace bench SUITE --help` documents every option; docs/BENCH.md the layout.")
    return 0


def run_suite(args) -> int:
    """Run a suite on the ranks of this process (as ``python -m minitrace.bench``)."""
    from ..bench.__main__ import execute
    return execute(args)
