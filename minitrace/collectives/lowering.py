"""Lowering: rewrite what SimGrid's TI replay cannot express into what it can, before the export.

SimGrid 4.1's TI vocabulary has world collectives, blocking and non-blocking point-to-point,
waits and tests, and nothing else (docs/SIMGRID_TI.md).  ``lower`` turns a trace into one that
says the same in that vocabulary, with world ranks:

* a collective on a sub-communicator (and, when asked, one on MPI_COMM_WORLD) becomes the
  point-to-point messages of the algorithm the MPI library runs (``selection``: one table with
  the SMPI options of world collectives), written as SimGrid 4.1 implements it under the same
  name, message for message (``algorithms``); a reduction's work (its volume) is computed after
  its messages, as SimGrid's replay does;
* a non-blocking collective becomes the same messages as isend/irecv started at the call and
  waited for where the trace completes its request; a persistent collective likewise at each
  start;
* a persistent point-to-point request becomes an isend/irecv at each start (a fresh request
  each time), its init nothing; a partitioned send one message of the whole buffer once every
  partition is ready (what MPICH sends), its receive one irecv at the start;
* ``waitany``/``waitsome`` become a ``wait`` of each request they completed, ``testany``/
  ``testsome``/``testall`` a ``test`` of each (the trace knows which);
* a synchronous send (``ssend``, ``issend``) becomes a send plus a 0-byte acknowledgement its
  receive sends back once it is posted (a blocking receive: once it completes), so that it
  does not complete before its receive is posted; ``ssend_init`` stays an isend per start
  (approximated);
* a buffered send (``bsend``) becomes an isend waited for at the rank's finalize: it completes
  at once whatever its size (the attached buffer holds it), where a ``send`` of a large
  message waits for its receive; a sendrecv on a pending bsend's destination, tag and
  communicator that the export would write with a wait (tags, a communicator, a source of
  MPI_PROC_NULL) becomes irecv + send + wait (no wait found by the bsend's key);
* ``comm_free``, ``request_free``, ``cancel``, probes and ``parrived`` become nothing.

Lowered messages use tags below ``TAG_BASE`` (negative, away from SimGrid's own collective tags
and MPI_ANY_TAG = -444, one per communicator and collective kind), so they never match the
application's.  Everything lowered is counted, ``"kind (how)" -> actions``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np

from .. import kinds as K
from ..model import ACTION_DTYPE, NONE, TraceColumns, assign_vec_offsets
from .algorithms import ALGORITHMS
from .selection import lowered_as

#: Lowered messages of collective kind code k on communicator c use tag TAG_BASE - 256*c - k;
#: acknowledgements of synchronous sends on c ACK_TAG_BASE - 256*c.
TAG_BASE = -100000
ACK_TAG_BASE = TAG_BASE - 255


def lowered_collective(tag: np.ndarray) -> np.ndarray:
    """Which of these tags are a lowered collective's (not a synchronous send's
    acknowledgement)."""
    return (tag <= TAG_BASE) & ((TAG_BASE - tag) % 256 != 255)
#: Kinds that become nothing (defined here: kinds.py has no such set).  Communicator creations
#: stay: SimGrid ignores split/dup and the export reports the others.
NOTHING = frozenset({"comm_free", "request_free", "cancel", "probe", "iprobe", "parrived"})
_ANY = {"waitany": "wait", "waitsome": "wait", "testany": "test", "testsome": "test",
        "testall": "test"}
_PREADY = frozenset({"pready", "pready_range", "pready_list"})
#: The kinds the lowering always rewrites (or counts as dropped), wherever they stand.
ALWAYS_LOWERED = (K.NONBLOCKING_COLLECTIVES | K.INITS | K.STARTS | NOTHING | set(_ANY) | _PREADY
                  | (K.PERSISTENT_COLLECTIVES - K.ALL_NEIGHBOR_COLLECTIVES) | {"bsend"})
_COMPLETIONS = K.mask(K.COMPLETIONS)
#: Kinds whose rows may lower into several rows or requests (:meth:`_Rank._relabelled`).
_EXPANDING = K.mask(K.NONBLOCKING_COLLECTIVES | K.STARTS | _PREADY | {"bsend"})
_RELABEL = K.mask({"waitany", "testany"})
_AS_SINGLE = np.arange(256, dtype=np.uint8)
_AS_SINGLE[[K.CODE["waitany"], K.CODE["testany"]]] = [K.CODE["wait"], K.CODE["test"]]
_CODE = K.CODE


def as_sendrecv_primitive(tag: int, recv_tag: int, comm: int, dest: int, source: int) -> bool:
    """Whether the TI export writes a sendrecv as SimGrid's ``sendRecv``, which takes no tags
    nor communicator and waits for its own requests; any other it writes with a wait found by
    (source, destination, tag), which :meth:`_Rank.sendrecv_after_bsends` keeps off a pending
    bsend's request."""
    return tag == 0 and recv_tag == 0 and comm == 0 and dest >= 0 and source >= 0


