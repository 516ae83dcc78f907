"""SimGrid time-independent (TI) trace text <-> TraceColumns, in the syntax SimGrid 4.1's SMPI replay
accepts (src/smpi/internals/smpi_replay.cpp; see docs/SIMGRID_TI.md).

Lines are ``<rank> <action> <args...>``; counts are element counts of a datatype (MPI_BYTE by
default, MPI_DOUBLE when the rank's ``init`` line has an extra token), so the importer multiplies
them into bytes and the exporter writes bytes with the default MPI_BYTE.  SimGrid runs every
collective on MPI_COMM_WORLD and has no ssend, persistent, partitioned, probe or non-blocking
collective actions: the exporter first lowers what MPI libraries express with point-to-point
messages (:mod:`minitrace.collectives`), then reports, per kind, what it lowered, dropped or
approximated.
"""
from __future__ import annotations

import math
import os
import re
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from minitrace import kinds as K
from minitrace.errors import MinitraceError
from minitrace.collectives import ALWAYS_LOWERED, as_sendrecv_primitive, lower, resolve, \
    world_plan
from minitrace.model import NONE, TraceBuilder, TraceColumns
from minitrace.outputs import replacing_dir, replacing_file, write_error
from minitrace.matched_probes import receive_order

from .ti_files import is_trace, list_entries, meaningful_lines, rank_token, tokens

#: Numbers as SimGrid's std::stod / std::stoi read them: ASCII digits only (Python's float()
#: and int() also take other scripts' digits, underscores and white space).
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_INT = re.compile(r"[+-]?[0-9]+\Z")

#: Datatype id -> size in bytes (SimGrid's Datatype::decode ids, x86-64 sizes).
DATATYPE_SIZE = {
    0: 8, 1: 4, 2: 1, 3: 2, 4: 8, 5: 4, 6: 1, 7: 8, 8: 1, 9: 1, 10: 2, 11: 4, 12: 8, 13: 8,
    14: 16, 15: 4, 16: 1, 17: 1, 18: 2, 19: 4, 20: 8, 21: 1, 22: 2, 23: 4, 24: 8, 25: 8,
    26: 16, 27: 32, 28: 8, 29: 8, 30: 8, 31: 16, 32: 16, 33: 8, 34: 8, 35: 8, 36: 16, 37: 16,
    38: 4, 39: 4, 40: 8, 41: 16, 42: 8, 43: 16, 44: 16, 45: 4, 46: 2, 47: 4, 48: 8, 49: 16,
    50: 32, 51: 1, 52: 8, 53: 16, 54: 32, 57: 1, 58: 8, 59: 8,
}
MPI_DOUBLE, MPI_BYTE = 0, 6
MAX_ERRORS_SHOWN = 5

#: Older spellings found in the literature and in SimGrid 3.x traces.
ALIASES = {"Isend": "isend", "Irecv": "irecv", "allReduce": "allreduce", "allToAll": "alltoall",
           "allToAllV": "alltoallv", "waitAll": "waitall", "reduceScatter": "reducescatter",
           "allGather": "allgather", "allGatherV": "allgatherv", "gatherV": "gatherv",
           "scatterV": "scatterv", "sendrecv": "sendRecv"}


class _LineError(Exception):
    """Why one line cannot be parsed (collected, then reported together)."""


# == import =====================================================================================
@dataclass(slots=True)      # one per line of the trace: no per-instance dict
class _Line:
    file: str
    lineno: int
    rank: int
    action: str
    args: list[str]


def _read_lines(path: str, want_rank: int | None, errors: list) -> list[_Line]:
    out = []
    for n, s in meaningful_lines(path):
        tok = tokens(s)
        rank = rank_token(tok[0])
        if rank is None:
            errors.append((path, n, f"{tok[0]!r} is not a rank"))
            continue
        if len(tok) < 2:
            errors.append((path, n, "no action after the rank"))
            continue
        if want_rank is not None and rank != want_rank:
            errors.append((path, n, f"a line of rank {rank} in rank {want_rank}'s trace"))
            continue
        out.append(_Line(path, n, rank, tok[1], tok[2:]))
    return out


def read_ti(path, keep_going: bool = False) -> TraceColumns:
    """Read a TI trace: one file holding all ranks, or a list file (one line: a trace shared by
    all ranks; N lines: rank i's trace on line i).  Raises MinitraceError listing the lines it
    cannot parse as ``file:line: why``, or naming the ranks whose actions stop before their
    finalize (the file was cut short): ``keep_going`` keeps those, the trace marked
    incomplete."""
    path = os.fspath(path)
    errors: list[tuple[str, int, str]] = []   # (file, line, why)
    if is_trace(path):
        lines = _read_lines(path, None, errors)
        nranks = _nranks(lines, path)
        source = [path]
    else:
        files = list_entries(path)
        if len(files) == 1:
            lines = _read_lines(files[0], None, errors)
            nranks = _nranks(lines, files[0])
        else:
            lines = []
            for r, fp in enumerate(files):
                lines += _read_lines(fp, r, errors)
            nranks = len(files)
        source = files
    if nranks <= 0 and not errors:
        raise MinitraceError("no actions in the trace", path)
    data = _Importer(max(nranks, 1), errors).run(lines)
    if errors:
        errors.sort(key=lambda e: (e[0], e[1]))
        shown = "; ".join(f"{f}:{n}: {why}" for f, n, why in errors[:MAX_ERRORS_SHOWN])
        more = f" (and {len(errors) - MAX_ERRORS_SHOWN} more)" if len(errors) > MAX_ERRORS_SHOWN \
            else ""
        raise MinitraceError(f"{len(errors)} unparsable line(s): {shown}{more}")
    data.meta.update({"volume_unit": "flops", "producer": "minitrace import simgrid-ti",
                      "source": [str(s) for s in source], "nranks": data.nranks})
    fin = np.diff(data.rank_offsets) == 0          # (a rank with no action: not cut short)
    fin[data.rank_of()[data.actions["kind"] == K.CODE["finalize"]]] = True
    if not fin.all():
        short = f"rank(s) {_ranges(np.flatnonzero(~fin))} end without finalize (cut short?)"
        if not keep_going:
            raise MinitraceError(f"{short}; --keep-going keeps what they hold, the trace "
                                 "marked incomplete", path)
        data.meta.update({"complete": False, "damaged": [short]})
    return data


def _ranges(ranks: np.ndarray) -> str:
    """``0-3, 7`` for ranks [0, 1, 2, 3, 7]."""
    cut = np.flatnonzero(np.diff(ranks) != 1) + 1
    return ", ".join(f"{g[0]}-{g[-1]}" if len(g) > 1 else f"{g[0]}"
                     for g in np.split(ranks, cut))


def _nranks(lines, path) -> int:
    """Ranks of a one-file trace: its highest rank + 1, refused when far beyond the ranks that
    have actions (a corrupt rank number would allocate state for every rank up to it)."""
    present = {ln.rank for ln in lines}
    n = max(present, default=-1) + 1
    if n > 64 * len(present) + 1024:
        raise MinitraceError(f"rank {n - 1} in a trace where {len(present)} rank(s) have "
                             f"actions: a corrupt rank number", path)
    return n


def _num(tok: str, what: str) -> float:
    if not _FLOAT.match(tok):
        raise _LineError(f"{what} {tok!r} is not a number")
    v = float(tok)
    if not math.isfinite(v):
        raise _LineError(f"{what} {tok!r} is not finite")
    return v


def _count(tok: str, what: str = "count") -> int:
    """SimGrid truncates counts parsed as doubles (so 1e6 is a count); beyond 2**53 (a double's
    exact integers) a count is corruption, and would overflow the byte columns."""
    v = int(math.trunc(_num(tok, what)))
    if abs(v) > 2 ** 53:
        raise _LineError(f"{what} {tok!r} is out of range")
    return v


def _int(tok: str, what: str) -> int:
    """A C int (tag, datatype, root)."""
    if not _INT.match(tok):
        raise _LineError(f"{what} {tok!r} is not an integer")
    v = int(tok)
    if not -2 ** 31 <= v < 2 ** 31:
        raise _LineError(f"{what} {tok!r} is out of range")
    return v


