"""Certain deadlocks: a blocking send to the rank itself at or above the eager threshold with
no receive posted, two ranks each blocked in a receive from the other."""
import pandas as pd

from .. import kinds as K
from .report import CheckContext, ValidationReport


#: SimGrid's default smpi/send-is-detached-thresh: a standard send of this many bytes or more
#: waits for its receive (a self-send of 65,536 B deadlocks its replay, of 65,535 B does not).
EAGER_THRESHOLD = 65536


def check_self_sends(ctx: CheckContext, rep: ValidationReport) -> None:
    """A blocking send to the rank itself that must wait for its receive (ssend; send/rsend
    at or above the eager threshold) with no receive from itself posted before it: a deadlock."""
    a = ctx.a
    rows = ctx.rows({"send", "ssend", "rsend"})
    rows = rows[(a["peer"][rows] == ctx.rank[rows]) &
                ((a["bytes_sent"][rows] >= EAGER_THRESHOLD) | (ctx.kind[rows] == K.CODE["ssend"]))]
    if not len(rows):
        return
    posted = ctx.rows({"irecv", "recv_init", "precv_init"})
    posted = posted[a["peer"][posted] == ctx.rank[posted]]
    rep.phase((1,))
    for row in rows:
        if not ((ctx.rank[posted] == ctx.rank[row]) & (posted < row)).any():
            rep.add(ctx.rank[row], ctx.index[row], "deadlock",
                    f"blocking {K.NAME[int(ctx.kind[row])]} of {a['bytes_sent'][row]} B to "
                    f"itself with no receive posted before (from the eager threshold, "
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
