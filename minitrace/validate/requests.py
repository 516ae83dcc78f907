"""Requests: every request a call activates (non-blocking call, start of a persistent or
partitioned request) is completed by a wait/test before it is activated again or the rank
ends."""
import numpy as np
import pandas as pd

from .. import kinds as K
from .report import CheckContext, ValidationReport


# -- requests ---------------------------------------------------------------------------------
def check_requests(ctx: CheckContext, rep: ValidationReport) -> None:
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