def rows_to_lower(a: np.ndarray, world: bool | frozenset = False) -> np.ndarray:
    """Which of the actions ``a`` (fields kind, flags, comm) the lowering rewrites; ``world``:
    blocking world collectives too (True), or those of these kinds."""
    kind = a["kind"]
    coll = K.mask(K.COLLECTIVES)[kind] & ((a["flags"] & K.FLAG_INTERCOMM) == 0)
    if world is not True:
        coll &= (a["comm"] != 0) | K.mask(world or set())[kind]
    return K.mask(ALWAYS_LOWERED)[kind] | coll


def _synchronous_pairs(data: TraceColumns) -> dict[int, int]:
    """Rows of synchronous sends (ssend, issend) and of the receives they match -> the peer the
    acknowledgement goes to or comes from.  Sends and receives pair in order per (source,
    destination, tag, communicator); a key that other traffic may also match (sendrecv,
    persistent, matched or unresolved receives of that key) is left alone (its ssends stay
    approximated)."""
    a = data.actions
    kind = a["kind"]
    sync = np.nonzero(K.mask({"ssend", "issend"})[kind] & (a["peer"] >= 0))[0]
    if not len(sync):
        return {}
    rank = data.rank_of()
    keys = {(int(rank[i]), int(a["peer"][i]), int(a["tag"][i]), int(a["comm"][i])) for i in sync}
    sends, recvs = K.mask(K.SENDS), K.mask({"recv", "irecv"})
    other_sends = K.mask(K.SEND_INITS | {"psend_init"} | K.SENDRECVS)
    other_recvs = K.mask(K.RECV_INITS | K.MATCHED_RECVS)
    sendrecvs = K.mask(K.SENDRECVS)
    out: dict[int, int] = {}
    for src, dst, tag, comm in keys:
        s_sl, r_sl = data.rank_slice(src), data.rank_slice(dst)
        sa, ra = a[s_sl], a[r_sl]
        same_s = (sa["peer"] == dst) & (sa["tag"] == tag) & (sa["comm"] == comm)
        same_r = (ra["tag"] == tag) & (ra["comm"] == comm)
        sr = np.nonzero(sendrecvs[ra["kind"]])[0] + r_sl.start
        if (other_sends[sa["kind"]] & same_s).any() \
                or (other_recvs[ra["kind"]] & same_r & (ra["peer"] == src)).any() \
                or (recvs[ra["kind"]] & ((ra["flags"] & K.FLAG_UNRESOLVED) != 0)
                    & ((ra["peer"] == src) | (ra["peer"] < 0))).any() \
                or ((data.vector_item(sr, 0) == src) & (data.vector_item(sr, 1) == tag)
                    & (a["comm"][sr] == comm)).any():
            continue
        s_rows = np.nonzero(sends[sa["kind"]] & (sa["peer"] == dst) & (sa["tag"] == tag)
                            & (sa["comm"] == comm))[0] + s_sl.start
        r_rows = np.nonzero(recvs[ra["kind"]] & (ra["peer"] == src) & (ra["tag"] == tag)
                            & (ra["comm"] == comm))[0] + r_sl.start
        for si, ri in zip(s_rows.tolist(), r_rows.tolist()):
            if K.NAME[int(kind[si])] in ("ssend", "issend"):
                out[si] = dst
                out[ri] = src
    return out


