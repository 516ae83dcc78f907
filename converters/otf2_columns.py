"""OTF2 event columns -> TraceColumns: the OTF2 reader's rules (docs/CONVERTERS.md) on whole columns.

The events come from converters/otf2_native.py, one row each (rank, time, type, integer fields),
in the global reader's time order.  Per rank, with numpy: MPI nesting from a cumulative sum of
enters and leaves (a leave without its enter is ignored), a row per outermost MPI call, user
region markers, compute gaps between calls (seconds, or a counter's growth), and the message
events inside each call written into its row (the last event wins, as when reading one by one).
Requests are matched by id (a completion resolves the latest creation of that id before it).
The only loop over events is the sequential part (``_Sequential``): persistent requests started
inside ``MPI_Start``/``MPI_Startall`` and, in Score-P traces without its XNONBLOCK events (no
request ids), requests matched to their starts and completions in order.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field as default

import numpy as np

from minitrace import kinds as K
from minitrace.errors import MinitraceError
from minitrace.model import ACTION_DTYPE, EMPTY_ROW, NONE, TraceColumns, assign_vec_offsets

from . import otf2_io as IO
from .otf2_native import OTF2_NAME, TYPES, code

_C, _N = K.CODE, K.NAME
#: region kinds besides MPI kind codes
DROPPED, USER = -1, -2
#: comm ids besides minitrace's: an event on no MPI comm, a COMM_SELF-type comm
NO_COMM, SELF = -1, -2
_SELF_BASE = -10          # provisional id of a COMM_SELF-type comm: _SELF_BASE - its reference
#: _to_model's cases by blocking collective name (others: sizes as they are)
_SIZE_RULE = {"allgather": 1, "allgatherv": 1, "allreduce": 2, "bcast": 3, "reduce": 4,
              "reduce_scatter": 5, "reduce_scatter_block": 5, "scan": 6, "exscan": 7}
_RULE = np.zeros(256, np.int8)
for _name, _code in _C.items():
    _RULE[_code] = _SIZE_RULE.get(K.BLOCKING_OF.get(_name, _name), 0)
#: kind masks (256 entries) the rules test
_M = {name: K.mask(s) for name, s in (
    ("starts", K.STARTS), ("sends", K.SENDS | K.SENDRECVS), ("nb_sends", K.NONBLOCKING_SENDS),
    ("sendrecvs", K.SENDRECVS), ("recv", {"recv"}),
    ("creates", {"irecv"} | K.NONBLOCKING_COLLECTIVES), ("nbcolls", K.NONBLOCKING_COLLECTIVES),
    ("new_comms", K.NEW_COMM_KINDS), ("single", K.SINGLE_COMPLETIONS),
    ("multi", K.MULTI_COMPLETIONS), ("tests", K.TESTS), ("colls", K.COLLECTIVES),
    ("rooted", K.ROOTED), ("inits", K.INITS), ("send_inits", K.SEND_INITS),
    ("recv_inits", K.RECV_INITS),
    ("waits", {"wait", "waitany", "waitsome", "waitall"}), ("io", K.IO_KINDS),
    ("nb_io", K.NONBLOCKING_IO), ("one_sided", K.ONE_SIDED),
    ("win_creations", K.WINDOW_CREATIONS), ("rma_requests", K.RMA_OPS & K.REQUEST_KINDS),
    ("win_lock", {"win_lock"}), ("win_groups", {"win_post", "win_start"}))}
_TOO_BIG = {"tag": 1 << 31, "bytes_sent": 1 << 63, "bytes_recv": 1 << 63, "request": 1 << 63}
#: OTF2's undefined uint32: a peer of MPI_PROC_NULL, and a tag of -1 (the receive's status had
#: none: from MPI_PROC_NULL) as convert --to otf2 writes them.
NO_TAG = 0xFFFFFFFF
#: the Enter attributes ``convert --to otf2`` gives one-sided calls for what no RMA event
#: holds (read from its archives only): name -> (description, type name)
RMA_ATTRIBUTES = {"MPI_Win_size": ("the size in bytes of the window a window creation makes",
                                   "UINT64"),
                  "MPI_Disp_unit": ("the displacement unit of the window a window creation "
                                    "makes", "UINT64"),
                  "MPI_Target_disp": ("the target displacement of a one-sided operation, in "
                                      "the target's displacement units", "INT64")}
#: ... and their roles in ``Defs.attribute_role`` (above otf2_io.ROLE's)
RMA_ROLE = {name: 100 + k for k, name in enumerate(RMA_ATTRIBUTES)}
#: the one-sided events (each names its window, field ``b``), and those with a target
#: (``remote``, a rank of the window's communicator, field ``a``)
_RMA_EVENTS = ("RMA_WIN_CREATE", "RMA_WIN_DESTROY", "RMA_PUT", "RMA_GET", "RMA_ATOMIC",
               "RMA_OP_COMPLETE", "RMA_OP_TEST", "RMA_COLLECTIVE_END", "RMA_SYNC",
               "RMA_GROUP_SYNC", "RMA_LOCK", "RMA_RELEASE_LOCK")
_RMA_REMOTE = ("RMA_PUT", "RMA_GET", "RMA_ATOMIC", "RMA_SYNC", "RMA_LOCK", "RMA_RELEASE_LOCK")
#: OTF2's LockType EXCLUSIVE (win_lock's vector: 1 exclusive, 0 shared)
LOCK_EXCLUSIVE = 0


def _tags(v: np.ndarray) -> np.ndarray:
    """OTF2 tags as the tag column holds them (``NO_TAG`` -> -1)."""
    return np.where(v.astype(np.uint64) == NO_TAG, -1, v.astype(np.int64))


@dataclass
class Defs:
    """What the definitions say, as lookup arrays indexed by OTF2 reference."""
    nranks: int
    res: float                       # timer ticks per second
    offset: int                      # global offset (ticks)
    region_kind: np.ndarray          # per region ref: MPI kind code, DROPPED or USER
    region_name: list[str]
    comm_id: np.ndarray              # per comm ref: minitrace comm id, NO_COMM or SELF
    comms: dict[int, np.ndarray]     # comm id -> members (world ranks; -1: not a rank)
    metric_kind: np.ndarray          # per metric ref: 0 uint64, 1 int64, 2 double values
    metric_relative: np.ndarray      # per metric ref: its values are increments
    counted: bool                    # compute volume = counter growth (else seconds)
    handle_comm: np.ndarray          # per I/O handle ref: its OTF2 comm ref (-1: none), -2 where
    #                                  the handle is not MPI-IO's (a POSIX one beneath it)
    attribute_role: np.ndarray       # per attribute ref: its otf2_io.ROLE, 0 another tool's
    intercomms: frozenset = frozenset()   # comm ids of intercommunicators (convert --to otf2's)
    minitrace: bool = False          # convert --to otf2 wrote it (its MPI_Cancel attributes)
    win_comm: np.ndarray = default(default_factory=lambda: np.zeros(0, np.int64))
    #                                  per RMA window ref: its OTF2 comm ref (-1: none)
    group_members: dict = default(default_factory=dict)   # MPI group ref -> world ranks


# == small column tools ========================================================================
def _last_per(keys: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Indices of the element with the largest ``at`` of each distinct key."""
    if not len(keys):
        return np.zeros(0, np.int64)
    s = np.lexsort((at, keys))
    return s[np.r_[keys[s][1:] != keys[s][:-1], True]]


def _latest(set_rank, set_req, set_at, q_rank, q_req, q_at) -> np.ndarray:
    """For each query, the index of the latest set of the same (rank, request) before it
    (-1: none).  Positions ``at`` are distinct event indices."""
    nq, ns = len(q_at), len(set_at)
    if not nq or not ns:
        return np.full(nq, -1, np.int64)
    r = np.r_[set_rank, q_rank].astype(np.int64)
    q = np.r_[set_req, q_req].astype(np.uint64)
    s = np.lexsort((np.r_[set_at, q_at], q, r))
    last = np.maximum.accumulate(np.where(s < ns, np.arange(len(s)), -1))
    lk = np.maximum(last, 0)
    ok = (last >= 0) & (r[s][lk] == r[s]) & (q[s][lk] == q[s])
    out = np.empty(len(s), np.int64)
    out[s] = np.where(ok, s[lk], -1)
    return out[ns:]


def _times(ticks: np.ndarray, d: Defs) -> np.ndarray:
    """(ticks - global offset) / resolution, as Python computes it from the integers."""
    if not len(ticks) or (int(ticks.max()) < (1 << 62) and 0 <= d.offset < (1 << 62)):
        return (ticks.astype(np.int64) - d.offset).astype(np.float64) / d.res
    return np.array([(int(x) - d.offset) / d.res for x in ticks.tolist()], np.float64)


def _metric_values(bits: np.ndarray, kind: np.ndarray) -> np.ndarray:
    out = bits.astype(np.float64)
    for k, dt in ((1, np.int64), (2, np.float64)):
        m = kind == k
        out[m] = bits[m].view(dt).astype(np.float64)
    return out


