"""A trace as Chrome/Perfetto trace-event JSON: a timeline anyone can open (ui.perfetto.dev,
chrome://tracing).

The Trace Event Format is a JSON object ``{"traceEvents": [...], "displayTimeUnit": "ns"}``
whose events have ``name``, ``ph`` (phase), ``ts`` (microseconds), ``pid``, ``tid``.  Here:

* one process group (``pid``) per timeline -- the recorded or converted trace, and any other
  timeline of the same run (e.g. a replay's predicted one, added with ``slices_events``) -- named
  with ``process_name`` metadata; one track (``tid``) per rank, named ``rank r``;
* every MPI call a complete slice (``ph: "X"``, ``ts`` and ``dur``) named like the MPI function,
  with its peer, tag, communicator, bytes and request as ``args``; compute actions are slices
  too (``compute``, with their volume), so the gaps between calls are visible;
* every message a flow arrow: ``ph: "s"`` at the start of the sending call, ``ph: "f"`` with
  ``bp: "e"`` 1 ns before the end of the receive that matches it (the n-th send from s to d with
  a tag and communicator meets the n-th such receive, as MPI orders them) -- for a non-blocking
  or persistent receive, of the wait/test that completed it -- both with the same ``id``.

Events are written sorted by time (metadata first; at one time, enclosing slices before what
they enclose, slices before the flow events bound to them), so viewers bind each flow end to its
slice.  Times are converted from seconds to microseconds; untimed traces have nothing to place.
"""
from __future__ import annotations

import bisect
import json
import math
from collections.abc import Iterable, Sequence

import numpy as np

from .. import kinds as K
from ..errors import MinitraceError
from ..model import NONE, TraceColumns
from ..outputs import replacing_file

#: One slice of a timeline: (name, start s, end s, args).
Slice = tuple[str, float, float, dict]

_ORDER = {"M": 0, "X": 1, "s": 2, "f": 3}


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def slices_events(pid: int, name: str, per_rank: Sequence[Iterable[Slice]],
                  cat: str = "timeline") -> list[dict]:
    """Trace events of one process group ``pid`` named ``name``: a track per rank holding the
    slices ``per_rank[r]`` (name, start, end in seconds, args).  The way to put any timeline --
    e.g. a replay's predicted actions -- beside a trace's (``trace_events``) in one file."""
    events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}},
              {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
               "args": {"sort_index": pid}}]
    for r, slices in enumerate(per_rank):
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": r,
                       "args": {"name": f"rank {r}"}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": r,
                       "args": {"sort_index": r}})
        for label, t0, t1, args in slices:
            if not (math.isfinite(t0) and math.isfinite(t1)):
                continue
            events.append({"name": label, "cat": cat, "ph": "X", "ts": _us(t0),
                           "dur": max(_us(t1) - _us(t0), 0.0), "pid": pid, "tid": r,
                           "args": args})
    return events


def _label(kind: str) -> str:
    """``MPI_Isend`` for isend; compute and markers keep their name."""
    return kind if kind in K.NON_MPI else "MPI_" + kind[:1].upper() + kind[1:]


def _args(a: np.void, kind: str, unit: str, strings: list[str], vec: list[int]) -> dict:
    """What a slice shows of its action: only the fields that mean something for its kind."""
    out: dict = {}
    if kind in K.NON_MPI:
        if kind == "compute" or kind == "sleep":
            out["volume"] = float(a["volume"])
            out["unit"] = unit
        elif kind in ("region_begin", "region_end") and 0 <= a["tag"] < len(strings):
            out["region"] = strings[int(a["tag"])]
        return out
    if a["peer"] != NONE:
        out["root" if kind in K.ROOTED or K.BLOCKING_FORM.get(kind) in K.ROOTED
            else "peer"] = int(a["peer"])
    elif kind in K.ROOTED:
        out["root"] = "unknown"
    if a["tag"] != NONE and kind not in K.ALL_COLLECTIVES:
        out["tag"] = int(a["tag"])
    if a["comm"]:
        out["comm"] = int(a["comm"])
    for f in ("bytes_sent", "bytes_recv"):
        if a[f]:
            out[f] = int(a[f])
    if a["request"] != NONE:
        out["request"] = int(a["request"])
    if vec:
        out["vector"] = vec
    return out


