"""Values: no negative size, volume or duration, no peer beyond the world."""
import numpy as np

from .. import kinds as K
from .report import KEEP_PER_CATEGORY, CheckContext, ValidationReport


_POINT_TO_POINT = K.SENDS | K.RECVS | K.SENDRECVS | K.NONBLOCKING_SENDRECVS | K.INITS


def check_values(ctx: CheckContext, rep: ValidationReport) -> None:
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