def _key_of(a: str, args: list[str], me: int) -> tuple | None:
    """The (src, dst, tag) of a request line (``isend``, ``irecv``, ``wait``, ``test``) as
    :meth:`_Importer.line` reads it, None for another line or one it refuses."""
    if a in ("isend", "irecv") and args:
        tag = args[1] if len(args) >= 3 else "0"
        peer = rank_token(args[0])
        ends = (me, peer) if a == "isend" else (peer, me)
    elif a in ("wait", "test") and len(args) >= 3:
        ends, tag = (rank_token(args[0]), rank_token(args[1])), args[2]
    else:
        return None
    if None in ends or not _INT.match(tag):
        return None
    return (*ends, int(tag))


class _Importer:
    """Turns parsed lines into actions, one rank's state (requests, default datatype) at a time."""

    def __init__(self, nranks: int, errors: list):
        self.P = nranks
        self.errors = errors
        self.builder = TraceBuilder(nranks)
        self.ignored: Counter = Counter()

    def run(self, lines: list[_Line]) -> TraceColumns:
        per_rank: list[list[_Line]] = [[] for _ in range(self.P)]
        for ln in lines:
            if ln.rank >= self.P:
                self.errors.append((ln.file, ln.lineno, f"rank {ln.rank} but the list names "
                                                         f"{self.P} trace(s)"))
            else:
                per_rank[ln.rank].append(ln)
        self.completing: list[tuple[int, int]] = []    # (rank, row) of tests that complete
        for r, lns in enumerate(per_rank):
            self.rank = r
            self.count = 0                      # actions of this rank so far
            self.tested: dict[int, int] = {}    # pending request -> row of its latest test
            self.pending: dict[tuple[int, int, int], deque] = {}
            self.order: list[int] = []          # pending request ids, oldest first
            self.irecvs: list[int] = []         # for the old argument-less ``wait``
            self.key_of: dict[int, tuple] = {}
            self.next_req = 0
            self.dt = MPI_BYTE
            self.n_tested: Counter = Counter()  # key -> its pending requests tested
            ends = any(ALIASES.get(ln.action, ln.action) == "finalize" for ln in lns)
            after = self._futures(lns, r, ends)
            for ln, self.after in zip(lns, after):
                try:
                    self.line(ln)
                except _LineError as e:
                    self.errors.append((ln.file, ln.lineno, f"{ln.action}: {e}"))
            if ends:
                for req in list(self.tested):    # (never waited for: its last test did; a
                    self.complete_by_test(req)   # rank cut short may have waited after)
        return self.build()

    @staticmethod
    def _futures(lns: list[_Line], me: int, ends: bool) -> list[tuple | None]:
        """What the rest of the rank's text asks of each request line's key after that line
        (None for other lines): ``(a, b, need)`` where ``max(u + a, b)`` is how many of ``u``
        untested pending requests of the key no wait or test can complete (0: every one can
        still be), and ``need`` the least number of pending requests its later waits and tests
        find (they complete the untested first: a tested one can also be completed by its
        last test).  A ``waitall`` (or the old argument-less ``wait``) completes whatever is
        pending, asks nothing, and no request before it is completed by a test (it holds
        them); so does a rank cut short, whose waits after the cut are unknown."""
        inf = math.inf
        free = (-inf, 0, inf)
        default = (0, 0, 0) if ends else (-inf, 0, 0)
        state: dict[tuple, tuple] = {}
        out: list[tuple | None] = [None] * len(lns)
        for i in range(len(lns) - 1, -1, -1):
            a, args = ALIASES.get(lns[i].action, lns[i].action), lns[i].args
            if a == "waitall" or (a == "wait" and not args):
                state, default = {}, free
                continue
            key = _key_of(a, args, me)
            if key is None:
                continue
            out[i] = f = state.get(key, default)
            if a in ("isend", "irecv"):
                state[key] = (f[0] + 1, f[1], max(f[2] - 1, 0))
            else:
                need = f[2] + 1 if a == "wait" else max(f[2], 1)
                state[key] = (f[0] - 1, max(f[0], f[1]), need)
        return out

    # -- helpers ---------------------------------------------------------------------------
    def add(self, kind: str, **fields) -> None:
        """:meth:`TraceBuilder.add` for this rank."""
        self.builder.add(self.rank, kind, **fields)
        self.count += 1

    def dtype(self, args: list[str], i: int) -> int:
        if i >= len(args):
            return DATATYPE_SIZE[self.dt]
        t = _int(args[i], "datatype")
        if t not in DATATYPE_SIZE:
            raise _LineError(f"unknown datatype id {t}")
        return DATATYPE_SIZE[t]

    def root(self, args: list[str], i: int) -> int:
        root = _int(args[i], "root") if i < len(args) else 0
        if not 0 <= root < self.P:
            raise _LineError(f"root {root} is not a rank (0..{self.P - 1})")
        return root

    def peer(self, tok: str, what: str) -> int:
        p = rank_token(tok)
        if p is None or p >= self.P:
            raise _LineError(f"{what} {tok!r} is not a rank (0..{self.P - 1})")
        return p

    def need(self, args: list[str], n: int, form: str) -> None:
        if len(args) < n:
            raise _LineError(f"needs {form}")

    def counts(self, args: list[str], lo: int) -> list[int]:
        return [_count(t) for t in args[lo:lo + self.P]]

    def new_request(self, key: tuple, recv: bool) -> int:
        pending = self.pending.get(key, ())
        # the tested ones the rest of the text does not need pending: the oldest of them
        # were completed by their last test
        spare = min(self.n_tested[key], len(pending) + 1 - self.after[2])
        for old in [q for q in pending if q in self.tested][:max(spare, 0)]:
            self.complete_by_test(old)
        req = self.next_req
        self.next_req += 1
        self.pending.setdefault(key, deque()).append(req)
        self.order.append(req)
        self.key_of[req] = key
        if recv:
            self.irecvs.append(req)
        return req

    def named(self, key: tuple) -> int:
        """The pending request a ``wait`` or ``test`` of ``key`` names: its oldest, unless the
        oldest was tested and the rest of the text then could not complete every untested
        one (:meth:`_futures`), where it is the oldest untested (a tested request may still be
        completed by its last test, an untested one only by a wait)."""
        q = self.pending.get(key)
        if not q:
            raise _LineError(f"no pending isend/irecv from {key[0]} to {key[1]} "
                             f"with tag {key[2]}")
        untested = len(q) - self.n_tested[key]
        a, b, _ = self.after
        if q[0] in self.tested and untested and (b > 0 or untested + a > 0):
            return next(x for x in q if x not in self.tested)
        return q[0]

    def complete_by_test(self, req: int) -> None:
        """Take ``req``'s latest test for the one that completed it: a text trace does not say
        which test succeeded, and a tested request the rest of its rank's text does not need
        pending (:meth:`new_request`: at the next request of its (src, dst, tag), no
        ``waitall`` after), or still pending at the rank's ``finalize``, was completed by its
        last test (a recorded trace's tests written as text and read back: public SNAP's,
        33,600 requests left incomplete before)."""
        self.completing.append((self.rank, self.tested[req]))
        self.complete(req)

    def complete(self, req: int) -> None:
        key = self.key_of.pop(req)
        if self.tested.pop(req, None) is not None:
            self.n_tested[key] -= 1
        self.pending[key].remove(req)
        self.order.remove(req)
        if req in self.irecvs:
            self.irecvs.remove(req)

    # -- one line --------------------------------------------------------------------------
    def line(self, ln: _Line) -> None:
        a, args, me, P = ALIASES.get(ln.action, ln.action), ln.args, self.rank, self.P
        if a == "init":
            self.dt = MPI_DOUBLE if args else MPI_BYTE
            self.add("init")
        elif a == "finalize":
            self.add("finalize")
        elif a in ("compute", "sleep"):
            self.need(args, 1, "an amount")
            self.add(a, volume=_num(args[0], "amount"))
        elif a in ("send", "isend"):
            if len(args) == 2:            # old form: dst size
                dst, tag, n = self.peer(args[0], "destination"), 0, _count(args[1])
            else:
                self.need(args, 3, "dst tag count [datatype]")
                dst, tag = self.peer(args[0], "destination"), _int(args[1], "tag")
                n = _count(args[2]) * self.dtype(args, 3)
            req = self.new_request((me, dst, tag), False) if a == "isend" else NONE
            self.add(a, peer=dst, tag=tag, bytes_sent=n, request=req)
        elif a in ("recv", "irecv"):
            self.need(args, 1, "src tag count [datatype]")
            src = self.peer(args[0], "source")
            if len(args) <= 2:            # old forms: src, or src size
                tag, n = 0, (_count(args[1]) if len(args) == 2 else -1)
            else:
                tag = _int(args[1], "tag")
                n = _count(args[2])
                n = n * self.dtype(args, 3) if n >= 0 else -1
            flags = K.FLAG_UNRESOLVED if n < 0 else 0   # size found later from the send
            req = self.new_request((src, me, tag), True) if a == "irecv" else NONE
            self.add(a, peer=src, tag=tag, bytes_recv=max(n, 0), request=req, flags=flags)
        elif a in ("wait", "test"):
            if not args and a == "wait":  # old form: the latest irecv
                if not self.irecvs:
                    raise _LineError("no pending irecv to wait for")
                req = self.irecvs[-1]
            else:
                self.need(args, 3, "src dst tag")
                key = (self.peer(args[0], "source"), self.peer(args[1], "destination"),
                       _int(args[2], "tag"))
                req = self.named(key)
            if a == "wait":
                self.complete(req)
            elif req not in self.tested:
                self.n_tested[self.key_of[req]] += 1
            if a == "test":
                self.tested[req] = self.count
            self.add(a, request=req)
        elif a == "waitall":
            ids = list(self.order)
            for req in ids:
                self.complete(req)
            self.add("waitall", vector=ids)
        elif a == "sendRecv":
            self.need(args, 4, "sendcount dst recvcount src [sdt] [rdt]")
            dst, src = self.peer(args[1], "destination"), self.peer(args[3], "source")
            self.add("sendrecv", peer=dst, tag=0, bytes_sent=_count(args[0]) * self.dtype(args, 4),
                     bytes_recv=_count(args[2]) * self.dtype(args, 5), vector=[src, 0])
        elif a == "barrier":
            self.add("barrier")
        elif a == "bcast":
            self.need(args, 1, "count [root] [datatype]")
            root = self.root(args, 1)
            n = _count(args[0]) * self.dtype(args, 2)
            self.add("bcast", peer=root, bytes_sent=n if me == root else 0,
                     bytes_recv=0 if me == root else n)
        elif a == "reduce":
            self.need(args, 1, "count comp_flops [root] [datatype]")
            root = self.root(args, 2)
            n = _count(args[0]) * self.dtype(args, 3)
            comp = _num(args[1], "comp_flops") if len(args) > 1 else 0.0
            self.add("reduce", peer=root, bytes_sent=n, bytes_recv=n if me == root else 0,
                     volume=comp)
        elif a in ("allreduce", "scan", "exscan"):
            self.need(args, 2, "count comp_flops [datatype]")
            n = _count(args[0]) * self.dtype(args, 2)
            self.add(a, bytes_sent=n, bytes_recv=n, volume=_num(args[1], "comp_flops"))
        elif a in ("alltoall", "allgather"):
            self.need(args, 2, "sendcount recvcount [sdt] [rdt]")
            s = _count(args[0]) * self.dtype(args, 2)
            rc = _count(args[1]) * self.dtype(args, 3)
            self.add(a, bytes_sent=s * (P if a == "alltoall" else 1), bytes_recv=rc * P)
        elif a in ("gather", "scatter"):
            self.need(args, 2, "sendcount recvcount [root] [sdt] [rdt]")
            root = self.root(args, 2)
            s = _count(args[0]) * self.dtype(args, 3)
            rc = _count(args[1]) * self.dtype(args, 4)
            if a == "gather":
                self.add(a, peer=root, bytes_sent=s, bytes_recv=rc * P if me == root else 0)
            else:
                self.add(a, peer=root, bytes_sent=s * P if me == root else 0, bytes_recv=rc)
        elif a == "gatherv":
            self.need(args, 1 + P, f"sendcount recvcounts x {P} [root] [sdt] [rdt]")
            root = self.root(args, 1 + P)
            s = _count(args[0]) * self.dtype(args, 2 + P)
            rsz = self.dtype(args, 3 + P)
            v = [c * rsz for c in self.counts(args, 1)]
            if me == root:
                self.add(a, peer=root, bytes_sent=s, bytes_recv=sum(v), vector=v)
            else:
                self.add(a, peer=root, bytes_sent=s)
        elif a == "allgatherv":
            self.need(args, 1 + P, f"sendcount recvcounts x {P} [sdt rdt] [disps x {P}]")
            extra = len(args) - 1 - P
            if extra > P or extra <= 2:   # datatypes (then displacements, ignored)
                ssz, rsz = self.dtype(args, 1 + P), self.dtype(args, 2 + P)
            else:                          # displacements only, default datatype
                ssz = rsz = DATATYPE_SIZE[self.dt]
            v = [c * rsz for c in self.counts(args, 1)]
            self.add(a, bytes_sent=_count(args[0]) * ssz, bytes_recv=sum(v), vector=v)
        elif a == "scatterv":
            self.need(args, 1 + P, f"sendcounts x {P} recvcount [root] [sdt] [rdt]")
            root = self.root(args, 1 + P)
            ssz = self.dtype(args, 2 + P)
            rc = _count(args[P]) * self.dtype(args, 3 + P)
            v = [c * ssz for c in self.counts(args, 0)]
            if me == root:
                self.add(a, peer=root, bytes_sent=sum(v), bytes_recv=rc, vector=v)
            else:
                self.add(a, peer=root, bytes_recv=rc)
        elif a == "reducescatter":
            self.need(args, 1 + P, f"recvcounts x {P} comp_flops [datatype]")
            sz = self.dtype(args, 1 + P)
            v = [c * sz for c in self.counts(args, 0)]
            self.add("reduce_scatter", bytes_sent=sum(v), bytes_recv=v[me],
                     volume=_num(args[P], "comp_flops"), vector=v)
        elif a == "alltoallv":
            self.need(args, 2 + 2 * P, f"sendbufsize sendcounts x {P} recvbufsize "
                                       f"recvcounts x {P} [sdt] [rdt]")
            ssz, rsz = self.dtype(args, 2 + 2 * P), self.dtype(args, 3 + 2 * P)
            _count(args[0], "send buffer size")
            _count(args[1 + P], "receive buffer size")
            s = [c * ssz for c in self.counts(args, 1)]
            rv = [c * rsz for c in self.counts(args, 2 + P)]
            self.add(a, bytes_sent=sum(s), bytes_recv=sum(rv), vector=s + rv)
        elif a in ("comm_size", "comm_split", "comm_dup"):
            self.add(a)
        elif a == "location":
            self.ignored[a] += 1       # a source location marker: nothing to keep in the model
        else:
            raise _LineError("unknown action")

    def build(self) -> TraceColumns:
        data = self.builder.build()
        for rank, row in self.completing:
            data.actions["flags"][data.rank_offsets[rank] + row] |= K.FLAG_COMPLETED
        _resolve_probed_sizes(data.actions, data.rank_offsets)
        if self.ignored:
            data.meta["ignored_actions"] = dict(self.ignored)
        return data


