"""Per-rank summary of a trace, computed from the kind index and the byte/volume columns."""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import kinds as K


def summarize(r, ranks: range | None = None) -> pd.DataFrame:
    """One row per rank of the trace read by ``r`` (a HDF5TraceReader, passed by Trace.summary),
    of every rank or of ``ranks`` (a parallel worker's): ``actions``, ``bytes_sent``,
    ``bytes_recv``, ``volume``, ``t_first``, ``t_last``, ``span`` (seconds, NaN when untimed)
    and one ``n_<kind>`` column per kind present in the trace."""
    names, counts = r.kind_counts()
    ranks = range(r.nranks) if ranks is None else ranks
    rows = []
    for rank in ranks:
        lo, hi = int(r.offsets[rank]), int(r.offsets[rank + 1])
        a = r.columns(lo, hi)  # decoded columns: no record array is assembled for a sum
        ts, te = a["t_start"], a["t_end"]
        t_first = float(np.nanmin(ts)) if hi > lo and np.isfinite(ts).any() else np.nan
        t_last = float(np.nanmax(te)) if hi > lo and np.isfinite(te).any() else np.nan
        rows.append({"rank": rank, "actions": hi - lo,
                     "bytes_sent": int(a["bytes_sent"].sum()),
                     "bytes_recv": int(a["bytes_recv"].sum()),
                     "volume": float(a["volume"].sum()),
                     "t_first": t_first, "t_last": t_last, "span": t_last - t_first})
    df = pd.DataFrame(rows, columns=["rank", "actions", "bytes_sent", "bytes_recv", "volume",
                                     "t_first", "t_last", "span"]).set_index("rank")
    for j, name in enumerate(names):
        df[f"n_{name}"] = counts[ranks.start:ranks.stop, j]
    return df


def in_call_volumes(t, df: pd.DataFrame) -> pd.Series | None:
    """Per rank of a :func:`summarize` table ``df`` of the open trace ``t``, the volume its
    reductions hold, or None where there is none or it is work: in a recorded trace (seconds
    or instructions) the CPU time or instructions spent inside the call, mostly waiting,
    which a replay leaves out (public Nekbone, 4 ranks: 14 of a rank's 18 s), in flops (a
    SimGrid trace's) the reduction's own computation, which it replays."""
    present = [k for k in sorted(K.REDUCTIONS) if df.get(f"n_{k}", pd.Series(0)).sum()]
    if t.volume_unit == "flops" or not present:
        return None
    out = pd.Series(0.0, index=df.index)
    for kind in present:
        a = t.actions(kind=kind)
        out = out.add(a.groupby("rank")["volume"].sum(), fill_value=0.0)
    out = out.reindex(df.index)
    return out if out.abs().sum() > 0 else None


#: The per-rank table shows this many kinds, those with the most actions (``info --kinds``: all).
SHOWN_KINDS = 6


def shown_kinds(df: pd.DataFrame, every: bool = False) -> tuple[list[str], str]:
    """The ``n_<kind>`` columns of a :func:`summarize` table that a per-rank table shows (the
    ``SHOWN_KINDS`` with the most actions, or every one), and a line naming the kinds left out
    ("" when none is): without it, the counts shown do not add up to the actions."""
    kinds = [c for c in df.columns if c.startswith("n_")]
    order = df[kinds].sum().sort_values(ascending=False)
    shown = kinds if every else order.index[:SHOWN_KINDS].tolist()
    rest = order.drop(shown)
    if rest.empty:
        return shown, ""
    return shown, ("kinds not shown (actions of all ranks): "
                   + ", ".join(f"{c[2:]} {int(v):,}" for c, v in rest.items())
                   + "; `minitrace info --kinds` shows every kind per rank")


def persistent_note(df: pd.DataFrame) -> str:
    """A line saying how a :func:`summarize` table counts persistent requests' bytes ("" for a
    trace without any): the columns' sums take a send_init's or recv_init's bytes once, as
    posted, not at each start, and a receive's start its message's where its status was
    recorded (public OSU osu_latency_persistent: 2,047 bytes sent where 112,585 were)."""
    inits = [f"n_{k}" for k in sorted(K.SEND_INITS | K.RECV_INITS) if f"n_{k}" in df.columns]
    if not inits or not df[inits].to_numpy().sum():
        return ""
    return ("note: bytes_sent and bytes_recv count a persistent request's bytes once, at its "
            "send_init or recv_init (as posted), not at each of its starts; a receive's start "
            "adds the bytes it received where its status was recorded")


def folded_note(meta: dict) -> str:
    """A line saying how many failed polls the recorder folded ("" when none was): a run of
    equal tests or iprobes that found nothing (or of cycles of them) is one action per poll
    of the cycle (docs/RECORDER.md), so the counts
    shown are not the program's calls."""
    folded = meta.get("folded_polls")
    if not folded or not sum(folded):
        return ""
    per = folded if len(folded) <= 8 else f"{folded[:8]} ... ({len(folded)} ranks)"
    return (f"folded_polls: {sum(folded):,} failed polls (tests, iprobes that found nothing) "
            f"were each folded at record time into the equal poll before them (in a run or a "
            f"cycle of up to 4 polls), per rank {per} "
            f"(record --no-fold-polls keeps every one)")


def send_matrix(t) -> pd.DataFrame:
    """Bytes sent by point-to-point sends from each rank (rows) to each peer (columns) of an
    open trace, read through the kind index."""
    P = t.nranks
    m = np.zeros((P, P), np.int64)
    for kind in sorted(K.SENDS):
        df = t.actions(kind=kind)
        ok = ((df["peer"] >= 0) & (df["peer"] < P)).to_numpy()
        np.add.at(m, (df["rank"].to_numpy()[ok], df["peer"].to_numpy()[ok]),
                  df["bytes_sent"].to_numpy()[ok])
    return pd.DataFrame(m, index=pd.Index(range(P), name="sender"),
                        columns=pd.Index(range(P), name="receiver"))
