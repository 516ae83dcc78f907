"""OTF2 (Score-P) archives <-> TraceData, through Score-P's own ``otf2`` Python bindings.

Reading: every MPI region of a rank's master location becomes one action; the message events
inside it (MpiSend/MpiRecv/MpiIsend/MpiIrecv..., MpiCollectiveEnd, non-blocking collective
events) fill peer (world rank, through the communicator's group), tag, communicator and bytes.
OTF2 collective sizes are Score-P's totals over all peers of this rank; they are converted to the
model's per-call convention (see docs/CONVERTERS.md).  Writing does the inverse, so a trace
survives the round trip with the same MPI actions.
"""
from __future__ import annotations

import os
import sys
import tempfile
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from minitrace import kinds as K
from minitrace.errors import MinitraceError
from minitrace.model import NONE, TraceData
from minitrace.outputs import replacing_dir, write_error

from .callstream import BRECV, BSENT, COMM, FLAGS, KIND, PEER, REQUEST, TAG, RankStream, build

_C = K.CODE
_N = K.NAME
#: Message events: which side of a message each records.
_MESSAGE_SIDE = {"MpiSend": "sent", "MpiIsend": "sent", "MpiRecv": "received",
                 "MpiIrecv": "received"}
_SELF = -2          # comm id placeholder of a COMM_SELF-like comm (one communicator per rank)


def _import_otf2():
    try:
        import otf2
    except ImportError as e:  # pragma: no cover - otf2 is a declared dependency
        raise MinitraceError(f"the 'otf2' package is needed for OTF2 traces ({e})") from None
    return otf2


def find_anchor(path) -> Path:
    """The ``.otf2`` anchor file of ``path`` (the anchor itself or the directory holding it)."""
    p = Path(path)
    if p.is_dir():
        anchors = sorted(p.glob("*.otf2"))
        if not anchors:
            raise MinitraceError("no .otf2 anchor file in this directory", str(p))
        if len(anchors) > 1 and (p / "traces.otf2").exists():
            return p / "traces.otf2"
        if len(anchors) > 1:
            names = ", ".join(a.name for a in anchors)
            raise MinitraceError(f"several .otf2 anchors here ({names}); name one", str(p))
        return anchors[0]
    if not p.exists():
        raise MinitraceError("no such file", str(p))
    return p