def _resolve_probed_sizes(actions: np.ndarray, offsets: np.ndarray) -> None:
    """Receives written without a size (``recv src``, or a negative count that SimGrid resolves
    with a probe) take the size of the send they match; unmatched ones stay FLAG_UNRESOLVED."""
    unres = (actions["flags"] & K.FLAG_UNRESOLVED) != 0
    if not unres.any():
        return
    rank = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    sent: dict[tuple, list[int]] = {}
    sendish = K.mask(K.SENDS | K.SENDRECVS)[actions["kind"]]
    for i in np.nonzero(sendish)[0]:
        a = actions[i]
        sent.setdefault((int(rank[i]), int(a["peer"]), int(a["tag"])), []).append(
            int(a["bytes_sent"]))
    seen: Counter = Counter()
    for i in np.nonzero(K.mask(K.RECVS)[actions["kind"]])[0]:
        a = actions[i]
        key = (int(a["peer"]), int(rank[i]), int(a["tag"]))
        n = seen[key]
        seen[key] += 1
        if unres[i] and n < len(sent.get(key, ())):
            actions["bytes_recv"][i] = sent[key][n]
            actions["flags"][i] = int(actions["flags"][i]) & ~K.FLAG_UNRESOLVED & 0xFF


# == export =====================================================================================
@dataclass
class ExportReport:
    """What the export wrote, and per kind what SimGrid's format could not say exactly."""
    files: list[str] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)        # kind -> actions left out
    approximated: Counter = field(default_factory=Counter)   # "kind -> how" -> actions
    lowered: Counter = field(default_factory=Counter)        # "kind (how)" -> actions rewritten
    #: SMPI options that make SimGrid's world collectives the library's (``collectives``)
    options: dict = field(default_factory=dict)
    library: str = "simgrid"                                 # whose collective algorithms

    @property
    def exact(self) -> bool:
        """True when SimGrid's format said everything: nothing dropped or approximated (lowered
        actions are said in SimGrid's words)."""
        return not self.dropped and not self.approximated

    def lines(self) -> list[str]:
        """One human-readable line per kind dropped, approximated or lowered, for warnings."""
        out = [f"dropped {n} {k} action(s)" for k, n in sorted(self.dropped.items())]
        out += [f"approximated {n} {k}" for k, n in sorted(self.approximated.items())]
        out += [f"lowered {n} {k}" for k, n in sorted(self.lowered.items())]
        if self.library != "simgrid":
            out.append(f"collectives as {_LIBRARY_NAMES[self.library]} runs them "
                       "(--collectives; docs/REPLAY.md)")
        if self.options:
            out.append("world collectives as the MPI library runs them: replay with "
                       + " ".join(f"--cfg={k}:{v}" for k, v in sorted(self.options.items())))
        return out


