"""TAU binary traces (a merged ``tau.trc`` + its ``tau.edf``) -> TraceColumns.

A ``.trc`` file is an array of fixed-size records ``{int32 ev; uint16 nid; uint16 tid; int64 par;
uint64 ti}`` (24 bytes; a 64-bit variant pads ``ev`` to 8 bytes, 32 bytes), written in the
producer's byte order; the first record is EV_INIT with ``par == 3``, which tells layout and byte
order apart (as TAU's own reader, TAU_tf.cpp, does).  ``ti`` is in microseconds.  The ``.edf``
maps event ids to names: ``EntryExit`` events (``par`` 1 = enter, -1 = leave) are timers such
as ``MPI_Send()``; TAU_MESSAGE events (tag -7 send, -8 receive) pack tag, other node (a world
rank), length and communicator into ``par``; ``TriggerValue`` events are TAU's counters
("Message size for reduce" inside a collective gives its per-call size).

TAU records no request handles, communicators or roots: requests are matched to completions in
order (docs/CONVERTERS.md spells the rules out), collectives are on MPI_COMM_WORLD and rooted
collectives have an unknown root (peer -1).
"""
from __future__ import annotations

import os
import re
from collections import Counter, deque
from pathlib import Path

import numpy as np

from minitrace import kinds as K
from minitrace.errors import MinitraceError
from minitrace.model import NONE, TraceColumns

from .callstream import BRECV, BSENT, FLAGS, KIND, PEER, REQUEST, TAG, RankStream, build
from .tau_vector import decode

_C, _N = K.CODE, K.NAME
_REC32 = [("ev", "i4"), ("nid", "u2"), ("tid", "u2"), ("par", "i8"), ("ti", "u8")]
_REC64 = [("ev", "i8"), ("nid", "u2"), ("tid", "u2"), ("pad", "u4"), ("par", "i8"), ("ti", "u8")]
_EDF_LINE = re.compile(r'^\s*(-?\d+)\s+(\S+)\s+(-?\d+)\s+"(.*)"\s+(\S+)\s*$')
SEND_TAG, RECV_TAG = -7, -8
#: Collective kind -> (bytes_sent, bytes_recv) from TAU's per-call size n and world size P.
_COLL_BYTES = {
    "allreduce": lambda n, P: (n, n), "scan": lambda n, P: (n, n), "exscan": lambda n, P: (n, n),
    "reduce": lambda n, P: (n, 0), "gather": lambda n, P: (n, 0),
    "allgather": lambda n, P: (n, P * n), "alltoall": lambda n, P: (P * n, P * n),
    # the root is not recorded: every member gets the broadcast size as received bytes
    "bcast": lambda n, P: (0, n),
}


def decode_message(par: int) -> tuple[int, int, int, int]:
    """(tag, other node, length, comm) packed in a TAU message record's parameter."""
    x = par & 0xFFFFFFFFFFFFFFFF
    tag = ((x >> 16) & 0xFF) | (((x >> 48) & 0xFF) << 8)
    other = ((x >> 24) & 0xFF) | (((x >> 56) & 0xFF) << 8)
    length = (x & 0xFFFF) | (((x >> 32) & 0x3FF) << 16)
    comm = (x >> 42) & 0x3F
    return tag, other, length, comm