def _messages(data: TraceColumns) -> list[tuple[int, int, int]]:
    """(send row, receive row, bytes) of every message, paired as MPI orders them: the n-th send
    from s to d with (tag, comm) meets the n-th receive by d from s with (tag, comm).  Sends are
    send kinds, sendrecvs and starts of persistent sends (fields from their init); receives
    are receive kinds, sendrecvs' receive halves and starts of persistent receives."""
    a = data.actions
    rank = data.rank_of()
    sends: dict[tuple, list[int]] = {}
    recvs: dict[tuple, list[int]] = {}
    inits: dict[tuple[int, int], int] = {}           # (rank, request) -> latest init row
    nbytes: dict[int, int] = {}                      # a start's row -> its init's bytes
    send_k, recv_k = K.mask(K.SENDS | K.SENDRECVS), K.mask(K.RECVS)
    sr_k, init_k = K.mask(K.SENDRECVS), K.mask(K.SEND_INITS | {"recv_init"})
    for row in np.nonzero(send_k[a["kind"]] | recv_k[a["kind"]] | init_k[a["kind"]]
                          | (a["kind"] == K.CODE["start"]))[0].tolist():
        x, r = a[row], int(rank[row])
        k = int(x["kind"])
        if init_k[k]:
            inits[(r, int(x["request"]))] = row
            continue
        if k == K.CODE["start"]:
            init = inits.get((r, int(x["request"])))
            if init is None:
                continue
            y = a[init]
            nbytes[row] = int(y["bytes_sent"]) or int(y["bytes_recv"])
            side = recvs if K.NAME[int(y["kind"])] in K.RECV_INITS else sends
            # (a receive's start with COMPLETED holds its message's own source and tag: a
            # wildcard recv_init's, as public graph500's, posted none)
            own = side is recvs and x["flags"] & K.FLAG_COMPLETED
            peer, tag = (int(x["peer"]), int(x["tag"])) if own else (int(y["peer"]),
                                                                      int(y["tag"]))
            key = (peer, r) if side is recvs else (r, peer)
            side.setdefault(key + (tag, int(y["comm"])), []).append(row)
            continue
        if send_k[k]:
            sends.setdefault((r, int(x["peer"]), int(x["tag"]), int(x["comm"])),
                             []).append(row)
        if recv_k[k]:
            recvs.setdefault((int(x["peer"]), r, int(x["tag"]), int(x["comm"])),
                             []).append(row)
        elif sr_k[k]:
            v = data.vector(row).tolist()
            if len(v) >= 2:
                recvs.setdefault((v[0], r, v[1], int(x["comm"])), []).append(row)
    pairs = [(s, q) for key, rows in sends.items() if key[1] >= 0
             for s, q in zip(rows, recvs.get(key, []))]
    done = _completions(data, rank)
    return [(s, done.get(q, q), nbytes.get(s, int(a["bytes_sent"][s]))) for s, q in pairs]


def _completions(data: TraceColumns, rank: np.ndarray) -> dict[int, int]:
    """Row of a request-making receive (irecv, a start) -> row of the wait/test that completed
    it (the first completion of its request after it on its rank), where the data arrives."""
    a = data.actions
    single = np.nonzero(K.mask(K.SINGLE_COMPLETIONS)[a["kind"]])[0]
    multi = np.nonzero(K.mask(K.MULTI_COMPLETIONS)[a["kind"]])[0]
    tests = K.mask(K.TESTS)
    done_by: dict[tuple[int, int], list[int]] = {}
    rows, reqs = data.vector_entries(multi)
    for row, req in zip(np.concatenate([single, rows]).tolist(),
                        np.concatenate([a["request"][single], reqs]).tolist()):
        if req != NONE and (not tests[a["kind"][row]] or a["flags"][row] & K.FLAG_COMPLETED):
            done_by.setdefault((int(rank[row]), req), []).append(row)
    for v in done_by.values():
        v.sort()
    out = {}
    made = np.nonzero(K.mask(K.RECVS - {"recv", "mrecv"} | {"start"})[a["kind"]])[0]
    for row in made.tolist():
        later = done_by.get((int(rank[row]), int(a["request"][row])), [])
        i = bisect.bisect_right(later, row)
        if i < len(later):
            out[row] = later[i]
    return out