_LIBRARY_NAMES = {"mpich": "MPICH", "ompi": "Open MPI"}


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e18 else repr(float(v))


#: The send SimGrid replays for each send mode (it has only the standard mode), and the receive
#: for each matched receive (written at its probe, which is left out).
_SEND_AS = {**dict.fromkeys(K.BLOCKING_SENDS, "send"),
            **dict.fromkeys(K.NONBLOCKING_SENDS, "isend"), "mrecv": "recv", "imrecv": "irecv"}
#: The communicator actions SimGrid 4.1 knows (and replays as nothing but their line).
_TI_COMM = ("comm_size", "comm_split", "comm_dup")
#: Blocking creations of an intracommunicator that TI has no line for: left out, as SimGrid
#: leaves out split and dup (sub-communicator traffic is lowered onto world ranks before).
_IGNORED_COMM = frozenset({"comm_split_type", "comm_create", "comm_create_group", "cart_create",
                           "cart_sub", "comm_create_from_group", "graph_create",
                           "dist_graph_create", "dist_graph_create_adjacent"})
#: The kinds a TI line stands for or that are left out exactly (a collective only on the world:
#: the others are lowered first); the writer drops any other kind.
_WRITTEN = (frozenset({"init", "finalize", "compute", "sleep", *_TI_COMM}) | _IGNORED_COMM
            | K.SENDS | K.RECVS | K.SENDRECVS | K.SINGLE_COMPLETIONS | K.MULTI_COMPLETIONS
            | K.MATCHED_PROBES | K.COLLECTIVES)
_NEVER_WRITTEN = ~K.mask(_WRITTEN | ALWAYS_LOWERED)
_COLLECTIVE_KINDS = K.mask(K.COLLECTIVES | K.NONBLOCKING_COLLECTIVES | K.PERSISTENT_COLLECTIVES)


def never_written(kind: np.ndarray, flags: np.ndarray | None = None,
                  counts: np.ndarray | None = None) -> Counter:
    """The actions SimGrid's TI format drops wherever they stand, kind -> actions: kinds (codes
    ``kind``) with no line and no lowering into ones it has (one-sided calls, markers), and
    collectives on an intercommunicator (``flags``, where given).  Counted before any work so
    that an export or a replay that may not drop them is refused at once (public Branson's
    2.4 M actions were refused after 173 s of export).  ``counts``: the actions of each of
    the codes ``kind`` (a compressed trace's, nothing expanded), else one each."""
    n = np.ones(len(kind), np.int64) if counts is None else np.asarray(counts, np.int64)
    lost = _NEVER_WRITTEN[kind]
    out = Counter({K.NAME.get(int(c), f"kind {c}"): int(m) for c, m in
                   enumerate(np.bincount(kind[lost], weights=n[lost], minlength=1)) if m})
    if flags is not None:
        inter = _COLLECTIVE_KINDS[kind] & ((flags & K.FLAG_INTERCOMM) != 0)
        for c, m in zip(*np.unique(kind[inter], return_counts=True)):
            out[f"{K.NAME[int(c)]} on an intercommunicator"] += int(m)
    return out


def refuse_dropped(dropped: Counter, source: str | None, lossy: bool, why: str = "") -> None:
    """Raise the error of an export that would drop the actions ``dropped`` (kind -> actions)
    unless ``lossy``."""
    if dropped and not lossy:
        what = ", ".join(f"{n} {k}" for k, n in sorted(dropped.items()))
        raise MinitraceError(f"{why}SimGrid's TI format cannot express {what}; rerun with "
                             "--lossy to drop them", source)


#: Largest count SimGrid 4.1 parses for an action (``int`` unless listed; ranks/tags are small).
_COUNT_LIMIT = {"send": 2**63 - 1, "isend": 2**63 - 1, "recv": 2**63 - 1, "irecv": 2**63 - 1,
                "bcast": 2**63 - 1, "scan": 2**63 - 1, "exscan": 2**63 - 1,
                "reduce": 2**32 - 1, "allreduce": 2**32 - 1}
#: How a replay's text leaves out a test that did not complete a request a wait completes
#: later: SimGrid's replay completes the request at that test when the message arrives earlier
#: than it did in the recording, then aborts at the wait ("action wait not preceded by any
#: irecv or isend"); a test takes no time there (``smpi/test`` 0), so the time is the same.
_WAITED_TEST = "left out before its request's wait: SimGrid's replay aborts where a test it " \
    "completed is waited for"
#: How a replay's text writes a test that completed a request: as a wait.  The program went
#: on once its test succeeded, i.e. once the message had come; replayed as a test, it fails
#: where the simulated message comes later than the recorded one and the rank goes on without
#: it (public Kripke, which completes every receive by MPI_Testany: its replay 5.1% (2 ranks)
#: and 7.2% (4 ranks) shorter than with waits, and with synchronous sends SimGrid aborted).
TEST_AS_WAIT = "completed: written as wait (the program went on once its message had come)"
#: What ``RankWriter.fast_text`` writes: kinds SimGrid expresses as they are.
_FAST_NAMES = ("init", "finalize", "compute", "sleep", "send", "recv", "isend", "irecv", "wait",
               "test", "waitall", "comm_size", "comm_split", "comm_dup", "barrier", "bcast", "reduce",
               "allreduce", "scan", "exscan", "alltoall", "allgather", "gather", "scatter")
_FAST = K.mask(set(_FAST_NAMES) | _IGNORED_COMM | K.SENDRECVS)
_IGNORED = K.mask(_IGNORED_COMM)
_FAST_P2P = K.mask({"send", "recv", "isend", "irecv"})
_FAST_COLL = K.mask(set(_FAST_NAMES) & K.COLLECTIVES)
_NB = K.mask({"isend", "irecv"})
_P2P = K.mask(K.SENDS | K.RECVS | K.SENDRECVS | K.NONBLOCKING_SENDRECVS)
#: Odd 64-bit multipliers mixing a line's template and tokens into one key (checked after).
_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5, 0xFF51AFD7ED558CCD,
                 0xC4CEB9FE1A85EC53], dtype=np.uint64).astype(np.int64)
#: The most tokens a line of the column path has (sendRecv's six).
_TOKENS = len(_MIX) - 1
_SENDRECV = K.mask(K.SENDRECVS)


