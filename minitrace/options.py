"""Checks of option values shared by the CLI commands and the bench suites, so that the same
mistake gets the same one-line message wherever it is made."""
from __future__ import annotations

import math

from .errors import MinitraceError


def choice_list(text: str, allowed, where: str, option: str, *,
                every: str | None = None) -> list[str]:
    """A comma-separated option value as a list, every entry one of ``allowed``; ``every``
    (e.g. ``all``), if given, is a keyword for all of them.  An empty or unknown entry is one
    line naming ``where`` (command or suite) and the option; the bench suites raise it
    identically on every rank."""
    if every is not None and text.strip() == every:
        return list(allowed)
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise MinitraceError(f"{where}: unknown {option} entries {bad or text!r}; "
                             f"choose among {','.join(allowed)}"
                             + (f", or {every}" if every is not None else ""))
    return items


def number(option: str, lo: float | None = None, hi: float | None = None, *,
           integer: bool = False, above: bool = False, below: bool = False):
    """An argparse ``type`` for ``option``: a finite number (an integer when ``integer``: also
    written ``1e3``) at least ``lo`` (above it when ``above``) and at most ``hi`` (below it
    when ``below``).  Anything else is one line naming the option (a MinitraceError passes
    through argparse: the CLI prints it), before a program sizes anything by it."""
    def shown(x: float) -> str:
        return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"
    what = "an integer" if integer else "a number"
    if lo is not None:
        what += f" {'>' if above else '>='} {shown(lo)}"
    if hi is not None:
        what += f"{' and' if lo is not None else ''} {'<' if below else '<='} {shown(hi)}"

    def parse(text: str):
        try:
            v = float(text)
        except (ValueError, OverflowError):
            v = math.nan
        ok = math.isfinite(v) and (not integer or v.is_integer()) and \
            (lo is None or (v > lo if above else v >= lo)) and \
            (hi is None or (v < hi if below else v <= hi))
        if not ok:
            raise MinitraceError(f"{option} {text}: expected {what}")
        return int(v) if integer else v
    return parse


def integers(option: str, text: str, lo: int = 1, hi: int | None = None) -> list[int]:
    """A comma-separated list of integers for ``option``, each within [lo, hi]."""
    parse = number(option, lo, hi, integer=True)
    return [parse(x.strip()) for x in text.split(",")]


#: Bounds of what the commands size by an option (ranks, threads, replicas...): beyond them a
#: program would exhaust memory before saying anything.
MAX_RANKS = 1 << 20
MAX_THREADS = 1 << 12
MAX_REPLICAS = 10 ** 6
MAX_SEED = 2 ** 32 - 1
#: A time limit a process can wait for (a week: beyond ~292 years the OS's timers overflow)
MAX_SECONDS = 7 * 86400
