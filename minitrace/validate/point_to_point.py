"""Point-to-point: the n-th send from s to d with (tag, comm) meets the n-th receive posted by
d for (s, tag, comm), and both sides agree on the bytes (a matched receive, MPI_Mrecv/Imrecv,
takes its message where its probe dequeued it)."""
import numpy as np
import pandas as pd

from .. import kinds as K
from .. import matched_probes
from .deadlocks import check_recv_cycles, first_blocking_receives
from .probes import probe_sides
from .report import CheckContext, ValidationReport
from .requests import cancelled_then_left


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


def messages(ctx: CheckContext):
    """Send and receive halves of every message as two DataFrames with the same columns
    (``order``: where the message was matched, the row of a matched receive's probe; ``part``:
    which kind of action it comes from; ``kind`` and ``index`` of its row; rows global)."""
    a, rank = ctx.a, ctx.rank
    cols = ("src", "dst", "tag", "comm", "bytes", "row", "unresolved")

    def frame(rows, src, dst, tag, nbytes, unresolved=None, part=0, posted=False):
        f = pd.DataFrame(dict(zip(cols, (src, dst, tag, a["comm"][rows], nbytes, rows,
                                         np.zeros(len(rows), bool) if unresolved is None
                                         else unresolved))))
        f["part"] = part          # 0 the action's own message, 1 a sendrecv's, 2 a start's
        f["posted"] = posted      # bytes as posted (a buffer's room), not as received
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
    links = matched_probes.links(*probe_sides(ctx)).dropna()
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
            else:     # a start that holds its completion's status (COMPLETED) has its own
                own = (a["flags"][srow] & K.FLAG_COMPLETED) != 0
                row = np.where(own, srow, irow)
                f = frame(irow, a["peer"][row], rank[irow], a["tag"][row],
                          a["bytes_recv"][row], (a["flags"][srow] & K.FLAG_UNRESOLVED) != 0,
                          part=2, posted=~own)
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
    """The halves of the messages to match (``messages``), receives never completed reported
    and left out, and those of MPI_PROC_NULL (-1), which carry none."""
    sends, recvs = messages(ctx)
    rows = recvs["row"].to_numpy(np.int64) - ctx.row_base
    own = K.mask({"irecv", "start"})[ctx.kind[rows]]   # (a request of its own)
    if own.any():     # a receive cancelled, then freed or left: no status, taken as given up
        gone = np.zeros(len(rows), bool)                  # (had its cancel not taken, the
        gone[own] = cancelled_then_left(                   # send it matched is unmatched)
            ctx, rows[own], ctx.a["request"][rows[own]].astype(np.int64))
        recvs = recvs[~gone]
    bad = recvs["unresolved"].to_numpy()
    for part, sub in recvs[bad].groupby("part", sort=True):
        rep.phase((3, 0, int(part)))
        for t in sub.itertuples(index=False):
            rep.add(t.dst, t.index, "unresolved-recv",
                    f"{K.NAME[int(t.kind)]} whose completion was never recorded "
                    "(source/size unknown)")
    recvs = recvs[~bad]
    return sends[sends["dst"] >= 0], recvs[recvs["src"] >= 0]


#: A message stream: its n-th send is matched to its n-th receive.
STREAM = ["src", "dst", "tag", "comm"]


def paired(sends: pd.DataFrame, recvs: pd.DataFrame, how: str = "inner") -> pd.DataFrame:
    """The n-th send of each :data:`STREAM` beside its n-th receive (``order``: the calls'
    order within their rank; columns of both sides suffixed ``_s``/``_r``, and ``seq``, the
    message's place in its stream); ``how="outer"`` keeps the unmatched halves, ``_merge``
    says which."""
    sends, recvs = (f.sort_values("order", kind="stable") for f in (sends, recvs))
    for f in (sends, recvs):
        f["seq"] = f.groupby(STREAM, sort=False).cumcount()
    return sends.merge(recvs.drop(columns="order"), on=STREAM + ["seq"], how=how,
                       suffixes=("_s", "_r"), indicator=True)


def match_messages(sends: pd.DataFrame, recvs: pd.DataFrame, rep: ValidationReport):
    """Pair the n-th send of each (src, dst, tag, comm) stream with its n-th receive
    (:func:`paired`); report the unmatched ones; returns the matched messages.  Needs every
    message of the streams of its senders (the parallel validate gives each worker those of
    its ranks' sends)."""
    m = paired(sends, recvs, "outer")
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
    """Both sides of a matched message agree on its bytes; a receive known by its posted
    bytes only (a persistent receive's start without its status: by MPI_Startall, or never
    completed) holds a message that fits in them (MPI allows a smaller one: a persistent halo
    exchange's buffers are its largest message's)."""
    rep.phase((3, 4))
    bad = both["bytes_s"] != both["bytes_r"]
    if "posted_r" in both:
        bad &= ~(both["posted_r"].astype(bool) & (both["bytes_s"] < both["bytes_r"]))
    for t in both[bad].itertuples(index=False):
        rep.add(t.dst, int(t.index_r), "size-mismatch",
                f"{K.NAME[int(t.kind_r)]} from {t.src} tag {t.tag} comm {t.comm} receives "
                f"{int(t.bytes_r)} B but the matching {K.NAME[int(t.kind_s)]} (rank {t.src} "
                f"action {int(t.index_s)}) sends {int(t.bytes_s)} B")


def check_p2p(ctx: CheckContext, rep: ValidationReport) -> None:
    both = match_messages(*message_halves(ctx, rep), rep)
    check_recv_cycles(first_blocking_receives(both), rep)
    check_sizes_match(both, rep)
