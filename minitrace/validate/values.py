"""Values: no negative size, volume or duration, no volume that is not a finite number, no
infinite time, no peer outside the world (but MPI_PROC_NULL, -1, and processes not traced,
MPI_UNDEFINED)."""
import numpy as np

from .. import kinds as K
from ..model import UNDEFINED
from .report import KEEP_PER_CATEGORY, CheckContext, ValidationReport


_POINT_TO_POINT = K.SENDS | K.RECVS | K.SENDRECVS | K.NONBLOCKING_SENDRECVS | K.INITS


def check_values(ctx: CheckContext, rep: ValidationReport) -> None:
    """Negative sizes, volumes and durations; peers outside the world (a corrupt number: the
    run had no such rank); volumes and times that are no finite number."""
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
    peer = a["peer"]
    rep.phase((0, 4), capped=True)
    for row in np.flatnonzero(p2p & ((peer >= ctx.world) | ((peer < -1) & (peer != UNDEFINED)))
                              )[:KEEP_PER_CATEGORY]:
        rep.add(ctx.rank[row], ctx.index[row], "bad-peer",
                f"{K.NAME[int(ctx.kind[row])]} with peer {a['peer'][row]} in a world of "
                f"{ctx.world} rank(s)")
    # NaN < 0 is false: a volume of NaN or inf passed the checks above (a time may be NaN: an
    # untimed trace, a call whose end was not recorded)
    for step, (col, what, bad) in enumerate((
            ("volume", "volume", ~np.isfinite(a["volume"])),
            ("t_start", "start time", np.isinf(a["t_start"])),
            ("t_end", "end time", np.isinf(a["t_end"])))):
        rep.phase((0, 5 + step), capped=True)
        for row in np.flatnonzero(bad)[:KEEP_PER_CATEGORY]:
            rep.add(ctx.rank[row], ctx.index[row], "non-finite-value",
                    f"{K.NAME[int(ctx.kind[row])]} with {what} {a[col][row]}")
