"""SimGrid TI text given as input: one file per rank from a trace holding every rank or from a
list file (smpirun's ``-replay`` convention), each starting with its ``init`` and ending with a
newline, as SimGrid's replay needs."""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from ..converters.ti_files import (first_tokens, is_trace, list_entries, meaningful_lines,
                                   rank_token, tokens)
from ..errors import MinitraceError


def text_traces(path: str, work: Path) -> list[str]:
    """One file per rank from a TI trace holding every rank or from a list file."""
    if is_trace(path):
        return split_shared(path, work)
    return list_traces(path, work)


def list_traces(path: str, work: Path) -> list[str]:
    """Traces named by a list file, line i for rank i (one line: a trace shared by all ranks,
    as smpirun reads it)."""
    named = list_entries(path)
    if len(named) == 1:
        return split_shared(named[0], work)
    for rank, trace in enumerate(named):
        _check_start(first_tokens(trace), rank, trace)
    return [_ends_with_newline(trace, work, rank) for rank, trace in enumerate(named)]


def _check_start(tokens: list[str] | None, rank: int, path: str) -> None:
    """Rank ``rank``'s trace must begin with its ``init`` (SimGrid's replay crashes without)."""
    if not tokens or tokens[0] != str(rank) or tokens[1:2] != ["init"]:
        got = " ".join(tokens[:3]) if tokens else "nothing"
        raise MinitraceError(f"the trace of rank {rank} must start with '{rank} init', "
                             f"found {got!r}", path)


def _ends_with_newline(path: str, work: Path, rank: int) -> str:
    """SimGrid's trace reader drops a last line that lacks its newline: give it one."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() == 0:
            return path
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return path
        fh.seek(0)
        body = fh.read()
    fixed = work / f"rank{rank}.txt"
    fixed.write_bytes(body + b"\n")
    return str(fixed)


def split_shared(path: str, work: Path) -> list[str]:
    """Split a trace holding all ranks into one file per rank (SimGrid's shared-trace mode is
    not reachable from Python, and per-rank files let each actor read only its own lines)."""
    outs: dict[int, list[str]] = {}
    for lineno, line in meaningful_lines(path):
        tok = tokens(line, 1)
        rank = rank_token(tok[0])
        if rank is None or len(tok) < 2:
            raise MinitraceError(f"line {lineno}: expected '<rank> <action> ...', got "
                                 f"{line[:60]!r}", path)
        outs.setdefault(rank, []).append(f"{rank} {tok[1]}\n")
    ranks = sorted(outs)
    if ranks and ranks[-1] != len(ranks) - 1:   # (a rank beyond the world: nothing allocated for it)
        missing = next(i for i, r in enumerate(ranks) if r != i)
        raise MinitraceError(f"ranks must be 0..N-1 (the trace's world: {len(ranks)} ranks "
                             f"have actions); rank {missing} has none, rank {ranks[-1]} is "
                             "beyond", path)
    files = []
    for r in ranks:
        _check_start(tokens(outs[r][0]), r, path)
        f = work / f"rank{r}.txt"
        f.write_text("".join(outs[r]))
        files.append(str(f))
    return files



_COMPUTE = re.compile(rb"^[ \t]*\S+[ \t]+compute[ \t]+(\S+)", re.M)


def seconds_as_flops(files: list[str]) -> list[str]:
    """A note when every ``compute`` amount of the rank files is below one flop: seconds
    written as flops (TI holds no unit; minitrace's TI export of a trace in seconds writes them
    so, and says it there), which the replay takes as almost no compute (QA s30: hpgmg 4r
    predicted at 0.0236 s, 0.633 s from its HDF5 trace with a compute rate)."""
    largest = None
    for f in files:
        with open(f, "rb") as fh:
            while block := fh.read(1 << 24) + fh.readline():   # (whole lines; the first
                found = _COMPUTE.findall(block)                # block of flops ends it)
                if not found:
                    continue
                try:
                    m = float(np.array(found).astype(float).max())
                except ValueError:      # not numbers: the replay's own error says so
                    return []
                if m >= 1:
                    return []
                largest = m if largest is None else max(largest, m)
    if largest is None or largest <= 0:
        return []
    return [f"every compute amount is below 1 flop (the largest {largest:.3g}): seconds "
            f"written as flops? TI holds no unit (minitrace's TI export of a trace in seconds "
            f"writes them so): this replay takes them as flops, almost no compute; replay the "
            f"trace it came from with --compute-rate"]