#: The tokens after ``<rank> <kind>`` of each kind written as it is, apart from point-to-point
#: lines and waits (which follow requests): one rule for both writer paths.  ``c`` is an
#: ``_Action`` (one action's values, the per-action path) or ``_Rows`` (numpy columns of the
#: rows of one kind, the fast path).
_AS_IS = {
    **dict.fromkeys(("init", "finalize", "comm_split", "comm_dup", "barrier"), lambda c: ()),
    "comm_size": lambda c: (c.P,),
    **dict.fromkeys(("compute", "sleep"), lambda c: (c.vol,)),
    "bcast": lambda c: (c.pick(c.is_root, lambda: c.bs, lambda: c.br), c.root),
    "reduce": lambda c: (c.bs, c.vol, c.root),
    **dict.fromkeys(("allreduce", "scan", "exscan"), lambda c: (c.bs, c.vol)),
    "alltoall": lambda c: (c.per(c.bs, "send"), c.per(c.br, "receive")),
    "allgather": lambda c: (c.bs, c.per(c.br, "receive")),
    "gather": lambda c: (c.bs, c.pick(c.is_root, lambda: c.per(c.br, "receive"), lambda: c.bs),
                         c.root),
    "scatter": lambda c: (c.pick(c.is_root, lambda: c.per(c.bs, "send"), lambda: c.br), c.br,
                          c.root),
}


def _rounding(kind: str, what: str, total: int, P: int) -> str:
    """The approximation said when a collective's total is split evenly over the ranks."""
    return f"{kind} ({what} {total} B not a multiple of {P} ranks, rounded)"


@dataclass(slots=True)
class _Action:
    """One action's values for an ``_AS_IS`` rule (``vol`` already formatted)."""
    kind: str
    P: int
    is_root: bool
    root: int
    bs: int
    br: int
    vol: str
    approx: Counter

    def per(self, total: int, what: str) -> int:
        if total % self.P:
            self.approx[_rounding(self.kind, what, total, self.P)] += 1
        return round(total / self.P)

    def pick(self, cond: bool, a, b):
        return a() if cond else b()


@dataclass(slots=True)
class _Rows:
    """Columns of a rank's actions for an ``_AS_IS`` rule, applied to the rows ``m`` of one
    kind (``vol`` is the raw column: the fast path formats it)."""
    kind: str
    m: np.ndarray
    P: int
    is_root: np.ndarray
    root: np.ndarray
    bs: np.ndarray
    br: np.ndarray
    vol: np.ndarray
    approx: Counter

    def per(self, total: np.ndarray, what: str) -> np.ndarray:
        odd = self.m & (total % self.P != 0)
        for t, k in zip(*np.unique(total[odd], return_counts=True)):
            self.approx[_rounding(self.kind, what, int(t), self.P)] += int(k)
        return np.rint(total / self.P)

    def pick(self, cond: np.ndarray, a, b) -> np.ndarray:
        """``a()`` where ``cond``, else ``b()``, each computed (and its rounding said) only
        for the rows it applies to."""
        m = self.m
        self.m = m & cond
        va = a()
        self.m = m & ~cond
        vb = b()
        self.m = m
        return np.where(cond, va, vb)


