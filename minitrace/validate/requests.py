"""Requests: every request a call activates (non-blocking call, start of a persistent or
partitioned request) is completed by a wait/test before it is activated again or the rank
ends."""
import numpy as np
import pandas as pd

from .. import kinds as K
from .report import CheckContext, ValidationReport


# -- requests ---------------------------------------------------------------------------------
def activations(ctx: CheckContext):
    """(rows, request ids) of every activation: a non-blocking call creates its request, a
    start names the one it starts (partitioned and persistent alike), a startall lists them in
    its vector."""
    a, d = ctx.a, ctx.d
    act = ctx.rows(K.REQUEST_KINDS | {"start"})
    sa_rows, sa_req = d.vector_entries(ctx.rows({"startall"}))
    return np.concatenate([act, sa_rows]), \
        np.concatenate([a["request"][act], sa_req]).astype(np.int64)


def _completions(ctx: CheckContext):
    """(rows, request ids) of every completion: wait/waitany and test/testany with
    FLAG_COMPLETED by their request field, the *all/*some forms (tests only with
    FLAG_COMPLETED) by their vector."""
    a, d = ctx.a, ctx.d
    completes = ~K.mask(K.TESTS)[ctx.kind] | ((a["flags"] & K.FLAG_COMPLETED) != 0)
    single = ctx.rows(K.SINGLE_COMPLETIONS)
    single = single[completes[single]]
    multi = ctx.rows(K.MULTI_COMPLETIONS)
    mrows, mreq = d.vector_entries(multi[completes[multi]])
    return np.concatenate([single, mrows]), \
        np.concatenate([a["request"][single], mreq]).astype(np.int64)


def _ordered(ctx: CheckContext, parts) -> pd.DataFrame:
    """Events ``parts`` ((rows, request ids, what) each) in each rank's and request's order."""
    ev = pd.DataFrame({
        "rank": np.concatenate([ctx.rank[r] for r, _, _ in parts]),
        "req": np.concatenate([q for _, q, _ in parts]),
        "row": np.concatenate([r for r, _, _ in parts]),
        "what": np.concatenate([np.full(len(r), w) for r, _, w in parts]),
    })
    return ev[ev.req >= 0].sort_values(["rank", "req", "row"], kind="stable")


def cancelled_then_left(ctx: CheckContext, rows: np.ndarray, reqs: np.ndarray) -> np.ndarray:
    """Whether each activation (``rows``, of request ids ``reqs``) is next cancelled
    (MPI_Cancel), and then freed (MPI_Request_free) or never named again: no status says
    whether the cancel took, but the program gave the request up (public graph500's aml
    cancels its pending persistent receives so before MPI_Finalize)."""
    keys = ctx.once(_given_up)
    if not len(keys):
        return np.zeros(len(rows), bool)
    span = int(max(reqs.max(initial=0), keys[:, 1].max())) + 1
    return (reqs >= 0) & np.isin(rows.astype(np.int64) * span + reqs,
                                 keys[:, 0] * span + keys[:, 1])


def _given_up(ctx: CheckContext) -> np.ndarray:
    """(row, request) of every activation :func:`cancelled_then_left` (an array of pairs)."""
    a = ctx.a
    can, free = ctx.rows({"cancel"}), ctx.rows({"request_free"})
    if not len(can):
        return np.zeros((0, 2), np.int64)
    act_rows, act_req = ctx.once(activations)
    done_rows, done_req = ctx.once(_completions)
    ev = _ordered(ctx, [(act_rows, act_req, 0), (done_rows, done_req, 1),
                        (can, a["request"][can].astype(np.int64), 2),
                        (free, a["request"][free].astype(np.int64), 3)])
    def then(k: int, what: int):
        """The k-th next event of the same rank and request is a ``what``."""
        return (ev["rank"].shift(-k) == ev["rank"]) & (ev["req"].shift(-k) == ev["req"]) & \
            (ev["what"].shift(-k) == what)
    last = ~((ev["rank"].shift(-2) == ev["rank"]) & (ev["req"].shift(-2) == ev["req"]))
    hit = ev[(ev["what"] == 0) & then(1, 2) & (then(2, 3) | last)]
    return np.stack([hit["row"].to_numpy(np.int64), hit["req"].to_numpy(np.int64)], axis=1)


def check_requests(ctx: CheckContext, rep: ValidationReport) -> None:
    arow, areq = ctx.once(activations)
    done_rows, done_req = ctx.once(_completions)
    gone = cancelled_then_left(ctx, arow, areq)
    ev = _ordered(ctx, [(done_rows, done_req, 1), (arow[~gone], areq[~gone], 0)])
    ev["act"] = ev["what"] == 0
    same_next = (ev["rank"].shift(-1) == ev["rank"]) & (ev["req"].shift(-1) == ev["req"])
    completed = same_next & ~ev["act"].shift(-1, fill_value=True).astype(bool)
    rep.phase((8,))
    for t in ev[ev.act & ~completed].itertuples(index=False):
        row = int(t.row)
        rep.add(ctx.rank[row], ctx.index[row], "incomplete-request",
                f"request {t.req} of this {K.NAME[int(ctx.kind[row])]} is never completed by a "
                "wait or successful test")
