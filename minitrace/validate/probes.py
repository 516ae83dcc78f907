"""Matched probes: each message a probe dequeues is received once, later, by a matched receive
with the probe's source, tag and communicator."""
import numpy as np
import pandas as pd

from .. import matched_probes
from .. import kinds as K
from .report import CheckContext, ValidationReport


def probe_sides(ctx: CheckContext) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Matched probes and matched receives by message id: two frames (rank, id, row)."""
    return matched_probes.sides(ctx.d, np.arange(len(ctx.a)), ctx.rank)


def check_matched_probes(ctx: CheckContext, rep: ValidationReport) -> None:
    """Each probed message received once, after its probe, with the probe's source/tag/comm."""
    probed, recvs = probe_sides(ctx)
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
