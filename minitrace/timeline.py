"""A replayed run's timeline: when each replayed action started and ended, and where the time
went (compute, point-to-point, collectives, waiting), per rank.

The native replayer (:mod:`minitrace.replay_native`) writes every action's simulated start and
end; :func:`read_timed_log` turns that into a pandas table, :func:`breakdown` sums it by
category, :func:`plot_breakdown` draws it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

#: Record of the replayer's timed log (see minitrace/native/replay.cpp).
TIMED_DTYPE = np.dtype([("rank", "<i4"), ("name", "<i4"), ("start", "<f8"), ("end", "<f8")])
#: Category of each SimGrid TI action.
CATEGORY = {
    "compute": "compute", "sleep": "compute",
    "send": "point-to-point", "isend": "point-to-point", "recv": "point-to-point",
    "irecv": "point-to-point", "sendRecv": "point-to-point",
    "wait": "waiting", "waitall": "waiting", "test": "waiting",
    **{c: "collectives" for c in ("barrier", "bcast", "reduce", "allreduce", "alltoall",
                                  "alltoallv", "gather", "scatter", "gatherv", "scatterv",
                                  "allgather", "allgatherv", "reducescatter")},
}
CATEGORIES = ("compute", "point-to-point", "collectives", "waiting", "other")


def read_timed_log(path, names: list[str]) -> pd.DataFrame:
    """One row per replayed action, in each rank's order: rank, seq (position among the rank's
    replayed actions), action, category, start, end, duration (seconds of simulated time)."""
    rec = np.fromfile(path, dtype=TIMED_DTYPE)
    ranks = rec["rank"]
    starts = np.flatnonzero(np.r_[True, ranks[1:] != ranks[:-1]]) if len(rec) else np.zeros(0, int)
    seq = np.arange(len(rec)) - np.repeat(starts, np.diff(np.r_[starts, len(rec)]))
    action = np.asarray(names, dtype=object)[rec["name"]] if len(rec) else np.zeros(0, object)
    cats = pd.Categorical([CATEGORY.get(a, "other") for a in names], categories=CATEGORIES)
    return pd.DataFrame({
        "rank": ranks, "seq": seq, "action": action,
        "category": pd.Categorical.from_codes(cats.codes[rec["name"]], categories=CATEGORIES)
        if len(rec) else pd.Categorical([], categories=CATEGORIES),
        "start": rec["start"], "end": rec["end"], "duration": rec["end"] - rec["start"]})


def breakdown(timeline: pd.DataFrame, rank_end_times=None) -> pd.DataFrame:
    """Seconds of simulated time per rank and category (columns :data:`CATEGORIES`), plus
    ``end`` (when the rank finished) and ``idle`` (end minus the time in its actions: time
    the replay spends between actions, e.g. start-up and finalization)."""
    table = (timeline.groupby(["rank", "category"], observed=False)["duration"].sum()
             .unstack("category").reindex(columns=list(CATEGORIES), fill_value=0.0))
    table.columns = list(table.columns)
    if rank_end_times is not None:
        table = table.reindex(range(len(rank_end_times)), fill_value=0.0)
        table["end"] = np.asarray(rank_end_times, dtype=float)
        table["idle"] = (table["end"] - table[list(CATEGORIES)].sum(axis=1)).clip(lower=0.0)
    table.index.name = "rank"
    return table


def plot_breakdown(table: pd.DataFrame, path: str, title: str = "") -> None:
    """Stacked bars: where each rank's simulated time went."""
    from .analysis.plotting import plt, save
    cols = [c for c in (*CATEGORIES, "idle") if c in table and table[c].any()]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.25 * len(table) + 3), 4))
    bottom = np.zeros(len(table))
    for c in cols:
        ax.bar(table.index, table[c], bottom=bottom, label=c, width=0.8)
        bottom += table[c].to_numpy()
    ax.set_xlabel("rank")
    ax.set_ylabel("simulated time (s)")
    ax.set_title(title or "where the replayed time goes")
    if len(table) <= 32:
        ax.set_xticks(table.index)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    save(fig, path)