def lower(data: TraceColumns, library: str = "simgrid", world: bool | frozenset = False
          ) -> tuple[TraceColumns, Counter, Counter]:
    """``data`` with everything SimGrid's TI replay cannot express rewritten into what it can;
    what was lowered, ``"kind (how)" -> actions``; and what could not be (``kind -> actions``,
    left out: the starts of requests whose init is not lowerable).  ``library``: whose
    algorithms (``selection.LIBRARIES``); ``world``: lower blocking collectives on
    MPI_COMM_WORLD too (True), or those of these kinds."""
    todo = rows_to_lower(data.actions, world)
    sync = _synchronous_pairs(data)
    todo[list(sync)] = True
    counts: Counter = Counter()
    dropped: Counter = Counter()
    if not todo.any():
        return data, counts, dropped
    blocks, vblocks, offsets = [], [], [0]
    first_req = 1 + max(int(data.actions["request"].max(initial=0)),
                        int(data.vectors.max(initial=0)) if len(data.vectors) else 0)
    for r in range(data.nranks):
        sl = data.rank_slice(r)
        if todo[sl].any():
            rows, vecs = _Rank(data, r, (library, world), counts, dropped, sync, first_req).run()
        else:
            rows = data.actions[sl]
            vecs = data.vector_entries(np.arange(sl.start, sl.stop))[1]
        blocks.append(rows)
        vblocks.append(vecs)
        offsets.append(offsets[-1] + len(rows))
    actions = np.concatenate(blocks) if blocks else np.zeros(0, ACTION_DTYPE)
    assign_vec_offsets(actions)
    vectors = np.concatenate(vblocks).astype(np.int64) if vblocks else np.zeros(0, np.int64)
    return replace(data, actions=actions, rank_offsets=np.asarray(offsets, np.int64),
                   vectors=vectors), counts, dropped


_FIELDS = ("kind", "flags", "peer", "tag", "comm", "bytes_sent", "bytes_recv", "volume",
           "request", "vec_len")


