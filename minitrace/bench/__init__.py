"""The benchmark suite: ``mpiexec -n N python -m minitrace.bench SUITE [options]``.

Each suite is one module with ``NAME``, ``HELP`` (one line), ``STORES`` (what it writes under
``/bench/NAME``), ``add_arguments(parser)`` and ``run(args)``; the same parsers serve
``python -m minitrace.bench`` and ``minitrace bench``."""
from __future__ import annotations

import importlib

SUITES = ("pt2pt", "collectives", "variability", "partitioned", "thresholds", "numa-bandwidth")


def suite_module(name: str):
    """The suite's module, imported on demand (each pulls in its own dependencies)."""
    return importlib.import_module(f"{__name__}.{name.replace('-', '_')}")


def add_suite_parsers(sub) -> dict:
    """One sub-parser per suite; returns name -> parser."""
    out = {}
    for name in SUITES:
        mod = suite_module(name)
        p = sub.add_parser(name, help=mod.HELP, description=_capital((mod.__doc__ or "").split(":", 1)[-1].strip()),
                           epilog=f"stores under /bench/{name}: {mod.STORES}")
        mod.add_arguments(p)
        out[name] = p
    return out


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