class _TraceEvents:
    """The events of a trace, made one at a time (``event(j)``), with the key each sorts by
    (``sort_keys``): a file of millions of actions is written in order without holding a dict
    per event (2.3 M actions took 1.9 GB as a list)."""

    def __init__(self, data: TraceColumns, pid: int, name: str):
        a = data.actions
        if len(a) and not np.isfinite(a["t_start"]).any():
            raise MinitraceError("an untimed trace (no t_start/t_end): nothing to place on a "
                                 "timeline (replay it to get times)")
        self.data, self.pid = data, pid
        self.unit = data.meta.get("volume_unit", "seconds")
        self.meta = slices_events(pid, name, [()] * data.nranks, cat="mpi")
        self.rank = data.rank_of()
        rows = np.flatnonzero(np.isfinite(a["t_start"]) & np.isfinite(a["t_end"]))
        self.rows = rows
        self.vectors: dict[int, list[int]] = {}
        for row, v in zip(*(x.tolist() for x in data.vector_entries(
                rows[a["vec_len"][rows] > 0]))):
            self.vectors.setdefault(row, []).append(v)
        self.t0 = [_us(t) for t in a["t_start"][rows].tolist()]
        self.t1 = [_us(t) for t in a["t_end"][rows].tolist()]
        self.flows = []
        for n, (s, q, nbytes) in enumerate(_messages(data)):
            ts, q0, q1 = a["t_start"][s], _us(a["t_start"][q]), _us(a["t_end"][q])
            if np.isfinite(ts) and np.isfinite(q0) and np.isfinite(q1):
                # the data is there when the receive returns: the arrow ends 1 ns before it
                self.flows.append((n, s, q, nbytes, _us(ts),
                                   round(q1 - 0.001, 3) if q1 - q0 >= 0.002 else q0))

    def __len__(self) -> int:
        return len(self.rows) + 2 * len(self.flows)

    def sort_keys(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(time, phase order, -duration) of each event, as :func:`sort_events` orders."""
        n = len(self.rows)
        t0 = np.array(self.t0, float)
        dur = np.maximum(np.array(self.t1, float) - t0, 0.0)
        ts = np.concatenate([t0, np.array([f[k] for f in self.flows for k in (4, 5)], float)])
        order = np.concatenate([np.full(n, _ORDER["X"]),
                                np.tile([_ORDER["s"], _ORDER["f"]], len(self.flows))])
        return ts, order, -np.concatenate([dur, np.zeros(2 * len(self.flows))])

    def event(self, j: int) -> dict:
        """Event ``j``: the slice of the j-th timed action, then each message's flow start and
        end."""
        n = len(self.rows)
        if j < n:
            i = int(self.rows[j])
            kind = K.NAME[int(self.data.actions["kind"][i])]
            label = _label(kind)
            cat = "mpi" if label.startswith("MPI_") else \
                label if label in ("compute", "sleep") else "marker"
            return {"name": label, "cat": cat, "ph": "X", "ts": self.t0[j],
                    "dur": max(self.t1[j] - self.t0[j], 0.0), "pid": self.pid,
                    "tid": int(self.rank[i]),
                    "args": _args(self.data.actions[i], kind, self.unit, self.data.strings,
                                  self.vectors.get(i, []))}
        k, end = divmod(j - n, 2)
        n, s, q, nbytes, ts, tf = self.flows[k]
        common = {"name": "message", "cat": "message", "id": n, "pid": self.pid}
        if not end:
            return {**common, "ph": "s", "ts": ts, "tid": int(self.rank[s]),
                    "args": {"bytes": nbytes}}
        return {**common, "ph": "f", "bp": "e", "tid": int(self.rank[q]), "ts": tf}


def trace_events(data: TraceColumns, pid: int = 0, name: str = "trace") -> list[dict]:
    """Trace events of ``data``: process group ``pid`` named ``name``, a track per rank with a
    slice per action (MPI calls, compute, markers) and a flow arrow per message."""
    events = _TraceEvents(data, pid, name)
    return events.meta + [events.event(j) for j in range(len(events))]


def sort_events(events: list[dict]) -> list[dict]:
    """Metadata first, then by time; at one time slices (longest first) before flow events."""
    return sorted(events, key=lambda e: (e["ph"] != "M", e.get("ts", 0.0), _ORDER[e["ph"]],
                                         -e.get("dur", 0.0)))


def _write_document(path, events: Iterable[dict]) -> None:
    """The trace-event JSON document of ``events`` (in their order), written whole or not at
    all (a temporary renamed into place), a block of events at a time."""
    dump = json.JSONEncoder(separators=(",", ":")).encode
    with replacing_file(path) as f:
        f.write('{"traceEvents":[')
        block, first = [], True
        for ev in events:
            block.append(dump(ev))
            if len(block) == 4096:
                f.write(("" if first else ",") + ",".join(block))
                block, first = [], False
        if block:
            f.write(("" if first else ",") + ",".join(block))
        f.write('],"displayTimeUnit":"ns"}')


def write_json(path, events: list[dict]) -> int:
    """Write ``events`` (sorted) as a trace-event JSON file, whole or not at all; the number of
    events."""
    _write_document(path, sort_events(events))
    return len(events)


def write_perfetto(data: TraceColumns, path, name: str | None = None) -> int:
    """``data`` as a Perfetto/Chrome trace-event JSON file; the number of events written.  The
    events are made as they are written, in :func:`sort_events`' order."""
    label = name or data.meta.get("source_format", "recorded") + " trace"
    events = _TraceEvents(data, 0, label)
    ts, order, negdur = events.sort_keys()
    ordered = np.lexsort((negdur, order, ts))         # stable: ties keep the events' order
    _write_document(path, (e for part in (events.meta, (events.event(int(j)) for j in ordered))
                           for e in part))
    return len(events.meta) + len(events)