def read_edf(path) -> dict[int, tuple[str, int, str, str]]:
    """Event id -> (group, tag, name, kind of parameter) from a TAU event definition file."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise MinitraceError("event definition file not found (a TAU trace needs its .edf)",
                             path) from None
    except OSError as e:
        raise MinitraceError(f"cannot read: {e.strerror}", path) from None
    if not lines or not lines[0].split() or not lines[0].split()[0].isdigit():
        raise MinitraceError("not a TAU event definition file (bad first line)", path)
    events = {}
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _EDF_LINE.match(line)
        if not m:
            raise MinitraceError(f"line {no}: not an event definition", path)
        events[int(m[1])] = (m[2], int(m[3]), m[4].strip(), m[5])
    return events


def read_records(path, damaged: list | None = None) -> np.ndarray:
    """All records of a .trc file, in native byte order (the bytes read, when they are in it
    already).  A partial last record is an error, or, when a ``damaged`` list is given, dropped
    and noted in it."""
    path = os.fspath(path)
    try:            # (into a numpy array: a large one gets huge pages, far fewer page faults)
        raw = np.fromfile(path, np.uint8)
    except FileNotFoundError:
        raise MinitraceError("no such file", path) from None
    except OSError as e:
        raise MinitraceError(f"cannot read: {e.strerror}", path) from None
    for fields in (_REC32, _REC64):
        for order in ("<", ">"):
            dt = np.dtype([(n, order + t) for n, t in fields])
            if len(raw) >= dt.itemsize and raw[:dt.itemsize].view(dt)["par"][0] == 3:
                extra = len(raw) % dt.itemsize
                if extra:
                    what = (f"truncated: {len(raw)} bytes is not a whole number of "
                            f"{dt.itemsize}-byte TAU records")
                    if damaged is None:
                        raise MinitraceError(what + " (--keep-going keeps the whole ones)",
                                             path)
                    damaged.append(f"{path}: {what} (the last {extra} bytes dropped)")
                return raw[:len(raw) - extra].view(dt).astype(dt.newbyteorder("="),
                                                              copy=False)
    if not len(raw):
        raise MinitraceError("empty trace file", path)
    raise MinitraceError("not a TAU trace (the first record is not EV_INIT)", path)


def _ids(ev: np.ndarray) -> set[int]:
    """The distinct event ids of a column: counted in a table indexed by id when the ids are
    small (a few times faster than np.unique, which sorts)."""
    if len(ev) and ev.min() >= 0 and ev.max() < 1 << 20:
        return set(np.flatnonzero(np.bincount(ev)).tolist())
    return set(np.unique(ev).tolist())


class _Rank:
    """A rank's stream plus the request bookkeeping TAU leaves to the reader."""

    def __init__(self, strings):
        self.s = RankStream(strings)
        # active requests in activation order: (row holding the message fields, request id);
        # the row is the isend/irecv itself, or the send_init/recv_init a start activated
        self.outstanding: deque[tuple[int, int]] = deque()
        self.inits: list[int] = []                 # rows of persistent send/recv inits
        self.active: set[int] = set()              # ... of those, the started ones
        self.next_req = 0
        self.send_msgs: list[tuple[int, int, int]] = []   # (dest, tag, length) in this call
        self.recv_msgs: list[tuple[int, int, int]] = []   # (source, tag, length) in this call
        self.size = 0                                     # TAU's "Message size for ..." value
        self.unlinked: Counter = Counter()                # what could not be attributed


def read_tau(trc, edf=None, keep_regions: bool = False, keep_going: bool = False,
             vectorized: bool = True) -> TraceColumns:
    """Read a merged TAU trace; ``edf`` defaults to ``tau.edf`` beside ``trc``.

    A trace cut short (a partial record, or a node without TAU's closing FLUSH_CLOSE record) is
    an error naming the file; with ``keep_going`` its whole records are kept and the trace is
    marked incomplete (``meta['damaged']``).  Traces whose requests complete in order are
    decoded on whole columns (``tau_vector``); ``vectorized=False`` reads every one record by
    record (the reference the tests compare it with)."""
    trc = os.fspath(trc)
    if edf is None:
        edf = os.path.join(os.path.dirname(trc), "tau.edf")
    edf = os.fspath(edf)
    events = read_edf(edf)
    damaged: list | None = [] if keep_going else None
    rec = read_records(trc, damaged)
    unknown = _ids(rec["ev"]) - set(events)
    if unknown:
        raise MinitraceError(f"event ids {sorted(unknown)[:5]} of {trc} are not defined here "
                             "(a .edf from another run, or an unmerged trace?)", edf)
    return _convert(rec, events, {"source_path": os.path.abspath(trc),
                                  "source_edf": os.path.abspath(edf)}, trc, keep_regions,
                    damaged, vectorized)


