"""Consistency checks of a trace: the invariants every correct MPI run satisfies.

A trace that fails them was cut short, recorded wrongly, or converted wrongly; replaying it would
deadlock or mis-simulate.  Checks (each vectorised over all actions with numpy/pandas):

* structure: every rank has ``init`` first and ``finalize`` last among its MPI actions;
* point-to-point: the n-th send from s to d with (tag, comm) meets the n-th receive posted by d
  for (s, tag, comm), and both sides agree on the bytes (a matched receive, MPI_Mrecv/Imrecv,
  takes its message where its probe dequeued it);
* matched probes: each message a probe dequeues is received once, later, by a matched receive
  with the probe's source, tag and communicator;
* collectives: the members of a communicator call the same collectives (blocking, non-blocking,
  persistent initializations, neighborhood) in the same order, with the same root and consistent
  sizes; in a neighborhood collective each neighbour receives what is sent to it (on an
  intercommunicator, FLAG_INTERCOMM, only the order: roots and sizes follow other rules);
* one-sided: every RMA operation (and flush) lies in an access epoch to its target on a window
  the rank created (after a fence, inside lock/unlock of the target or lock_all/unlock_all,
  inside start/complete naming it), and epochs close (no unlock without lock, every lock,
  lock_all, start and post closed before the window is freed or the rank ends);
* MPI-IO: every file access is on a file the rank opened and has not closed, and every file is
  closed before the rank ends;
* requests: every request a call activates (non-blocking call, start of a persistent or
  partitioned request) is completed by a wait/test before it is activated again or the rank ends;
* converted traces (whose ``meta["source_messages"]`` holds the source's message-record counts):
  every point-to-point action and persistent request has a peer, the trace holds as many sent
  and received messages as the source recorded, and every wait/waitany/waitsome completes a
  request (a converter that lost a message or a request link leaves one of these behind).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import kinds as K
from . import matched_probes
from .model import TraceColumns

#: Problems kept per category (counts stay exact beyond it).
KEEP_PER_CATEGORY = 1000


@dataclass
class Problem:
    rank: int          # world rank (-1 when the problem is not one rank's)
    index: int         # action row within the rank, or -1
    category: str      # e.g. "unmatched-send", "size-mismatch", "missing-finalize"
    message: str       # one line

    def __str__(self) -> str:
        where = f"rank {self.rank}" if self.rank >= 0 else "trace"
        if self.index >= 0:
            where += f" action {self.index}"
        return f"{where}: {self.category}: {self.message}"


@dataclass
class ValidationReport:
    nranks: int
    nactions: int
    problems: list[Problem] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)   # category -> exact number of problems

    @property
    def ok(self) -> bool:
        return not self.counts

    @property
    def nproblems(self) -> int:
        return sum(self.counts.values())

    def phase(self, key: tuple, capped: bool = False) -> None:
        """Where the problems added next come in the report's order: a check's problems come
        in phases (``key``: check, step, ...), each in rank order, so that the parallel
        validate (parallel/validate.py) puts every worker's problems where the serial one
        does; ``capped``: a phase that adds at most KEEP_PER_CATEGORY problems in all."""

    def add(self, rank: int, index: int, category: str, message: str) -> None:
        self.counts[category] += 1
        if self.counts[category] <= KEEP_PER_CATEGORY:
            self.problems.append(Problem(int(rank), int(index), category, message))

    def lines(self, limit: int | None = 50) -> list[str]:
        """One line per problem (at most ``limit``, then one line counting the rest)."""
        shown = self.problems if limit is None else self.problems[:limit]
        out = [str(p) for p in shown]
        rest = self.nproblems - len(shown)
        if rest > 0:
            out.append(f"... and {rest} more problem(s)")
        return out

    def summary(self) -> str:
        if self.ok:
            return f"OK: {self.nranks} ranks, {self.nactions} actions, no problems"
        per = ", ".join(f"{n} {c}" for c, n in sorted(self.counts.items()))
        return f"{self.nproblems} problem(s) in {self.nranks} ranks, {self.nactions} actions: {per}"

    def __str__(self) -> str:
        return "\n".join([self.summary(), *self.lines()])


class CheckContext:
    """Columns shared by the checks: each action's rank and row within the rank, and the rows
    of a set of kinds.  ``data`` may hold consecutive ranks of a larger trace (a worker's share
    in the parallel validate): ``rank_base`` is its first world rank, ``row_base`` its first
    global row, ``world`` the world size."""

    def __init__(self, data: TraceColumns, rank_base: int = 0, row_base: int = 0,
                 world: int | None = None):
        self.d = data
        self.a = data.actions
        n = len(self.a)
        sizes = np.diff(data.rank_offsets)
        self.rank_base, self.row_base = rank_base, row_base
        self.world = data.nranks if world is None else world
        self.rank = data.rank_of() + rank_base
        self.index = np.arange(n, dtype=np.int64) - np.repeat(data.rank_offsets[:-1], sizes)
        self.kind = self.a["kind"]

    def rows(self, names) -> np.ndarray:
        return np.nonzero(K.mask(names)[self.kind])[0]


def validate(data: TraceColumns) -> ValidationReport:
    """Check ``data``; the report lists every problem found (see the module docstring)."""
    rep = ValidationReport(data.nranks, len(data.actions))
    if data.nranks == 0:
        rep.add(-1, -1, "no-ranks", "the trace has no rank")
        return rep
    ctx = CheckContext(data)
    check_local_before_p2p(ctx, rep)
    _check_p2p(ctx, rep)
    check_matched_probes(ctx, rep)
    _check_collectives(ctx, rep)
    check_local_after_collectives(ctx, rep)
    if data.meta.get("source_messages"):
        _check_converted(ctx, rep, data.meta["source_messages"])
    return rep


def check_local_before_p2p(ctx: CheckContext, rep: ValidationReport) -> None:
    """The checks of each rank alone that come first in the report."""
    _check_values(ctx, rep)
    _check_self_sends(ctx, rep)
    _check_structure(ctx, rep)


def check_local_after_collectives(ctx: CheckContext, rep: ValidationReport) -> None:
    """The checks of each rank alone that come after the collectives in the report."""
    _check_one_sided(ctx, rep)
    _check_files(ctx, rep)
    _check_requests(ctx, rep)


# -- structure --------------------------------------------------------------------------------
def _check_structure(ctx: CheckContext, rep: ValidationReport) -> None:
    mpi = ~K.mask(K.NON_MPI)[ctx.kind]
    init, fin = ctx.kind == K.CODE["init"], ctx.kind == K.CODE["finalize"]
    rep.phase((2,))
    for local in range(ctx.d.nranks):  # one pass per rank, vectorised within it
        s, r = ctx.d.rank_slice(local), local + ctx.rank_base
        rows = np.nonzero(mpi[s])[0]
        if not init[s].any():
            rep.add(r, -1, "missing-init", "no init")
        elif rows[0] != np.argmax(init[s]):
            rep.add(r, int(rows[0]), "init-not-first",
                    f"{K.NAME[int(ctx.kind[s][rows[0]])]} before init")
        if not fin[s].any():
            rep.add(r, -1, "missing-finalize", "no finalize (the run may have been cut short)")
        elif rows[-1] != len(fin[s]) - 1 - np.argmax(fin[s][::-1]):
            rep.add(r, int(rows[-1]), "finalize-not-last",
                    f"{K.NAME[int(ctx.kind[s][rows[-1]])]} after finalize")


# -- values and certain deadlocks -------------------------------------------------------------
#: SimGrid's default smpi/send-is-detached-thresh: a larger standard send waits for its receive.
EAGER_THRESHOLD = 65536
_POINT_TO_POINT = K.SENDS | K.RECVS | K.SENDRECVS | K.NONBLOCKING_SENDRECVS | K.INITS


def _check_values(ctx: CheckContext, rep: ValidationReport) -> None:
    """Negative sizes, volumes and durations; peers far beyond the world (a corrupt number:
    the run had no such rank)."""
    a = ctx.a
    for step, (col, what) in enumerate((("bytes_sent", "bytes sent"),
                                        ("bytes_recv", "bytes received"), ("volume", "volume"))):
        rep.phase((0, step), capped=True)
        for row in np.flatnonzero(a[col] < 0)[:KEEP_PER_CATEGORY]:
            rep.add(ctx.rank[row], ctx.index[row], "negative-value",
                    f"{K.NAME[int(ctx.kind[row])]} with {what} {a[col][row]:g}")
    rep.phase((0, 3), capped=True)
    for row in np.flatnonzero(a["t_end"] < a["t_start"])[:KEEP_PER_CATEGORY]:
        rep.add(ctx.rank[row], ctx.index[row], "negative-value",
                f"{K.NAME[int(ctx.kind[row])]} ends before it starts")
    p2p = K.mask(_POINT_TO_POINT)[ctx.kind]
    rep.phase((0, 4), capped=True)
    for row in np.flatnonzero(p2p & (a["peer"] >= ctx.world))[:KEEP_PER_CATEGORY]:
        rep.add(ctx.rank[row], ctx.index[row], "bad-peer",
                f"{K.NAME[int(ctx.kind[row])]} with peer {a['peer'][row]} in a world of "
                f"{ctx.world} rank(s)")


def _check_self_sends(ctx: CheckContext, rep: ValidationReport) -> None:
    """A blocking send to the rank itself that must wait for its receive (ssend; send/rsend
    above the eager threshold) with no receive from itself posted before it: a deadlock."""
    a = ctx.a
    rows = ctx.rows({"send", "ssend", "rsend"})
    rows = rows[(a["peer"][rows] == ctx.rank[rows]) &
                ((a["bytes_sent"][rows] > EAGER_THRESHOLD) | (ctx.kind[rows] == K.CODE["ssend"]))]
    if not len(rows):
        return
    posted = ctx.rows({"irecv", "recv_init", "precv_init"})
    posted = posted[a["peer"][posted] == ctx.rank[posted]]
    rep.phase((1,))
    for row in rows:
        if not ((ctx.rank[posted] == ctx.rank[row]) & (posted < row)).any():
            rep.add(ctx.rank[row], ctx.index[row], "deadlock",
                    f"blocking {K.NAME[int(ctx.kind[row])]} of {a['bytes_sent'][row]} B to "
                    f"itself with no receive posted before (above the eager threshold, "
                    f"{EAGER_THRESHOLD} B, a send waits for its receive)")


def first_blocking_receives(matched: pd.DataFrame) -> pd.DataFrame:
    """Per (receiver, sender) pair, its first blocking receive (rows and index), by row: what
    ``check_recv_cycles`` needs of the matched messages (few rows: the parallel validate
    gathers them from every worker)."""
    blocking = matched[matched["kind_r"].to_numpy() == K.CODE["recv"]]
    return (blocking.sort_values("row_r").groupby(["dst", "src"], sort=False)
            [["row_r", "row_s", "index_r"]].first().reset_index())


def check_recv_cycles(first: pd.DataFrame, rep: ValidationReport) -> None:
    """Two ranks each blocked in a receive whose message the other sends only after its own
    receive: rank A's first blocking receive from B needs B's send at sb, B's first from A
    needs A's send at sa, and A's receive is before sa, B's before sb: neither gets there."""
    rep.phase((3, 3))
    if not len(first):
        return
    pair = first.merge(first, left_on=["dst", "src"], right_on=["src", "dst"],
                       suffixes=("_a", "_b"))
    dead = pair[(pair["dst_a"] < pair["src_a"]) & (pair["row_r_a"] < pair["row_s_b"]) &
                (pair["row_r_b"] < pair["row_s_a"])]
    for t in dead.itertuples(index=False):
        rep.add(int(t.dst_a), int(t.index_r_a), "deadlock",
                f"blocking receive from {t.src_a} while rank {t.src_a} is blocked in its "
                f"receive from {t.dst_a} (action {int(t.index_r_b)}): each sends only after")


