"""Which SimGrid TI text file is a trace and which a list of traces, and what a list names.

One reader for ``minitrace import``, ``minitrace replay`` and format detection, so that all three
accept the same files and refuse the same ones with the same one-line message.  Blank lines and
``#`` comments are skipped everywhere; a trace's first meaningful line is ``<rank> <action> ...``
(rank ``3`` or ``p3``); anything else is a list file whose every entry must be an existing file,
relative to the list's directory, else to the working directory (smpirun's convention).
"""
from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterator

from minitrace.errors import MinitraceError

_ACTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: SimGrid splits a line at spaces and tabs only, after trimming ASCII white space (boost's
#: is_any_of(" \t") and trim): U+2003 or U+001C are not separators to it, nor here.
_SEPARATORS = re.compile(r"[ \t]+")
_ASCII_SPACE = " \t\r\n\v\f"
_HEAD = 8192


def _is_text(head: bytes) -> bool:
    """UTF-8 without NUL bytes (a character cut at the end of ``head`` is fine)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return b"\0" not in head


def tokens(line: str, maxsplit: int = 0) -> list[str]:
    """The tokens of a (trimmed) line as SimGrid splits it."""
    return [t for t in _SEPARATORS.split(line.strip(_ASCII_SPACE), maxsplit) if t]


def rank_token(tok: str) -> int | None:
    """The rank a line's first token names (``3`` or ``p3``), None when it names none."""
    t = tok[1:] if tok[:1] == "p" else tok
    return int(t) if t.isascii() and t.isdigit() else None


def is_action(tok: list[str]) -> bool:
    """Whether a line's tokens look like ``<rank> <action> ...`` (not a file name)."""
    return len(tok) >= 2 and rank_token(tok[0]) is not None and bool(
        _ACTION.match(tok[1]))


def meaningful_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, stripped text) of each line that is neither blank nor a ``#`` comment;
    MinitraceError naming ``path`` when it cannot be read or holds binary data."""
    try:
        with open(path, "rb") as raw:
            head = raw.read(_HEAD)
        fh = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise MinitraceError(f"cannot read: {e.strerror or e}", path) from None
    if not _is_text(head):
        fh.close()
        raise MinitraceError("not a text trace (binary data)", path)
    with fh:
        try:
            for n, raw in enumerate(fh, 1):
                if "\0" in raw:
                    raise MinitraceError(f"not a text trace (binary data on line {n})", path)
                s = raw.strip(_ASCII_SPACE)
                if s and s[0] != "#":
                    yield n, s
        except OSError as e:   # e.g. a directory given as a list entry
            raise MinitraceError(f"cannot read: {e.strerror or e}", path) from None


def first_tokens(path: str) -> list[str] | None:
    """Tokens of the first meaningful line, None for a file without one."""
    lines = meaningful_lines(path)
    try:
        first = next(lines, None)
        return tokens(first[1]) if first else None
    finally:
        lines.close()


def is_trace(path: str) -> bool:
    """True for a TI trace, False for a list file; MinitraceError when it is empty."""
    tok = first_tokens(path)
    if tok is None:
        raise MinitraceError("empty file: neither a TI trace nor a list of traces", path)
    return is_action(tok)


def resolve(entry: str, listfile: str) -> str | None:
    """Absolute path of a list entry: beside the list file, else in the working directory;
    None when neither exists."""
    base = os.path.dirname(os.path.abspath(listfile))
    for cand in (os.path.join(base, entry), os.path.abspath(entry)):
        if os.path.isfile(cand):
            return cand
    return None


def list_entries(path: str) -> list[str]:
    """The traces a list file names (line i: rank i's trace; one line: a trace shared by all
    ranks), as absolute paths; MinitraceError naming the list and the first bad line."""
    named = []
    for n, s in meaningful_lines(path):
        found = resolve(s, path)
        if found is None:
            raise MinitraceError(f"line {n}: neither a TI action ('<rank> <action> ...') nor an "
                                 f"existing trace file: {s[:60]!r}", path)
        named.append(found)
    if not named:
        raise MinitraceError("the list file names no trace", path)
    return named