#: A per-thread trace file TAU writes before merging: tautrace.<node>.<context>.<thread>.trc.
PER_THREAD = re.compile(r"^tautrace\.(\d+)\.(\d+)\.(\d+)\.trc$")


def per_thread_files(folder) -> list[Path]:
    """The tautrace.<node>.<context>.<thread>.trc files of ``folder``, by node and thread."""
    found = [p for p in Path(folder).iterdir() if PER_THREAD.match(p.name)]
    return sorted(found, key=lambda p: tuple(map(int, PER_THREAD.match(p.name).groups())))


def read_tau_files(paths, keep_regions: bool = False, keep_going: bool = False,
                   vectorized: bool = True) -> TraceColumns:
    """Read TAU's unmerged per-thread traces (``tautrace.N.C.T.trc``, each with the
    ``events.N.edf`` of its node beside it), e.g. ``per_thread_files(dir)``.

    Event ids are per node: they are unified by definition (group, tag, name, parameter kind)
    across the nodes.  Nodes are ranks and must be 0..P-1; threads other than 0 are not ranks
    (their records are skipped and listed in ``meta["threads"]``).  Damage and ``vectorized``:
    as ``read_tau``."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise MinitraceError("no tautrace.<node>.<context>.<thread>.trc files given")
    ids: dict[tuple, int] = {}                    # definition -> unified id
    events: dict[int, tuple] = {}
    parts, nodes, edfs, files = [], set(), {}, {}
    damaged: list | None = [] if keep_going else None
    for p in paths:
        m = PER_THREAD.match(p.name)
        if m is None:
            raise MinitraceError("not a per-thread TAU trace (expected tautrace.<node>.<context>"
                                 ".<thread>.trc)", str(p))
        node = int(m[1])
        edf = p.parent / f"events.{node}.edf"
        if not edf.exists():
            stray = " (tau.edf beside it belongs to a merged trace)" \
                if (p.parent / "tau.edf").exists() else ""
            raise MinitraceError(f"no events.{node}.edf beside this per-thread trace{stray}",
                                 str(p))
        if edf not in edfs:
            local = read_edf(edf)
            for i, d in local.items():
                events.setdefault(ids.setdefault(d, len(ids)), d)
            keys = np.array(sorted(local), dtype=np.int64)
            edfs[edf] = (keys, np.array([ids[local[k]] for k in keys], dtype=np.int64))
        keys, unified = edfs[edf]
        rec = read_records(p, damaged)
        files.setdefault(node, str(p))
        at = np.searchsorted(keys, rec["ev"]).clip(0, max(len(keys) - 1, 0))
        bad = keys[at] != rec["ev"] if len(keys) else np.ones(len(rec), bool)
        if bad.any():
            raise MinitraceError(f"event ids {sorted(set(rec['ev'][bad].tolist()))[:5]} of {p} "
                                 "are not defined here", str(edf))
        if len(rec) and (rec["nid"] != node).any():
            raise MinitraceError(f"records of node {int(rec['nid'][rec['nid'] != node][0])} in "
                                 f"the file of node {node}", str(p))
        rec = rec.copy()
        rec["ev"] = unified[at]
        parts.append(rec)
        nodes.add(node)
    missing = sorted(set(range(max(nodes) + 1)) - nodes)
    if missing:
        raise MinitraceError(f"no tautrace file of node(s) {missing[:5]} (ranks are nodes "
                             "0..P-1: give every per-thread file, or their directory)",
                             str(paths[0].parent))
    rec = np.concatenate(parts)
    rec = rec[np.argsort(rec["ti"], kind="stable")]
    where = str(paths[0].parent)
    return _convert(rec, events, {"source_path": os.path.abspath(where),
                                  "source_files": len(paths)}, files, keep_regions, damaged,
                    vectorized)


def _convert(rec: np.ndarray, events: dict, provenance: dict, where: str | dict,
             keep_regions: bool, damaged: list | None, vectorized: bool) -> TraceColumns:
    """TraceColumns of records (all nodes, in time order) whose ids ``events`` defines; ``where``
    is the file (or node -> file) to name in errors, ``damaged`` None unless keeping going."""
    threads = rec["tid"] != 0
    other_threads = int(threads.sum())
    thread_ids = {int(n): sorted(set(rec["tid"][threads & (rec["nid"] == n)].tolist()))
                  for n in np.unique(rec["nid"][threads]).tolist()}
    if other_threads:
        rec = rec[~threads]
    nranks = int(rec["nid"].max()) + 1 if len(rec) else 0
    if not nranks:
        raise MinitraceError("no events of any rank", str(where))
    closing = [i for i, e in events.items() if e[2] == "FLUSH_CLOSE"]
    closed = np.zeros(nranks, bool)
    closed[np.unique(rec["nid"][np.isin(rec["ev"], closing)])] = True
    for nid in np.nonzero(~closed)[0].tolist():
        what = f"node {nid}'s records stop without TAU's closing record (FLUSH_CLOSE): cut short"
        file = where.get(nid, "") if isinstance(where, dict) else where
        if damaged is None:
            raise MinitraceError(what + " (--keep-going keeps its records)", file)
        damaged.append(f"{file}: {what}")
    if int(rec["ti"].max()) >= 2 ** 62:   # microseconds: ~146,000 years, a corrupt record
        file = next(iter(where.values()), "") if isinstance(where, dict) else str(where)
        raise MinitraceError(f"a time stamp of {int(rec['ti'].max())} us: a corrupt record",
                             file)
    t0 = int(rec["ti"][0])
    msg_ids = {t: [i for i, e in events.items() if e[1] == t] for t in (SEND_TAG, RECV_TAG)}
    source_messages = {side: int(np.isin(rec["ev"], msg_ids[t]).sum())
                       for side, t in (("sent", SEND_TAG), ("received", RECV_TAG))}
    meta = {**_meta(_info(rec, events), nranks), **provenance,
            "source_messages": source_messages}
    data = decode(rec, events, nranks, t0, keep_regions, _COLL_BYTES, SEND_TAG, RECV_TAG) \
        if vectorized else None
    if data is None:
        data = _by_record(rec, events, nranks, t0, keep_regions)
    data.meta.update(meta)
    data.meta["complete"] = data.meta["complete"] and not damaged
    if damaged:
        data.meta["damaged"] = damaged
    if other_threads:
        data.meta["thread_records_skipped"] = other_threads
        data.meta["threads"] = {str(n): tids for n, tids in thread_ids.items()}
    return data


def _info(rec: np.ndarray, events: dict) -> dict[int, dict[str, str]]:
    """Node -> {key: value} of TAU's metadata counters (``Key | value`` events, first value)."""
    keyed = [i for i, e in events.items() if e[3] == "TriggerValue" and " | " in e[2]
             and e[1] not in (SEND_TAG, RECV_TAG)]
    sel = np.nonzero(np.isin(rec["ev"], keyed) & (rec["par"] != 0))[0]
    sel = sel[np.argsort(rec["nid"][sel], kind="stable")]
    info: dict[int, dict[str, str]] = {}
    for ev, nid in zip(rec["ev"][sel].tolist(), rec["nid"][sel].tolist()):
        key, _, value = events[ev][2].partition(" | ")
        info.setdefault(nid, {}).setdefault(key, value)
    return info


