"""Checks of option values shared by the CLI commands and the bench suites, so that the same
mistake gets the same one-line message wherever it is made."""
from __future__ import annotations

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