# -- point to point ---------------------------------------------------------------------------
def _starts(ctx: CheckContext):
    """(row of the start, row of the *_init it starts) for every start and startall entry."""
    a = ctx.a
    inits = ctx.rows(K.INITS)
    st = ctx.rows({"start"})
    sa_rows, sa_reqs = ctx.d.vector_entries(ctx.rows({"startall"}))
    start_rows = np.concatenate([st, sa_rows])
    reqs = np.concatenate([a["request"][st], sa_reqs]).astype(np.int64)
    if not len(start_rows):
        return start_rows, start_rows
    # the init is the latest one with that request id on the same rank before the start
    ik = pd.DataFrame({"rank": ctx.rank[inits], "req": a["request"][inits], "row": inits})
    sk = pd.DataFrame({"rank": ctx.rank[start_rows], "req": reqs, "row": start_rows})
    m = pd.merge_asof(sk.sort_values("row"), ik.sort_values("row").rename(
        columns={"row": "init"}), left_on="row", right_on="init", by=["rank", "req"],
        direction="backward")
    m = m.dropna(subset=["init"])
    return m["row"].to_numpy(np.int64), m["init"].to_numpy(np.int64)


def _probe_sides(ctx: CheckContext) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Matched probes and matched receives by message id: two frames (rank, id, row)."""
    return matched_probes.sides(ctx.d, np.arange(len(ctx.a)), ctx.rank)


def _messages(ctx: CheckContext):
    """Send and receive halves of every message as two DataFrames with the same columns
    (``order``: where the message was matched, the row of a matched receive's probe; ``part``:
    which kind of action it comes from; ``kind`` and ``index`` of its row; rows global)."""
    a, rank = ctx.a, ctx.rank
    cols = ("src", "dst", "tag", "comm", "bytes", "row", "unresolved")

    def frame(rows, src, dst, tag, nbytes, unresolved=None, part=0):
        f = pd.DataFrame(dict(zip(cols, (src, dst, tag, a["comm"][rows], nbytes, rows,
                                         np.zeros(len(rows), bool) if unresolved is None
                                         else unresolved))))
        f["part"] = part          # 0 the action's own message, 1 a sendrecv's, 2 a start's
        return f

    s = ctx.rows(K.SENDS)
    r = ctx.rows(K.RECVS)
    sr = ctx.rows(K.SENDRECVS | K.NONBLOCKING_SENDRECVS)
    sends = [frame(s, rank[s], a["peer"][s], a["tag"][s], a["bytes_sent"][s]),
             frame(sr, rank[sr], a["peer"][sr], a["tag"][sr], a["bytes_sent"][sr], part=1)]
    recvs = [frame(r, a["peer"][r], rank[r], a["tag"][r], a["bytes_recv"][r],
                   (a["flags"][r] & K.FLAG_UNRESOLVED) != 0)]
    if len(sr):   # the receive half: vector [source, tag]
        recvs.append(frame(sr, ctx.d.vector_item(sr, 0), rank[sr], ctx.d.vector_item(sr, 1),
                           a["bytes_recv"][sr],
                           (a["vec_len"][sr] < 2) | ((a["flags"][sr] & K.FLAG_UNRESOLVED) != 0),
                           part=1))
    links = matched_probes.links(*_probe_sides(ctx)).dropna()
    if len(links):
        order = recvs[0]["row"].to_numpy().copy()
        pos = np.searchsorted(r, links["recv"].to_numpy(np.int64))
        order[pos] = np.minimum(order[pos], links["probe"].to_numpy(np.int64))
        recvs[0]["order"] = order
    st, init = _starts(ctx)
    if len(st):
        ik = a["kind"][init]
        snd = ~K.mask(K.RECV_INITS)[ik]
        for mask, side in ((snd, sends), (~snd, recvs)):
            srow, irow = st[mask], init[mask]
            if side is sends:
                f = frame(irow, rank[irow], a["peer"][irow], a["tag"][irow],
                          a["bytes_sent"][irow], part=2)
            else:
                f = frame(irow, a["peer"][irow], rank[irow], a["tag"][irow],
                          a["bytes_recv"][irow], part=2)
            f["row"] = srow
            side.append(f)
    sends, recvs = (pd.concat(f, ignore_index=True) for f in (sends, recvs))
    for f in (sends, recvs):
        f["order"] = f["order"].fillna(f["row"]).astype(np.int64) if "order" in f else f["row"]
        rows = f["row"].to_numpy(np.int64)
        f["kind"], f["index"] = ctx.kind[rows], ctx.index[rows]
        f["row"] += ctx.row_base
        f["order"] += ctx.row_base
    return sends, recvs


def message_halves(ctx: CheckContext, rep: ValidationReport):
    """The halves of the messages to match (``_messages``), receives never completed reported
    and left out, and those of MPI_PROC_NULL (-1), which carry none."""
    sends, recvs = _messages(ctx)
    bad = recvs["unresolved"].to_numpy()
    for part, sub in recvs[bad].groupby("part", sort=True):
        rep.phase((3, 0, int(part)))
        for t in sub.itertuples(index=False):
            rep.add(t.dst, t.index, "unresolved-recv",
                    f"{K.NAME[int(t.kind)]} whose completion was never recorded "
                    "(source/size unknown)")
    recvs = recvs[~bad]
    return sends[sends["dst"] >= 0], recvs[recvs["src"] >= 0]


def match_messages(sends: pd.DataFrame, recvs: pd.DataFrame, rep: ValidationReport):
    """Pair the n-th send of each (src, dst, tag, comm) stream with its n-th receive; report
    the unmatched ones; returns the matched messages.  Needs every message of the streams of
    its senders (the parallel validate gives each worker those of its ranks' sends)."""
    key = ["src", "dst", "tag", "comm"]
    sends, recvs = (f.sort_values("order", kind="stable") for f in (sends, recvs))
    for f in (sends, recvs):
        f["seq"] = f.groupby(key, sort=False).cumcount()
    m = sends.merge(recvs.drop(columns="order"), on=key + ["seq"], how="outer",
                    suffixes=("_s", "_r"), indicator=True)
    for step, (how, cat) in enumerate((("left_only", "unmatched-send"),
                                       ("right_only", "unmatched-recv"))):
        rep.phase((3, 1 + step))
        sub = m[m["_merge"] == how]
        side = "_s" if how == "left_only" else "_r"
        for t in sub.itertuples(index=False):
            kind, n = K.NAME[int(getattr(t, "kind" + side))], int(getattr(t, "bytes" + side))
            if how == "left_only":
                rank, msg = t.src, (f"{kind} to {t.dst} tag {t.tag} comm {t.comm} ({n} B, "
                                    f"message {t.seq} of that stream) has no matching receive")
            else:
                rank, msg = t.dst, (f"{kind} from {t.src} tag {t.tag} comm {t.comm} ({n} B, "
                                    f"message {t.seq} of that stream) has no matching send")
            rep.add(rank, int(getattr(t, "index" + side)), cat, msg)
    return m[m["_merge"] == "both"]


def check_sizes_match(both: pd.DataFrame, rep: ValidationReport) -> None:
    """Both sides of a matched message agree on its bytes."""
    rep.phase((3, 4))
    for t in both[both["bytes_s"] != both["bytes_r"]].itertuples(index=False):
        rep.add(t.dst, int(t.index_r), "size-mismatch",
                f"{K.NAME[int(t.kind_r)]} from {t.src} tag {t.tag} comm {t.comm} receives "
                f"{int(t.bytes_r)} B but the matching {K.NAME[int(t.kind_s)]} (rank {t.src} "
                f"action {int(t.index_s)}) sends {int(t.bytes_s)} B")


def _check_p2p(ctx: CheckContext, rep: ValidationReport) -> None:
    both = match_messages(*message_halves(ctx, rep), rep)
    check_recv_cycles(first_blocking_receives(both), rep)
    check_sizes_match(both, rep)


def check_matched_probes(ctx: CheckContext, rep: ValidationReport) -> None:
    """Each probed message received once, after its probe, with the probe's source/tag/comm."""
    probed, recvs = _probe_sides(ctx)
    if not len(probed) and not len(recvs):
        return
    a = ctx.a

    def add(row: int, msg_id: int, what: str) -> None:
        rep.add(ctx.rank[row], ctx.index[row], "unmatched-probe",
                f"{K.NAME[int(ctx.kind[row])]} of message {msg_id} (from {a['peer'][row]} tag "
                f"{a['tag'][row]} comm {a['comm'][row]}) {what}")

    for step, (f, what) in enumerate(((probed, "probed"), (recvs, "received"))):
        rep.phase((4, step))
        for t in f[f.duplicated(["rank", "id"])].itertuples(index=False):
            add(int(t.row), t.id, f"was already {what}")
    links = matched_probes.links(probed, recvs)
    no_recv, no_probe = links.recv.isna(), links.probe.isna()
    rep.phase((4, 2))
    for t in links[no_recv].itertuples(index=False):
        add(int(t.probe), t.id, "is never received (no mrecv/imrecv of it)")
    rep.phase((4, 3))
    for t in links[no_probe].itertuples(index=False):
        add(int(t.recv), t.id, "has no matched probe")
    both = links[~no_recv & ~no_probe]
    p, r = (both[c].to_numpy(np.int64) for c in ("probe", "recv"))
    early = r < p
    differs = ~early & ((a["peer"][p] != a["peer"][r]) | (a["tag"][p] != a["tag"][r]) |
                        (a["comm"][p] != a["comm"][r]))
    rep.phase((4, 4))
    for i in np.nonzero(early)[0]:
        add(int(r[i]), both.id.iat[i], f"comes before its probe (action {ctx.index[p[i]]})")
    rep.phase((4, 5))
    for i in np.nonzero(differs)[0]:
        q = p[i]
        add(int(r[i]), both.id.iat[i], f"but its probe (action {ctx.index[q]}) saw it from "
            f"{a['peer'][q]} tag {a['tag'][q]} comm {a['comm'][q]}")


# -- collectives ------------------------------------------------------------------------------
def collective_frame(ctx: CheckContext) -> pd.DataFrame:
    """Every collective action (global rows) with what the checks of its communicator need:
    its position ``seq`` among its rank's collectives on that communicator, its ``index``."""
    rows = ctx.rows(K.ORDERED_COLLECTIVES)
    a = ctx.a
    df = pd.DataFrame({"comm": a["comm"][rows], "rank": ctx.rank[rows],
                       "row": rows + ctx.row_base, "kind": a["kind"][rows],
                       "peer": a["peer"][rows], "bs": a["bytes_sent"][rows],
                       "br": a["bytes_recv"][rows],
                       "inter": (a["flags"][rows] & K.FLAG_INTERCOMM) != 0,
                       "index": ctx.index[rows]})
    df["seq"] = df.groupby(["comm", "rank"], sort=False).cumcount()
    return df


class CollectiveRows:
    """What the collective checks read of a trace (``CheckContext``'s index, kind, rank, vectors,
    communicators, world size) for the rows of a ``collective_frame`` alone: the parallel
    validate checks each communicator on the worker its collectives were sent to."""

    def __init__(self, df: pd.DataFrame, vectors: dict, comms: dict, world: int):
        df = df.sort_values("row")
        self._rows = df["row"].to_numpy(np.int64)
        self.index, self.kind, self.rank = (self._by_row(df[c].to_numpy())
                                            for c in ("index", "kind", "rank"))
        self._vectors, self.comms, self.world = vectors, comms, world
        self.d = self

    def _by_row(self, values: np.ndarray):
        rows = self._rows

        class ByRow:
            def __getitem__(self, row):
                return values[np.searchsorted(rows, row)]
        return ByRow()

    def vector(self, row: int) -> np.ndarray:
        return self._vectors.get(int(row), np.zeros(0, np.int64))


def check_collectives_of(ctx, rep: ValidationReport, df: pd.DataFrame) -> None:
    """The collective checks of every communicator of ``df`` (``collective_frame`` rows,
    all of the communicator's members)."""
    for comm, g in df.groupby("comm", sort=True):
        rep.phase((5, int(comm)))
        members = ctx.d.comms.get(int(comm))
        if members is None:
            r0 = g.iloc[0]
            rep.add(r0["rank"], r0["index"], "unknown-comm",
                    f"{K.NAME[int(r0['kind'])]} on communicator {comm}, which the "
                    "communicator table does not list")
            continue
        members = np.asarray(members, dtype=np.int64)
        is_inter = bool(g["inter"].any())
        if is_inter and (members < 0).any():
            continue        # its other group was not traced (spawned processes)
        pos = np.full(ctx.world, -1, np.int64)
        pos[members[(members >= 0) & (members < ctx.world)]] = \
            np.nonzero((members >= 0) & (members < ctx.world))[0]
        outsider = pos[g["rank"].to_numpy()] < 0
        for r, sub in g[outsider].groupby("rank"):
            rep.add(r, sub["index"].iloc[0], "collective-mismatch",
                    f"{len(sub)} collective(s) on communicator {comm} of which rank {r} "
                    "is not a member")
        g = g[~outsider]
        _check_comm_collectives(ctx, rep, int(comm), members, g, is_inter)


def _check_collectives(ctx: CheckContext, rep: ValidationReport) -> None:
    df = collective_frame(ctx)
    if len(df):
        check_collectives_of(ctx, rep, df)


_ROOTED = K.mask(n for n, b in K.BLOCKING_FORM.items() if b in K.ROOTED)


def _check_comm_collectives(ctx, rep, comm, members, g, inter: bool = False) -> None:
    """Counts and kinds per position; roots and sizes too on an intracommunicator (an
    intercommunicator's follow its own rules: MPI_ROOT, MPI_PROC_NULL, the remote group)."""
    size = len(members)
    # 1. every member calls the same number of collectives on this comm
    n_of = g.groupby("rank").size().reindex(members, fill_value=0)
    if n_of.nunique() > 1:
        most = int(n_of.max())
        for r, n in n_of.items():
            if n < most:
                rep.add(int(r), -1, "collective-mismatch",
                        f"calls {n} collective(s) on communicator {comm}, other members "
                        f"up to {most}")
    # 2. same kind and root at each position
    first = g.groupby("seq").agg(kmin=("kind", "min"), kmax=("kind", "max"),
                                 pmin=("peer", "min"), pmax=("peer", "max"), n=("kind", "size"))
    g = g.join(first, on="seq")
    kinds_bad = first.index[first.kmin != first.kmax]
    for seq in kinds_bad:
        sub = g[g.seq == seq]
        ref = sub.iloc[0]
        odd = sub[sub.kind != ref.kind]
        for t in odd.itertuples(index=False):
            rep.add(t.rank, ctx.index[t.row], "collective-mismatch",
                    f"collective {seq} on communicator {comm} is {K.NAME[int(t.kind)]} here but "
                    f"{K.NAME[int(ref.kind)]} on rank {ref['rank']}")
    if inter:
        return
    same = g[(g.kmin == g.kmax)]
    rooted = same[_ROOTED[same.kind.to_numpy()]]
    for seq in rooted.loc[rooted.pmin != rooted.pmax, "seq"].unique():
        sub = rooted[rooted.seq == seq]
        ref = sub.iloc[0]
        for t in sub[sub.peer != ref.peer].itertuples(index=False):
            rep.add(t.rank, ctx.index[t.row], "collective-mismatch",
                    f"{K.NAME[int(t.kind)]} (collective {seq} on communicator {comm}) has root "
                    f"{t.peer} here but {ref.peer} on rank {ref['rank']}")
    # 3. sizes, for complete groups of one kind and one root
    same = same[(same.n == size) & (same.pmin == same.pmax)]
    if len(same):
        _check_sizes(ctx, rep, comm, members, same)


def _check_sizes(ctx, rep, comm, members, g) -> None:
    P = len(members)
    g = g.copy()
    g["base"] = g.kind.map(lambda k: K.BLOCKING_FORM[K.NAME[int(k)]])
    g["is_root"] = g["rank"].to_numpy() == g["peer"].to_numpy()
    # The value each member contributes, which must be the same on every member.
    rules = {
        "bcast": lambda t: np.where(t.is_root, t.bs, t.br),
        "reduce": lambda t: t.bs, "allreduce": lambda t: t.bs, "scan": lambda t: t.bs,
        "exscan": lambda t: t.bs, "gather": lambda t: t.bs, "allgather": lambda t: t.bs,
        "scatter": lambda t: t.br, "alltoall": lambda t: t.bs,
        "reduce_scatter_block": lambda t: t.br,
    }
    for base, sub in g.groupby("base"):
        if base in rules:
            sub = sub.assign(v=np.asarray(rules[base](sub)))
            spread = sub.groupby("seq")["v"].agg(["min", "max"])
            for seq in spread.index[spread["min"] != spread["max"]]:
                grp = sub[sub.seq == seq]
                ref = grp.v.mode().iloc[0]
                for t in grp[grp.v != ref].itertuples(index=False):
                    rep.add(t.rank, ctx.index[t.row], "collective-size-mismatch",
                            f"{K.NAME[int(t.kind)]} (collective {seq} on communicator {comm}) "
                            f"with {t.v} B here but {ref} B on the other members")
            # totals that follow from the common value
            ok_seq = spread.index[spread["min"] == spread["max"]]
            sub = sub[sub.seq.isin(ok_seq)]
            total = {"gather": ("br", "is_root"), "scatter": ("bs", "is_root"),
                     "allgather": ("br", None), "alltoall": ("br", None)}.get(base)
            if total:
                col, only = total
                t2 = sub[sub[only]] if only else sub
                want = t2.v * (1 if base == "alltoall" else P)
                for t, w in zip(t2[t2[col] != want].itertuples(index=False), want[t2[col] != want]):
                    rep.add(t.rank, ctx.index[t.row], "collective-size-mismatch",
                            f"{K.NAME[int(t.kind)]} (collective {t.seq} on communicator "
                            f"{comm}) {'receives' if col == 'br' else 'sends'} "
                            f"{getattr(t, col)} B, expected {int(w)} B")
        elif base in K.VECTOR_KINDS:
            _check_vectors(ctx, rep, comm, members, base, sub)
        elif base in K.NEIGHBOR_COLLECTIVES:
            _check_neighbors(ctx, rep, comm, sub)


def _check_neighbors(ctx, rep, comm, g) -> None:
    """Neighborhood collectives: what a member sends to an out-neighbour is what that member
    receives from it as an in-neighbour (as many times, with the same bytes)."""
    edges: dict[str, list] = {"out": [], "in": []}
    for t in g.itertuples(index=False):
        v = ctx.d.vector(int(t.row)).tolist()
        ni, no = (v + [0, 0])[:2]
        if len(v) != 2 + 2 * (ni + no):
            rep.add(t.rank, ctx.index[t.row], "collective-size-mismatch",
                    f"{K.NAME[int(t.kind)]} (collective {t.seq} on communicator {comm}) has no "
                    "neighbour vector")
            continue
        ins, outs = v[2:2 + ni], v[2 + ni:2 + ni + no]
        inb, outb = v[2 + ni + no:2 + 2 * ni + no], v[2 + 2 * ni + no:]
        edges["out"] += [(t.seq, t.rank, j, b, t.row) for j, b in zip(outs, outb) if j >= 0]
        edges["in"] += [(t.seq, i, t.rank, b, t.row) for i, b in zip(ins, inb) if i >= 0]
    key = ["seq", "src", "dst"]
    f = {side: pd.DataFrame(e, columns=key + ["bytes", "row"]).sort_values(key + ["bytes"])
         for side, e in edges.items()}
    for side in f.values():
        side["occ"] = side.groupby(key).cumcount()
    m = f["out"].merge(f["in"], on=key + ["occ"], how="outer", suffixes=("_s", "_r"))
    for t in m[m.bytes_s.isna() | m.bytes_r.isna() | (m.bytes_s != m.bytes_r)].itertuples():
        sender = not np.isnan(t.row_s)
        row = int(t.row_s if sender else t.row_r)
        what = (f"sends {int(t.bytes_s)} B to {t.dst}" if sender else
                f"receives {int(t.bytes_r)} B from {t.src}")
        expect = ("which expects " + (f"{int(t.bytes_r)} B" if sender else
                                      f"{int(t.bytes_s)} B")
                  if not (np.isnan(t.bytes_s) or np.isnan(t.bytes_r)) else
                  "which does not list this exchange")
        rep.add(ctx.rank[row], ctx.index[row], "collective-size-mismatch",
                f"{K.NAME[int(ctx.kind[row])]} (collective {t.seq} on communicator {comm}) "
                f"{what} {expect}")


def _check_vectors(ctx, rep, comm, members, base, g) -> None:
    """Per-peer byte vectors against what the peers themselves declare."""
    P = len(members)
    pos = {int(r): i for i, r in enumerate(members)}
    for seq, grp in g.groupby("seq"):
        grp = grp.assign(p=[pos[int(r)] for r in grp["rank"]]).sort_values("p")
        bs = grp.bs.to_numpy()
        br = grp.br.to_numpy()
        vecs = [ctx.d.vector(int(r)) for r in grp.row]
        name = K.NAME[int(grp.kind.iloc[0])]
        where = f"{name} (collective {seq} on communicator {comm})"
        bad: list[tuple[int, str]] = []
        if base in ("gatherv", "scatterv"):
            root = grp[grp.is_root]
            if len(root):
                v = vecs[int(np.nonzero(grp.is_root.to_numpy())[0][0])]
                mine = bs if base == "gatherv" else br
                if len(v) != P:
                    bad.append((int(root.row.iloc[0]), f"{where}: root vector has {len(v)} "
                                f"entries for {P} members"))
                else:
                    for i in np.nonzero(v != mine)[0]:
                        bad.append((int(grp.row.iloc[i]), f"{where}: "
                                    f"{'sends' if base == 'gatherv' else 'receives'} "
                                    f"{int(mine[i])} B but the root expects {int(v[i])} B"))
        elif base in ("allgatherv", "reduce_scatter"):
            mine = bs if base == "allgatherv" else br
            for i, v in enumerate(vecs):
                if len(v) != P:
                    bad.append((int(grp.row.iloc[i]), f"{where}: vector has {len(v)} entries "
                                f"for {P} members"))
                elif not np.array_equal(v, vecs[0]) or \
                        (base == "allgatherv" and not np.array_equal(v, mine)) or \
                        (base == "reduce_scatter" and v[i] != mine[i]):
                    bad.append((int(grp.row.iloc[i]), f"{where}: per-member bytes "
                                f"{v.tolist()[:8]} disagree with the other members"))
        else:  # alltoallv / alltoallw: what i sends to j is what j receives from i
            if any(len(v) != 2 * P for v in vecs):
                for i, v in enumerate(vecs):
                    if len(v) != 2 * P:
                        bad.append((int(grp.row.iloc[i]), f"{where}: vector has {len(v)} "
                                    f"entries, expected {2 * P}"))
            else:
                m = np.stack(vecs)
                send, recv = m[:, :P], m[:, P:]
                for i, j in zip(*np.nonzero(send != recv.T)):
                    bad.append((int(grp.row.iloc[i]), f"{where}: sends {int(send[i, j])} B to "
                                f"member {j} which expects {int(recv[j, i])} B"))
        for row, msg in bad:
            rep.add(ctx.rank[row], ctx.index[row], "collective-size-mismatch", msg)


# -- one-sided --------------------------------------------------------------------------------
class _Window:
    """The epochs open on one window of one rank."""

    def __init__(self):
        self.fence = False            # a fence was called: active-target epochs from then on
        self.locks: Counter = Counter()   # target -> locks held
        self.lock_all = False
        self.start: set | None = None     # the targets of an open start/complete epoch
        self.post = False

    def open_epochs(self) -> list[str]:
        return ([f"lock of {t}" for t, n in sorted(self.locks.items()) if n] +
                ["lock_all"] * self.lock_all + ["start"] * (self.start is not None) +
                ["post"] * self.post)

    def reaches(self, target: int) -> bool:
        return self.fence or self.lock_all or self.locks[target] > 0 or \
            (self.start is not None and target in self.start)


def _check_one_sided(ctx: CheckContext, rep: ValidationReport) -> None:
    """Epochs per rank and window, walking the rank's one-sided actions in order (few)."""
    rows = ctx.rows(K.ONE_SIDED | {"finalize"})
    if not len(ctx.rows(K.ONE_SIDED)):
        return
    a = ctx.a
    creations, ops, syncs = (K.mask(s) for s in (K.WINDOW_CREATIONS, K.RMA_OPS, K.RMA_SYNCS))
    passive_only = {"win_flush", "win_flush_local"}
    wins: dict[tuple, _Window] = {}
    rep.phase((6,))

    def add(row, cat, msg):
        rep.add(ctx.rank[row], ctx.index[row], cat, f"{K.NAME[int(ctx.kind[row])]} {msg}")

    def not_closed(row, key, w, what):
        if w.open_epochs():
            add(row, "rma-epoch-not-closed", f"{what} window {key[1]} while epochs are open: "
                f"{', '.join(w.open_epochs())}")

    for row in rows.tolist():
        rank, k = int(ctx.rank[row]), int(ctx.kind[row])
        name, key, peer = K.NAME[k], (int(ctx.rank[row]), int(a["tag"][row])), int(a["peer"][row])
        if name == "finalize":
            for (r, wid), w in list(wins.items()):
                if r == rank:
                    not_closed(row, (r, wid), w, "ends the rank with")
            continue
        if creations[k]:
            wins[key] = _Window()
            continue
        w = wins.get(key)
        if w is None:
            add(row, "rma-unknown-window", f"on window {key[1]}, which this rank did not create "
                "(or freed)")
            continue
        if name == "win_free":
            not_closed(row, key, w, "frees")
            del wins[key]
        elif ops[k] or name in passive_only:
            ok = w.reaches(peer) if name not in passive_only else \
                (w.lock_all or w.locks[peer] > 0)
            if peer >= 0 and not ok:
                add(row, "rma-outside-epoch", f"to {peer} on window {key[1]} outside any access "
                    "epoch to it")
        elif name in ("win_flush_all", "win_flush_local_all"):
            if not (w.lock_all or any(w.locks.values())):
                add(row, "rma-outside-epoch", f"on window {key[1]} outside a passive epoch")
        elif syncs[k]:
            bad = _epoch_step(ctx, w, name, row, peer)
            if bad:
                add(row, "rma-epoch-mismatch", f"on window {key[1]}: {bad}")


def _epoch_step(ctx: CheckContext, w: _Window, name: str, row: int, peer: int) -> str:
    """Apply one synchronization to ``w``; what is wrong with it, or ''."""
    if name == "win_fence":
        w.fence = True
    elif name == "win_lock":
        if w.locks[peer]:
            return f"{peer} is already locked"
        w.locks[peer] += 1
    elif name == "win_unlock":
        if not w.locks[peer]:
            return f"{peer} is not locked"
        w.locks[peer] -= 1
    elif name in ("win_lock_all", "win_unlock_all"):
        if w.lock_all == (name == "win_lock_all"):
            return "lock_all is " + ("already" if w.lock_all else "not") + " held"
        w.lock_all = not w.lock_all
    elif name == "win_start":
        if w.start is not None:
            return "a start epoch is already open"
        w.start = set(ctx.d.vector(row).tolist())
    elif name == "win_complete":
        if w.start is None:
            return "no start epoch is open"
        w.start = None
    elif name == "win_post":
        if w.post:
            return "an exposure epoch is already open"
        w.post = True
    elif name == "win_wait" or (name == "win_test" and ctx.a["flags"][row] & K.FLAG_COMPLETED):
        if not w.post:
            return "no exposure epoch (post) is open"
        w.post = False
    return ""


# -- MPI-IO -----------------------------------------------------------------------------------
def _check_files(ctx: CheckContext, rep: ValidationReport) -> None:
    """Files open (by id, per rank) when used, closed by the end: the rank's file actions in
    order."""
    if not len(ctx.rows(K.IO_KINDS)):
        return
    a = ctx.a
    opened: set[tuple] = set()
    rep.phase((7,))
    for row in ctx.rows(K.IO_KINDS | {"finalize"}).tolist():
        rank, name, fid = int(ctx.rank[row]), K.NAME[int(ctx.kind[row])], int(a["tag"][row])
        if name == "finalize":
            for r, f in sorted(opened):
                if r == rank:
                    rep.add(rank, ctx.index[row], "io-not-closed", f"finalize with file {f} open")
            opened = {k for k in opened if k[0] != rank}
        elif name == "file_open":
            opened.add((rank, fid))
        elif name == "file_delete":     # by name, on no open file
            continue
        elif (rank, fid) not in opened:
            rep.add(rank, ctx.index[row], "io-unknown-file",
                    f"{name} on file {fid}, which this rank did not open (or closed)")
        elif name == "file_close":
            opened.discard((rank, fid))


# -- requests ---------------------------------------------------------------------------------
def _check_requests(ctx: CheckContext, rep: ValidationReport) -> None:
    a, d = ctx.a, ctx.d
    # activations: a non-blocking call creates its request, a start names the one it starts
    # (partitioned and persistent alike), a startall lists them in its vector
    act = ctx.rows(K.REQUEST_KINDS | {"start"})
    sa_rows, sa_req = d.vector_entries(ctx.rows({"startall"}))
    act_rows, act_req = [act, sa_rows], [a["request"][act], sa_req]
    # completions: wait/waitany and test/testany with FLAG_COMPLETED by their request field,
    # the *all/*some forms (tests only with FLAG_COMPLETED) by their vector
    completes = ~K.mask(K.TESTS)[ctx.kind] | ((a["flags"] & K.FLAG_COMPLETED) != 0)
    single = ctx.rows(K.SINGLE_COMPLETIONS)
    single = single[completes[single]]
    multi = ctx.rows(K.MULTI_COMPLETIONS)
    multi = multi[completes[multi]]
    mrows, mreq = d.vector_entries(multi)
    done_rows = np.concatenate([single, mrows])
    done_req = np.concatenate([a["request"][single], mreq])
    arow = np.concatenate(act_rows)
    areq = np.concatenate(act_req).astype(np.int64)
    ev = pd.DataFrame({
        "rank": np.concatenate([ctx.rank[arow], ctx.rank[done_rows]]),
        "req": np.concatenate([areq, done_req.astype(np.int64)]),
        "row": np.concatenate([arow, done_rows]),
        "act": np.concatenate([np.ones(len(arow), bool), np.zeros(len(done_rows), bool)]),
    })
    ev = ev[ev.req >= 0].sort_values(["rank", "req", "row", "act"], kind="stable")
    same_next = (ev["rank"].shift(-1) == ev["rank"]) & (ev["req"].shift(-1) == ev["req"])
    completed = same_next & ~ev["act"].shift(-1, fill_value=True).astype(bool)
    rep.phase((8,))
    for t in ev[ev.act & ~completed].itertuples(index=False):
        row = int(t.row)
        rep.add(ctx.rank[row], ctx.index[row], "incomplete-request",
                f"request {t.req} of this {K.NAME[int(ctx.kind[row])]} is never completed by a "
                "wait or successful test")


# -- converted traces -------------------------------------------------------------------------
#: Point-to-point kinds whose peer a converter must have found (a persistent request's peer is
#: on its init; partitioned ones are not converted).
_NEEDS_PEER = K.SENDS | K.RECVS | K.SENDRECVS | K.SEND_INITS | {"recv_init"}


def _check_converted(ctx: CheckContext, rep: ValidationReport, source: dict) -> None:
    """What a converter lost: peers, messages (against the source's counts), completions."""
    check_peers_found(ctx, rep)
    check_message_counts(message_counts(ctx), source, rep)
    check_completions(ctx, rep)


def check_peers_found(ctx: CheckContext, rep: ValidationReport) -> None:
    a = ctx.a
    rows = ctx.rows(_NEEDS_PEER)
    rep.phase((9, 0))
    for row in rows[a["peer"][rows] < 0]:
        rep.add(ctx.rank[row], ctx.index[row], "p2p-without-peer",
                f"{K.NAME[int(ctx.kind[row])]} without a peer (its message was not found in the "
                "source)")


def message_counts(ctx: CheckContext) -> dict:
    """Messages sent and received in the trace (to add up over the parallel validate's
    workers)."""
    sends, recvs = _messages(ctx)
    return {"sent": int((sends["dst"] >= 0).sum()),
            "received": int(((recvs["src"] >= 0) & ~recvs["unresolved"]).sum())}


def check_message_counts(have: dict, source: dict, rep: ValidationReport) -> None:
    rep.phase((9, 1))
    for side, n in have.items():
        if side in source and int(source[side]) != n:
            rep.add(-1, -1, "message-count-mismatch",
                    f"{n} {side} message(s) in the trace but {source[side]} in the source")


def check_completions(ctx: CheckContext, rep: ValidationReport) -> None:
    a = ctx.a
    single = ctx.rows({"wait", "waitany"})
    some = ctx.rows({"waitsome"})
    for step, rows in enumerate((single[a["request"][single] < 0],
                                 some[a["vec_len"][some] <= 0])):
        rep.phase((9, 2 + step))
        for row in rows:
            rep.add(ctx.rank[row], ctx.index[row], "empty-completion",
                    f"{K.NAME[int(ctx.kind[row])]} that completes no request")