def _by_record(rec: np.ndarray, events: dict, nranks: int, t0: int,
               keep_regions: bool) -> TraceColumns:
    """The record-by-record reader: any trace, with TAU's request rules in full (persistent
    requests, waitall, tests, ...)."""
    strings: list[str] = []
    ranks = [_Rank(strings if keep_regions else None) for _ in range(nranks)]
    unsized, rootless, user_regions = Counter(), Counter(), 0
    order = np.argsort(rec["nid"], kind="stable")      # per rank, in file (= time) order
    ev_col, nid_col = rec["ev"][order].tolist(), rec["nid"][order].tolist()
    par_col, ti_col = rec["par"][order].tolist(), rec["ti"][order].tolist()
    for ev, nid, par, ti in zip(ev_col, nid_col, par_col, ti_col):
        group, tag, name, kind = events[ev]
        R = ranks[nid]
        t = (ti - t0) * 1e-6
        if kind == "EntryExit":
            if group == "MPI" or name.startswith("MPI_"):
                if par == 1:
                    if not R.s.depth:                  # a nested call is part of the outer one
                        R.send_msgs, R.recv_msgs, R.size = [], [], 0
                    R.s.enter_mpi(name, t)
                elif par == -1:
                    row, idx = R.s.current, R.s.current_index
                    if row is not None and R.s.depth == 1:
                        _finish_call(R, row, idx, nranks, unsized, rootless)
                    R.s.leave_mpi(t)
            elif group != "TRACER":
                user_regions += 1
                R.s.region(name, t, par == 1)
            continue
        if tag == SEND_TAG or tag == RECV_TAG:
            mtag, other, length, _ = decode_message(par)
            row = R.s.current
            if row is None:
                continue
            if tag == RECV_TAG:
                R.recv_msgs.append((other, mtag, length))
            else:
                R.send_msgs.append((other, mtag, length))
                if _N[row[KIND]] in K.SENDS or _N[row[KIND]] in K.SENDRECVS:
                    row[PEER], row[TAG], row[BSENT] = other, mtag, length
            continue
        if kind == "TriggerValue" and " | " not in name and name.startswith("Message size for") \
                and R.s.current is not None:
            R.size = max(R.size, par)
    streams = [R.s for R in ranks]
    meta = {"complete": all(s.rows and any(r[KIND] == _C["finalize"] for r in s.rows)
                            for s in streams)}
    if unsized:
        meta["collectives_without_sizes"] = dict(unsized)
    if rootless:
        meta["collectives_without_root"] = dict(rootless)
    if user_regions and not keep_regions:
        meta["user_regions_dropped"] = user_regions // 2
    outstanding = sum(len(R.outstanding) for R in ranks)
    if outstanding:
        meta["requests_never_completed"] = outstanding
    unlinked = sum((R.unlinked for R in ranks), Counter())
    if unlinked:
        meta["unmapped_events"] = dict(unlinked)
    return build(streams, {0: np.arange(nranks, dtype=np.int32)}, strings, meta)


