"""Replay a compressed trace without expanding it: each rank's SimGrid TI lines are made from
its grammar a range of actions at a time and written into a named pipe the replayer reads as
that rank's trace file, so that neither the whole trace nor its TI text is ever on disk or in
memory (a few ranges per rank are).

A range ends where no request of the rank is pending and the next action is not a compute (the
TI writer pairs each wait with the request it completes, and a collective's own-block copy goes
to the compute after it), so the lines are those of the whole rank.  Traces whose export needs
the whole trace at once (lowered calls, synchronous sends paired with their receives, matched
probes) are not streamed: :func:`streamable` says why, and the replay expands them as before.
"""
from __future__ import annotations

import array
import errno
import fcntl
import os
import select
import termios
import threading
from collections import Counter
from pathlib import Path

import numpy as np

from .. import kinds as K
from ..collectives import rows_to_lower
from ..errors import MinitraceError
from ..compress.expand import Expander
from ..converters.simgrid_ti import (ExportReport, RankWriter, count_rootless,
                                     posted_sizes, refuse_dropped)
from ..model import TraceColumns, vec_offsets
from .work import flops_actions, work_notes

#: Actions made at a time per rank (fewer with many ranks: one range per rank is held).
ROWS = 1 << 15
_BUDGET_ROWS = 1 << 22
#: Bytes a pipe holds (Linux's default is 64 KiB; at most /proc/sys/fs/pipe-max-size).
PIPE_BYTES = 1 << 20
_CREATES = K.mask(K.REQUEST_KINDS)
_SINGLE = K.mask(K.SINGLE_COMPLETIONS)
_MULTI = K.mask(K.MULTI_COMPLETIONS)
_TESTS = K.mask(K.TESTS)
_COMPUTE = K.CODE["compute"]


def streamable(c) -> str | None:
    """Why the compressed trace ``c`` cannot be streamed to the replayer (None: it can)."""
    t = c.table
    probe = np.zeros(len(t), dtype=[("kind", "u1"), ("flags", "u1"), ("comm", "i4")])
    for f in probe.dtype.names:
        probe[f] = t[f]
    if rows_to_lower(probe).any():
        return "it has calls the TI export lowers with the whole trace at hand"
    if K.mask({"ssend", "issend", "mprobe", "improbe", "mrecv", "imrecv"})[t["kind"]].any():
        return "it has synchronous sends or matched probes (paired across ranks)"
    if (np.diff(c.rank_offsets) == 0).any():
        return "a rank has no action"
    return None