# == sizes: Score-P totals <-> model per-call bytes ============================================
def _to_model(kind: int, sent: int, recv: int, size: int, me: int, is_root: bool):
    """Model (bytes_sent, bytes_recv) from Score-P's totals over all peers (scorep_mpi_coll)."""
    name, P = K.BLOCKING_OF.get(_N[kind], _N[kind]), max(size, 1)
    if name in ("allgather", "allgatherv"):
        return sent // P, recv
    if name == "allreduce":
        return sent // P, recv // P
    if name == "bcast":
        return (sent // P, 0) if is_root else (0, recv)
    if name == "reduce":
        return (sent, recv // P) if is_root else (sent, 0)
    if name in ("reduce_scatter", "reduce_scatter_block"):
        return sent, recv // P
    if name == "scan":
        b = recv // (me + 1)
        return b, b
    if name == "exscan":
        b = sent // (P - me - 1) if me < P - 1 else (recv // me if me > 0 else 0)
        return b, b
    return sent, recv     # gather(v), scatter(v), alltoall(v/w), barrier: same convention


def _to_otf2(kind: int, sent: int, recv: int, size: int, me: int, is_root: bool):
    """Inverse of ``_to_model``."""
    name, P = K.BLOCKING_OF.get(_N[kind], _N[kind]), max(size, 1)
    if name in ("allgather", "allgatherv"):
        return sent * P, recv
    if name == "allreduce":
        return sent * P, recv * P
    if name == "bcast":
        return (sent * P, sent) if is_root else (0, recv)
    if name == "reduce":
        return (sent, recv * P) if is_root else (sent, 0)
    if name in ("reduce_scatter", "reduce_scatter_block"):
        return sent, recv * P
    if name == "scan":
        return (P - me) * sent, (me + 1) * sent
    if name == "exscan":
        return (P - me - 1) * sent, me * sent
    return sent, recv


# == reading ===================================================================================
class _Reader:
    def __init__(self, defs, keep_regions: bool):
        otf2 = _import_otf2()
        self.otf2 = otf2
        res = defs.clock_properties.timer_resolution
        self.res = float(res)
        self.offset = int(defs.clock_properties.global_offset)
        self.rank_of = self._ranks(defs)
        self.nranks = len(self.rank_of)
        self.comm_id, self.comms = self._comms(defs)
        self.strings: list[str] = []
        self.counter, self.unit = _volume_counter(defs)
        self._counter_at: dict = {}           # metric class -> (member index, relative?) | None
        self.streams = [RankStream(self.strings if keep_regions else None,
                                   counted=self.counter is not None)
                        for _ in range(self.nranks)]
        self.requests = [dict() for _ in range(self.nranks)]   # otf2 request id -> row index
        self.inits = [[] for _ in range(self.nranks)]          # rows of persistent inits
        self.unmapped: Counter = Counter()
        self.messages = {"sent": 0, "received": 0}     # the archive's message events
        self.user_regions = 0
        self.skipped_locations = 0

    def _ranks(self, defs) -> dict:
        """Location -> MPI world rank (its index in the MPI COMM_LOCATIONS group)."""
        gt, par = self.otf2.GroupType, self.otf2.Paradigm
        for g in defs.groups:
            if g.group_type == gt.COMM_LOCATIONS and g.paradigm == par.MPI:
                return {loc: r for r, loc in enumerate(g.members)}
        return {}

    def _comms(self, defs):
        """OTF2 comm -> minitrace comm id, and the table of members (world ranks).

        ``MPI_COMM_WORLD`` (else the first comm of all ranks in order) is 0; every other MPI comm
        gets its own id in definition order (a duplicate of the world is a communicator of its
        own).  A comm whose group is of type COMM_SELF is one communicator per rank (Score-P
        defines every one-member communicator that way): ids are made per rank when used
        (``_self_id``)."""
        gt, par = self.otf2.GroupType, self.otf2.Paradigm
        ids, comms, nxt = {}, {0: np.arange(self.nranks, dtype=np.int32)}, 1
        mpi = [c for c in defs.comms if c.group is not None and c.group.paradigm == par.MPI]
        everyone = list(range(self.nranks))
        world = next((c for c in mpi if c.name == "MPI_COMM_WORLD"), None) or next(
            (c for c in mpi if c.group.group_type != gt.COMM_SELF
             and [self.rank_of.get(loc, -1) for loc in c.group.members] == everyone), None)
        for c in mpi:
            if c is world:
                ids[c] = 0
            elif c.group.group_type == gt.COMM_SELF:
                ids[c] = _SELF
            else:
                ids[c] = nxt
                comms[nxt] = np.asarray([self.rank_of.get(loc, -1) for loc in c.group.members],
                                        dtype=np.int32)
                nxt += 1
        self._self_ids: dict = {}
        return ids, comms

    def _self_id(self, comm, rank: int) -> int:
        """The id of ``rank``'s own instance of a COMM_SELF-like comm."""
        key = (comm, rank)
        cid = self._self_ids.get(key)
        if cid is None:
            cid = self._self_ids[key] = max(self.comms) + 1
            self.comms[cid] = np.asarray([rank], dtype=np.int32)
        return cid

    def t(self, ticks: int) -> float:
        return (ticks - self.offset) / self.res

    def _world(self, rank: int, comm, r: int) -> tuple[int, int]:
        """(comm id, world rank) of comm-rank ``r`` of ``comm`` seen from ``rank``."""
        cid = self.comm_id.get(comm)
        if cid is None:
            self.unmapped["event on a communicator without an MPI group"] += 1
            return 0, NONE
        if cid == _SELF:
            return self._self_id(comm, rank), rank if r == 0 else NONE
        members = self.comms[cid]
        return cid, int(members[r]) if 0 <= r < len(members) else NONE

    def _comm_pos(self, rank: int, cid: int) -> tuple[int, int]:
        """(size, position of ``rank``) in communicator ``cid``."""
        members = self.comms[cid].tolist()
        return len(members), members.index(rank) if rank in members else 0

    def event(self, rank: int, ev) -> None:
        E = self.otf2.events
        s = self.streams[rank]
        tp = type(ev)
        if tp is E.Enter or tp is E.Leave:
            region = ev.region
            if region.paradigm == self.otf2.Paradigm.MPI or region.name.startswith("MPI_"):
                if tp is E.Enter:
                    row = s.enter_mpi(region.name, self.t(ev.time))
                    if row is not None and _N[row[KIND]] in K.INITS:
                        self.inits[rank].append(s.current_index)
                else:
                    s.leave_mpi(self.t(ev.time))
            else:
                self.user_regions += 1
                s.region(region.name, self.t(ev.time), tp is E.Enter)
            return
        if tp is E.Metric:
            if self.counter is not None:
                self._metric(s, ev)
            return
        row = s.current
        name = tp.__name__
        handler = self._HANDLERS.get(name)
        if handler is None:
            return
        side = _MESSAGE_SIDE.get(name)
        if side:
            self.messages[side] += 1
        if row is None:
            self.unmapped[tp.__name__] += 1
            return
        handler(self, rank, s, row, ev)

    def _metric(self, s: RankStream, ev) -> None:
        """Keep the chosen counter's running value (Score-P writes it before each Enter and
        Leave, so a compute gap's volume is its growth from one call to the next)."""
        at = self._counter_at.get(ev.metric, False)
        if at is False:
            cls = getattr(ev.metric, "metric_class", ev.metric)
            names = [m.name for m in cls.members]
            at = self._counter_at[ev.metric] = (
                (names.index(self.counter), "RELATIVE" in str(cls.members[0].metric_mode))
                if self.counter in names else None)
        if at is None:
            return
        value = float(ev.values[at[0]])
        s.counter = (s.counter or 0.0) + value if at[1] else value

    # -- message events --------------------------------------------------------------------
    def _persistent(self, rank, s, row, req: int, inits) -> list | None:
        """The init row a start/startall activates as OTF2 request ``req`` (Score-P numbers a
        persistent request once: its first start links it to the oldest init of that side not
        yet linked); the start gets the request (startall: in its vector)."""
        rows = s.rows
        idx = self.requests[rank].get(req)
        if idx is None or _N[rows[idx][KIND]] not in inits:
            idx = next((j for j in self.inits[rank] if rows[j][REQUEST] == NONE
                        and _N[rows[j][KIND]] in inits), None)
            if idx is None:
                self.unmapped["start of a request without its init"] += 1
                return None
            rows[idx][REQUEST] = req
            self.requests[rank][req] = idx
        row[FLAGS] |= K.FLAG_PERSISTENT
        if row[KIND] == _C["start"]:
            row[REQUEST] = req
        else:
            s.vector(s.current_index).append(req)
        return rows[idx]

    def _send(self, rank, s, row, ev):
        cid, peer = self._world(rank, ev.communicator, ev.receiver)
        k = row[KIND]
        if _N[k] in K.STARTS and type(ev).__name__ == "MpiIsend":
            init = self._persistent(rank, s, row, ev.request_id, K.SEND_INITS)
            if init is not None:
                init[PEER], init[TAG], init[COMM], init[BSENT] = peer, ev.msg_tag, cid, \
                    ev.msg_length
        elif _N[k] in K.SENDS or _N[k] in K.SENDRECVS:
            row[PEER], row[TAG], row[COMM], row[BSENT] = peer, ev.msg_tag, cid, ev.msg_length
            if _N[k] in K.NONBLOCKING_SENDS:
                row[REQUEST] = ev.request_id
                self.requests[rank][ev.request_id] = s.current_index
        else:
            self.unmapped[type(ev).__name__ + " in " + _N[k]] += 1

    def _recv(self, rank, s, row, ev):
        cid, peer = self._world(rank, ev.communicator, ev.sender)
        k = row[KIND]
        if k == _C["recv"]:
            row[PEER], row[TAG], row[COMM], row[BRECV] = peer, ev.msg_tag, cid, ev.msg_length
        elif _N[k] in K.SENDRECVS:
            s.vector(s.current_index)[:] = [peer, ev.msg_tag]
            row[BRECV] = ev.msg_length
        else:
            self.unmapped["MpiRecv in " + _N[k]] += 1

    def _request_created(self, rank, s, row, ev):
        k = row[KIND]
        if _N[k] in K.STARTS and type(ev).__name__ == "MpiIrecvRequest":
            self._persistent(rank, s, row, ev.request_id, K.RECV_INITS)
        elif k == _C["irecv"] or _N[k] in K.NONBLOCKING_COLLECTIVES:
            row[REQUEST] = ev.request_id
            self.requests[rank][ev.request_id] = s.current_index
        else:
            self.unmapped[type(ev).__name__ + " in " + _N[k]] += 1

    def _complete(self, s, row, req: int, done: bool) -> None:
        name = _N[row[KIND]]
        if name in K.SINGLE_COMPLETIONS:
            row[REQUEST] = req
        elif name in K.MULTI_COMPLETIONS:
            s.vector(s.current_index).append(req)
        else:
            self.unmapped[f"completion in {name}"] += 1
            return
        if done and name in K.TESTS:
            row[FLAGS] |= K.FLAG_COMPLETED

    def _isend_complete(self, rank, s, row, ev):
        self._complete(s, row, ev.request_id, True)

    def _irecv_complete(self, rank, s, row, ev):
        idx = self.requests[rank].get(ev.request_id)
        if idx is not None:
            made = s.rows[idx]
            made[PEER], made[COMM] = self._world(rank, ev.communicator, ev.sender)[::-1]
            made[TAG], made[BRECV] = ev.msg_tag, ev.msg_length
        self._complete(s, row, ev.request_id, True)

    def _request_test(self, rank, s, row, ev):
        self._complete(s, row, ev.request_id, False)

    def _coll_end(self, rank, s, row, ev):
        k = row[KIND]
        if _N[k] not in K.COLLECTIVES:
            self.unmapped["MpiCollectiveEnd in " + _N[k]] += 1
            return
        self._fill_coll(rank, row, ev)

    def _fill_coll(self, rank, row, ev):
        k = row[KIND]
        cid, root = self._world(rank, ev.communicator, ev.root)
        size, me = self._comm_pos(rank, cid)
        is_root = False
        row[COMM] = cid
        if _N[k] in K.ROOTED:
            row[PEER] = root
            is_root = root == rank
        row[BSENT], row[BRECV] = _to_model(k, ev.size_sent, ev.size_received, size, me, is_root)

    def _icoll_complete(self, rank, s, row, ev):
        idx = self.requests[rank].get(ev.request_id)
        if idx is not None:
            self._fill_coll(rank, s.rows[idx], ev)
        self._complete(s, row, ev.request_id, True)

    _HANDLERS = {
        "MpiSend": _send, "MpiIsend": _send, "MpiRecv": _recv,
        "MpiIrecvRequest": _request_created, "NonBlockingCollectiveRequest": _request_created,
        "MpiIsendComplete": _isend_complete, "MpiIrecv": _irecv_complete,
        "MpiRequestTest": _request_test, "MpiRequestCancelled": _isend_complete,
        "MpiCollectiveEnd": _coll_end, "NonBlockingCollectiveComplete": _icoll_complete,
    }


def read_otf2(anchor, keep_regions: bool = False, keep_going: bool = False) -> TraceData:
    """Read an OTF2 archive (its ``.otf2`` anchor, or the directory holding it).

    ``keep_regions`` keeps non-MPI regions as ``region_begin``/``region_end`` markers (names in
    the string table); by default they are dropped and counted in ``meta['user_regions_dropped']``.
    A damaged archive (a location's events cut short or unreadable, a local definition file
    missing) is an error naming the file; with ``keep_going`` the events read until then are
    kept and the trace is marked incomplete (``meta['damaged']`` says what happened).
    """
    path = find_anchor(anchor)
    _import_otf2()
    if path.suffix != ".otf2":
        raise MinitraceError("not an OTF2 anchor file (expected a .otf2 file)", str(path))
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise MinitraceError(f"cannot read: {e.strerror}", str(path)) from None
    if b"OTF2" not in head[:8]:                  # e.g. 03 'B' 'OTF2': the anchor's magic
        raise MinitraceError("not an OTF2 anchor file (no OTF2 header)", str(path))
    if not path.with_suffix(".def").exists():
        raise MinitraceError(f"the archive's global definitions are missing (its anchor "
                             f"{path.name} needs them beside it)", str(path.with_suffix(".def")))
    noise: list[str] = []
    try:
        with _library_noise(noise):
            rd, hosts, other, damaged = _read_events(path, keep_regions, keep_going)
    except MinitraceError:
        raise
    except _Unreadable as e:
        raise MinitraceError(f"cannot read OTF2 archive: {_summary(noise, e.cause)}{e.detail}",
                             str(e.where)) from None
    except Exception as e:  # the bindings raise plain Exceptions for corrupt archives
        raise MinitraceError(f"cannot read OTF2 archive: {_summary(noise, e)}",
                             str(path)) from None
    if damaged and noise:
        damaged.append(f"OTF2 library: {_summary(noise)}")
    meta = {
        "producer": "Score-P/OTF2 (converted by minitrace)",
        "source_format": "otf2",
        "source_path": os.path.abspath(path),
        "clock_resolution": 1.0 / rd.res,
        "complete": not damaged and all(any(r[KIND] == _C["finalize"] for r in s.rows)
                                        for s in rd.streams),
    }
    if damaged:
        meta["damaged"] = damaged
    if hosts:
        meta["hosts"] = sorted(set(hosts))
        meta["rank_to_node"] = [sorted(set(hosts)).index(h) for h in hosts]
    meta["source_messages"] = rd.messages
    meta["volume_unit"] = rd.unit
    meta["volume_source"] = (f"{rd.counter} counter (OTF2 metric)" if rd.counter else
                             "time outside MPI calls (no PAPI_TOT_INS or PAPI_TOT_CYC metric)")
    if rd.unmapped:
        meta["unmapped_events"] = dict(rd.unmapped)
    if other:
        meta["non_rank_locations_skipped"] = len(other)
    if rd.user_regions and not keep_regions:
        meta["user_regions_dropped"] = rd.user_regions // 2
    try:
        return build(rd.streams, rd.comms, rd.strings, meta)
    except MinitraceError as e:
        raise MinitraceError(str(e), str(path)) if e.path is None else e from None


class _Unreadable(Exception):
    """The events stopped being readable: the bindings' exception, the file to name (a
    location cut short, else the anchor) and what to add to the message."""

    def __init__(self, cause: Exception, where: Path, detail: str):
        super().__init__(str(cause))
        self.cause, self.where, self.detail = cause, where, detail


def _location_file(anchor: Path, loc, ext: str) -> Path:
    """``<archive>/<location id>.<ext>``: where OTF2 keeps a location's events (evt) or local
    definitions (def)."""
    return anchor.parent / anchor.stem / f"{loc._ref}.{ext}"


def _read_events(path: Path, keep_regions: bool, keep_going: bool):
    """(reader state, hosts, events of other locations, damage notes) of the archive."""
    otf2 = _import_otf2()
    damaged: list[str] = []

    def damage(what: str, where: Path) -> None:
        if not keep_going:
            raise MinitraceError(what + " (--keep-going keeps what is readable)", str(where))
        damaged.append(f"{where}: {what}")

    with otf2.reader.open(str(path)) as tr:
        defs = tr.definitions
        rd = _Reader(defs, keep_regions)
        if not rd.nranks:
            raise MinitraceError("no MPI locations in this archive (not an MPI trace?)",
                                 str(path))
        rank_of = rd.rank_of
        for loc in rank_of:
            evt = _location_file(path, loc, "evt")
            if loc.number_of_events and not evt.exists():
                raise MinitraceError(f"the events of rank {rank_of[loc]} are missing",
                                     str(evt))
        local = {loc: _location_file(path, loc, "def").exists() for loc in rank_of}
        if any(local.values()):
            for loc in (loc for loc, ok in local.items() if not ok):
                damage(f"the local definitions of rank {rank_of[loc]} are missing (its "
                       "communicators and other mapped ids would be wrong)",
                       _location_file(path, loc, "def"))
        other, seen, last = Counter(), Counter(), [0] * rd.nranks
        try:
            for loc, ev in tr.events:
                rank = rank_of.get(loc)
                if rank is None:
                    other[loc] += 1
                    continue
                seen[loc] += 1
                if ev.time < last[rank] or seen[loc] > loc.number_of_events:
                    # the library decoding a damaged chunk over again, from its start
                    raise MinitraceError(f"rank {rank}'s events go back in time after "
                                         f"{seen[loc] - 1} of them (a damaged chunk)")
                last[rank] = ev.time
                rd.event(rank, ev)
        except Exception as e:
            short = [loc for loc in rank_of if seen[loc] != loc.number_of_events]
            where = _location_file(path, short[0], "evt") if short else path
            ranks = ", ".join(str(rank_of[loc]) for loc in short)
            if not keep_going:
                raise _Unreadable(e, where, f" (events of rank(s) {ranks} cut short; "
                                  "--keep-going keeps what is readable)" if short else "")
            damaged.append(f"{where}: reading stopped at an unreadable event, rank(s) {ranks} "
                           f"short of their events ({(str(e).splitlines() or [''])[0]})")
            return rd, _hosts(defs, rank_of), other, damaged
        for loc, r in rank_of.items():
            if seen[loc] < loc.number_of_events:
                damage(f"rank {r}: {seen[loc]} of the {loc.number_of_events} events the "
                       "definitions announce (cut short?)", _location_file(path, loc, "evt"))
        hosts = _hosts(defs, rank_of)
    return rd, hosts, other, damaged


@contextmanager
def _library_noise(lines: list[str]):
    """Collect into ``lines`` what the OTF2 C library prints on stderr (file descriptor 2)
    meanwhile, instead of letting it reach the user's terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            lines.extend(tmp.read().decode("utf-8", "replace").splitlines())


def _summary(noise: list[str], exc: Exception | None = None) -> str:
    """One line out of the OTF2 library's messages (the file it could not open, else its
    first error) and the bindings' exception."""
    msgs = [ln.split(": error: ", 1)[1] for ln in noise if ": error: " in ln]
    posix = next((m for m in msgs if "POSIX: '" in m), None)
    first = (posix.split(":", 1)[0] + ": " + posix.split("POSIX: ", 1)[1]) if posix else \
        (msgs[0] if msgs else "")
    why = (str(exc).splitlines() or [type(exc).__name__])[0] if exc is not None else ""
    out = "; ".join(x for x in (first, why) if x)
    if len(msgs) > 1:
        out += f" (and {len(msgs) - 1} more OTF2 library message(s))"
    return out or "unknown error"


#: Counters that make the compute volume, in order of preference, and the unit each gives.
VOLUME_COUNTERS = (("PAPI_TOT_INS", "instructions"), ("PAPI_TOT_CYC", "cycles"))


def _volume_counter(defs) -> tuple[str | None, str]:
    """(metric name, volume unit) of the counter the compute volume is measured with: the
    instructions counter when the archive has it, else cycles, else (None, 'seconds')."""
    names = {m.name for m in defs.metric_members}
    return next(((n, u) for n, u in VOLUME_COUNTERS if n in names), (None, "seconds"))


def _hosts(defs, rank_of) -> list[str]:
    """Node name of each rank (the system-tree parent of its location group)."""
    out = [""] * len(rank_of)
    for loc, r in rank_of.items():
        node = getattr(loc.group, "system_tree_parent", None)
        out[r] = node.name if node is not None else ""
    return out if all(out) else []


# == writing ===================================================================================
_ROLE = {"send": "POINT2POINT", "recv": "POINT2POINT", "p2p": "POINT2POINT",
         "persist": "POINT2POINT", "complete": "FUNCTION", "meta": "FUNCTION", "comm": "FUNCTION"}
_COLL_ROLE = {"barrier": "BARRIER", "bcast": "COLL_ONE2ALL", "scatter": "COLL_ONE2ALL",
              "scatterv": "COLL_ONE2ALL", "gather": "COLL_ALL2ONE", "gatherv": "COLL_ALL2ONE",
              "reduce": "COLL_ALL2ONE", "scan": "COLL_OTHER", "exscan": "COLL_OTHER"}


def mpi_name(kind: str) -> str:
    """``reduce_scatter_block`` -> ``MPI_Reduce_scatter_block``."""
    return "MPI_" + kind[:1].upper() + kind[1:]


def write_otf2(data: TraceData, out_dir, archive_name: str = "traces",
               timer_resolution: int = 1_000_000_000) -> dict:
    """Write ``data`` as an OTF2 archive ``out_dir/<archive_name>.otf2`` (+ .def, events).

    Every MPI action becomes an Enter/Leave of its MPI region with the matching message or
    collective events; compute actions are the gaps between calls.  Untimed traces (NaN times)
    get a synthetic clock: compute advances by its volume when the unit is seconds, every call
    by one tick.  Returns {kind name: count} of the actions OTF2 cannot hold whole: written as
    regions only (no OTF2 event carries their arguments: persistent/partitioned requests,
    probes, ...) or, for v-collectives, with totals but without their per-peer vector.
    The archive is written whole or not at all: into a temporary directory beside ``out_dir``,
    renamed into place once the library has closed it without an error (a full disk: one
    line naming ``out_dir``, the library's messages summarised in it, nothing left behind).
    """
    otf2 = _import_otf2()
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise MinitraceError("output directory exists and is not empty", str(out))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise write_error(e, out) from None
    times = _write_times(data, timer_resolution)
    lossy: Counter = Counter()
    noise: list[str] = []
    with replacing_dir(out) as tmp:
        try:
            with _library_noise(noise):
                _write_archive(otf2, data, tmp, archive_name, timer_resolution, times, lossy)
        except Exception as e:
            if not (noise or isinstance(e, OSError) or type(e).__module__.startswith("_otf2")):
                raise    # not the library's nor the system's: a bug, said as one
            raise MinitraceError(f"cannot write the OTF2 archive: {_write_failure(noise, e)}",
                                 str(out)) from None
        if any(": error: " in ln for ln in noise):   # the library can fail without raising
            raise MinitraceError(f"cannot write the OTF2 archive: {_write_failure(noise)}",
                                 str(out))
    return dict(lossy)


def _write_failure(noise: list[str], exc: Exception | None = None) -> str:
    """The cause of a failed write in a few words, e.g. 'No space left on device': the OTF2
    library's first error (it names the hidden temporary, so its file is left out), else the
    exception."""
    msgs = [ln.split(": error: ", 1)[1] for ln in noise if ": error: " in ln]
    if msgs:
        return msgs[0].split(": ", 1)[0]
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _write_archive(otf2, data, path: Path, archive_name, timer_resolution, times, lossy):
    """Write the archive in ``path``; the library's writer is closed (and its files) even when
    writing fails, so that it says nothing more (a traceback) when it is garbage collected."""
    import _otf2      # the bindings' C layer: to release an archive whose close failed
    tr = otf2.writer.Writer(str(path), archive_name=archive_name,
                            timer_resolution=timer_resolution)
    try:
        _write_contents(otf2, tr, data, times, lossy)
        tr.close()
    except BaseException:
        if tr._handle is not None:   # not closed: release the archive, once
            handle, tr._handle = tr._handle, None
            try:
                _otf2.Archive_Close(handle)
            except Exception:
                pass                 # already failing: the first error is the one to report
        raise


def _write_contents(otf2, tr, data, times, lossy):
    """The definitions and every rank's events, through the open writer ``tr``."""
    d = tr.definitions
    hosts = data.meta.get("hosts") or ["localhost"]
    r2n = data.meta.get("rank_to_node") or [0] * data.nranks
    machine = d.system_tree_node("machine")
    nodes = [d.system_tree_node(h, parent=machine) for h in hosts]
    locs = []
    for r in range(data.nranks):
        node = nodes[r2n[r]] if r < len(r2n) and r2n[r] < len(nodes) else nodes[0]
        lg = d.location_group(f"MPI Rank {r}", system_tree_parent=node)
        locs.append(d.location("Master thread", group=lg))
    d.group("", group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=otf2.Paradigm.MPI,
            members=locs)
    comms = {}
    for cid, members in sorted(data.comms.items()):
        g = d.group("", group_type=otf2.GroupType.COMM_GROUP, paradigm=otf2.Paradigm.MPI,
                    members=[locs[int(m)] for m in members])
        comms[cid] = (d.comm("MPI_COMM_WORLD" if cid == 0 else f"comm {cid}", group=g),
                      [int(m) for m in members])
    regions = {}

    def region(kind: str):
        if kind not in regions:
            base = K.BLOCKING_OF.get(kind, kind)
            role = _COLL_ROLE.get(base, "COLL_ALL2ALL") if kind in K.ALL_COLLECTIVES \
                else _ROLE[K.CATEGORY[kind]]
            regions[kind] = d.region(mpi_name(kind), region_role=getattr(otf2.RegionRole, role),
                                     paradigm=otf2.Paradigm.MPI, source_file="MPI")
        return regions[kind]

    user = {}

    def user_region(name: str):
        if name not in user:
            user[name] = d.region(name, region_role=otf2.RegionRole.FUNCTION,
                                  paradigm=otf2.Paradigm.USER)
        return user[name]

    for r in range(data.nranks):
        w = tr.event_writer_from_location(locs[r])
        _write_rank(otf2, w, data, r, times[data.rank_slice(r)], comms, region, user_region,
                    lossy)


def _write_times(data: TraceData, res: int) -> np.ndarray:
    """Integer (t_start, t_end) ticks per action; synthetic when the trace is untimed."""
    a = data.actions
    t = np.stack([a["t_start"], a["t_end"]], axis=1)
    out = np.zeros((len(a), 2), dtype=np.int64)
    finite = np.isfinite(t).all(axis=1)
    if finite.all() and len(a):
        t0 = np.nanmin(t[:, 0])
        return np.round((t - t0) * res).astype(np.int64)
    sec = data.meta.get("volume_unit") == "seconds"
    compute = _C["compute"], _C["sleep"]
    for r in range(data.nranks):
        sl = data.rank_slice(r)
        now = 0
        for i in range(sl.start, sl.stop):
            if a["kind"][i] in compute:
                now += max(1, int(round(a["volume"][i] * res))) if sec else 1
                continue
            out[i] = now, now + 1
            now += 1
    return out


def _write_rank(otf2, w, data, rank, ticks, comms, region, user_region, lossy):
    E = otf2.events
    lo = data.rank_slice(rank).start
    acts = data.actions[data.rank_slice(rank)]
    created: dict[int, int] = {}      # request id -> index of the creating action in ``acts``
    undefined_root = otf2.Undefined.UINT32.value if hasattr(otf2.Undefined.UINT32, "value") \
        else 0xFFFFFFFF

    def comm_rank(cid, world):
        comm, members = comms.get(int(cid), comms[0])
        return comm, (members.index(world) if world in members else undefined_root)

    def complete(i, req, t, done):
        j = created.get(int(req))
        if j is None:
            return
        made = _N[int(acts["kind"][j])]
        if not done:
            w(E.MpiRequestTest(t, int(req)))
        elif made in K.NONBLOCKING_SENDS:
            w(E.MpiIsendComplete(t, int(req)))
        elif made == "irecv":
            comm, src = comm_rank(acts["comm"][j], int(acts["peer"][j]))
            w(E.MpiIrecv(t, src, comm, int(acts["tag"][j]) & 0xFFFFFFFF,
                         int(acts["bytes_recv"][j]), int(req)))
        elif made in K.NONBLOCKING_COLLECTIVES:
            coll_end(j, t, int(req))

    def coll_end(j, t, req=None):
        k = int(acts["kind"][j])
        comm, members = comms.get(int(acts["comm"][j]), comms[0])
        me = members.index(rank) if rank in members else 0
        root = undefined_root
        is_root = False
        if int(acts["peer"][j]) >= 0 and _N[k] in K.ROOTED:
            root = members.index(int(acts["peer"][j])) if int(acts["peer"][j]) in members \
                else undefined_root
            is_root = int(acts["peer"][j]) == rank
        s, rcv = _to_otf2(k, int(acts["bytes_sent"][j]), int(acts["bytes_recv"][j]),
                          len(members), me, is_root)
        op = getattr(otf2.CollectiveOp, K.BLOCKING_OF.get(_N[k], _N[k]).upper())
        if req is None:
            w(E.MpiCollectiveEnd(t, op, comm, root, s, rcv))
        else:
            w(E.NonBlockingCollectiveComplete(t, op, comm, root, s, rcv, req))

    for i in range(len(acts)):
        k = int(acts["kind"][i])
        name = _N[k]
        t0, t1 = int(ticks[i, 0]), int(ticks[i, 1])
        if name in K.NON_MPI:                # not MPI regions: compute is the gap between calls
            if name in ("region_begin", "region_end"):
                tag = int(acts["tag"][i])
                rname = data.strings[tag] if 0 <= tag < len(data.strings) else f"region {tag}"
                ev = E.Enter if name == "region_begin" else E.Leave
                w(ev(t0, user_region(rname)))
            continue
        reg = region(name)
        w(E.Enter(t0, reg))
        peer, tag = int(acts["peer"][i]), int(acts["tag"][i]) & 0xFFFFFFFF
        req = int(acts["request"][i])
        tested = name in K.TESTS and not acts["flags"][i] & K.FLAG_COMPLETED   # nothing done
        if name in K.SENDS:
            comm, dst = comm_rank(acts["comm"][i], peer)
            if name in K.BLOCKING_SENDS:
                w(E.MpiSend(t0, dst, comm, tag, int(acts["bytes_sent"][i])))
            else:
                w(E.MpiIsend(t0, dst, comm, tag, int(acts["bytes_sent"][i]), req))
                created[req] = i
        elif name == "recv":
            comm, src = comm_rank(acts["comm"][i], peer)
            w(E.MpiRecv(t1, src, comm, tag, int(acts["bytes_recv"][i])))
        elif name == "irecv" or name in K.NONBLOCKING_COLLECTIVES:
            ev = E.MpiIrecvRequest if name == "irecv" else E.NonBlockingCollectiveRequest
            w(ev(t0, req))
            created[req] = i
            if acts["vec_len"][i] > 0:
                lossy[name] += 1
        elif name in K.SENDRECVS:
            comm, dst = comm_rank(acts["comm"][i], peer)
            w(E.MpiSend(t0, dst, comm, tag, int(acts["bytes_sent"][i])))
            v = data.vector(lo + i)          # [source, receive tag]
            if len(v) >= 2:
                _, src = comm_rank(acts["comm"][i], int(v[0]))
                w(E.MpiRecv(t1, src, comm, int(v[1]) & 0xFFFFFFFF, int(acts["bytes_recv"][i])))
        elif name in K.SINGLE_COMPLETIONS:
            if req >= 0:
                complete(i, req, t1, not tested)
        elif name in K.MULTI_COMPLETIONS:
            for q in data.vector(lo + i).tolist():   # the request ids
                complete(i, q, t1, not tested)
        elif name in K.COLLECTIVES:
            w(E.MpiCollectiveBegin(t0))
            coll_end(i, t1)
            if acts["vec_len"][i] > 0:
                lossy[name] += 1
        elif name not in ("init", "finalize"):
            lossy[name] += 1
        w(E.Leave(t1, reg))
