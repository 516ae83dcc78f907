"""Converted traces (whose ``meta["source_messages"]`` holds the source's message-record
counts): every point-to-point action and persistent request has a peer, the trace holds as many
sent and received messages as the source recorded, and every wait/waitany/waitsome completes a
request, but for as many as the source's waits on MPI_REQUEST_NULL (a converter that lost a
message or a request link leaves one of these behind)."""
from .. import kinds as K
from .point_to_point import messages
from .report import CheckContext, ValidationReport


#: Point-to-point kinds whose peer a converter must have found (a persistent request's peer is
#: on its init; partitioned ones are not converted).
_NEEDS_PEER = K.SENDS | K.RECVS | K.SENDRECVS | K.SEND_INITS | {"recv_init"}


def check_converted(ctx: CheckContext, rep: ValidationReport, source: dict) -> None:
    """What a converter lost: peers, messages (against the source's counts), completions."""
    check_peers_found(ctx, rep, source)
    check_message_counts(message_counts(ctx), source, rep)
    check_completions(ctx, rep)


def peerless(ctx: CheckContext):
    """The rows of point-to-point actions without a peer."""
    rows = ctx.rows(_NEEDS_PEER)
    return rows[ctx.a["peer"][rows] < 0]


def check_peers_found(ctx: CheckContext, rep: ValidationReport, source: dict,
                      total: int | None = None) -> None:
    """Peerless actions (``total``: in the whole trace, when ``ctx`` is a share of it), unless
    the source's message records naming MPI_PROC_NULL (``source["proc_null"]``) and its
    cancelled receives read without a peer (``source["cancelled"]``: those an OTF2
    MpiRequestCancelled ended) are as many: calls on MPI_PROC_NULL have no peer either, nor
    receives cancelled."""
    rows = peerless(ctx)
    rep.phase((9, 0))
    if (len(rows) if total is None else total) <= source.get("proc_null", 0) + \
            source.get("cancelled", 0):
        return
    for row in rows:
        rep.add(ctx.rank[row], ctx.index[row], "p2p-without-peer",
                f"{K.NAME[int(ctx.kind[row])]} without a peer (its message was not found in the "
                "source)")


def message_counts(ctx: CheckContext) -> dict:
    """Messages sent and received in the trace (to add up over the parallel validate's
    workers)."""
    sends, recvs = messages(ctx)
    return {"sent": int((sends["dst"] >= 0).sum()),
            "received": int(((recvs["src"] >= 0) & ~recvs["unresolved"]).sum())}


def check_message_counts(have: dict, source: dict, rep: ValidationReport) -> None:
    rep.phase((9, 1))
    for side, n in have.items():
        if side in source and int(source[side]) != n:
            rep.add(-1, -1, "message-count-mismatch",
                    f"{n} {side} message(s) in the trace but {source[side]} in the source")


def check_completions(ctx: CheckContext, rep: ValidationReport) -> None:
    """Waits completing no request, unless the source's waits without a completion (waits on
    MPI_REQUEST_NULL, which MPI allows: ``source_messages["null_completions"]``) are as many."""
    a = ctx.a
    single = ctx.rows({"wait", "waitany"})
    some = ctx.rows({"waitsome"})
    empty = (single[a["request"][single] < 0], some[a["vec_len"][some] <= 0])
    null = ctx.d.meta.get("source_messages", {}).get("null_completions", 0)
    for step, rows in enumerate(empty):
        rep.phase((9, 2 + step))
        if len(empty[0]) + len(empty[1]) <= null:
            continue
        for row in rows:
            rep.add(ctx.rank[row], ctx.index[row], "empty-completion",
                    f"{K.NAME[int(ctx.kind[row])]} that completes no request")