def _finish_call(R: _Rank, row: list, idx: int, nranks: int, unsized: Counter,
                 rootless: Counter) -> None:
    """Apply what was seen inside the call that is being left."""
    name = _N[row[KIND]]
    s = R.s
    if name in K.NONBLOCKING_SENDS or name == "irecv":
        row[REQUEST] = R.next_req
        R.next_req += 1
        R.outstanding.append((idx, row[REQUEST]))
    elif name in K.SEND_INITS or name == "recv_init":
        row[REQUEST] = R.next_req                  # peer, tag, bytes: learned at its start
        R.next_req += 1                            # (send) or first completion (receive)
        R.inits.append(idx)
    elif name in K.STARTS:
        _start(R, row, idx, name)
    elif name == "recv" and R.recv_msgs:
        row[PEER], row[TAG], row[BRECV] = R.recv_msgs[0]
    elif name in K.SENDRECVS and R.recv_msgs:
        src, tag, n = R.recv_msgs[0]
        s.vector(idx)[:] = [src, tag]
        row[BRECV] = n
    elif name in K.COMPLETIONS:
        _complete(R, row, idx, name)
    elif name in K.COLLECTIVES and name != "barrier":
        if R.size and name in _COLL_BYTES:
            row[BSENT], row[BRECV] = _COLL_BYTES[name](R.size, nranks)
        else:
            unsized[name] += 1
        if name in K.ROOTED:
            rootless[name] += 1