def _formatted(fmts: np.ndarray, T: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """Lines (object array) from per-line ``%`` templates and their first ``cnt`` tokens of
    ``T``, in one formatting call."""
    text = "".join(fmts.tolist()) % tuple(T[np.arange(T.shape[1]) < cnt[:, None]].tolist())
    return np.array(text.splitlines(keepends=True) + [None], dtype=object)[:-1]


def eager_mailboxes(config: dict | None) -> float:
    """``smpi/async-small-thresh`` of the SimGrid options ``config`` (0: one mailbox a rank)."""
    thresh = str((config or {}).get("smpi/async-small-thresh", "0")).strip()
    return max(float(thresh), 0.0) if _FLOAT.match(thresh) else 0.0


def posted_sizes(actions: np.ndarray, config: dict | None) -> dict[int, int]:
    """Tag -> the count every receive of that tag is written with at least, for a replay with
    SimGrid options ``config``: the tags whose messages straddle ``smpi/async-small-thresh``,
    each with its largest message (none without that option, which every calibration sets).
    With it SMPI keeps two mailboxes per rank: a message below the threshold goes to the small
    one unless a receive is posted on the large one, a larger one to the large one, and a
    receive below the threshold is posted on the small one.  So messages of one (source, tag)
    on both sides of it overtake each other, which MPI forbids, and a receive written with its
    own small message's size took a later large one (MPI_ERR_TRUNCATE: LLNL Quicksilver's
    particle buffers, posted as large as any message).  A receive as large as its tag's largest
    message takes whichever SMPI gives it, but SMPI's replay charges ``smpi/or`` by the size a
    receive posted (it copies no data, which would set the size received): NPB LU's tags
    straddle too, and its eager receives written 87,120 B took 6.5% more time.  So the replay
    writes these sizes only when SMPI reported a truncation (``replay``); tags on one side of
    the threshold keep their sizes, their messages MPI's order."""
    thresh = eager_mailboxes(config)
    if not thresh or not len(actions):
        return {}
    p2p = actions[_P2P[actions["kind"]]]
    size = np.maximum(p2p["bytes_sent"], p2p["bytes_recv"]).astype(np.float64)
    tags, at = np.unique(p2p["tag"], return_inverse=True)
    lo = np.full(len(tags), np.inf)
    hi = np.zeros(len(tags))
    np.minimum.at(lo, at, size)
    np.maximum.at(hi, at, size)
    both = (lo < thresh) & (hi >= thresh)
    return {int(t): int(h) for t, h in zip(tags[both], hi[both])}


class RankWriter:
    """Writes one rank's actions as TI text, tracking the requests SimGrid will know about.

    ``rank_text`` formats a rank whose actions SimGrid expresses as they are (the bulk of every
    trace: compute, point-to-point, waits, world collectives) a column at a time with numpy and
    one ``%`` formatting call; any other rank goes through ``rank_lines``, one action at a
    time.  Both write the same text."""

    def __init__(self, data: TraceColumns, rep: ExportReport,
                 posted: dict[int, int] | None = None, free_tests: bool | str = False):
        self.d, self.rep, self.P = data, rep, data.nranks
        self.posted = posted or {}      # tag -> the least count of its receives (posted_sizes)
        self.free_tests = bool(free_tests)  # a test costs nothing in the replay to come
                                            # (:data:`_WAITED_TEST`), and one that completed
        self.tests_as_waits = free_tests is True    # is a wait (:data:`TEST_AS_WAIT`) unless
                                                    # "tests": kept a test
        self.unit = data.meta.get("volume_unit", "flops")
        self.too_big: list[str] = []

    def vec(self, i: int) -> list[int]:
        return self.d.vector(i).tolist()

    def size(self, nbytes: int, tag: int) -> int:
        """What a receive of ``nbytes`` on ``tag`` is written with (``posted_sizes``)."""
        return max(nbytes, self.posted.get(tag, 0))

    def rank_text(self, r: int) -> str:
        """Rank ``r``'s lines, each ending with a newline."""
        text = self.fast_text(r)
        if text is None:
            text = "".join(ln + "\n" for ln in self.rank_lines(r))
        return text

    def fast_text(self, r: int) -> str | None:
        """Rank ``r``'s text when every action is one SimGrid expresses as it is, else None."""
        sl = self.d.rank_slice(r)
        a = self.d.actions[sl]
        n, P = len(a), self.P
        kind = a["kind"]
        if not _FAST[kind].all():
            return None
        peer, tag, comm = (a[c].astype(np.int64) for c in ("peer", "tag", "comm"))
        bs, br, vol, req = a["bytes_sent"], a["bytes_recv"], a["volume"], a["request"]
        p2p = _FAST_P2P[kind]
        if (p2p & ((peer < 0) | ((a["flags"] & K.FLAG_UNRESOLVED) != 0))).any() \
                or (_FAST_COLL[kind] & (comm != 0)).any():
            return None
        # requests: each created once, completed at most once after it, by a wait, a test
        # that completed it or a waitall of exactly the pending requests, and tested before
        # that by tests that did not (else the per-action path decides)
        created = np.nonzero(_NB[kind])[0]
        c_req = req[created]
        order = np.argsort(c_req, kind="stable")
        c_sorted = c_req[order]
        if len(c_sorted) and (np.diff(c_sorted) == 0).any():
            return None
        is_wait, is_waitall = kind == K.CODE["wait"], kind == K.CODE["waitall"]
        tests = np.nonzero(kind == K.CODE["test"])[0]
        if (req[tests] < 0).any():
            return None
        tested = (a["flags"][tests] & K.FLAG_COMPLETED) != 0
        done_t, failed = tests[tested], tests[~tested]
        waits = np.nonzero(is_wait)[0]
        ends = np.concatenate([waits, done_t])      # (rows that complete their own request)
        wa = np.nonzero(is_waitall)[0]
        wa_rows, wa_req = self.d.vector_entries(wa + sl.start)
        ev_row = np.concatenate([ends, wa_rows - sl.start])
        ev_req = np.concatenate([req[ends], wa_req])
        at = np.searchsorted(c_sorted, ev_req)
        at_ok = np.minimum(at, max(len(c_sorted) - 1, 0))
        if len(ev_req) and (len(c_sorted) == 0 or (c_sorted[at_ok] != ev_req).any()):
            return None
        c_row = created[order][at_ok] if len(ev_req) else np.zeros(0, np.int64)
        if (c_row >= ev_row).any() or (np.diff(np.sort(ev_req)) == 0).any():
            return None
        if len(failed):
            f_at = np.minimum(np.searchsorted(c_sorted, req[failed]), max(len(c_sorted) - 1, 0))
            completed_at = np.full(len(c_sorted), n, np.int64)
            completed_at[at_ok[:len(ev_req)]] = ev_row
            if not len(c_sorted) or (c_sorted[f_at] != req[failed]).any() or \
                    (created[order][f_at] >= failed).any() or \
                    (completed_at[f_at] <= failed).any():
                return None
            f_row = created[order][f_at]
        srs = np.nonzero(_SENDRECV[kind])[0]    # (SimGrid's sendRecv where every one is)
        if len(srs):
            s_len = a["vec_len"][srs].astype(np.int64)
            if (s_len < 2).any():
                return None
            s_vals = self.d.vector_entries(srs + sl.start)[1]
            s_first = np.cumsum(s_len) - s_len
            source = np.zeros(n, np.int64)
            source[srs] = s_vals[s_first]
            if ((tag[srs] != 0) | (s_vals[s_first + 1] != 0) | (comm[srs] != 0)
                    | (peer[srs] < 0) | (source[srs] < 0)).any():
                return None
        subset = np.zeros(len(wa), bool)      # waitalls of some pending requests: a wait each
        if len(wa):
            lens = a["vec_len"][wa].astype(np.int64)
            pend = np.searchsorted(created, wa) - np.searchsorted(np.sort(ev_row), wa)
            if (lens < 0).any():
                return None
            subset = (lens != pend) & (lens > 0)
        T = np.zeros((n, _TOKENS), np.int64)
        cnt = np.zeros(n, np.int64)
        tid = np.zeros(n, np.int64)
        own = np.full(n, None, dtype=object)      # a row's own template (non-integer volume)
        fmts: list[str] = []
        limits: list[tuple[np.ndarray, int]] = []
        approx: Counter = Counter()
        volint = np.isfinite(vol) & (np.abs(vol) < 1e18)
        volint[volint] = vol[volint] == np.floor(vol[volint])

        def put(name: str, m: np.ndarray, *cols) -> None:
            """Rows ``m`` are ``name`` lines with tokens ``cols`` (the volume column, if one
            is, formatted as ``_fmt`` does: an integer, else written into the row's template)."""
            if not m.any():
                return
            v = next((j for j, c in enumerate(cols) if c is vol), -1)
            head = [str(r), name]
            exact = m if v < 0 else m & volint
            if exact.any():
                tid[exact] = len(fmts)
                fmts.append(" ".join(head + ["%d"] * len(cols)) + "\n")
                cnt[exact] = len(cols)
                for j, c in enumerate(cols):
                    T[exact, j] = c[exact] if isinstance(c, np.ndarray) else c
            if v >= 0 and (m & ~volint).any():
                rows = np.nonzero(m & ~volint)[0]
                pre = " ".join(head + ["%d"] * v + [""])
                post = "".join(" %d" for _ in cols[v + 1:]) + "\n"
                own[rows] = [pre + repr(x) + post for x in vol[rows].tolist()]
                others = [c for j, c in enumerate(cols) if j != v]
                cnt[rows] = len(others)
                for j, c in enumerate(others):
                    T[rows, j] = c[rows] if isinstance(c, np.ndarray) else c
            for j, c in enumerate(cols):
                if j != v and isinstance(c, np.ndarray):
                    limits.append((c[m], _COUNT_LIMIT.get(name, 2**31 - 1)))

        present = np.bincount(kind, minlength=256)
        is_k = {name: kind == K.CODE[name] for name in _FAST_NAMES if present[K.CODE[name]]}
        none = np.zeros(n, bool)
        k = lambda name: is_k.get(name, none)    # noqa: E731
        if self.unit != "flops" and k("compute").any():
            approx[f"compute (volume in {self.unit} written as flops)"] += int(k("compute").sum())
        on_sub = p2p & (comm != 0)     # (public miniGhost's and TeaLeaf's halo messages)
        for code, m in zip(*np.unique(kind[on_sub], return_counts=True)):
            approx[f"{K.NAME[int(code)]} (sub-communicator written on MPI_COMM_WORLD)"] += int(m)
        rows = _Rows("", none, P, peer == r, np.maximum(peer, 0), bs, br, vol, approx)
        for name, tokens in _AS_IS.items():
            if name in is_k:
                rows.kind, rows.m = name, is_k[name]
                put(name, rows.m, *tokens(rows))
        put("send", k("send"), peer, tag, bs)
        put("isend", k("isend"), peer, tag, bs)
        posted = br.astype(np.int64)
        for t, least in self.posted.items():
            posted[tag == t] = np.maximum(posted[tag == t], least)
        put("recv", k("recv"), peer, tag, posted)
        put("irecv", k("irecv"), peer, tag, posted)
        if len(srs):
            # SimGrid 4.1 requires both datatypes on sendRecv (6 arguments)
            put("sendRecv", _SENDRECV[kind], bs, peer, np.maximum(br, self.posted.get(0, 0)),
                source, MPI_BYTE, MPI_BYTE)
            replaced = int((kind[srs] != K.CODE["sendrecv"]).sum())
            if replaced:
                approx["sendrecv_replace (written as sendRecv)"] += replaced
        left_out = _IGNORED[kind]
        for code, m in zip(*np.unique(kind[left_out], return_counts=True)):
            approx[f"{K.NAME[int(code)]} (left out: SimGrid's replay ignores communicator "
                   f"creation)"] += int(m)
        if len(wa) and (lens == 0).any():         # (an empty list: a no-op, noted)
            left_out[wa[lens == 0]] = True
            approx["waitall (left out: no request)"] += int((lens == 0).sum())
        if len(ends) or len(failed):
            lines_of = np.concatenate([ends, failed])
            w_from = np.concatenate([c_row[:len(ends)], f_row if len(failed) else ends[:0]])
            sent = kind[w_from] == K.CODE["isend"]
            src = np.full(n, r, np.int64)
            dst = np.full(n, r, np.int64)
            wtag = np.zeros(n, np.int64)
            src[lines_of] = np.where(sent, r, peer[w_from])
            dst[lines_of] = np.where(sent, peer[w_from], r)
            wtag[lines_of] = tag[w_from]
            as_wait, as_test = is_wait.copy(), np.zeros(n, bool)
            (as_wait if self.tests_as_waits else as_test)[done_t] = True
            if self.tests_as_waits and len(done_t):
                approx[f"test ({TEST_AS_WAIT})"] += len(done_t)
            as_test[failed] = True
            if self.free_tests and len(failed):      # (:meth:`_waited`'s requests)
                waited = req[np.concatenate([waits, done_t if self.tests_as_waits
                                             else waits[:0]])]
                skip = failed[np.isin(req[failed], waited)]
                as_test[skip] = False
                left_out[skip] = True
                if len(skip):
                    approx[f"test ({_WAITED_TEST})"] += len(skip)
            put("wait", as_wait, src, dst, wtag)
            put("test", as_test, src, dst, wtag)
        put("waitall", is_waitall)
        for col, limit in limits:
            if len(col) and int(np.abs(col).max()) > limit:
                return None     # the per-action path lists them
        self.rep.approximated.update(approx)
        rows_fmt = np.array(fmts, dtype=object)[tid]
        mine = own != None      # noqa: E711 (elementwise)
        rows_fmt[mine] = own[mine]
        lines = np.empty(n, dtype=object)
        shared = np.nonzero(~mine)[0]
        if len(shared):     # most lines repeat (same call, peer, size): format each once
            h = tid[shared] * _MIX[0]
            for j in range(_TOKENS):
                h ^= T[shared, j] * _MIX[j + 1]
            _, first, inv = np.unique(h, return_index=True, return_inverse=True)
            rep = shared[first]
            if (tid[rep][inv] == tid[shared]).all() and (T[rep][inv] == T[shared]).all():
                lines[shared] = _formatted(rows_fmt[rep], T[rep], cnt[rep])[inv]
            else:           # a hash collision: format every line
                lines[shared] = _formatted(rows_fmt[shared], T[shared], cnt[shared])
        mine = np.nonzero(mine)[0]
        if len(mine):
            lines[mine] = _formatted(rows_fmt[mine], T[mine], cnt[mine])
        if subset.any():       # (each entry's request: its isend's or irecv's key)
            entry = np.isin(wa_rows - sl.start, wa[subset])
            e_from = c_row[len(ends):][entry]
            e_sent = kind[e_from] == K.CODE["isend"]
            keys = np.stack([np.where(e_sent, r, peer[e_from]), np.where(e_sent, peer[e_from], r),
                             tag[e_from]], axis=1).tolist()
            e_row = (wa_rows - sl.start)[entry].tolist()
            text: dict[int, list[str]] = {}
            for row, (src, dst, t) in zip(e_row, keys):
                text.setdefault(row, []).append(f"{r} wait {src} {dst} {t}\n")
            for row, got in text.items():
                lines[row] = "".join(got)
        return "".join(lines[~left_out].tolist())

    def completed_as(self, kind: str, completes: bool, approx) -> str:
        """The TI action a completion is written as: a test that completed as a wait in a
        replay's text (:data:`TEST_AS_WAIT`), else its own kind's (wait or test)."""
        if completes and self.tests_as_waits and kind.startswith("test"):
            approx(kind, TEST_AS_WAIT)
            return "wait"
        return kind[:4]

    def _waited(self, order: np.ndarray, a: np.ndarray) -> set[int]:
        """The requests that a ``wait`` line completes among the actions ``a`` (rows
        ``order``): those of a ``wait``, ``waitany`` or ``waitsome``, and of a test that
        completed them (:meth:`completed_as`: a wait too) (a ``waitall`` of every pending
        request is SimGrid's ``waitall``, which takes a request a test completed)."""
        kind = a["kind"]
        done = ((a["flags"] & K.FLAG_COMPLETED) != 0) & self.tests_as_waits
        single = K.mask({"wait", "waitany"})[kind] | (K.mask({"test", "testany"})[kind] & done)
        out = set(a["request"][single].tolist())
        multi = K.mask({"waitsome"})[kind] | (K.mask({"testsome", "testall"})[kind] & done)
        for i in order[multi].tolist():
            out.update(self.vec(i))
        return out

    def rank_lines(self, r: int) -> list[str]:
        out: list[str] = []
        created: dict[int, tuple[str, int, int, int]] = {}   # request -> (src, dst, tag) written
        pending: list[int] = []
        nulls: set[int] = set()   # requests of MPI_PROC_NULL calls: no-ops, left out exactly
        P, rep = self.P, self.rep

        def w(name: str, *tok) -> None:
            limit = _COUNT_LIMIT.get(name, 2**31 - 1)
            if any(type(t) is int and abs(t) > limit for t in tok):
                self.too_big.append(f"{r} {name} {' '.join(map(str, tok))}"[:80])
            out.append(" ".join([str(r), name, *map(str, tok)]))

        def approx(kind: str, how: str) -> None:
            rep.approximated[f"{kind} ({how})"] += 1

        def wait_line(name: str, req: int, kind: str) -> bool:
            if req in nulls:                  # a PROC_NULL call's request: a no-op
                return False
            if req < 0:         # MPI_REQUEST_NULL (a no-op), or a request a converter could
                approx(kind, "left out: no request")      # not link: counted, not dropped
                return False
            if req not in created:
                rep.dropped[kind] += 1     # its request was not written (dropped call)
                return False
            src, dst, tag = created[req]
            w(name, src, dst, tag)
            return True

        def done(req: int) -> None:
            created.pop(req, None)
            if req in pending:
                pending.remove(req)

        def nb(kind_out: str, peer: int, tag: int, nbytes: int, req: int) -> None:
            if kind_out == "isend":
                w("isend", peer, tag, nbytes)
                created[req] = (r, peer, tag)
            else:
                w("irecv", peer, tag, nbytes)
                created[req] = (peer, r, tag)
            pending.append(req)

        sl = self.d.rank_slice(r)
        order = receive_order(self.d, sl)   # a matched receive where its probe matched it
        a = self.d.actions[order]
        waited = self._waited(order, a) if self.free_tests else set()
        cols = [a[c].tolist() for c in ("kind", "flags", "peer", "tag", "comm", "bytes_sent",
                                        "bytes_recv", "volume", "request")]
        for i, code, flags, peer, tag, comm, bs, br, vol, req in zip(order.tolist(), *cols):
            kind = K.NAME[code]
            if kind in ("init", "finalize", "compute", "sleep"):
                if kind == "compute" and self.unit != "flops":
                    approx(kind, f"volume in {self.unit} written as flops")
                w(kind, *_AS_IS[kind](_Action(kind, P, False, 0, bs, br, _fmt(vol),
                                              rep.approximated)))
            elif kind in K.SENDS or kind in K.RECVS:
                if peer < 0 and not flags & K.FLAG_UNRESOLVED:
                    nulls.add(req)                  # MPI_PROC_NULL: a no-op in MPI too
                    continue
                if peer < 0:
                    rep.dropped[kind] += 1          # a receive whose source is unknown
                    continue
                out_kind = _SEND_AS.get(kind, kind)
                if out_kind != kind:
                    approx(kind, f"written as {out_kind}")
                if comm != 0:
                    approx(kind, "sub-communicator written on MPI_COMM_WORLD")
                if kind in K.SENDS:
                    nbytes = bs
                else:
                    nbytes = -1 if flags & K.FLAG_UNRESOLVED else self.size(br, tag)
                if out_kind in ("isend", "irecv"):
                    nb(out_kind, peer, tag, nbytes, req)
                else:
                    w(out_kind, peer, tag, nbytes)
            elif kind in K.SENDRECVS:
                src, rtag = (self.vec(i) + [-1, -1])[:2]
                if as_sendrecv_primitive(tag, rtag, comm, peer, src):
                    if kind != "sendrecv":
                        approx(kind, "written as sendRecv")
                    # SimGrid 4.1 requires both datatypes on sendRecv (6 arguments)
                    w("sendRecv", bs, peer, self.size(br, 0), src, MPI_BYTE, MPI_BYTE)
                elif peer >= 0 and src >= 0:
                    approx(kind, "tags kept: written as isend + recv + wait")
                    w("isend", peer, tag, bs)
                    w("recv", src, rtag, self.size(br, rtag))
                    w("wait", r, peer, tag)
                elif flags & K.FLAG_UNRESOLVED:
                    rep.dropped[kind] += 1          # a receive whose source is unknown
                elif peer >= 0:                     # (a shift's end rank, non-periodic:
                    approx(kind, "receive from MPI_PROC_NULL: its send written as "
                                 "isend + wait")    # the null half is a no-op in MPI)
                    w("isend", peer, tag, bs)
                    w("wait", r, peer, tag)
                elif src >= 0:
                    approx(kind, "send to MPI_PROC_NULL: its receive written as recv")
                    w("recv", src, rtag, self.size(br, rtag))
                else:
                    approx(kind, "left out: both sides MPI_PROC_NULL")
            elif kind in K.SINGLE_COMPLETIONS:
                if kind in ("waitany", "testany"):
                    approx(kind, f"written as {kind[:4]}")
                completes = kind.startswith("wait") or bool(flags & K.FLAG_COMPLETED)
                if not completes and req in waited:
                    approx(kind, _WAITED_TEST)
                    continue
                name = self.completed_as(kind, completes, approx)
                if wait_line(name, req, kind) and completes:
                    done(req)
            elif kind in K.MULTI_COMPLETIONS:
                ids = self.vec(i)
                completes = kind.startswith("wait") or bool(flags & K.FLAG_COMPLETED)
                known = [i for i in ids if i in created]
                if kind == "waitall" and known and sorted(known) == sorted(pending):
                    w("waitall")
                    for i in known:
                        done(i)
                    continue
                if kind != "waitall":
                    approx(kind, f"written as one {kind[:4]} per request")
                if not known and not all(i < 0 or i in nulls for i in ids):
                    rep.dropped[kind] += 1
                if not ids or any(i < 0 for i in ids):   # an empty list: a no-op, noted
                    approx(kind, "left out: no request")   # (CloverLeaf's on 2 ranks: 1801)
                for i in known:
                    if not completes and i in waited:
                        approx(kind, _WAITED_TEST)
                        continue
                    wait_line(self.completed_as(kind, completes, approx), i, kind)
                    if completes:
                        done(i)
            elif kind in K.MATCHED_PROBES:
                approx(kind, "left out: its mrecv/imrecv is written in its place")
            elif kind in _TI_COMM:
                w(kind, *_AS_IS[kind](_Action(kind, P, False, 0, bs, br, "", rep.approximated)))
            elif kind in _IGNORED_COMM:
                approx(kind, "left out: SimGrid's replay ignores communicator creation")
            elif kind in K.COLLECTIVES:
                if comm != 0:
                    rep.dropped[f"{kind} on a sub-communicator"] += 1
                    continue
                self.collective(w, approx, kind, i, peer, bs, br, vol, r)
            else:   # markers, probes, partitioned transfers, non-blocking collectives...
                rep.dropped[kind] += 1
        return out

    def collective(self, w, approx, kind, i, root, bs, br, vol, r) -> None:
        P = self.P
        is_root = r == root
        root = max(root, 0)
        if kind in _AS_IS:
            w(kind, *_AS_IS[kind](_Action(kind, P, is_root, root, bs, br, _fmt(vol),
                                          self.rep.approximated)))
        elif kind == "gatherv":
            v = self.vec(i) if is_root else [0] * P
            w("gatherv", bs, *v, root)
        elif kind == "allgatherv":
            w("allgatherv", bs, *self.vec(i))
        elif kind == "scatterv":
            v = self.vec(i) if is_root else [0] * P
            w("scatterv", *v, br, root)
        elif kind == "reduce_scatter":
            w("reducescatter", *self.vec(i), _fmt(vol))
        elif kind == "reduce_scatter_block":
            approx(kind, "written as reducescatter")
            w("reducescatter", *([br] * P), _fmt(vol))
        elif kind in ("alltoallv", "alltoallw"):
            if kind == "alltoallw":
                approx(kind, "written as alltoallv in bytes")
            v = self.vec(i)
            w("alltoallv", sum(v[:P]), *v[:P], sum(v[P:]), *v[P:])


def count_rootless(data: TraceColumns, rep: ExportReport) -> None:
    """A rooted collective whose source did not record its root (peer -1, e.g. TAU's bcast)
    must name one in SimGrid's text: it is written as root 0, and said in the report."""
    kind = data.actions["kind"]
    rootless = K.mask(K.ROOTED & K.COLLECTIVES)[kind] & (data.actions["peer"] < 0)
    for code, n in zip(*np.unique(kind[rootless], return_counts=True)):
        rep.approximated[f"{K.NAME[int(code)]} (root not recorded: written as root 0)"] += int(n)


def write_ti(data: TraceColumns, out, layout: str = "per-rank", lossy: bool = False,
             lower_world: bool = False, collectives: str = "auto",
             config: dict | None = None, replay: bool = False,
             free_tests: bool | str = False) -> ExportReport:
    """Write ``data`` as SimGrid 4.1 TI text (bytes, default MPI_BYTE).  ``per-rank``: ``out`` is
    a list file naming ``<out>_files/<rank>.txt`` (paths relative to the list's directory);
    ``single``: ``out`` holds every rank's lines.  Unless ``lossy``, raises MinitraceError when
    an action would be dropped; approximations are always listed in the returned report.  Files
    are written beside their final place and renamed into it: a failed export leaves the
    previous output (or none) in place, never part of the new one.  What SimGrid's replay cannot
    express is lowered first (:mod:`minitrace.collectives`), with the algorithms of the MPI
    library ``collectives`` names (``auto``: the one that ran the program); world collectives
    become SMPI options in the report (``options``) when the library runs each kind with one
    algorithm, else they are lowered too, unless ``config`` (SimGrid options of the replay to
    come) sets that kind; ``lower_world``: lower every world collective (a debugging switch to
    compare lowerings with SimGrid's built-in collectives); ``replay``: the text is for a replay
    with ``config``, whose receives are written as large as ``posted_sizes`` says (an export
    keeps each receive's own size, which an import reads back); ``free_tests``: the text is
    for a replay where a test costs nothing (``smpi/test`` 0), a test that did not complete a
    request a wait completes later left out (:data:`_WAITED_TEST`; an export keeps it), and a
    test that completed written as a wait (:data:`TEST_AS_WAIT`), unless ``free_tests`` is
    ``"tests"``."""
    out = os.fspath(out)
    if layout not in ("per-rank", "single"):
        raise MinitraceError(f"unknown layout {layout!r} (per-rank or single)")
    target = _check_output(out, layout)
    refuse_dropped(never_written(data.actions["kind"], data.actions["flags"]), out, lossy)
    rep = ExportReport()
    rep.library = library = resolve(collectives, data.meta)
    p = len(data.comms.get(0, range(data.nranks)))
    rep.options, mixed = world_plan(data.actions, p, library, config or {})
    data, rep.lowered, rep.dropped = lower(data, library, lower_world or frozenset(mixed))
    count_rootless(data, rep)
    wr = RankWriter(data, rep, posted_sizes(data.actions, config) if replay else None,
                    free_tests)

    def check() -> None:      # after every rank is written, before anything is renamed in
        if wr.too_big:
            raise MinitraceError(f"{len(wr.too_big)} line(s) have counts beyond what SimGrid "
                                 f"parses (int counts; first: {wr.too_big[0]!r})", out)
        refuse_dropped(rep.dropped, out, lossy)

    ranks = range(data.nranks)
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise write_error(e, out) from None
    if layout == "single":
        with replacing_file(out) as f:
            for r in ranks:
                f.write(wr.rank_text(r))
            check()
        rep.files.append(out)
    else:
        # the list is written (flushed) before the rank files replace the old ones, and
        # renamed in just after them
        with replacing_file(out) as f, replacing_dir(target) as d:
            for r in ranks:     # one rank's text in memory at a time
                (d / f"{r}.txt").write_text(wr.rank_text(r))
            check()
            f.write("".join(f"{target.name}/{r}.txt\n" for r in ranks))
            f.flush()
        rep.files += [out, *(str(target / f"{r}.txt") for r in ranks)]
    return rep


def _check_output(out: str, layout: str) -> Path | None:
    """Refuse, before anything is written, outputs that would fail half-way (in the wording of
    ``outputs.check_output_file``; a missing parent directory is made): ``out`` or the
    rank-file directory being the wrong kind of file.  Returns the rank-file directory."""
    if os.path.isdir(out):
        raise MinitraceError("is a directory: name a file to write", out)
    if layout == "single":
        return None
    d = rank_files_dir(out)
    if d.exists() and not d.is_dir():
        raise MinitraceError("exists and is not a directory", str(d))
    return d


def rank_files_dir(out) -> Path:
    """Where the per-rank export of the list file ``out`` puts its rank files (replaced whole)."""
    base = Path(out)
    return base.parent / f"{base.name}_files"