class _Rank:
    """Lowers one rank's actions, keeping the rows that need nothing as they are.  The output is
    a plan (a trace row, or a new row) assembled with numpy at the end."""

    def __init__(self, data: TraceColumns, r: int, how: tuple, counts: Counter,
                 dropped: Counter, sync: dict[int, int], first_req: int):
        self.d, self.r, self.counts, self.dropped = data, r, counts, dropped
        self.library, self.world = how
        self.sync = sync                           # synchronous send/its receive -> ack peer
        self.buffered: dict[tuple, list[int]] = {}  # the isends of bsends, by their key
        self.sl = data.rank_slice(r)
        rows = data.actions[self.sl]
        self.cols = {f: rows[f].tolist() for f in _FIELDS}
        self._send_rows: dict[int, int] | None = None     # request -> its isend, once needed
        self.next_req = first_req
        self.plan: list[int] = []                  # trace row i >= 0, or new row k as -(k+1)
        self.new: list[tuple] = []
        self.newvec: list[int] = []
        self.expand: dict[int, list[int]] = {}     # a trace request -> the requests it became
        self.inits: dict[int, tuple] = {}          # persistent/partitioned request -> its init
        self.ready: dict[int, set] = {}            # partitioned send -> partitions ready
        self.members: dict[int, tuple] = {}        # comm -> (world ranks, my index or None)
        self.steps: dict[tuple, list] = {}         # collective -> its steps (cache)

    def at(self, i: int) -> dict:
        """The fields of trace row ``i`` (of this rank)."""
        j = i - self.sl.start
        return {f: c[j] for f, c in self.cols.items()}

    # -- output --------------------------------------------------------------------------
    def keep(self, i0: int, i1: int) -> None:
        self.plan.extend(range(i0, i1))

    def emit(self, kind: str, peer: int = NONE, tag: int = NONE, bs: int = 0, br: int = 0,
             vol: float = 0.0, req: int = NONE, flags: int = 0, comm: int = 0,
             vector: list[int] | None = None) -> None:
        vec = vector or []
        self.new.append((_CODE[kind], flags, peer, tag, comm, bs, br, vol, req, NONE, len(vec),
                         np.nan, np.nan))
        self.newvec += vec
        self.plan.append(-len(self.new))

    def fresh(self) -> int:
        self.next_req += 1
        return self.next_req - 1

    # -- the rank ------------------------------------------------------------------------
    def run(self) -> tuple[np.ndarray, np.ndarray]:
        a = self.d.actions
        todo = rows_to_lower(a[self.sl], self.world) | _COMPLETIONS[a["kind"][self.sl]]
        todo[[i - self.sl.start for i in self.sync if self.sl.start <= i < self.sl.stop]] = True
        if (a["kind"][self.sl] == _CODE["bsend"]).any():      # (a sendrecv on a bsend's key)
            todo |= K.mask(K.SENDRECVS)[a["kind"][self.sl]]
        self.relabelled = self._relabelled(todo)
        todo &= ~self.relabelled
        start = self.sl.start
        for i in (np.nonzero(todo)[0] + self.sl.start).tolist():
            self.keep(start, i)
            start = i + 1
            if not self.row(i):
                self.keep(i, i + 1)
        self.keep(start, self.sl.stop)
        if self.buffered:       # (before the rank's finalize, if it has one)
            last = self.plan.pop() if self.plan and self.plan[-1] >= 0 and \
                self.cols["kind"][self.plan[-1] - self.sl.start] == _CODE["finalize"] else None
            self.emit("waitall", vector=[f for fs in self.buffered.values() for f in fs])
            if last is not None:
                self.plan.append(last)
        return self.assemble()

    def _relabelled(self, todo: np.ndarray) -> np.ndarray:
        """The rank's rows (a mask) that lower to one row of their own request, a waitany or a
        testany that completed one (as :meth:`completion` writes it: a wait or a test), where
        no request of the rank is lowered into others and no bsend waits: rewritten in place
        by :meth:`assemble`, not a call each (public miniGhost SVAF 4r: 64,000 waitanys)."""
        kind = self.d.actions["kind"][self.sl]
        out = np.zeros(len(kind), bool)
        if _EXPANDING[kind].any() or any(self.sl.start <= i < self.sl.stop for i in self.sync):
            return out
        out = todo & _RELABEL[kind] & (self.d.actions["request"][self.sl] >= 0)
        for code, n in zip(*np.unique(kind[out], return_counts=True)):
            name = K.NAME[int(code)]
            self.counts[f"{name} ({_ANY[name]} of each request it completed)"] += int(n)
        return out

    def assemble(self) -> tuple[np.ndarray, np.ndarray]:
        """The planned rows and their vectors, in order."""
        plan = np.array(self.plan, dtype=np.int64)
        orig = plan >= 0
        out = np.empty(len(plan), ACTION_DTYPE)
        out[orig] = self.d.actions[plan[orig]]
        at = np.flatnonzero(orig)
        at = at[self.relabelled[plan[at] - self.sl.start]]
        if len(at):          # (the row :meth:`emit` makes of each)
            x = out[at]
            x["kind"] = _AS_SINGLE[x["kind"]]
            x["flags"] &= K.FLAG_COMPLETED
            x["peer"] = x["tag"] = x["vec_off"] = NONE
            for f in ("comm", "bytes_sent", "bytes_recv", "volume", "vec_len"):
                x[f] = 0
            x["t_start"] = x["t_end"] = np.nan
            out[at] = x
        out[~orig] = np.fromiter(self.new, dtype=ACTION_DTYPE, count=len(self.new))
        lens = np.maximum(out["vec_len"].astype(np.int64), 0)
        new_lens = lens[~orig]
        src = np.empty(len(plan), np.int64)
        src[orig] = out["vec_off"][orig]
        src[~orig] = np.cumsum(new_lens) - new_lens
        total = int(lens.sum())
        idx = np.repeat(src - (np.cumsum(lens) - lens), lens) + np.arange(total)
        from_trace = np.repeat(orig, lens)
        vecs = np.empty(total, np.int64)
        vecs[from_trace] = self.d.vectors[idx[from_trace]]
        vecs[~from_trace] = np.array(self.newvec, dtype=np.int64)[idx[~from_trace]]
        return out, vecs

    def row(self, i: int) -> bool:
        """Lower action ``i``; False to keep it as it is."""
        j = i - self.sl.start
        kind = K.NAME[self.cols["kind"][j]]
        flags, req = self.cols["flags"][j], self.cols["request"][j]
        if kind in K.COMPLETIONS:
            return self.completion(i, kind, flags, req)
        a = self.at(i)
        if i in self.sync:
            return self.synchronous(i, kind, a)
        if kind in NOTHING:
            self.counts[f"{kind} (nothing to replay)"] += 1
            return True
        if kind == "bsend":
            return self.buffered_send(a)
        if kind in K.SENDRECVS:
            return self.sendrecv_after_bsends(i, a)
        if kind in K.COLLECTIVES or kind in K.NONBLOCKING_COLLECTIVES:
            blocking = kind in K.COLLECTIVES
            base = kind if blocking else K.BLOCKING_OF[kind]
            steps, algo = self.collective(i, base)
            if steps is None:
                return False        # not lowerable: the export reports it
            where = "a sub-communicator" if a["comm"] else "MPI_COMM_WORLD"
            if blocking:
                self.blocking(steps)
                self.reduction_work(base, a["volume"])
                self.counts[f"{kind} on {where} (point-to-point, {algo})"] += 1
            else:
                self.expand[req] = self.nonblocking(steps)
                self.reduction_work(base, a["volume"])
                self.counts[f"{kind} (isend/irecv of {algo} at the call, waited at its "
                            f"completion)"] += 1
            return True
        if kind in K.INITS or kind in K.PERSISTENT_COLLECTIVES:
            self.inits[req] = (kind, i)
            self.counts[f"{kind} (made at each start)"] += 1
            return True
        if kind in K.STARTS:
            ids = [req] if kind == "start" else self.d.vector(i).tolist()
            for q in ids:
                self.start(q, i if kind == "start" else None)
            return True
        if kind in _PREADY:
            return self.pready(i, kind, req)
        return False

    def before_sends_of(self, ids: list[int]) -> None:
        """Wait for the pending isends of bsends to a peer with a tag and communicator of one
        of the sends whose requests ``ids`` a completion names: SimGrid's replay finds the
        request a wait or test names by (source, destination, tag), the oldest first, and took
        the bsend's for the program's (the reviewer: a bsend of 100 B, then an isend of 1 MB
        on that tag waited for: its wait returned at once, the rank ended 1 s early)."""
        if self._send_rows is None:         # (a rank with a bsend only: not every lowering)
            a = self.d.actions[self.sl]
            nb_send = np.flatnonzero(K.mask(K.NONBLOCKING_SENDS)[a["kind"]])
            self._send_rows = dict(zip(a["request"][nb_send].tolist(),
                                       (nb_send + self.sl.start).tolist()))
        for q in ids:
            row = self._send_rows.get(q)
            if row is None and self.inits.get(q, ("",))[0] in K.SEND_INITS:
                row = self.inits[q][1]          # (a persistent send's start: its init's key)
            if row is None:
                continue
            x = self.at(row)
            for f in self.buffered.pop((int(x["peer"]), int(x["tag"]), int(x["comm"])), []):
                self.emit("wait", req=f)

    def buffered_send(self, a) -> bool:
        """A bsend completes at once whatever its size (the attached buffer holds it; public
        codes that bsend large messages to each other before receiving ran, and deadlocked in
        the replay as sends: helper QA, session 31): an isend, waited for at the rank's end."""
        if a["peer"] < 0:
            return False            # (to MPI_PROC_NULL: the export writes it)
        f = self.fresh()
        self.emit("isend", int(a["peer"]), int(a["tag"]), bs=int(a["bytes_sent"]), req=f,
                  comm=int(a["comm"]))
        self.buffered.setdefault((int(a["peer"]), int(a["tag"]), int(a["comm"])), []).append(f)
        self.counts["bsend (isend, waited for at the rank's end: the attached buffer holds "
                    "it)"] += 1
        return True

    def sendrecv_after_bsends(self, i: int, a) -> bool:
        """A sendrecv to a peer, tag and communicator of pending bsends that the export would
        write with a wait found by that key (tags or a communicator, or a source of
        MPI_PROC_NULL: else it is SimGrid's sendRecv): irecv, send, the irecv's wait (from
        MPI_PROC_NULL: the send alone).  Written as isend +
        recv + wait, its wait took the oldest request of its key, a bsend's (SimGrid finds a
        wait's request by key): its own send was never waited for and the rank ended 1 s early
        (the second reviewer, session 31); waiting for the bsends first deadlocked a program
        whose second bsend is received after the rank's next send (the reviewer, session 32).
        A blocking send needs no wait.  Any other sendrecv is kept."""
        key = (int(a["peer"]), int(a["tag"]), int(a["comm"]))
        source = self.d.vector(i).tolist()
        if key not in self.buffered or len(source) < 2 or a["flags"] & K.FLAG_UNRESOLVED:
            return False
        if as_sendrecv_primitive(key[1], source[1], key[2], key[0], source[0]):
            return False
        g = None
        if source[0] >= 0:
            g = self.fresh()
            self.emit("irecv", source[0], source[1], br=int(a["bytes_recv"]), req=g,
                      comm=key[2], flags=int(a["flags"]))
        self.emit("send", key[0], key[1], bs=int(a["bytes_sent"]), comm=key[2])
        if g is not None:
            self.emit("wait", req=g)
        self.counts[f"{K.NAME[int(a['kind'])]} on a pending bsend's destination and tag "
                    "(irecv + send + wait: no wait by its key)"] += 1
        return True

    def start(self, q: int, row: int | None = None) -> None:
        """Start request ``q`` (a ``start`` at ``row``: a receive's start that holds its
        completion's status, COMPLETED, receives what it says)."""
        init = self.inits.get(q)
        if init is None:
            self.dropped["start of a request not lowered"] += 1
            return
        kind, i = init
        a = self.at(i)
        if row is not None and kind in K.RECV_INITS and self.at(row)["flags"] & K.FLAG_COMPLETED:
            a = self.at(row)
        peer, tag = int(a["peer"]), int(a["tag"])
        if kind in K.SEND_INITS:
            f = self.fresh()
            self.emit("isend", peer, tag, bs=int(a["bytes_sent"]), req=f)
            self.expand[q] = [f]
            mode = {"ssend_init": ", not synchronous", "bsend_init": ", not buffered",
                    "rsend_init": ", not ready-mode"}.get(kind, "")
            self.counts[f"start of {kind} (isend{mode})"] += 1
        elif kind in K.RECV_INITS:
            f = self.fresh()
            self.emit("irecv", peer, tag, br=int(a["bytes_recv"]), req=f)
            self.expand[q] = [f]
            self.counts[f"start of {kind} (irecv)"] += 1
        elif kind == "psend_init":
            self.ready[q] = set()
            self.expand[q] = []
        else:       # a persistent collective
            base = K.BLOCKING_FORM[kind]
            steps, algo = self.collective(i, base)
            if steps is None:
                self.dropped[f"start of {kind}"] += 1
                return
            self.expand[q] = self.nonblocking(steps)
            self.reduction_work(base, a["volume"])
            self.counts[f"start of {kind} (isend/irecv of {algo})"] += 1

    def pready(self, i: int, kind: str, q: int) -> bool:
        v = self.d.vector(i).tolist()
        parts = set(range(v[0], v[1] + 1)) if kind == "pready_range" else set(v)
        self.counts[f"{kind} (the message goes when every partition is ready)"] += 1
        if q not in self.ready or q not in self.inits:
            return True
        self.ready[q] |= parts
        init = self.at(self.inits[q][1])
        nparts = int(self.d.vector(self.inits[q][1])[0]) if init["vec_len"] > 0 else 1
        if len(self.ready[q]) >= nparts and not self.expand[q]:
            f = self.fresh()
            self.emit("isend", int(init["peer"]), int(init["tag"]), bs=int(init["bytes_sent"]),
                      req=f)
            self.expand[q] = [f]
        return True

    def collective(self, i: int, base: str) -> tuple[list | None, str]:
        """The steps of collective ``i`` (blocking form ``base``) in world ranks (None when it
        cannot be lowered), and the name of their algorithm ("Y for X": the library runs X,
        whose messages the lowering approximates by Y's)."""
        a = self.at(i)
        comm = a["comm"]
        if a["flags"] & K.FLAG_INTERCOMM:
            return None, ""
        if comm not in self.members:
            m = self.d.comms.get(comm)
            ranks = [] if m is None else [int(x) for x in m]
            self.members[comm] = (ranks, ranks.index(self.r) if self.r in ranks else None)
        members, me = self.members[comm]
        if me is None:
            return None, ""
        vec = tuple(self.d.vector(i).tolist()) if a["vec_len"] > 0 else ()
        key = (base, comm, a["peer"], a["bytes_sent"], a["bytes_recv"], vec)
        if key in self.steps:
            return self.steps[key]
        root = 0
        if base in K.ROOTED:
            if a["peer"] not in members:
                return None, ""
            root = members.index(a["peer"])
        tag = TAG_BASE - 256 * comm - _CODE[base]
        p = len(members)
        runs, low = lowered_as(self.library, base, p, a["bytes_sent"], a["bytes_recv"])
        out = []
        for s in ALGORITHMS[base, low](me, p, root, a["bytes_sent"], a["bytes_recv"], list(vec)):
            if s[0] == "sendrecv":
                out.append(("sendrecv", members[s[1]], s[2], members[s[3]], s[4], tag))
            elif s[0] == "all":
                out.append(("all", [(members[d], n) for d, n in s[1]],
                            [(members[f], n) for f, n in s[2]], tag))
            else:
                out.append((s[0], members[s[1]], s[2], tag))
        self.steps[key] = out, (low if low == runs else f"{low} for {runs}")
        return self.steps[key]

    def blocking(self, steps) -> None:
        for s in steps:
            if s[0] == "send":
                self.emit("send", s[1], s[3], bs=s[2])
            elif s[0] == "recv":
                self.emit("recv", s[1], s[3], br=s[2])
            elif s[0] == "sendrecv":    # SimGrid's: isend + irecv, then both waited for
                f, g = self.fresh(), self.fresh()
                self.emit("isend", s[1], s[5], bs=s[2], req=f)
                self.emit("irecv", s[3], s[5], br=s[4], req=g)
                self.emit("wait", req=f)
                self.emit("wait", req=g)
            else:                       # receives and sends posted, then one waitall
                self.emit("waitall", vector=self.post_all(s))

    def post_all(self, s) -> list[int]:
        """Post the receives then the sends of an ``all`` step; their requests."""
        ids = []
        for src, n in s[2]:
            ids.append(self.fresh())
            self.emit("irecv", src, s[3], br=n, req=ids[-1])
        for dst, n in s[1]:
            ids.append(self.fresh())
            self.emit("isend", dst, s[3], bs=n, req=ids[-1])
        return ids

    def nonblocking(self, steps) -> list[int]:
        ids = []
        for s in steps:
            if s[0] == "all":
                ids += self.post_all(s)
                continue
            if s[0] in ("send", "sendrecv"):
                ids.append(self.fresh())
                self.emit("isend", s[1], s[-1], bs=s[2], req=ids[-1])
            if s[0] in ("recv", "sendrecv"):
                ids.append(self.fresh())
                src, n = (s[1], s[2]) if s[0] == "recv" else (s[3], s[4])
                self.emit("irecv", src, s[-1], br=n, req=ids[-1])
        return ids

    def reduction_work(self, base: str, vol: float) -> None:
        if base in K.REDUCTIONS and vol:
            self.emit("compute", vol=vol)

    def synchronous(self, i: int, kind: str, a) -> bool:
        """A synchronous send waits for a 0-byte acknowledgement its receive sends once it is
        posted (what MPI asks: MPICH acknowledges an eager ssend when it matches): SimGrid's
        replay has no ssend, and its ``send`` of a small message completes before the receive
        is posted.  An irecv acknowledges at once, not at its completion: two ranks that
        pre-post their receives and then ssend to each other deadlocked in the replay, each
        waiting for the acknowledgement the other's wait would send (public Kripke built with
        its KRIPKE_SWEEP_SSEND option; helper QA, session 31)."""
        peer, tag, comm, req = a["peer"], a["tag"], a["comm"], a["request"]
        ack = ACK_TAG_BASE - 256 * comm
        if kind == "ssend":
            self.emit("send", peer, tag, bs=int(a["bytes_sent"]), comm=comm)
            self.emit("recv", peer, ack, comm=comm)
        elif kind == "issend":
            f, g = self.fresh(), self.fresh()
            self.emit("isend", peer, tag, bs=int(a["bytes_sent"]), req=f, comm=comm)
            self.emit("irecv", peer, ack, req=g, comm=comm)
            self.expand[req] = [f, g]
        else:       # the receive of a synchronous send: acknowledge once it is posted
            self.keep(i, i + 1)
            self.emit("send", peer, ack, comm=comm)
            return True
        self.counts[f"{kind} ({'i' if kind[0] == 'i' else ''}send, completed by a 0-byte "
                    f"acknowledgement from its receive)"] += 1
        return True

    def completion(self, i: int, kind: str, flags: int, req: int) -> bool:
        multi = kind in K.MULTI_COMPLETIONS
        ids = [q for q in (self.d.vector(i).tolist() if multi else [req]) if q >= 0]
        completes = kind.startswith("wait") or bool(flags & K.FLAG_COMPLETED)
        if self.buffered and completes:     # (a failed test waits for nothing)
            self.before_sends_of(ids)
        if kind not in _ANY and not any(q in self.expand for q in ids):
            return False
        out = [f for q in ids for f in self.expand.get(q, [q])]
        if completes:
            for q in ids:
                if q in self.expand and self.inits.get(q, ("",))[0] == "psend_init" \
                        and not self.expand[q]:
                    self.counts["partitioned send waited before every partition was ready "
                                "(sent at the wait)"] += 1
                    init = self.at(self.inits[q][1])
                    f = self.fresh()
                    self.emit("isend", int(init["peer"]), int(init["tag"]),
                              bs=int(init["bytes_sent"]), req=f)
                    out.append(f)
        if kind == "waitall":
            self.emit("waitall", vector=out)
        else:
            single = _ANY.get(kind, kind if not multi else kind[:4])
            for f in out:
                self.emit(single, req=f, flags=flags & K.FLAG_COMPLETED)
            if kind in _ANY:
                self.counts[f"{kind} ({single} of each request it completed)"] += 1
        return True