def _segmented_min(x: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Running minimum of ``x`` starting again at each rank (``rank`` sorted)."""
    if not len(x):
        return x
    shift = rank * (2 * int(np.abs(x).max()) + 2)
    return np.minimum.accumulate(x - shift) + shift


class _Unmapped:
    """Counts of what could not be attributed, keyed in order of first occurrence (in the
    global reader's order, as when reading one by one)."""

    def __init__(self):
        self.at: list[np.ndarray] = []
        self.keys: list[list[str]] = []

    def add(self, at, keys) -> None:
        at = np.asarray(at, np.int64)
        if len(at):
            self.at.append(at)
            self.keys.append([keys] * len(at) if isinstance(keys, str) else list(keys))

    def counter(self) -> Counter:
        out: Counter = Counter()
        if self.at:
            keys = [k for ks in self.keys for k in ks]
            for i in np.argsort(np.concatenate(self.at), kind="stable").tolist():
                out[keys[i]] += 1
        return out


class _Writes:
    """Writes of action fields (call, event index, value); the last one of a call wins."""

    def __init__(self):
        self.w: dict[str, list] = {}

    def add(self, field: str, call, at, value) -> None:
        call = np.asarray(call, np.int64)
        if len(call):
            value = np.asarray(value)
            value = np.full(len(call), value) if value.ndim == 0 else value
            self.w.setdefault(field, []).append((call, np.asarray(at, np.int64), value))

    def final(self, field: str) -> tuple[np.ndarray, np.ndarray]:
        """(calls, value of each one's last write); unsigned when every write is."""
        parts = self.w.get(field)
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        signed = any(p[2].dtype.kind != "u" for p in parts)
        call = np.concatenate([p[0] for p in parts])
        at = np.concatenate([p[1] for p in parts])
        val = np.concatenate([p[2].astype(np.int64 if signed else np.uint64) for p in parts])
        k = _last_per(call, at)
        return call[k], val[k]


# == communicators ===========================================================================
def _comm_ids(ref: np.ndarray, d: Defs) -> np.ndarray:
    """The comm id of each OTF2 comm reference: NO_COMM for none (or not an MPI one), a
    provisional id (``_SELF_BASE - ref``) for a COMM_SELF-type comm, made final per rank by
    ``_self_ids``."""
    cid = np.full(len(ref), NO_COMM, np.int64)
    ok = (ref >= 0) & (ref < len(d.comm_id))
    cid[ok] = d.comm_id[ref[ok]]
    own = cid == SELF
    cid[own] = _SELF_BASE - ref[own]
    return cid


def _world(ev, events, rank, d: Defs, unm: _Unmapped, pos) -> tuple[np.ndarray, np.ndarray]:
    """(comm id, world rank) of each event's communicator (``_comm_ids``) and comm rank (field
    ``a``: peer or root); an event on no MPI comm is counted and gets (0, NONE)."""
    ref = ev["b"][events].astype(np.int64)
    r = ev["a"][events].astype(np.int64)
    cid = _comm_ids(ref, d)
    peer = np.full(len(events), NONE, np.int64)
    none = cid == NO_COMM
    unm.add(pos[events[none]], "event on a communicator without an MPI group")
    cid[none] = 0
    own = cid <= _SELF_BASE
    peer[own & (r == 0)] = rank[events[own & (r == 0)]]
    for c in np.unique(cid[~own & ~none]).tolist():
        m = (cid == c) & ~none
        members = d.comms[c]
        inside = m & (r < len(members))
        peer[inside] = members[r[inside]]
    return cid, peer


def _self_ids(cid, rank, pos, first_free: int) -> dict[tuple[int, int], int]:
    """Ids of the COMM_SELF-type comms' instances: one per (provisional comm id, rank), numbered
    from ``first_free`` in order of first use (``pos``)."""
    m = cid <= _SELF_BASE
    if not m.any():
        return {}
    o = np.argsort(pos[m], kind="stable")
    pairs, first = np.unique(np.stack([cid[m][o], rank[m][o]], 1), axis=0, return_index=True)
    pairs = pairs[np.argsort(first)]
    return {(int(c), int(r)): first_free + i for i, (c, r) in enumerate(pairs.tolist())}


def _comm_pos(comms: dict, cid: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(size, position of ``rank``, 0 when not a member) in each communicator ``cid``."""
    size = np.ones(len(cid), np.int64)
    me = np.zeros(len(cid), np.int64)
    for c in np.unique(cid[cid >= 0]).tolist():
        m = cid == c
        members = comms[c]
        if not len(members):        # (a group of processes not traced: spawned ones)
            continue
        size[m] = len(members)
        u, first = np.unique(members, return_index=True)
        at = np.searchsorted(u, rank[m])
        hit = (at < len(u)) & (u[np.minimum(at, len(u) - 1)] == rank[m])
        me[m] = np.where(hit, first[np.minimum(at, len(u) - 1)], 0)
    return size, me


def _to_model(kind, sent, recv, size, me, is_root):
    """Model (bytes_sent, bytes_recv) from Score-P's totals over all peers (otf2._to_model on
    columns, in unsigned arithmetic like Python's integers)."""
    rule = _RULE[kind]
    P = np.maximum(size, 1).astype(np.uint64)
    me_u = me.astype(np.uint64)
    s, r = sent.copy(), recv.copy()
    m = rule == 1
    s[m] = sent[m] // P[m]
    m = rule == 2
    s[m], r[m] = sent[m] // P[m], recv[m] // P[m]
    m = rule == 3
    s[m] = np.where(is_root[m], sent[m] // P[m], 0)
    r[m] = np.where(is_root[m], 0, recv[m])
    m = rule == 4
    r[m] = np.where(is_root[m], recv[m] // P[m], 0)
    m = rule == 5
    r[m] = recv[m] // P[m]
    m = rule == 6
    s[m] = r[m] = recv[m] // (me_u[m] + 1)
    m = rule == 7
    last = me_u[m] + 1 >= P[m]
    b = np.where(~last, sent[m] // np.maximum(P[m] - me_u[m] - 1, 1),
                 np.where(me[m] > 0, recv[m] // np.maximum(me_u[m], 1), 0))
    s[m] = r[m] = b
    return s, r


# == the sequential part ======================================================================
class _Sequential:
    """Persistent requests, and requests without ids, event by event within each rank.

    Score-P writes a persistent send's MpiIsend, and a receive's MpiIrecvRequest, inside
    MPI_Start/MPI_Startall with the request's id: the first start of an id links it to the
    oldest init of that side not yet linked.

    Without its XNONBLOCK events Score-P records no request ids: a send's message is a plain
    MpiSend inside MPI_Isend or MPI_Start, a receive's an MpiRecv inside the wait or test that
    completes it, and nothing else is written.  Such requests get ids of their own (above the
    rank's OTF2 request ids) and are matched as TAU's are: a start's MpiSend names the
    send_init with that peer, tag and comm, else the oldest one not yet described, which it
    describes; a start without any event starts the oldest inactive recv_init, a startall every
    inactive one; an MpiRecv in a completion resolves the oldest pending receive without an id
    (an irecv without MpiIrecvRequest, or a started recv_init whose source and tag, once
    learned, are the message's); a wait/waitany/waitsome without any event completes the
    oldest pending send without an id, a waitall all of them.  A non-blocking collective
    without its NonBlockingCollectiveRequest (traces written by other tools than Score-P, e.g.
    sst-dumpi's OTF2 writer: nothing inside the call nor inside the wait) gets an id of its
    own and joins the same queue, so the waits complete sends and collectives in the order
    they were started; ``linked`` counts them by kind.
    """

    def __init__(self, c_kind, c_rank, W, appends, flags, unm):
        self.c_kind, self.c_rank = c_kind, c_rank
        self.W, self.appends, self.flags, self.unm = W, appends, flags, unm
        self.sets: list[tuple[int, int, int, int]] = []    # (rank, request, at, call)
        self.linked: Counter = Counter()     # id-less collectives completed in order, by kind

    def run(self, items: list[tuple], inits: np.ndarray, base: list[int]) -> None:
        """``items``: (event index, what, call, ...) in event order; ``inits``: calls whose kind
        is an init, in order; ``base``: each rank's first free request id."""
        W, c_kind = self.W, self.c_kind
        by_rank: dict[int, list[int]] = {}
        for j in inits.tolist():
            by_rank.setdefault(int(self.c_rank[j]), []).append(j)
        linked: dict[int, int] = {}                # init call -> request
        desc: dict[int, tuple] = {}                # send_init call -> (peer, tag, comm)
        psets: dict[tuple[int, int], tuple[int, int]] = {}   # (rank, req) -> (at, init)
        pending: dict[int, list[int]] = {}        # rank -> id-less sends, collectives pending
        collective: dict[tuple[int, int], str] = {}   # (rank, request) -> its collective
        receiving: dict[int, list[tuple]] = {}    # rank -> [(irecv/recv_init call, request)]
        active: set[int] = set()                  # recv_inits started, not completed
        heard: dict[int, tuple] = {}              # recv_init call -> (source, tag)
        nxt = list(base)
        writes: dict[str, list] = {}

        def write(field, call, at, value):
            writes.setdefault(field, []).append((call, at, value))

        def request_of(j, rank):
            if j not in linked:
                linked[j] = nxt[rank]
                nxt[rank] += 1
            return linked[j]

        def started(call, at, req):
            self.flags[call] |= K.FLAG_PERSISTENT
            if _N[int(c_kind[call])] == "start":
                write("request", call, at, req)
            else:
                self.appends.append((np.array([call]), np.array([at]), np.array([req],
                                                                               np.uint64)))

        for item in items:
            at, what, call = item[0], item[1], item[2]
            rank = int(self.c_rank[call])
            mine = [j for j in by_rank.get(rank, ()) if j < call]
            if what == "persistent":             # MpiIsend / MpiIrecvRequest with an id
                req, prior_at, prior, side, msg, gpos = item[3:]
                p = psets.get((rank, req))
                idx = prior if p is None or (prior >= 0 and prior_at > p[0]) else p[1]
                if idx < 0 or not _M[side][c_kind[idx]]:
                    idx = next((j for j in mine if j not in linked and _M[side][c_kind[j]]),
                               -1)
                    if idx < 0:
                        self.unm.add([gpos], "start of a request without its init")
                        continue
                    linked[idx] = req
                    write("request", idx, at, req)
                    psets[(rank, req)] = (at, idx)
                    self.sets.append((rank, req, at, idx))
                started(call, at, req)
                if msg is not None:
                    peer, tag, cid, nbytes = msg
                    for f, v in (("peer", peer), ("tag", tag), ("comm", cid),
                                 ("bytes_sent", nbytes)):
                        write(f, idx, at, v)
                    desc[idx] = (peer, tag, cid)
            elif what == "start_send":           # a plain MpiSend inside a start: no id
                (peer, tag, cid, nbytes), gpos = item[3:]
                free = [j for j in mine if _M["send_inits"][c_kind[j]]]
                j = next((j for j in free if desc.get(j) == (peer, tag, cid)),
                         next((j for j in free if j not in desc and j not in linked), -1))
                if j < 0:
                    self.unm.add([gpos], f"MpiSend in {_N[int(c_kind[call])]} without a "
                                         "send_init")
                    continue
                if j not in desc:
                    for f, v in (("peer", peer), ("tag", tag), ("comm", cid),
                                 ("bytes_sent", nbytes)):
                        write(f, j, at, v)
                    desc[j] = (peer, tag, cid)
                req = request_of(j, rank)
                write("request", j, at, req)
                started(call, at, req)
                pending.setdefault(rank, []).append(req)
            elif what in ("isend", "icoll"):     # an isend's plain MpiSend, a bare icoll
                req = nxt[rank]
                nxt[rank] += 1
                write("request", call, at, req)
                pending.setdefault(rank, []).append(req)
                if what == "icoll":
                    collective[(rank, req)] = _N[int(c_kind[call])]
            elif what == "wait":                 # completes id-less sends (below)
                queue = pending.get(rank)
                name = _N[int(c_kind[call])]
                if not queue or not (item[3] or name == "waitall"):
                    continue
                done = list(queue) if name == "waitall" else [queue[0]]
                del queue[:len(done)]
                self.linked.update(collective.pop((rank, q)) for q in done
                                   if (rank, q) in collective)
                if name in ("wait", "waitany"):
                    write("request", call, at, done[0])
                else:
                    self.appends.append((np.full(len(done), call), np.full(len(done), at),
                                         np.array(done, np.uint64)))
            elif what == "irecv":                # an irecv without MpiIrecvRequest
                req = nxt[rank]
                nxt[rank] += 1
                write("request", call, at, req)
                receiving.setdefault(rank, []).append((call, req))
            elif what == "start_recv":           # receives a start(all) starts, no event
                gpos = item[3]
                idle = [j for j in mine if _M["recv_inits"][c_kind[j]] and j not in active]
                if _N[int(c_kind[call])] == "start":
                    if not idle:
                        self.unm.add([gpos], "start without an inactive persistent request")
                        continue
                    idle = idle[:1]
                for j in idle:
                    req = request_of(j, rank)
                    write("request", j, at, req)
                    active.add(j)
                    receiving.setdefault(rank, []).append((j, req))
                    started(call, at, req)
            elif what == "recv":                 # an id-less receive's MpiRecv, completed
                (peer, tag, cid, nbytes), gpos = item[3:]
                queue = receiving.get(rank, [])
                k = next((k for k, (j, _) in enumerate(queue)
                          if _N[int(c_kind[j])] == "irecv"
                          or heard.get(j, (peer, tag)) == (peer, tag)), -1)
                if k < 0:
                    self.unm.add([gpos], f"MpiRecv in {_N[int(c_kind[call])]}")
                    continue
                j, req = queue.pop(k)
                active.discard(j)
                for f, v in (("peer", peer), ("tag", tag), ("comm", cid),
                             ("bytes_recv", nbytes)):
                    write(f, j, at, v)
                heard[j] = (peer, tag)
                name = _N[int(c_kind[call])]
                if name in K.SINGLE_COMPLETIONS:
                    write("request", call, at, req)
                else:
                    self.appends.append((np.array([call]), np.array([at]),
                                         np.array([req], np.uint64)))
                if name in K.TESTS:
                    self.flags[call] |= K.FLAG_COMPLETED
        for f, ws in writes.items():
            c, a, v = zip(*ws)
            signed = f in ("peer", "comm")
            W.add(f, np.array(c), np.array(a),
                  np.array(v, np.int64) if signed else np.array(v, np.uint64))


# == assembly: the stages, in order ===========================================================
def assemble(rows: np.ndarray, d: Defs, keep_regions: bool) -> tuple[TraceColumns, dict]:
    """The trace of the events ``rows`` (of the ranks' locations, in the global reader's
    order) and what the reader reports: ``{"messages": {"sent", "received", "proc_null",
    "cancelled", "null_completions"},
    "unmapped": Counter, "user_regions": n (enters and leaves of non-MPI regions),
    "linked_in_order": Counter (non-blocking collectives without request events, linked to
    waits in order),
    "comms_not_named": Counter (communicator constructors, frees and sizes: kept as actions,
    but the events read do not say their communicators: a parent or a freed one left 0, a new
    one -1),
    "unread_tests": n (MPI_Test/Testall calls without events in an archive with no
    MpiRequestTest event: a test of null handles, which completed, cannot be told from one that
    failed; read as not completed),
    "vectors_estimated": Counter (alltoallv/w vectors estimated),
    "io_without_file": Counter (MPI-IO calls whose I/O events are another paradigm's handles'
    only, e.g. POSIX: read without their file, -1)}``."""
    attribute = rows["type"] == code("ATTRIBUTE")
    if attribute.any():             # (another tool's attributes: not ours, not events)
        ref = rows["a"].astype(np.int64)
        ours = np.zeros(len(rows), bool)
        ok = attribute & (ref < len(d.attribute_role))
        ours[ok] = d.attribute_role[ref[ok]] > 0
        rows = rows[~attribute | ours]
    events = _by_rank(rows, d)
    unmapped = _Unmapped()
    calls = _outermost_calls(events, d)
    counter = _counter_values(events, d)
    items = _items_and_gaps(events, calls, counter, d, keep_regions)
    found = _Found(events, calls, d, unmapped)
    p2p = _point_to_point(found)
    seq = _without_request_ids(found, p2p)
    made = _one_sided(found, _requests_made(found, p2p, seq.sets))
    _cancels(found, made)
    _unsaid_flags(found)
    collectives = _completions(found, made)
    _file_io(found, d)          # (before the COMM_SELF-type comms are numbered: its files')
    comms, self_ids = _self_comm_ids(found, d)
    _collective_sizes(found, collectives, comms)
    call_rows, vectors = _call_rows(found, p2p, self_ids)
    cancelled = _peerless_cancels(found, call_rows)
    if cancelled:
        p2p.counts["cancelled"] = cancelled
    strings, marker_tag = _marker_names(events, calls, items, d)
    actions, offsets = _actions(events, calls, items, call_rows, marker_tag, d.nranks)
    meta = {}
    dropped = Counter(d.region_name[x].strip().removesuffix("()").strip()
                      for x in calls.region[calls.at[~calls.kept]].tolist())
    if dropped:
        meta["dropped_mpi_calls"] = dict(sorted(dropped.items()))
    data = TraceColumns(actions, offsets, vectors,
                        {0: np.arange(d.nranks, dtype=np.int32), **comms}, strings, meta)
    unnamed = calls.is_["new_comms"] | np.isin(calls.kind0, [K.CODE["comm_size"],
                                                             K.CODE["comm_free"]])
    made_comms = Counter(_N[k] for k in calls.kind0[unnamed].tolist())
    null = _null_completions(actions)
    if null:
        p2p.counts["null_completions"] = null
    estimated = collective_vectors(data)
    return data, {"messages": p2p.counts, "unmapped": unmapped.counter(),
                  "user_regions": int(calls.user.sum()), "linked_in_order": seq.linked,
                  "comms_not_named": made_comms, "unread_tests": found.unread_tests,
                  "vectors_estimated": estimated, "io_without_file": found.io_without_file}


#: v-collectives whose per-member vector follows from the members' own totals: the column
#: each member's entry is (bytes_sent or bytes_recv), and whether only the root holds it
_FROM_TOTALS = {"gatherv": ("bytes_sent", True), "scatterv": ("bytes_recv", True),
                "allgatherv": ("bytes_sent", False), "reduce_scatter": ("bytes_recv", False)}
_PAIRWISE = ("alltoallv", "alltoallw")


def collective_vectors(data: TraceColumns) -> Counter:
    """Give the v-collectives of ``data`` that have no vector (OTF2 keeps each member's totals
    only) the per-member byte vector docs/FORMAT.md defines, from the same call's other members
    (the n-th collective on a communicator is one call on all its members): exact for
    gatherv, scatterv, allgatherv and reduce_scatter (each entry is one member's own total), and
    for alltoallv/alltoallw estimated as each member's sends shared out in proportion to what
    the others receive (exact when the exchange is uniform), which is returned ({kind: calls}).
    Without vectors the lowering of a sub-communicator's v-collective failed (public Intel MPI
    Benchmarks through our own OTF2 export: an IndexError in every replay) and validate
    reported each such call as a size mismatch."""
    a = data.actions
    vk = K.mask(K.VECTOR_KINDS)[a["kind"]] & (a["vec_len"] <= 0) & \
        ((a["flags"] & K.FLAG_INTERCOMM) == 0)
    estimated: Counter = Counter()
    if not vk.any():
        return estimated
    rows = np.flatnonzero(K.mask(K.ORDERED_COLLECTIVES)[a["kind"]])
    rank = data.rank_of(rows)
    comm = a["comm"][rows].astype(np.int64)
    order = np.lexsort((rows, rank, comm))
    rows, rank, comm = rows[order], rank[order], comm[order]
    key = comm * (data.nranks + 1) + rank
    start = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
    seq = np.arange(len(rows)) - np.repeat(start, np.diff(np.r_[start, len(rows)]))
    call = comm * (len(rows) + 1) + seq        # (only the calls that are v-collectives: not a
    mine = np.isin(call, call[vk[rows]])       # dict entry for each of millions of allreduces)
    rows, rank, comm, seq = rows[mine], rank[mine], comm[mine], seq[mine]
    calls: dict = {}
    for r, c, k, q in zip(rows.tolist(), comm.tolist(), rank.tolist(), seq.tolist()):
        calls.setdefault((c, q), {})[k] = r
    new: dict[int, list[int]] = {}
    for (c, _), at in calls.items():
        members = data.comms.get(c)
        if members is None or len(at) != len(members):
            continue
        got = [at.get(int(m)) for m in members]
        if any(g is None or not vk[g] for g in got) or \
                len({int(a["kind"][g]) for g in got}) != 1:
            continue
        name = K.BLOCKING_FORM[_N[int(a["kind"][got[0]])]]
        if name in _FROM_TOTALS:
            col, rooted = _FROM_TOTALS[name]
            vec = [int(a[col][g]) for g in got]
            root = int(a["peer"][got[0]])
            for m, g in zip(members, got):
                if not rooted or int(m) == root:
                    new[g] = vec
        elif name in _PAIRWISE:
            s = np.array([int(a["bytes_sent"][g]) for g in got], dtype=np.float64)
            r = np.array([int(a["bytes_recv"][g]) for g in got], dtype=np.float64)
            t = np.floor(np.outer(s, r) / max(r.sum(), 1.0)).astype(np.int64)
            for i, g in enumerate(got):
                new[g] = t[i].tolist() + t[:, i].tolist()
            estimated[_N[int(a["kind"][got[0]])]] += 1
    if new:
        _set_vectors(data, new)
    return estimated


def _set_vectors(data: TraceColumns, new: dict) -> None:
    """Write ``new`` ({row: values}, rows that have no vector) into ``data``'s vectors."""
    a = data.actions
    old_len = np.maximum(a["vec_len"].astype(np.int64), 0)
    length = old_len.copy()
    rows = np.fromiter(new, np.int64, len(new))
    length[rows] = [len(new[r]) for r in rows.tolist()]
    had = np.flatnonzero(old_len)
    _, values = data.vector_entries(had)
    vectors = np.zeros(int(length.sum()), np.int64)
    off = np.cumsum(length) - length
    lens = old_len[had]
    within = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    vectors[np.repeat(off[had], lens) + within] = values
    for r in rows.tolist():
        vectors[off[r]:off[r] + len(new[r])] = new[r]
    a["vec_len"] = length
    assign_vec_offsets(a)
    data.vectors = vectors


def _null_completions(actions: np.ndarray) -> int:
    """The waits (wait, waitany, waitsome) with no completion event in the source: waits on
    MPI_REQUEST_NULL, for which neither Score-P nor ``convert --to otf2`` write an event, and
    which MPI returns at once (LLNL Quicksilver waits on freed handles: 3630 of its 3650
    waits on 2 ranks).  validate takes that many waits completing nothing as the source's."""
    kind = actions["kind"]
    single = np.isin(kind, [_C["wait"], _C["waitany"]]) & (actions["request"] < 0)
    some = (kind == _C["waitsome"]) & (actions["vec_len"] <= 0)
    return int(single.sum() + some.sum())


@dataclass
class _Events:
    """The events grouped by rank (a rank's in the global reader's order)."""
    rows: np.ndarray             # the C reader's rows (rank, time, type, fields a to f)
    pos: np.ndarray              # each one's index in the global reader's order
    rank: np.ndarray
    type: np.ndarray             # the ``type`` column's code (otf2_native.TYPES)
    time: np.ndarray             # seconds
    rank_start: np.ndarray       # index of the first event of each one's rank
    code: dict[str, int]         # event type name -> code

    def of_type(self, *names: str) -> np.ndarray:
        """Which events are of one of the types ``names``."""
        table = np.zeros(max(self.code.values()) + 1, bool)
        table[[self.code[x] for x in names]] = True
        return table[self.type]


def _by_rank(rows: np.ndarray, d: Defs) -> _Events:
    key = rows["rank"].astype(np.uint16) if d.nranks <= 1 << 16 else rows["rank"]
    order = np.argsort(key, kind="stable")           # (a radix sort for 16-bit keys)
    ev = rows[order]
    rank = ev["rank"].astype(np.int64)
    bounds = np.searchsorted(rank, np.arange(d.nranks + 1))
    return _Events(rows=ev, pos=order.astype(np.int64), rank=rank,
                   type=ev["type"].astype(np.int64), time=_times(ev["time"], d),
                   rank_start=np.repeat(bounds[:-1], np.diff(bounds)),
                   code={name: code(name) for name in TYPES})


@dataclass
class _Calls:
    """The outermost MPI calls (one row each), found from each rank's MPI nesting."""
    enter: np.ndarray            # per event: an Enter
    leave: np.ndarray            # per event: a Leave
    region: np.ndarray           # per event: its ``a`` field (an Enter's or Leave's region)
    user: np.ndarray             # per event: an Enter or Leave of a non-MPI region
    depth: np.ndarray            # per event: MPI calls open after it
    depth_before: np.ndarray     # per event: MPI calls open before it
    call_of: np.ndarray          # per event: the latest outermost call entered
    at: np.ndarray               # per call: its Enter's event index
    kind: np.ndarray             # per call: MPI kind code, or DROPPED
    rank: np.ndarray             # per call
    close_at: np.ndarray         # per call: its Leave's event index (-1: never left)
    kept: np.ndarray             # per call: not DROPPED
    kind0: np.ndarray            # per call: its kind, 0 where dropped (an index into masks)
    is_: dict[str, np.ndarray]   # per call: kept and of each of _M's kind sets


def _outermost_calls(e: _Events, d: Defs) -> _Calls:
    n = len(e.rank)
    enter, leave = e.type == e.code["ENTER"], e.type == e.code["LEAVE"]
    enter_or_leave = enter | leave
    region = e.rows["a"].astype(np.int64)
    if (enter_or_leave & (region >= len(d.region_kind))).any():
        raise MinitraceError("an event names a region the definitions do not define (a "
                             "corrupt archive?)")
    region_kind = np.full(n, USER, np.int64)
    region_kind[enter_or_leave] = d.region_kind[region[enter_or_leave]]
    mpi = enter_or_leave & (region_kind != USER)
    user = enter_or_leave & (region_kind == USER)
    opened = np.cumsum((mpi & enter).astype(np.int64) - (mpi & leave))
    opened -= (np.r_[0, opened][e.rank_start]) if n else 0
    depth = opened - np.minimum(_segmented_min(opened, e.rank), 0)  # a leave at 0: ignored
    depth_before = np.where(np.arange(n) == e.rank_start, 0, np.r_[0, depth[:-1]]) if n \
        else depth
    outer_enter = mpi & enter & (depth_before == 0)
    outer_leave = mpi & leave & (depth_before == 1)
    call_of = np.cumsum(outer_enter) - 1
    at = np.nonzero(outer_enter)[0]
    kind = region_kind[at]
    close_at = np.full(len(at), -1, np.int64)
    close_at[call_of[outer_leave]] = np.nonzero(outer_leave)[0]
    kept = kind >= 0
    kind0 = np.where(kept, kind, 0)
    return _Calls(enter=enter, leave=leave, region=region, user=user, depth=depth,
                  depth_before=depth_before, call_of=call_of, at=at, kind=kind,
                  rank=e.rank[at], close_at=close_at, kept=kept, kind0=kind0,
                  is_={name: m[kind0] & kept for name, m in _M.items()})


def _counter_values(e: _Events, d: Defs) -> np.ndarray:
    """The volume counter's value at each event (NaN: not counted, or none yet)."""
    n = len(e.rank)
    value_at = np.full(n, np.nan)
    if not (d.counted and n):
        return value_at
    is_metric = e.type == e.code["METRIC"]
    mi = np.nonzero(is_metric)[0]
    mref = e.rows["a"][mi].astype(np.int64)
    v = _metric_values(e.rows["d"][mi], d.metric_kind[mref])
    relative = d.metric_relative[mref]
    increment = np.where(relative, v, 0.0)
    summed = np.cumsum(increment)
    first = np.r_[True, e.rank[mi][1:] != e.rank[mi][:-1]] if len(mi) else np.zeros(0, bool)
    # counter = last absolute value (0 at the start of a rank) + increments since
    base = np.where(~relative, v - summed, np.where(first, increment - summed, np.nan))
    known = np.maximum.accumulate(np.where(~np.isnan(base), np.arange(len(mi)), 0))
    value = summed + base[known] if len(mi) else summed
    last = np.maximum.accumulate(np.where(is_metric, np.arange(n), -1))
    ok = last >= e.rank_start
    value_at[ok] = value[np.searchsorted(mi, last[ok])]
    return value_at


@dataclass
class _Items:
    """The items (outermost calls, user region markers) in each rank's order; the flushing
    ones (kept calls, markers) each become an action, after the compute gap that the pieces
    between it and the previous flushing item add up to."""
    markers: np.ndarray          # per marker: its event index
    source: np.ndarray           # per item: index in [calls, markers]
    is_call: np.ndarray          # per item
    call: np.ndarray             # per item: its call (0 for a marker)
    at: np.ndarray               # per item: its (Enter) event index
    rank: np.ndarray             # per item
    t_in: np.ndarray             # per item: when it starts
    prev_end: np.ndarray         # per item: when the item before it ended
    flushing: np.ndarray         # item indices of the kept calls and markers
    has_gap: np.ndarray          # per flushing item: a compute gap before it
    gap_volume: np.ndarray       # per flushing item
    first_piece: np.ndarray      # per flushing item: item whose gap before it starts it
    last_piece: np.ndarray       # per flushing item: item whose gap before it ends it


def _items_and_gaps(e: _Events, calls: _Calls, counter: np.ndarray, d: Defs,
                    keep_regions: bool) -> _Items:
    n, nc = len(e.rank), len(calls.at)
    markers = np.nonzero(calls.user & (calls.depth_before == 0))[0] if keep_regions \
        else np.zeros(0, np.int64)
    at = np.r_[calls.at, markers]
    source = np.argsort(at, kind="stable")
    at = at[source]
    is_call = source < nc
    call = np.where(is_call, source, 0)
    rank, t_in = e.rank[at], e.time[at]
    end = np.where(is_call, calls.close_at[call] if nc else -1, at)
    t_out = np.where(end >= 0, e.time[np.maximum(end, 0)] if n else 0.0, np.nan)
    kind = np.where(is_call, calls.kind[call] if nc else DROPPED, -3)
    flush = (kind >= 0) | (kind == -3)                    # a kept call or a marker
    nit = len(at)
    prev_same = np.r_[False, rank[1:] == rank[:-1]] if nit else np.zeros(0, bool)
    rank_first = np.searchsorted(rank, rank)

    def seen_before(flag):
        c = np.cumsum(flag) - flag
        return c - c[rank_first] > 0

    tracking = seen_before((kind == _C["init"]) & (end >= 0)) \
        & ~seen_before(kind == _C["finalize"])
    prev_end = np.r_[np.nan, t_out[:-1]] if nit else t_out
    piece = prev_same & tracking & (t_in > prev_end)
    if d.counted:
        prev_counter = np.r_[np.nan, counter[np.maximum(end, 0)][:-1]] if nit else t_in
        grown = counter[at] - prev_counter
        piece_volume = np.where(np.isnan(grown), 0.0, grown)
    else:
        piece_volume = t_in - prev_end
    flushed = np.cumsum(flush)
    group = flushed - flush                               # the flushing item a piece joins
    nfl = int(flushed[-1]) if nit else 0
    flushing = np.nonzero(flush)[0]
    valid = piece & (group < nfl)
    valid[valid] = rank[flushing[group[valid]]] == rank[valid]
    vi = np.nonzero(valid)[0]
    first_piece = np.full(nfl, -1, np.int64)
    last_piece = np.full(nfl, -1, np.int64)
    if len(vi):
        g, i0 = np.unique(group[vi], return_index=True)  # group is sorted along items
        first_piece[g] = vi[i0]
        last_piece[g] = vi[np.r_[i0[1:], len(vi)] - 1]
    return _Items(markers=markers, source=source, is_call=is_call, call=call, at=at,
                  rank=rank, t_in=t_in, prev_end=prev_end, flushing=flushing,
                  has_gap=np.bincount(group[vi], minlength=nfl) > 0,
                  gap_volume=np.bincount(group[vi], piece_volume[vi], minlength=nfl),
                  first_piece=first_piece, last_piece=last_piece)


class _Found:
    """What the message events say about the calls they are inside: field writes (a call's
    last one wins), flags, vector entries (request ids), every communicator translation made
    (for the COMM_SELF-type ids), and what could not be attributed."""

    def __init__(self, e: _Events, calls: _Calls, d: Defs, unmapped: _Unmapped):
        self.e, self.calls, self.d, self.unmapped = e, calls, d, unmapped
        nc = len(calls.at)
        self.name_of = {e.code[k]: OTF2_NAME[k] for k in TYPES}
        message = ~(calls.enter | calls.leave) & (e.type != e.code["METRIC"])
        inside = message & (calls.depth > 0)
        self.call_of = np.where(inside, calls.call_of, 0)     # per event: the call it is in
        self.mapped = inside & (calls.kept[self.call_of] if nc else False)
        um = np.nonzero(message & ~self.mapped)[0]
        unmapped.add(e.pos[um], [self.name_of[x] for x in e.type[um].tolist()])
        self.writes = _Writes()
        self.flags = np.zeros(nc, np.uint8)
        self.vector_entries: list[tuple] = []   # (calls, event indices, values)
        self.translations: list[tuple] = []     # (events, comm ids)
        self.comm_from: list[tuple] = []        # (calls, calls whose final comm they take)
        self.unread_tests = 0       # tests without events whose outcome the archive hides
        self.cancelled = np.zeros(0, np.int64)      # the calls whose request was cancelled
        self.io_without_file: Counter = Counter()   # MPI-IO calls with another paradigm's
        #                                             handles only: by kind

    def inside_calls(self, *types: str) -> np.ndarray:
        """The events of ``types`` inside kept calls."""
        return np.nonzero(self.mapped & self.e.of_type(*types))[0]

    def unmapped_in(self, events) -> None:
        """Counted as '<OTF2 event> in <kind>'."""
        kinds = self.calls.kind0[self.call_of[events]]
        self.unmapped.add(self.e.pos[events], [f"{self.name_of[a]} in {_N[b]}" for a, b in
                                               zip(self.e.type[events].tolist(),
                                                   kinds.tolist())])

    def world(self, events) -> tuple[np.ndarray, np.ndarray]:
        """(comm id, world rank of the ``a`` field) of each event (``_world``)."""
        cid, peer = _world(self.e.rows, events, self.e.rank, self.d, self.unmapped,
                           self.e.pos)
        self.translations.append((events, cid))
        return cid, peer

    def message(self, events, calls, cid, peer, side: str) -> None:
        """The message of ``events`` written into ``calls`` (``side``: its bytes' field)."""
        self.writes.add("peer", calls, events, peer)
        self.writes.add("tag", calls, events, self.e.rows["c"][events].astype(np.uint64))
        self.writes.add("comm", calls, events, cid)
        self.writes.add(side, calls, events, self.e.rows["d"][events])


@dataclass
class _PointToPoint:
    """The point-to-point message events and the request creations they show."""
    counts: dict                 # {"sent", "received"}: MpiSend/MpiIsend, MpiRecv/MpiIrecv
    #                              to a peer; "proc_null" (if any): those naming none;
    #                              "cancelled" (if any, later): _peerless_cancels
    sends: np.ndarray            # MpiSend and MpiIsend events inside kept calls
    send_comm: np.ndarray        # per send
    send_peer: np.ndarray        # per send
    in_start: np.ndarray         # per send: inside MPI_Start/Startall
    nonblocking: np.ndarray      # per send: outside a start, in a nonblocking send
    recvs: np.ndarray            # MpiRecv events inside kept calls
    recv_comm: np.ndarray        # per recv
    recv_peer: np.ndarray        # per recv
    in_completion: np.ndarray    # per recv: in a completion (an id-less receive's)
    sendrecv: np.ndarray         # per recv: in a sendrecv
    made: np.ndarray             # MpiIrecvRequest and NonBlockingCollectiveRequest events
    recv_start: np.ndarray       # per made: an MpiIrecvRequest inside a start
    created_at: np.ndarray       # event index of each request creation with an id
    created_by: np.ndarray       # the call that made it


def _point_to_point(f: _Found) -> _PointToPoint:
    e, is_, rows = f.e, f.calls.is_, f.e.rows
    null = e.rows["a"].astype(np.uint64) == NO_TAG     # (the peer field: MPI_PROC_NULL)
    counts = {"sent": int((e.of_type("SEND", "ISEND") & ~null).sum()),
              "received": int((e.of_type("RECV", "IRECV") & ~null).sum())}
    if (e.of_type("SEND", "ISEND", "RECV", "IRECV") & null).any():
        counts["proc_null"] = int((e.of_type("SEND", "ISEND", "RECV", "IRECV") & null).sum())
    sends, recvs = f.inside_calls("SEND", "ISEND"), f.inside_calls("RECV")
    send_comm, send_peer = f.world(sends)
    recv_comm, recv_peer = f.world(recvs)
    sc, rc = f.call_of[sends], f.call_of[recvs]
    in_start = is_["starts"][sc]
    p2p = ~in_start & is_["sends"][sc]
    f.unmapped_in(sends[~in_start & ~p2p])
    f.message(sends[p2p], sc[p2p], send_comm[p2p], send_peer[p2p], "bytes_sent")
    nonblocking = p2p & is_["nb_sends"][sc]
    with_id = nonblocking & (e.type[sends] == e.code["ISEND"])
    created_at, created_by = [sends[with_id]], [sc[with_id]]
    f.writes.add("request", sc[with_id], sends[with_id], rows["e"][sends[with_id]])
    is_recv, sendrecv = is_["recv"][rc], is_["sendrecvs"][rc]
    in_completion = is_["single"][rc] | is_["multi"][rc]
    f.unmapped_in(recvs[~is_recv & ~sendrecv & ~in_completion])
    f.message(recvs[is_recv], rc[is_recv], recv_comm[is_recv], recv_peer[is_recv],
              "bytes_recv")
    f.writes.add("bytes_recv", rc[sendrecv], recvs[sendrecv], rows["d"][recvs[sendrecv]])
    made = f.inside_calls("IRECV_REQUEST", "NBC_REQUEST")
    mc = f.call_of[made]
    recv_start = is_["starts"][mc] & (e.type[made] == e.code["IRECV_REQUEST"])
    creates = ~recv_start & is_["creates"][mc]
    f.unmapped_in(made[~recv_start & ~creates])
    f.writes.add("request", mc[creates], made[creates], rows["e"][made[creates]])
    created_at.append(made[creates])
    created_by.append(mc[creates])
    return _PointToPoint(counts=counts, sends=sends, send_comm=send_comm, send_peer=send_peer,
                         in_start=in_start, nonblocking=nonblocking, recvs=recvs,
                         recv_comm=recv_comm, recv_peer=recv_peer, in_completion=in_completion,
                         sendrecv=sendrecv, made=made, recv_start=recv_start,
                         created_at=np.concatenate(created_at),
                         created_by=np.concatenate(created_by))


def _without_request_ids(f: _Found, p: _PointToPoint) -> _Sequential:
    """The sequential part (``_Sequential``) run on its items: its ``sets`` are the (rank,
    request, event index, call) of the requests it linked to their inits, its ``linked`` the
    non-blocking collectives without request events it linked to waits in order."""
    e, calls, rows = f.e, f.calls, f.e.rows
    seq = _Sequential(calls.kind, calls.rank, f.writes, f.vector_entries, f.flags, f.unmapped)
    send_type = e.type[p.sends]
    persistent_send = p.in_start & (send_type == e.code["ISEND"])
    bare_start = p.in_start & (send_type == e.code["SEND"])
    bare_isend = p.nonblocking & (send_type == e.code["SEND"])
    bare_recv = p.recvs[p.in_completion]
    persistent = np.r_[p.sends[persistent_send], p.made[p.recv_start]]
    with_request = np.zeros(len(calls.at), bool)
    with_request[p.created_by] = True
    bare_icoll = np.nonzero(calls.is_["nbcolls"] & ~with_request)[0]   # no request event: no id
    if not (len(persistent) or bare_start.any() or bare_isend.any() or len(bare_recv)
            or len(bare_icoll)):
        return seq
    call_of, pos = f.call_of, e.pos
    prior = _latest(e.rank[p.created_at], rows["e"][p.created_at], p.created_at,
                    e.rank[persistent], rows["e"][persistent], persistent)

    def send_message(i):
        ev = p.sends[i]
        return int(p.send_peer[i]), int(rows["c"][ev]), int(p.send_comm[i]), int(rows["d"][ev])

    items = []
    send_index = {ev: i for i, ev in enumerate(p.sends.tolist())}
    for ev, pr in zip(persistent.tolist(), prior.tolist()):
        i = send_index.get(ev)      # an MpiIsend, whose message describes the send_init
        items.append((ev, "persistent", int(call_of[ev]), int(rows["e"][ev]),
                      int(p.created_at[pr]) if pr >= 0 else -1,
                      int(p.created_by[pr]) if pr >= 0 else -1,
                      "recv_inits" if i is None else "send_inits",
                      None if i is None else send_message(i), int(pos[ev])))
    for i in np.nonzero(bare_start)[0].tolist():
        ev = int(p.sends[i])
        items.append((ev, "start_send", int(call_of[ev]), send_message(i), int(pos[ev])))
    for ev in p.sends[bare_isend].tolist():
        items.append((ev, "isend", int(call_of[ev])))
    for c in bare_icoll.tolist():
        items.append((int(calls.at[c]), "icoll", c))
    for i in np.nonzero(p.in_completion)[0].tolist():
        ev = int(p.recvs[i])
        items.append((ev, "recv", int(call_of[ev]), (int(p.recv_peer[i]), int(rows["c"][ev]),
                                                     int(p.recv_comm[i]), int(rows["d"][ev])),
                      int(pos[ev])))
    # calls without events, of the ranks whose sends, receives or non-blocking collectives
    # have no request ids
    nc, nr = len(calls.at), f.d.nranks
    events_in = np.bincount(call_of[f.mapped], minlength=nc)
    sending = np.zeros(nr, bool)
    sending[e.rank[p.sends[bare_start | bare_isend]]] = True
    sending[calls.rank[bare_icoll]] = True
    receiving = np.zeros(nr, bool)
    receiving[e.rank[bare_recv]] = True
    for c in np.nonzero(calls.is_["waits"] & sending[calls.rank])[0].tolist():
        items.append((int(calls.at[c]), "wait", c, bool(events_in[c] == 0)))
    quiet = events_in == 0
    receivers = receiving[calls.rank] & calls.kept
    for c in np.nonzero(receivers & quiet & (calls.kind0 == _C["irecv"]))[0]:
        items.append((int(calls.at[c]), "irecv", int(c)))
    for c in np.nonzero(receivers & quiet & (calls.kind0 == _C["start"]))[0]:
        items.append((int(calls.at[c]), "start_recv", int(c), int(pos[calls.at[c]])))
    for c in np.nonzero(receivers & (calls.kind0 == _C["startall"]))[0]:
        at = int(calls.close_at[c] if calls.close_at[c] >= 0 else calls.at[c])  # after sends
        items.append((at, "start_recv", int(c), int(pos[calls.at[c]])))
    items.sort(key=lambda x: x[0])
    first_free = [1] * nr
    has_id = e.of_type("ISEND", "ISEND_COMPLETE", "IRECV_REQUEST", "IRECV", "REQUEST_TEST",
                       "REQUEST_CANCELLED", "NBC_REQUEST", "NBC_COMPLETE")
    for r, top in zip(e.rank[has_id].tolist(), rows["e"][has_id].tolist()):
        first_free[r] = min(max(first_free[r], top + 1), 1 << 63)   # beyond: reported later
    seq.run(items, np.nonzero(calls.is_["inits"])[0], first_free)
    return seq


@dataclass
class _Made:
    """Every request creation known: by an event with its id, or linked in the sequential
    part."""
    rank: np.ndarray
    request: np.ndarray
    at: np.ndarray               # event index
    call: np.ndarray             # the call that made it


def _requests_made(f: _Found, p: _PointToPoint, linked: list[tuple]) -> _Made:
    rank, request = f.e.rank[p.created_at], f.e.rows["e"][p.created_at]
    if not linked:
        return _Made(rank, request, p.created_at, p.created_by)
    lrank, lrequest, lat, lcall = zip(*linked)
    return _Made(np.r_[rank, np.array(lrank, np.int64)],
                 np.r_[request, np.array(lrequest, np.uint64)],
                 np.r_[p.created_at, np.array(lat, np.int64)],
                 np.r_[p.created_by, np.array(lcall, np.int64)])


def _quiet_tests(f: _Found, with_events: np.ndarray) -> np.ndarray:
    """The MPI_Test and MPI_Testall calls with no request event in them: tests of
    MPI_REQUEST_NULL (or of an empty or all-null list), which MPI completes (flag true) and for
    which neither Score-P nor ``convert --to otf2`` write an event, in an archive whose source
    writes an event for each test that fails (:func:`_completions` checks that; else they may
    be failed tests, and are counted as unread).  (MPI_Testany and MPI_Testsome of null
    requests complete nothing: they stay without COMPLETED.)"""
    kind = f.calls.kind0
    tests = np.nonzero(f.calls.kept & np.isin(kind, [_C["test"], _C["testall"]]))[0]
    return tests[~np.isin(tests, with_events)]


@dataclass
class _CollectiveEvents:
    """MpiCollectiveEnd events, and NonBlockingCollectiveComplete events resolved to the call
    that made their request."""
    at: np.ndarray               # event index
    call: np.ndarray             # the call whose row they describe
    comm: np.ndarray             # comm id
    root: np.ndarray             # world rank of the root (field a)


def _completions(f: _Found, made: _Made) -> _CollectiveEvents:
    """Completions written into the completing calls, and what a completion tells about the
    call that made its request (an MpiIrecv: the message)."""
    e, is_, rows, code_ = f.e, f.calls.is_, f.e.rows, f.e.code
    comp = f.inside_calls("ISEND_COMPLETE", "IRECV", "REQUEST_TEST", "REQUEST_CANCELLED",
                          "NBC_COMPLETE")
    io = f.inside_calls("IO_COMPLETE", "IO_TEST")       # (in a wait or test: of an iread...)
    io = io[(is_["single"][f.call_of[io]] | is_["multi"][f.call_of[io]]) &
            _mpi_io_handles(f, io)]
    rma = f.inside_calls("RMA_OP_COMPLETE", "RMA_OP_TEST")   # (of an rput...: the others are
    rma = rma[is_["single"][f.call_of[rma]] | is_["multi"][f.call_of[rma]]]   # in syncs)
    comp = np.sort(np.r_[comp, io, rma])
    cc = f.call_of[comp]
    gone = comp[e.type[comp] == code_["REQUEST_CANCELLED"]]
    k = _latest(made.rank, made.request, made.at, e.rank[gone], rows["e"][gone], gone)
    f.cancelled = made.call[k[k >= 0]]
    single, multi = is_["single"][cc], is_["multi"][cc]
    f.unmapped.add(e.pos[comp[~single & ~multi]],
                   [f"completion in {_N[k]}" for k in f.calls.kind0[cc[~single & ~multi]]
                    .tolist()])
    f.writes.add("request", cc[single], comp[single], rows["e"][comp[single]])
    _request_comm(f, made, comp[single])
    f.vector_entries.append((cc[multi], comp[multi], rows["e"][comp[multi]]))
    failed = np.isin(e.type[comp], [code_["REQUEST_TEST"], code_["IO_TEST"],
                                    code_["RMA_OP_TEST"]])
    done = (single | multi) & is_["tests"][cc] & ~failed
    f.flags[cc[done]] |= K.FLAG_COMPLETED
    quiet = _quiet_tests(f, cc)
    io_tests = np.nonzero(e.type == code_["IO_TEST"])[0]
    # (the source writes the tests that fail: of MPI requests, or of MPI-IO's; a tool's
    # POSIX aio tests say nothing of MPI's)
    if (e.type == code_["REQUEST_TEST"]).any() or (e.type == code_["RMA_OP_TEST"]).any() \
            or _mpi_io_handles(f, io_tests).any():
        f.flags[quiet] |= K.FLAG_COMPLETED
    else:        # Score-P by default does not (MpiRequestTested needs its XREQTEST group)
        f.unread_tests = len(quiet)
    resolving = comp[np.isin(e.type[comp], [code_["IRECV"], code_["NBC_COMPLETE"]])]
    k = _latest(made.rank, made.request, made.at, e.rank[resolving], rows["e"][resolving],
                resolving)
    resolving, made_by = resolving[k >= 0], made.call[k[k >= 0]]
    irecv = e.type[resolving] == code_["IRECV"]
    cid, peer = f.world(resolving[irecv])
    f.message(resolving[irecv], made_by[irecv], cid, peer, "bytes_recv")
    ends = f.inside_calls("COLLECTIVE_END")
    in_collective = is_["colls"][f.call_of[ends]]
    f.unmapped_in(ends[~in_collective])
    at = np.r_[ends[in_collective], resolving[~irecv]]
    call = np.r_[f.call_of[ends[in_collective]], made_by[~irecv]]
    comm, root = f.world(at)
    return _CollectiveEvents(at, call, comm, root)


def _unsaid_flags(f: _Found) -> None:
    """The flags an MPI_Flags Enter attribute carries (``convert --to otf2``'s: wildcards,
    MPI_IN_PLACE; Score-P records neither)."""
    ev = f.inside_calls("ATTRIBUTE")
    ev = ev[f.d.attribute_role[f.e.rows["a"][ev].astype(np.int64)] == IO.ROLE["MPI_Flags"]]
    unsaid = K.FLAG_ANY_SOURCE | K.FLAG_ANY_TAG | K.FLAG_IN_PLACE
    f.flags[f.call_of[ev]] |= (f.e.rows["d"][ev] & np.uint64(unsaid)).astype(np.uint8)
    win_test = f.calls.kind0[f.call_of[ev]] == _C["win_test"]     # (one that ended its epoch)
    f.flags[f.call_of[ev[win_test]]] |= (f.e.rows["d"][ev[win_test]] &
                                         np.uint64(K.FLAG_COMPLETED)).astype(np.uint8)


def _one_sided(f: _Found, made: _Made) -> _Made:
    """The one-sided calls' fields from OTF2's RMA events (each names its window): the
    window (``tag``: the rank's windows numbered by the RmaWinCreate events in its window
    creations, as the recorder numbers them) and its communicator (the RmaWin definition's),
    the target (``peer``: the ``remote`` of an RmaPut, RmaGet, RmaAtomic, RmaSync or lock
    event, a rank of the window's communicator; undefined: none), the bytes (an RmaPut's
    sent, an RmaGet's received, an RmaAtomic's both), the request of an ``r*`` operation (its
    matching id, which the RmaOpCompleteNonBlocking or RmaOpTest in the wait or test that
    completes it names: read with the completions), win_lock's vector (the lock type), the
    group of win_post/win_start (an RmaGroupSync's), and the vectors ``convert --to otf2``
    writes as Enter attributes (a creation's size and displacement unit, an operation's
    target displacement).  The requests the ``r*`` operations make are added to ``made``."""
    e, rows, calls, d = f.e, f.e.rows, f.calls, f.d
    ev = f.inside_calls(*_RMA_EVENTS)
    if not len(ev):
        return made
    kind = calls.kind0[f.call_of[ev]]
    completion = e.of_type("RMA_OP_COMPLETE", "RMA_OP_TEST")[ev] & \
        (_M["single"][kind] | _M["multi"][kind])
    f.unmapped_in(ev[~_M["one_sided"][kind] & ~completion])
    ev = ev[_M["one_sided"][kind]]
    call, kind, typ = f.call_of[ev], calls.kind0[f.call_of[ev]], e.type[ev]
    win = rows["b"][ev].astype(np.int64)
    created = ev[(typ == e.code["RMA_WIN_CREATE"]) & _M["win_creations"][kind]]
    crank = e.rank[created]
    wid = np.arange(len(created)) - np.searchsorted(crank, crank)     # (grouped by rank)
    k = _latest(crank, rows["b"][created], created, e.rank[ev], rows["b"][ev], ev)
    f.writes.add("tag", call[k >= 0], ev[k >= 0], wid[k[k >= 0]].astype(np.int64))
    known = win < len(d.win_comm)
    where = np.zeros(len(ev), [("a", np.uint32), ("b", np.uint32)])
    where["a"] = rows["a"][ev]
    where["b"] = np.uint32(NO_TAG)
    where["b"][known] = d.win_comm[win[known]].astype(np.int64) & 0xFFFFFFFF
    cid, peer = _world(where, np.arange(len(ev)), e.rank[ev], d, f.unmapped, e.pos[ev])
    f.translations.append((ev, cid))
    f.writes.add("comm", call, ev, cid)
    remote = e.of_type(*_RMA_REMOTE)[ev] & (rows["a"][ev].astype(np.uint64) != NO_TAG) & \
        (peer != NONE)
    f.writes.add("peer", call[remote], ev[remote], peer[remote])
    for t, column, src in (("RMA_PUT", "bytes_sent", "d"), ("RMA_GET", "bytes_recv", "d"),
                           ("RMA_ATOMIC", "bytes_sent", "d"), ("RMA_ATOMIC", "bytes_recv", "f")):
        m = typ == e.code[t]
        f.writes.add(column, call[m], ev[m], rows[src][ev[m]])
    op = e.of_type("RMA_PUT", "RMA_GET", "RMA_ATOMIC")[ev] & _M["rma_requests"][kind]
    f.writes.add("request", call[op], ev[op], rows["e"][ev[op]])
    lock = (typ == e.code["RMA_LOCK"]) & _M["win_lock"][kind]
    _, first = np.unique(call[lock], return_index=True)      # (a request, then an acquire)
    at = ev[lock][first]
    f.vector_entries.append((f.call_of[at], at, np.where(rows["c"][at] == LOCK_EXCLUSIVE, 1, 0)
                             .astype(np.int64)))
    group = (typ == e.code["RMA_GROUP_SYNC"]) & _M["win_groups"][kind]
    _, first = np.unique(call[group], return_index=True)
    for x in ev[group][first].tolist():
        members = np.asarray(d.group_members.get(int(rows["a"][x]), ()), np.int64)
        f.vector_entries.append((np.full(len(members), f.call_of[x]), np.full(len(members), x),
                                 members))
    attr = f.inside_calls("ATTRIBUTE")
    attr = attr[_M["one_sided"][calls.kind0[f.call_of[attr]]]]
    role = d.attribute_role[rows["a"][attr].astype(np.int64)]
    attr = attr[np.isin(role, list(RMA_ROLE.values()))]
    f.vector_entries.append((f.call_of[attr], attr, rows["d"][attr].view(np.int64)))
    return _Made(np.r_[made.rank, e.rank[ev[op]]],
                 np.r_[made.request, rows["e"][ev[op]]].astype(np.uint64),
                 np.r_[made.at, ev[op]], np.r_[made.call, call[op]])


def _cancels(f: _Found, made: _Made) -> None:
    """MPI_Cancel's fields from its Enter attributes (``convert --to otf2`` writes them; no
    OTF2 event holds them): the request and its communicator, and for a cancel that took
    (``MPI_Source`` is there) COMPLETED and the posted source, tag and size of the receive
    it cancelled, whose completion is an MpiRequestCancelled (Score-P's, which carries
    nothing else): that receive (an MPI_Irecv's) takes the posted tag and communicator, as
    the recorder keeps them.  Only in minitrace's archives: MPI_Comm is also the failed
    open's, which any archive's may be."""
    if not f.d.minitrace:
        return
    rows, calls, role = f.e.rows, f.calls, f.d.attribute_role
    ev = f.inside_calls("ATTRIBUTE")
    ev = ev[calls.kind0[f.call_of[ev]] == _C["cancel"]]
    ev_role = role[rows["a"][ev].astype(np.int64)]
    of = {name: ev[ev_role == IO.ROLE[name]] for name in
          ("MPI_Request", "MPI_Comm", "MPI_Source", "MPI_Tag", "MPI_Bytes")}
    req = of["MPI_Request"]
    f.writes.add("request", f.call_of[req], req, rows["d"][req])
    _file_comm(f, f.d, of["MPI_Comm"], _reference(f, of["MPI_Comm"]))
    for name, field in (("MPI_Source", "peer"), ("MPI_Tag", "tag"), ("MPI_Bytes", "bytes_recv")):
        x = of[name]
        f.writes.add(field, f.call_of[x], x, rows["d"][x].view(np.int64) if name != "MPI_Bytes"
                     else rows["d"][x])
    took = f.call_of[of["MPI_Source"]]
    f.flags[took] |= K.FLAG_COMPLETED
    req = req[np.isin(f.call_of[req], took)]
    k = _latest(made.rank, made.request, made.at, f.e.rank[req], rows["d"][req], req)
    irecv = made.call[k[k >= 0]]
    req = req[k >= 0]
    irecv, req = irecv[calls.kind0[irecv] == _C["irecv"]], req[calls.kind0[irecv] == _C["irecv"]]
    tags = of["MPI_Tag"]
    at = np.minimum(np.searchsorted(f.call_of[tags], f.call_of[req]), max(len(tags) - 1, 0))
    has = (at < len(tags)) & (f.call_of[tags[at]] == f.call_of[req]) if len(tags) else \
        np.zeros(len(req), bool)
    f.writes.add("tag", irecv[has], tags[at[has]], rows["d"][tags[at[has]]].view(np.int64))
    f.comm_from.append((irecv, f.call_of[req]))


def _request_comm(f: _Found, made: _Made, events: np.ndarray) -> None:
    """A single completion (wait, test, waitany, testany) is on its request's communicator, as
    the recorder writes it: an I/O event's is its handle's, an MPI request's that of the call
    that made it (taken once that call's fields are final).  They came back on comm 0 (the
    reviewer of session 32: a wait of an I/O request on a sub-communicator's file; so did the
    wait of a non-blocking collective on a sub-communicator)."""
    io = f.e.of_type("IO_COMPLETE", "IO_TEST")[events]
    _file_comm(f, f.d, events[io], f.d.handle_comm[_handles(f, events[io])])
    mpi = events[~io]
    k = _latest(made.rank, made.request, made.at, f.e.rank[mpi], f.e.rows["e"][mpi], mpi)
    f.comm_from.append((f.call_of[mpi[k >= 0]], made.call[k[k >= 0]]))


def _mpi_io_handles(f: _Found, events: np.ndarray) -> np.ndarray:
    """Which of the I/O events (or MPI_File attributes) ``events`` name an MPI-IO handle (not
    the POSIX one a tool records beneath an MPI-IO call)."""
    handle = _handles(f, events)
    known = handle < len(f.d.handle_comm)
    out = np.zeros(len(events), bool)
    out[known] = f.d.handle_comm[handle[known]] > -2
    return out


def _handles(f: _Found, events: np.ndarray) -> np.ndarray:
    """The handle ref of each I/O event (``a``), or MPI_File attribute (its value)."""
    out = f.e.rows["a"][events].astype(np.int64)
    attr = f.e.type[events] == f.e.code["ATTRIBUTE"]
    out[attr] = _reference(f, events[attr])
    return out


def _reference(f: _Found, attributes: np.ndarray) -> np.ndarray:
    """The definition reference an attribute of a reference type holds (the low 32 bits of
    its value: OTF2's references are uint32)."""
    return (f.e.rows["d"][attributes] & np.uint64(0xFFFFFFFF)).astype(np.int64)


def _file_comm(f: _Found, d: Defs, events: np.ndarray, refs: np.ndarray) -> None:
    """Write the communicator of OTF2 comm ``refs`` into the calls of ``events`` (a file's:
    none, 0)."""
    cid = _comm_ids(refs, d)
    cid[cid == NO_COMM] = 0
    f.translations.append((events, cid))
    f.writes.add("comm", f.call_of[events], events, cid)


def _file_io(f: _Found, d: Defs) -> None:
    """The MPI-IO calls' fields from OTF2's I/O events (otf2_io.py says which): the file
    (``tag``: the rank's files numbered by the IoCreateHandle events in its MPI_File_open
    calls) and its communicator (the handle's), the bytes of an operation's begin, a
    non-blocking operation's request (its matching id), the vector (a seek's offset, or the
    MPI_Offset attribute of the calls without an I/O event, whose file is their MPI_File
    attribute), an open that failed its communicator (its MPI_Comm attribute).  Events of
    handles that are not MPI-IO's are left out.  A non-blocking operation's end in a wait or
    test is read with the MPI completions."""
    e, rows, calls = f.e, f.e.rows, f.calls
    delete = np.nonzero(calls.is_["io"] & (calls.kind0 == _C["file_delete"]))[0]
    f.writes.add("comm", delete, calls.at[delete], np.full(len(delete), -1, np.int64))
    io = e.of_type("IO_CREATE_HANDLE", "IO_DESTROY_HANDLE", "IO_BEGIN", "IO_COMPLETE",
                   "IO_TEST", "IO_SEEK", "ATTRIBUTE")
    cand = np.nonzero(io & f.mapped)[0]
    cand = cand[calls.is_["io"][f.call_of[cand]]]        # (only the events of MPI-IO calls)
    attr = e.type[cand] == e.code["ATTRIBUTE"]
    role = np.zeros(len(cand), np.int64)
    role[attr] = d.attribute_role[rows["a"][cand[attr]].astype(np.int64)]   # (ours: assemble)
    on_handle = (~attr | (role == IO.ROLE["MPI_File"])) & _mpi_io_handles(f, cand)
    ev = cand[on_handle]
    other = np.unique(f.call_of[cand[~attr & ~on_handle]])    # (a POSIX handle's events only:
    other = other[~np.isin(other, f.call_of[ev])]             # no file, which is said)
    f.io_without_file.update(_N[k] for k in calls.kind0[other].tolist())
    handle = _handles(f, ev)
    created = ev[(e.type[ev] == e.code["IO_CREATE_HANDLE"]) &
                 (calls.kind0[f.call_of[ev]] == _C["file_open"])]
    crank = e.rank[created]
    fid = np.arange(len(created)) - np.searchsorted(crank, crank)  # (grouped by rank)
    k = _latest(crank, _handles(f, created), created, e.rank[ev], handle, ev)
    ev, handle, k = ev[k >= 0], handle[k >= 0], k[k >= 0]
    f.writes.add("tag", f.call_of[ev], ev, fid[k].astype(np.int64))
    _file_comm(f, d, ev, d.handle_comm[handle])
    begin = ev[e.type[ev] == e.code["IO_BEGIN"]]
    bc = f.call_of[begin]
    for mode, field in ((IO.READ, "bytes_recv"), (IO.WRITE, "bytes_sent")):
        m = rows["c"][begin] == mode
        f.writes.add(field, bc[m], begin[m], rows["d"][begin[m]])
    nb = calls.is_["nb_io"][bc]
    f.writes.add("request", bc[nb], begin[nb], rows["e"][begin[nb]])
    value = np.sort(np.r_[ev[e.type[ev] == e.code["IO_SEEK"]],
                          cand[role == IO.ROLE["MPI_Offset"]]])
    f.vector_entries.append((f.call_of[value], value, rows["d"][value].view(np.int64)))
    failed = cand[role == IO.ROLE["MPI_Comm"]]        # an open that failed: its comm
    _file_comm(f, d, failed, _reference(f, failed))


def _self_comm_ids(f: _Found, d: Defs) -> tuple[dict, dict]:
    """(the trace's communicators, id of each (provisional COMM_SELF-type id, rank)): such a
    comm gets an id per rank, in order of first use."""
    comms = dict(d.comms)
    events = np.concatenate([t[0] for t in f.translations])
    cid = np.concatenate([t[1] for t in f.translations])
    ids = _self_ids(cid, f.e.rank[events], f.e.pos[events], max(comms) + 1)
    for (c, r), i in ids.items():
        comms[i] = np.asarray([r], np.int32)
    return comms, ids


def _collective_sizes(f: _Found, coll: _CollectiveEvents, comms: dict) -> None:
    """Comm, root and the model's per-call bytes (from Score-P's totals; on an
    intercommunicator of ``convert --to otf2``, whose sizes follow other rules, as written) of
    the collectives."""
    row_rank = f.calls.rank[coll.call]
    size, me = _comm_pos(comms, coll.comm, row_rank)
    kind = f.calls.kind0[coll.call]
    rooted = _M["rooted"][kind]
    f.writes.add("comm", coll.call, coll.at, coll.comm)
    f.writes.add("peer", coll.call[rooted], coll.at[rooted], coll.root[rooted])
    sent, received = _to_model(kind, f.e.rows["d"][coll.at], f.e.rows["f"][coll.at], size, me,
                               rooted & (coll.root == row_rank))
    inter = np.isin(coll.comm, list(f.d.intercomms))     # (sizes as the model holds them)
    sent[inter], received[inter] = f.e.rows["d"][coll.at[inter]], f.e.rows["f"][coll.at[inter]]
    f.writes.add("bytes_sent", coll.call, coll.at, sent)
    f.writes.add("bytes_recv", coll.call, coll.at, received)


def _peerless_cancels(f: _Found, cols: dict) -> int:
    """The receives an MpiRequestCancelled ended that read back without a peer (they received
    no message): validate's allowance for peerless actions, with MPI_PROC_NULL's.  Not every
    MpiRequestCancelled: a cancelled send keeps its peer, and counted it would hide a real
    peerless action (the reviewer of session 33)."""
    c = np.unique(f.cancelled)
    return int((f.calls.kept[c] & K.mask(K.RECVS)[cols["kind"][c]] & (cols["peer"][c] < 0))
               .sum())


def _call_rows(f: _Found, p: _PointToPoint, self_ids: dict) -> tuple[dict, np.ndarray]:
    """(the calls' action columns, the vector entries in call order); a value beyond its
    column's range is an error."""
    e, calls = f.e, f.calls
    nc = len(calls.at)
    cols = {n: np.full(nc, v, ACTION_DTYPE[n]) for n, v in zip(ACTION_DTYPE.names, EMPTY_ROW)}
    cols["kind"][:] = calls.kind0
    cols["t_start"][:] = e.time[calls.at]
    cols["t_end"][:] = np.where(calls.close_at >= 0,
                                e.time[np.maximum(calls.close_at, 0)] if len(e.rank) else 0,
                                np.nan)
    cols["flags"][:] = f.flags
    over = []
    for field in ("peer", "comm", "tag", "bytes_sent", "bytes_recv", "request"):
        c, v = f.writes.final(field)
        if field == "tag":
            v = _tags(v)
        if field in _TOO_BIG:
            big = v.astype(np.uint64) >= np.uint64(_TOO_BIG[field]) if v.dtype.kind == "u" \
                else (v >= _TOO_BIG[field]) | (v < (-1 if field == "tag" else 0))
            over.append(c[big])
            v = np.where(big, 0, v).astype(np.int64)
        if field == "comm" and self_ids:
            own = v <= _SELF_BASE
            v = v.copy()
            v[own] = [self_ids[(int(x), int(r))] for x, r in zip(v[own].tolist(),
                                                                 calls.rank[c[own]].tolist())]
        cols[field][c] = v
    for dst, src in f.comm_from:
        cols["comm"][dst] = cols["comm"][src]
    if f.d.intercomms:
        cols["flags"][np.isin(cols["comm"], list(f.d.intercomms)) & calls.kept] |= \
            K.FLAG_INTERCOMM
    sr_ev = p.recvs[p.sendrecv]
    vec_call, vec_val, big = _vectors(f.vector_entries, sr_ev, f.call_of[sr_ev],
                                      p.recv_peer[p.sendrecv], e.rows["c"][sr_ev])
    over = np.concatenate(over + [big])
    if len(over):
        raise MinitraceError(f"rank {int(calls.rank[over].min())}: a value beyond its column's "
                             "range (a corrupt event?)")
    cols["vec_len"][:] = np.bincount(vec_call, minlength=nc)
    return cols, vec_val


def _marker_names(e: _Events, calls: _Calls, items: _Items, d: Defs):
    """(the string table: user region names in order of first appearance, each marker's
    index in it)."""
    markers = items.markers
    if not len(markers):
        return [], np.zeros(0, np.int64)
    names = [d.region_name[x] for x in calls.region[markers].tolist()]
    index: dict[str, int] = {}
    for i in np.argsort(e.pos[markers], kind="stable").tolist():
        index.setdefault(names[i], len(index))
    return list(index), np.array([index[x] for x in names], np.int64)


def _actions(e: _Events, calls: _Calls, items: _Items, call_rows: dict,
             marker_tag: np.ndarray, nranks: int) -> tuple[np.ndarray, np.ndarray]:
    """(actions, rank offsets): per flushing item, its compute gap (if any) then itself."""
    fl, has_gap = items.flushing, items.has_gap
    slots = 1 + has_gap
    body = np.cumsum(slots) - 1
    out = {f: np.full(int(slots.sum()), v, ACTION_DTYPE[f])
           for f, v in zip(ACTION_DTYPE.names, EMPTY_ROW)}
    is_call = items.is_call[fl]
    for f in ACTION_DTYPE.names:
        out[f][body[is_call]] = call_rows[f][items.call[fl[is_call]]]
    at_mark, mark = body[~is_call], fl[~is_call]
    out["kind"][at_mark] = np.where(calls.enter[items.at[mark]], _C["region_begin"],
                                    _C["region_end"])
    out["tag"][at_mark] = marker_tag[items.source[mark] - len(calls.at)]
    out["t_start"][at_mark] = out["t_end"][at_mark] = items.t_in[mark]
    at_gap = body[has_gap] - 1
    out["kind"][at_gap] = _C["compute"]
    out["volume"][at_gap] = items.gap_volume[has_gap]
    out["t_start"][at_gap] = items.prev_end[items.first_piece[has_gap]]
    out["t_end"][at_gap] = items.t_in[items.last_piece[has_gap]]
    actions = np.empty(len(out["kind"]), ACTION_DTYPE)
    for f in ACTION_DTYPE.names:
        actions[f] = out[f]
    assign_vec_offsets(actions)
    out_rank = np.repeat(items.rank[fl], slots)
    offsets = np.r_[0, np.cumsum(np.bincount(out_rank, minlength=nranks))].astype(np.int64)
    return actions, offsets


def _vectors(appends, sr_ev, sr_call, sr_peer, sr_tag):
    """(call, value) of every vector entry, in call order: the appended request ids in event
    order, and a sendrecv's [source, tag] from its last MpiRecv; and the calls with a request
    id beyond int64."""
    parts = [a for a in appends if len(a[0])]
    calls = [np.asarray(p[0], np.int64) for p in parts]
    at = [2 * np.asarray(p[1], np.int64) for p in parts]
    req = [np.asarray(p[2]).astype(np.uint64) for p in parts]
    big = [c[r >= np.uint64(1 << 63)] for c, r in zip(calls, req)]
    val = [r.astype(np.int64) for r in req]
    if len(sr_ev):
        k = _last_per(sr_call, sr_ev)
        calls += [sr_call[k]] * 2
        at += [2 * sr_ev[k], 2 * sr_ev[k] + 1]            # the source, then the tag
        val += [sr_peer[k].astype(np.int64), _tags(sr_tag[k])]
    if not calls:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    call, at_, v = np.concatenate(calls), np.concatenate(at), np.concatenate(val)
    s = np.lexsort((at_, call))
    return call[s], v[s], np.concatenate(big) if big else np.zeros(0, np.int64)