def _pending(a: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Requests still pending after each action of a range that starts with none pending."""
    kind = a["kind"]
    created = (_CREATES[kind] & (a["request"] >= 0)).astype(np.int64)
    ends = ~_TESTS[kind] | ((a["flags"] & K.FLAG_COMPLETED) != 0)   # a test may not complete
    done = (_SINGLE[kind] & ends & (a["request"] >= 0)).astype(np.int64)
    multi = _MULTI[kind] & ends
    done[multi] += a["vec_len"][multi]
    return np.cumsum(created - done)


class RankText:
    """The TI text of one rank, range by range (the same bytes as the whole-rank export)."""

    def __init__(self, exp: Expander, rank: int, rate, red, copies, report, counts: Counter,
                 rows: int, posted: dict[int, int] | None = None, free_tests: bool = False):
        self.exp, self.rank, self.rows, self.posted = exp, rank, rows, posted
        self.free_tests = free_tests      # (RankWriter's: failed tests before a wait left out)
        self.rate, self.red, self.copies = rate, red, copies
        self.report, self.counts = report, counts
        self.n = int(exp.offsets[rank + 1] - exp.offsets[rank])
        self.pos = exp.position(rank, 0)
        self.held: tuple[np.ndarray, np.ndarray] | None = None

    def __iter__(self):
        while True:
            if self.pos.row < self.n:
                a, v = self.exp.chunk(self.rank, self.pos, min(self.pos.row + self.rows, self.n))
                if self.held is not None:
                    a = np.concatenate([self.held[0], a])
                    v = np.concatenate([self.held[1], v])
                    self.held = None
            elif self.held is not None:
                (a, v), self.held = self.held, None
            else:
                return
            if self.pos.row < self.n:          # cut where nothing is pending
                pend = _pending(a, v)
                nxt = np.concatenate([a["kind"][1:], [_COMPUTE]])
                ok = np.nonzero((pend == 0) & (nxt != _COMPUTE))[0]
                if not len(ok):
                    self.held = (a, v)
                    continue
                end = int(ok[-1]) + 1
                nvec = int(a["vec_len"][:end].sum())
                if end < len(a):
                    self.held = (a[end:], v[nvec:])
                a, v = a[:end], v[:nvec]
            yield self._text(a, v)

    def _text(self, a: np.ndarray, v: np.ndarray) -> bytes:
        c = self.exp.c
        a = a.copy()
        a["vec_off"] = vec_offsets(a["vec_len"])
        P = c.nranks
        offsets = np.where(np.arange(P + 1) > self.rank, len(a), 0).astype(np.int64)
        data = TraceColumns(a, offsets, v, dict(c.comms), list(c.strings), dict(c.meta))
        data, counts = flops_actions(data, self.rate, self.red, None, self.copies)
        self.counts.update(counts)
        count_rootless(data, self.report)
        wr = RankWriter(data, self.report, self.posted, self.free_tests)
        text = wr.rank_text(self.rank)
        if wr.too_big:
            raise MinitraceError(f"line(s) with counts beyond what SimGrid parses (first: "
                                 f"{wr.too_big[0]!r})")
        return text.encode()


class Feeder:
    """Named pipes, one per rank, and the thread that fills each as the replayer reads it."""

    def __init__(self, c, work: Path, rate=None, red=None, copies=None,
                 source: str | None = None, config: dict | None = None,
                 free_tests: bool = False, library: str = "simgrid"):
        self.exp = Expander(c)
        for r in range(c.nranks):     # SimGrid's replay crashes on a trace without it
            first = K.NAME.get(int(c.table["kind"][self.exp.rank_ids(r, 0, 1)[0]]), "?")
            if first != "init":
                raise MinitraceError(f"the trace of rank {r} must start with '{r} init', "
                                     f"found '{r} {first}'", source)
        self.report = ExportReport(library=library)   # (its notes say whose collectives)
        self.source = source
        self.counts: Counter = Counter()
        self.rate, self.red, self.copies = rate, red, copies
        self.unit = c.meta.get("volume_unit", "flops")
        self.nactions = c.nactions
        d = work / "fifo"
        d.mkdir()
        self.paths = [str(d / f"{r}.txt") for r in range(c.nranks)]
        rows = max(256, min(ROWS, _BUDGET_ROWS // max(c.nranks, 1)))
        posted = posted_sizes(c.table, config)     # the table holds every distinct action
        self.texts = [iter(RankText(self.exp, r, rate, red, copies, self.report, self.counts,
                                    rows, posted, free_tests)) for r in range(c.nranks)]
        for p in self.paths:
            os.mkfifo(p)
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="minitrace-ti-feeder",
                                       daemon=True)

    def __enter__(self):
        # read-write: opening does not wait for the replayer, and the pipe lives until closed
        self.fds = {os.open(p, os.O_RDWR | os.O_NONBLOCK): r for r, p in enumerate(self.paths)}
        for fd in self.fds:       # larger pipes: the replayer waits less often for the feeder
            try:
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:
                pass
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        for fd in list(self.fds):
            self._close(fd)
        if self.error is not None and exc[0] is None:
            raise self.error
        return False

    def finish(self, lossy: bool) -> list[str]:
        """After the replay: what it modelled and the export approximated; an error when the
        TI format had to drop actions and ``lossy`` was not asked for (as the export says)."""
        refuse_dropped(self.report.dropped, self.source, lossy, "cannot replay: ")
        return work_notes(self.counts, self.unit, self.rate, self.red, self.copies) + \
            self.report.lines()

    def _run(self) -> None:
        pending: dict[int, memoryview] = {}    # text made, not yet in the pipe
        ahead: dict[int, bytes | None] = {}    # the next range's text, made while waiting
        writing = dict(self.fds)          # fd -> rank, while it has text to write
        draining: list[int] = []          # all written: closed once the replayer read it all
        try:
            while (writing or draining) and not self.stop.is_set():
                for fd in [fd for fd in draining if _unread(fd) == 0]:
                    draining.remove(fd)
                    self._close(fd)       # EOF for the replayer
                _, ready, _ = select.select([], list(writing), [], 0)
                if not ready:             # the replayer is busy: make the ranges ahead
                    idle = [fd for fd in writing if fd not in ahead]
                    if idle:
                        ahead[idle[0]] = next(self.texts[writing[idle[0]]], None)
                        continue
                    _, ready, _ = select.select([], list(writing), [],
                                                0.05 if draining else 0.2)
                for fd in ready:
                    buf = pending.get(fd)
                    if buf is None or not len(buf):
                        chunk = ahead.pop(fd) if fd in ahead else \
                            next(self.texts[writing[fd]], None)
                        if chunk is None:
                            del writing[fd]
                            draining.append(fd)
                            continue
                        buf = memoryview(chunk)
                    try:
                        n = os.write(fd, buf[:PIPE_BYTES])
                    except OSError as e:
                        if e.errno != errno.EAGAIN:
                            raise
                        n = 0
                    pending[fd] = buf[n:]
        except BaseException as e:        # reported by __exit__
            self.error = e if isinstance(e, MinitraceError) else \
                MinitraceError(f"cannot stream the trace to the replayer: {e}")
            for fd in list(self.fds):     # EOF everywhere: the replayer stops
                self._close(fd)

    def _close(self, fd: int) -> None:
        if self.fds.pop(fd, None) is not None:
            os.close(fd)


def _unread(fd: int) -> int:
    """Bytes written into a pipe and not read yet."""
    buf = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return buf[0]