def _start(R: _Rank, row: list, idx: int, name: str) -> None:
    """Which persistent requests a start/startall activates.  TAU records the message of a
    send request inside the start: it names the send_init with that destination and tag (the
    first inactive one not yet linked when none has them, which it then describes).  A start
    without a message starts the first inactive recv_init (in creation order); a startall
    starts the send_inits of its messages and every inactive recv_init."""
    rows = R.s.rows
    started: list[int] = []
    for dest, tag, n in R.send_msgs:
        free = [j for j in R.inits if j not in R.active and j not in started
                and _N[rows[j][KIND]] in K.SEND_INITS]
        j = next((j for j in free if (rows[j][PEER], rows[j][TAG]) == (dest, tag)),
                 next((j for j in free if rows[j][PEER] == NONE), None))
        if j is None:
            R.unlinked["send message in " + name + " without a send_init"] += 1
            continue
        if rows[j][PEER] == NONE:
            rows[j][PEER], rows[j][TAG], rows[j][BSENT] = dest, tag, n
        started.append(j)
    recv_inits = [j for j in R.inits if j not in R.active and _N[rows[j][KIND]] == "recv_init"]
    if name == "startall":
        started += recv_inits
    elif not R.send_msgs and recv_inits:
        started.append(recv_inits[0])
    for j in started:
        R.active.add(j)
        R.outstanding.append((j, rows[j][REQUEST]))
    row[FLAGS] |= K.FLAG_PERSISTENT
    if name == "start":
        if started:
            row[REQUEST] = rows[started[0]][REQUEST]
        elif not R.send_msgs:
            R.unlinked["start without an inactive persistent request"] += 1
    else:
        R.s.vector(idx)[:] = [rows[j][REQUEST] for j in started]


def _receives(rows: list, j: int) -> bool:
    return _N[rows[j][KIND]] in ("irecv", "recv_init")


def _complete(R: _Rank, row: list, idx: int, name: str) -> None:
    """Which active requests a wait/test completed: each received message resolves the oldest
    active receive it can be (an irecv, or a started recv_init whose source and tag, once
    known, are the message's); a wait/waitany/waitsome without one completes the oldest active
    send (isend or started send_init; else the oldest request); waitall, and testall with
    messages, complete everything active; a test* without a message completes nothing."""
    s = R.s
    rows = s.rows
    done: list[tuple[int, int]] = []
    for src, tag, n in R.recv_msgs:
        e = next((e for e in R.outstanding if _receives(rows, e[0])
                  and (rows[e[0]][KIND] == _C["irecv"] or rows[e[0]][PEER] in (NONE, src)
                       and rows[e[0]][TAG] in (NONE, tag))), None)
        if e is None:
            R.unlinked["received message in " + name + " without an active receive"] += 1
            continue
        rows[e[0]][PEER], rows[e[0]][TAG], rows[e[0]][BRECV] = src, tag, n
        R.outstanding.remove(e)
        done.append(e)
    if name not in K.TESTS and name != "waitall" and not done and R.outstanding:
        e = next((e for e in R.outstanding if not _receives(rows, e[0])), R.outstanding[0])
        R.outstanding.remove(e)
        done.append(e)
    if name == "waitall" or (name == "testall" and done):
        done += list(R.outstanding)
        R.outstanding.clear()
    R.active.difference_update(j for j, _ in done)
    if name in K.SINGLE_COMPLETIONS:
        if done:
            row[REQUEST] = done[0][1]
        elif R.outstanding and name in K.TESTS:
            row[REQUEST] = R.outstanding[0][1]
    else:
        s.vector(idx)[:] = [req for _, req in done]
    if done and name in K.TESTS:
        row[FLAGS] |= K.FLAG_COMPLETED


def _meta(info: dict, nranks: int) -> dict:
    """What TAU's metadata counters say (version, hosts, command line)."""
    first = info.get(0, {})
    meta = {"producer": f"TAU {first.get('TAU Version', '')}".strip() + " (converted by minitrace)",
            "source_format": "tau", "clock_resolution": 1e-6}
    if first.get("Command Line"):
        meta["command_line"] = first["Command Line"]
    hosts = [info.get(r, {}).get("Hostname", "") for r in range(nranks)]
    if all(hosts):
        uniq = sorted(set(hosts))
        meta["hosts"] = uniq
        meta["rank_to_node"] = [uniq.index(h) for h in hosts]
    return meta
