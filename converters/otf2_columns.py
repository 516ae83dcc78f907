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
from dataclasses import dataclass

import numpy as np

from minitrace import kinds as K
from minitrace.errors import MinitraceError
from minitrace.model import ACTION_DTYPE, EMPTY_ROW, NONE, TraceColumns, assign_vec_offsets

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
    ("creates", {"irecv"} | K.NONBLOCKING_COLLECTIVES), ("single", K.SINGLE_COMPLETIONS),
    ("multi", K.MULTI_COMPLETIONS), ("tests", K.TESTS), ("colls", K.COLLECTIVES),
    ("rooted", K.ROOTED), ("inits", K.INITS), ("send_inits", K.SEND_INITS),
    ("recv_inits", K.RECV_INITS),
    ("waits", {"wait", "waitany", "waitsome", "waitall"}))}
_TOO_BIG = {"tag": 1 << 31, "bytes_sent": 1 << 63, "bytes_recv": 1 << 63, "request": 1 << 63}


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
def _world(ev, events, rank, d: Defs, unm: _Unmapped, pos) -> tuple[np.ndarray, np.ndarray]:
    """(comm id, world rank) of each event's communicator and comm rank (field ``a``: peer or
    root).  A COMM_SELF-type comm gets a provisional id (``_SELF_BASE - ref``), made final per
    rank by ``_self_ids``; an event on no MPI comm is counted and gets (0, NONE)."""
    ref = ev["b"][events].astype(np.int64)
    r = ev["a"][events].astype(np.int64)
    cid = np.full(len(events), NO_COMM, np.int64)
    ok = ref < len(d.comm_id)
    cid[ok] = d.comm_id[ref[ok]]
    peer = np.full(len(events), NONE, np.int64)
    none = cid == NO_COMM
    unm.add(pos[events[none]], "event on a communicator without an MPI group")
    cid[none] = 0
    own = cid == SELF
    cid[own] = _SELF_BASE - ref[own]
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
    oldest pending send without an id, a waitall all of them.
    """

    def __init__(self, c_kind, c_rank, W, appends, flags, unm):
        self.c_kind, self.c_rank = c_kind, c_rank
        self.W, self.appends, self.flags, self.unm = W, appends, flags, unm
        self.sets: list[tuple[int, int, int, int]] = []    # (rank, request, at, call)

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
        pending: dict[int, list[int]] = {}        # rank -> id-less sends not completed
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
            elif what == "isend":                # an isend's plain MpiSend: no id
                req = nxt[rank]
                nxt[rank] += 1
                write("request", call, at, req)
                pending.setdefault(rank, []).append(req)
            elif what == "wait":                 # completes id-less sends (below)
                queue = pending.get(rank)
                name = _N[int(c_kind[call])]
                if not queue or not (item[3] or name == "waitall"):
                    continue
                done = list(queue) if name == "waitall" else [queue[0]]
                del queue[:len(done)]
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


# == assembly ===================================================================================
def assemble(rows: np.ndarray, d: Defs, keep_regions: bool) -> tuple[TraceColumns, dict]:
    """The trace of the events ``rows`` (of the ranks' locations, in the global reader's
    order) and what the reader reports: ``{"messages": {"sent", "received"}, "unmapped":
    Counter, "user_regions": n}`` (enters and leaves of non-MPI regions)."""
    T = {name: code(name) for name in TYPES}
    nr = d.nranks
    key = rows["rank"].astype(np.uint16) if nr <= 1 << 16 else rows["rank"]
    order = np.argsort(key, kind="stable")           # (a radix sort for 16-bit keys)
    ev = rows[order]
    pos = order.astype(np.int64)                   # the global reader's order
    n = len(ev)
    rank = ev["rank"].astype(np.int64)
    typ = ev["type"].astype(np.int64)
    t = _times(ev["time"], d)
    bounds = np.searchsorted(rank, np.arange(nr + 1))
    first_of_rank = np.repeat(bounds[:-1], np.diff(bounds))
    unm = _Unmapped()

    # -- regions, nesting, calls ------------------------------------------------------------
    enter, leave = typ == T["ENTER"], typ == T["LEAVE"]
    el = enter | leave
    reg = ev["a"].astype(np.int64)
    if (el & (reg >= len(d.region_kind))).any():
        raise MinitraceError("an event names a region the definitions do not define (a "
                             "corrupt archive?)")
    rk = np.full(n, USER, np.int64)
    rk[el] = d.region_kind[reg[el]]
    mpi = el & (rk != USER)
    user = el & (rk == USER)
    delta = (mpi & enter).astype(np.int64) - (mpi & leave)
    s = np.cumsum(delta)
    s -= (np.r_[0, s][first_of_rank]) if n else 0
    depth = s - np.minimum(_segmented_min(s, rank), 0)    # a leave at depth 0 is ignored
    before = np.where(np.arange(n) == first_of_rank, 0, np.r_[0, depth[:-1]]) if n else depth
    outer_in = mpi & enter & (before == 0)
    closing = mpi & leave & (before == 1)
    call_of = np.cumsum(outer_in) - 1
    ci = np.nonzero(outer_in)[0]
    nc = len(ci)
    c_kind, c_rank = rk[ci], rank[ci]
    close_at = np.full(nc, -1, np.int64)
    close_at[call_of[closing]] = np.nonzero(closing)[0]
    kept = c_kind >= 0
    kind0 = np.where(kept, c_kind, 0)
    km = {name: m[kind0] & kept for name, m in _M.items()}

    # -- the volume counter's value at each event ------------------------------------------
    ctr = np.full(n, np.nan)
    if d.counted and n:
        met = typ == T["METRIC"]
        mi = np.nonzero(met)[0]
        mref = ev["a"][mi].astype(np.int64)
        v = _metric_values(ev["d"][mi], d.metric_kind[mref])
        rel = d.metric_relative[mref]
        inc = np.where(rel, v, 0.0)
        S = np.cumsum(inc)
        first = np.r_[True, rank[mi][1:] != rank[mi][:-1]] if len(mi) else np.zeros(0, bool)
        # counter = last absolute value (0 at the start of a rank) + increments since
        base = np.where(~rel, v - S, np.where(first, inc - S, np.nan))
        known = np.maximum.accumulate(np.where(~np.isnan(base), np.arange(len(mi)), 0))
        value = S + base[known] if len(mi) else S
        last = np.maximum.accumulate(np.where(met, np.arange(n), -1))
        ok = last >= first_of_rank
        ctr[ok] = value[np.searchsorted(mi, last[ok])]

    # -- items (calls, user region markers) and the compute gaps between them -----------------
    marks = np.nonzero(user & (before == 0))[0] if keep_regions else np.zeros(0, np.int64)
    it_at = np.r_[ci, marks]
    o = np.argsort(it_at, kind="stable")
    it_at = it_at[o]
    is_call = o < nc
    cix = np.where(is_call, o, 0)
    it_rank, it_in = rank[it_at], t[it_at]
    it_end = np.where(is_call, close_at[cix] if nc else -1, it_at)
    it_out = np.where(it_end >= 0, t[np.maximum(it_end, 0)] if n else 0.0, np.nan)
    it_kind = np.where(is_call, c_kind[cix] if nc else DROPPED, -3)
    flush = (it_kind >= 0) | (it_kind == -3)              # a kept call or a marker
    nit = len(it_at)
    prev_same = np.r_[False, it_rank[1:] == it_rank[:-1]] if nit else np.zeros(0, bool)
    it_first = np.searchsorted(it_rank, it_rank)

    def seen_before(flag):
        c = np.cumsum(flag) - flag
        return c - c[it_first] > 0

    tracking = seen_before((it_kind == _C["init"]) & (it_end >= 0)) \
        & ~seen_before(it_kind == _C["finalize"])
    prev_end = np.r_[np.nan, it_out[:-1]] if nit else it_out
    piece = prev_same & tracking & (it_in > prev_end)
    if d.counted:
        prev_c = np.r_[np.nan, ctr[np.maximum(it_end, 0)][:-1]] if nit else it_in
        grown = ctr[it_at] - prev_c
        piece_vol = np.where(np.isnan(grown), 0.0, grown)
    else:
        piece_vol = it_in - prev_end
    cf = np.cumsum(flush)
    grp = cf - flush                                       # the flushing item a piece joins
    nfl = int(cf[-1]) if nit else 0
    fl = np.nonzero(flush)[0]
    valid = piece & (grp < nfl)
    valid[valid] = it_rank[fl[grp[valid]]] == it_rank[valid]
    vi = np.nonzero(valid)[0]
    vol = np.bincount(grp[vi], piece_vol[vi], minlength=nfl)
    has_gap = np.bincount(grp[vi], minlength=nfl) > 0
    first_p = np.full(nfl, -1, np.int64)
    last_p = np.full(nfl, -1, np.int64)
    if len(vi):
        g, i0 = np.unique(grp[vi], return_index=True)       # grp is sorted along items
        first_p[g] = vi[i0]
        last_p[g] = vi[np.r_[i0[1:], len(vi)] - 1]

    # -- message events ---------------------------------------------------------------------
    name_of = {T[k]: OTF2_NAME[k] for k in TYPES}
    msg = ~el & (typ != T["METRIC"])
    inside = msg & (depth > 0)
    mcall = np.where(inside, call_of, 0)
    mapped = inside & (kept[mcall] if nc else False)
    um = np.nonzero(msg & ~mapped)[0]
    unm.add(pos[um], [name_of[x] for x in typ[um].tolist()])

    W = _Writes()
    flags = np.zeros(nc, np.uint8)
    appends: list[tuple] = []            # (calls, event indices, values): vector entries
    worlds: list[tuple] = []             # (events, comm ids): every translation made

    def of_type(*types):
        table = np.zeros(max(T.values()) + 1, bool)
        table[[T[x] for x in types]] = True
        return table[typ]

    def sel(*types):
        return np.nonzero(mapped & of_type(*types))[0]

    messages = {"sent": int(of_type("SEND", "ISEND").sum()),
                "received": int(of_type("RECV", "IRECV").sum())}

    def unmapped_in(events):
        """Counted as '<OTF2 event> in <kind>'."""
        unm.add(pos[events], [f"{name_of[a]} in {_N[b]}" for a, b in
                              zip(typ[events].tolist(), kind0[mcall[events]].tolist())])

    def world(events):
        cid, peer = _world(ev, events, rank, d, unm, pos)
        worlds.append((events, cid))
        return cid, peer

    def message(events, calls, cid, peer, side):
        W.add("peer", calls, events, peer)
        W.add("tag", calls, events, ev["c"][events].astype(np.uint64))
        W.add("comm", calls, events, cid)
        W.add(side, calls, events, ev["d"][events])

    sends, recvs = sel("SEND", "ISEND"), sel("RECV")
    cid_s, peer_s = world(sends)
    cid_r, peer_r = world(recvs)
    sc, rc = mcall[sends], mcall[recvs]
    in_start = km["starts"][sc]
    p2p = ~in_start & km["sends"][sc]
    unmapped_in(sends[~in_start & ~p2p])
    message(sends[p2p], sc[p2p], cid_s[p2p], peer_s[p2p], "bytes_sent")
    nb = p2p & km["nb_sends"][sc]
    with_id = nb & (typ[sends] == T["ISEND"])
    set_ev, set_call = [sends[with_id]], [sc[with_id]]
    W.add("request", sc[with_id], sends[with_id], ev["e"][sends[with_id]])
    is_recv, is_sr = km["recv"][rc], km["sendrecvs"][rc]
    in_comp = km["single"][rc] | km["multi"][rc]       # an id-less receive's completion
    unmapped_in(recvs[~is_recv & ~is_sr & ~in_comp])
    message(recvs[is_recv], rc[is_recv], cid_r[is_recv], peer_r[is_recv], "bytes_recv")
    sr_ev, sr_call = recvs[is_sr], rc[is_sr]
    W.add("bytes_recv", sr_call, sr_ev, ev["d"][sr_ev])
    made = sel("IRECV_REQUEST", "NBC_REQUEST")
    mc = mcall[made]
    recv_start = km["starts"][mc] & (typ[made] == T["IRECV_REQUEST"])
    creates = ~recv_start & km["creates"][mc]
    unmapped_in(made[~recv_start & ~creates])
    W.add("request", mc[creates], made[creates], ev["e"][made[creates]])
    set_ev.append(made[creates])
    set_call.append(mc[creates])
    set_ev, set_call = np.concatenate(set_ev), np.concatenate(set_call)

    # -- the sequential part -----------------------------------------------------------------
    seq = _Sequential(c_kind, c_rank, W, appends, flags, unm)
    p_send = in_start & (typ[sends] == T["ISEND"])
    bare_start = in_start & (typ[sends] == T["SEND"])
    bare_isend = nb & (typ[sends] == T["SEND"])
    bare_recv = recvs[in_comp]
    p_ev = np.r_[sends[p_send], made[recv_start]]
    if len(p_ev) or bare_start.any() or bare_isend.any() or len(bare_recv):
        prior = _latest(rank[set_ev], ev["e"][set_ev], set_ev,
                        rank[p_ev], ev["e"][p_ev], p_ev)
        items = []
        msg_of = {e: i for i, e in enumerate(sends.tolist())}
        for e, pr in zip(p_ev.tolist(), prior.tolist()):
            i = msg_of.get(e)        # an MpiIsend, whose message describes the send_init
            m = None if i is None else (int(peer_s[i]), int(ev["c"][e]), int(cid_s[i]),
                                        int(ev["d"][e]))
            items.append((e, "persistent", int(mcall[e]), int(ev["e"][e]),
                          int(set_ev[pr]) if pr >= 0 else -1,
                          int(set_call[pr]) if pr >= 0 else -1,
                          "recv_inits" if i is None else "send_inits", m, int(pos[e])))
        for i in np.nonzero(bare_start)[0].tolist():
            e = int(sends[i])
            items.append((e, "start_send", int(mcall[e]), (int(peer_s[i]), int(ev["c"][e]),
                                                           int(cid_s[i]), int(ev["d"][e])),
                          int(pos[e])))
        for e in sends[bare_isend].tolist():
            items.append((e, "isend", int(mcall[e])))
        for i in np.nonzero(in_comp)[0].tolist():
            e = int(recvs[i])
            items.append((e, "recv", int(mcall[e]), (int(peer_r[i]), int(ev["c"][e]),
                                                     int(cid_r[i]), int(ev["d"][e])),
                          int(pos[e])))
        # calls without events, of the ranks whose sends or receives have no request ids
        events_in = np.bincount(mcall[mapped], minlength=nc)
        sending = np.zeros(nr, bool)
        sending[rank[sends[bare_start | bare_isend]]] = True
        receiving = np.zeros(nr, bool)
        receiving[rank[bare_recv]] = True
        for c in np.nonzero(km["waits"] & sending[c_rank])[0].tolist():
            items.append((int(ci[c]), "wait", c, bool(events_in[c] == 0)))
        quiet = events_in == 0
        for c in np.nonzero(receiving[c_rank] & kept & quiet & (kind0 == _C["irecv"]))[0]:
            items.append((int(ci[c]), "irecv", int(c)))
        for c in np.nonzero(receiving[c_rank] & kept & quiet & (kind0 == _C["start"]))[0]:
            items.append((int(ci[c]), "start_recv", int(c), int(pos[ci[c]])))
        for c in np.nonzero(receiving[c_rank] & kept & (kind0 == _C["startall"]))[0]:
            at = int(close_at[c] if close_at[c] >= 0 else ci[c])     # after its sends
            items.append((at, "start_recv", int(c), int(pos[ci[c]])))
        items.sort(key=lambda x: x[0])
        base = [1] * nr
        has_id = of_type("ISEND", "ISEND_COMPLETE", "IRECV_REQUEST", "IRECV", "REQUEST_TEST",
                         "REQUEST_CANCELLED", "NBC_REQUEST", "NBC_COMPLETE")
        for r, top in zip(rank[has_id].tolist(), ev["e"][has_id].tolist()):
            base[r] = min(max(base[r], top + 1), 1 << 63)      # beyond: reported below
        seq.run(items, np.nonzero(km["inits"])[0], base)
    if seq.sets:
        pr_, pq_, pa_, pc_ = zip(*seq.sets)
        set_rank = np.r_[rank[set_ev], np.array(pr_, np.int64)]
        set_req = np.r_[ev["e"][set_ev], np.array(pq_, np.uint64)]
        set_at = np.r_[set_ev, np.array(pa_, np.int64)]
        set_call = np.r_[set_call, np.array(pc_, np.int64)]
    else:
        set_rank, set_req, set_at = rank[set_ev], ev["e"][set_ev], set_ev

    # -- completions ---------------------------------------------------------------------------
    comp = sel("ISEND_COMPLETE", "IRECV", "REQUEST_TEST", "REQUEST_CANCELLED", "NBC_COMPLETE")
    cc = mcall[comp]
    single, multi = km["single"][cc], km["multi"][cc]
    unm.add(pos[comp[~single & ~multi]],
            [f"completion in {_N[k]}" for k in kind0[cc[~single & ~multi]].tolist()])
    W.add("request", cc[single], comp[single], ev["e"][comp[single]])
    appends.append((cc[multi], comp[multi], ev["e"][comp[multi]]))
    done = (single | multi) & km["tests"][cc] & (typ[comp] != T["REQUEST_TEST"])
    flags[cc[done]] |= K.FLAG_COMPLETED
    # what a completion tells about the call that made the request
    resolving = comp[np.isin(typ[comp], [T["IRECV"], T["NBC_COMPLETE"]])]
    k = _latest(set_rank, set_req, set_at, rank[resolving], ev["e"][resolving], resolving)
    resolving, made_by = resolving[k >= 0], set_call[k[k >= 0]]
    irecv = typ[resolving] == T["IRECV"]
    cid_i, peer_i = world(resolving[irecv])
    message(resolving[irecv], made_by[irecv], cid_i, peer_i, "bytes_recv")
    cend = sel("COLLECTIVE_END")
    in_coll = km["colls"][mcall[cend]]
    unmapped_in(cend[~in_coll])
    coll_ev = np.r_[cend[in_coll], resolving[~irecv]]
    coll_call = np.r_[mcall[cend[in_coll]], made_by[~irecv]]
    cid_c, root = world(coll_ev)

    # -- COMM_SELF-type comms: an id per rank, in order of first use -------------------------
    comms = dict(d.comms)
    w_ev = np.concatenate([w[0] for w in worlds])
    w_cid = np.concatenate([w[1] for w in worlds])
    ids = _self_ids(w_cid, rank[w_ev], pos[w_ev], max(comms) + 1)
    for (c, r), i in ids.items():
        comms[i] = np.asarray([r], np.int32)

    # -- collective sizes: Score-P's totals to the model's per-call bytes --------------------
    row_rank = c_rank[coll_call]
    size, me = _comm_pos(comms, cid_c, row_rank)
    ck = kind0[coll_call]
    rooted = _M["rooted"][ck]
    W.add("comm", coll_call, coll_ev, cid_c)
    W.add("peer", coll_call[rooted], coll_ev[rooted], root[rooted])
    bs, br = _to_model(ck, ev["d"][coll_ev], ev["f"][coll_ev], size, me,
                       rooted & (root == row_rank))
    W.add("bytes_sent", coll_call, coll_ev, bs)
    W.add("bytes_recv", coll_call, coll_ev, br)

    # -- the calls' rows --------------------------------------------------------------------
    cols = {f: np.full(nc, v, ACTION_DTYPE[f]) for f, v in zip(ACTION_DTYPE.names, EMPTY_ROW)}
    cols["kind"][:] = kind0
    cols["t_start"][:] = t[ci]
    cols["t_end"][:] = np.where(close_at >= 0, t[np.maximum(close_at, 0)] if n else 0, np.nan)
    cols["flags"][:] = flags
    over = []
    for f in ("peer", "comm", "tag", "bytes_sent", "bytes_recv", "request"):
        c, v = W.final(f)
        if f in _TOO_BIG:
            big = v.astype(np.uint64) >= np.uint64(_TOO_BIG[f]) if v.dtype.kind == "u" \
                else (v >= _TOO_BIG[f]) | (v < 0)
            over.append(c[big])
            v = np.where(big, 0, v).astype(np.int64)
        if f == "comm" and ids:
            own = v <= _SELF_BASE
            v = v.copy()
            v[own] = [ids[(int(x), int(r))] for x, r in zip(v[own].tolist(),
                                                            c_rank[c[own]].tolist())]
        cols[f][c] = v
    vec_call, vec_val, big = _vectors(appends, sr_ev, sr_call, peer_r[is_sr], ev["c"][sr_ev])
    over = np.concatenate(over + [big])
    if len(over):
        raise MinitraceError(f"rank {int(c_rank[over].min())}: a value beyond its column's "
                             "range (a corrupt event?)")
    cols["vec_len"][:] = np.bincount(vec_call, minlength=nc)

    # -- user region markers' names, in order of first appearance --------------------------
    strings: list[str] = []
    m_tag = np.zeros(len(marks), np.int64)
    if len(marks):
        names = [d.region_name[x] for x in reg[marks].tolist()]
        index: dict[str, int] = {}
        for i in np.argsort(pos[marks], kind="stable").tolist():
            index.setdefault(names[i], len(index))
        strings = list(index)
        m_tag = np.array([index[x] for x in names], np.int64)

    # -- assembly: per flushing item, its compute gap (if any) then itself -------------------
    slots = 1 + has_gap
    body = np.cumsum(slots) - 1
    out = {f: np.full(int(slots.sum()), v, ACTION_DTYPE[f])
           for f, v in zip(ACTION_DTYPE.names, EMPTY_ROW)}
    fc = is_call[fl]
    for f in ACTION_DTYPE.names:
        out[f][body[fc]] = cols[f][cix[fl[fc]]]
    at_mark, mk = body[~fc], fl[~fc]
    out["kind"][at_mark] = np.where(enter[it_at[mk]], _C["region_begin"], _C["region_end"])
    out["tag"][at_mark] = m_tag[o[mk] - nc]
    out["t_start"][at_mark] = out["t_end"][at_mark] = it_in[mk]
    at_gap = body[has_gap] - 1
    out["kind"][at_gap] = _C["compute"]
    out["volume"][at_gap] = vol[has_gap]
    out["t_start"][at_gap] = prev_end[first_p[has_gap]]
    out["t_end"][at_gap] = it_in[last_p[has_gap]]
    actions = np.empty(len(out["kind"]), ACTION_DTYPE)
    for f in ACTION_DTYPE.names:
        actions[f] = out[f]
    assign_vec_offsets(actions)
    out_rank = np.repeat(it_rank[fl], slots)
    offsets = np.r_[0, np.cumsum(np.bincount(out_rank, minlength=nr))].astype(np.int64)
    vectors = vec_val                         # calls keep their order in the output
    meta = {}
    dropped = Counter(d.region_name[x].strip().removesuffix("()").strip()
                      for x in reg[ci[~kept]].tolist())
    if dropped:
        meta["dropped_mpi_calls"] = dict(sorted(dropped.items()))
    data = TraceColumns(actions, offsets, vectors, {0: np.arange(nr, dtype=np.int32), **comms},
                     strings, meta)
    return data, {"messages": messages, "unmapped": unm.counter(),
                  "user_regions": int(user.sum())}


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
        val += [sr_peer[k].astype(np.int64), sr_tag[k].astype(np.int64)]
    if not calls:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    call, at_, v = np.concatenate(calls), np.concatenate(at), np.concatenate(val)
    s = np.lexsort((at_, call))
    return call[s], v[s], np.concatenate(big) if big else np.zeros(0, np.int64)
