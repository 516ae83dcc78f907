"""A replayed run's timeline: when each replayed action started and ended, and where the time
went (compute, point-to-point, collectives, waiting), per rank.

The native replayer (:mod:`minitrace.replay.replayer_build`) writes every action's simulated start and
end; :func:`read_timed_log` turns that into a pandas table, :func:`breakdown` sums it by
category, :func:`plot_breakdown` draws it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..collectives import lowered_collective

#: Record of the replayer's timed log (see minitrace/native/replay.cpp).
TIMED_DTYPE = np.dtype([("rank", "<i4"), ("name", "<i4"), ("start", "<f8"), ("end", "<f8")])
#: Category of each SimGrid TI action.
CATEGORY = {
    "compute": "compute", "sleep": "compute",
    "send": "point-to-point", "isend": "point-to-point", "recv": "point-to-point",
    "irecv": "point-to-point", "sendRecv": "point-to-point",
    "wait": "waiting", "waitany": "waiting", "waitall": "waiting", "test": "waiting",
    **{c: "collectives" for c in ("barrier", "bcast", "reduce", "allreduce", "alltoall",
                                  "alltoallv", "gather", "scatter", "gatherv", "scatterv",
                                  "allgather", "allgatherv", "reducescatter", "scan",
                                  "exscan")},
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
    the replay spends between actions, e.g. start-up and finalization).  The messages and waits
    of lowered collectives (their reserved tags, :mod:`minitrace.collectives`; not the
    acknowledgements of synchronous sends) count as collectives."""
    if "tag" in timeline:
        lowered = lowered_collective(timeline["tag"].to_numpy())
        if lowered.any():
            cat = timeline["category"].copy()
            cat[lowered] = "collectives"
            timeline = timeline.assign(category=cat)
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
    from ..analysis.plotting import plt, save
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


def attach_messages(timeline: pd.DataFrame, traces: list[str]) -> pd.DataFrame:
    """Add each action's message endpoints from the replayed TI lines: ``src``, ``dst``, ``tag``
    (-1 where the action has none): sends and receives name their peer, waits and tests the
    request they complete (``wait src dst tag``); sendRecv its receive side, and its send's
    destination in ``send_to``."""
    cols = {c: np.full(len(timeline), -1, dtype=np.int64) for c in ("src", "dst", "tag", "send_to")}
    row = 0
    for rank, path in enumerate(traces):
        with open(path) as fh:
            for line in fh:
                tok = line.split()
                if not tok:
                    continue
                name = tok[1]
                if name in ("send", "isend"):
                    cols["src"][row], cols["dst"][row], cols["tag"][row] = rank, int(tok[2]), int(tok[3])
                elif name in ("recv", "irecv"):
                    cols["src"][row], cols["dst"][row], cols["tag"][row] = int(tok[2]), rank, int(tok[3])
                elif name in ("wait", "test"):
                    cols["src"][row], cols["dst"][row], cols["tag"][row] = (int(t) for t in tok[2:5])
                elif name == "sendRecv":
                    cols["src"][row], cols["dst"][row], cols["tag"][row] = int(tok[5]), rank, 0
                    cols["send_to"][row] = int(tok[3])
                row += 1
    if row != len(timeline):
        raise ValueError(f"{row} TI lines for {len(timeline)} timed actions")
    return timeline.assign(**cols)


def critical_path(timeline: pd.DataFrame, rank_end_times) -> pd.DataFrame:
    """The chain of actions that determined the end time, found by walking back from the rank
    that finished last ("last arrival"): at a receive or wait whose message was sent after the
    rank began waiting, the path jumps to the sender's send; at a collective, to the rank that
    entered it last; elsewhere it stays on the rank.  Needs :func:`attach_messages`.

    Returns one row per action on the path, latest first: rank, seq, action, category, and the
    ``start``/``end`` of the part of it on the path (those parts tile the run from 0 to the end
    time, except where a rank sat between actions).
    """
    eps = 1e-12
    ranks = [g.reset_index(drop=True) for _, g in timeline.groupby("rank", sort=True)]
    sender = _senders(ranks)            # (dst rank, seq of recv/irecv) -> (src rank, seq of send)
    completes = _completions(ranks)     # (rank, seq of wait/waitall/test) -> [(rank, seq) of irecv]
    colls = _collective_instances(ranks)
    r = int(np.argmax(rank_end_times))
    i = len(ranks[r]) - 1
    t = float(rank_end_times[r])
    path = []
    while i >= 0 and t > eps:
        a = ranks[r].iloc[i]
        start = float(a["start"])
        jump = None
        posted = [(r, i)] if a["action"] in ("recv", "sendRecv") else completes.get((r, i), [])
        for key in posted:
            s = sender.get(key)
            if s is not None:
                s_start = float(ranks[s[0]].at[s[1], "start"])
                if s_start > start + eps and (jump is None or s_start > jump[2]):
                    jump = (s[0], s[1], s_start)
        if a["category"] == "collectives":
            last = max(colls[(r, i)], key=lambda q: float(ranks[q[0]].at[q[1], "start"]))
            q_start = float(ranks[last[0]].at[last[1], "start"])
            if last[0] != r and q_start > start + eps:
                jump = (last[0], last[1], q_start)
        seg_start = jump[2] if jump else start
        path.append((r, i, a["action"], a["category"], seg_start, t))
        t = seg_start
        if jump:
            r, i = jump[0], jump[1]
            # the sender's action itself ends after t when it blocked: keep only what precedes
            a2 = ranks[r].iloc[i]
            path.append((r, i, a2["action"], a2["category"], float(a2["start"]), t))
            t = float(a2["start"])
        i -= 1
    return pd.DataFrame(path, columns=["rank", "seq", "action", "category", "start", "end"])


def _senders(ranks):
    """Match sends to receives per (src, dst, tag) in order (MPI's non-overtaking rule)."""
    sends: dict[tuple, list] = {}
    recvs: dict[tuple, list] = {}
    for r, t in enumerate(ranks):
        rows = zip(t["action"], t["src"], t["dst"], t["tag"], t["send_to"])
        for seq, (act, src, dst, tag, to) in enumerate(rows):
            if act in ("send", "isend"):
                sends.setdefault((src, dst, tag), []).append((r, seq))
            elif act in ("recv", "irecv"):
                recvs.setdefault((src, dst, tag), []).append((r, seq))
            elif act == "sendRecv":
                sends.setdefault((r, to, 0), []).append((r, seq))
                recvs.setdefault((src, r, 0), []).append((r, seq))
    return {rv: sd for key, rvs in recvs.items() for rv, sd in zip(rvs, sends.get(key, []))}


def _completions(ranks):
    """Which non-blocking receives each wait, waitall or test completed (SimGrid keeps pending
    requests per (src, dst, tag) in order; waitall completes every pending one)."""
    out = {}
    for r, t in enumerate(ranks):
        pending: dict[tuple, list] = {}
        for seq, (act, src, dst, tag) in enumerate(zip(t["action"], t["src"], t["dst"], t["tag"])):
            if act in ("irecv", "isend"):
                pending.setdefault((src, dst, tag), []).append((r, seq, act))
            elif act in ("wait", "test"):
                q = pending.get((src, dst, tag))
                if q:
                    done = q.pop(0)
                    out[(r, seq)] = [done[:2]] if done[2] == "irecv" else []
            elif act == "waitall":
                out[(r, seq)] = [p[:2] for q in pending.values() for p in q if p[2] == "irecv"]
                pending.clear()
    return out


def _collective_instances(ranks):
    """The k-th collective of every rank is one collective (TI replays collectives on
    MPI_COMM_WORLD only): (rank, seq) -> every rank's (rank, seq) of that instance."""
    seqs = [np.flatnonzero((t["category"] == "collectives").to_numpy()) for t in ranks]
    out = {}
    for k in range(min((len(s) for s in seqs), default=0)):
        inst = [(r, int(s[k])) for r, s in enumerate(seqs)]
        for key in inst:
            out[key] = inst
    return out


def perfetto_slices(timeline: pd.DataFrame, critical: pd.DataFrame | None = None) -> list[list]:
    """Per rank, the replayed actions as :mod:`minitrace.converters.perfetto` slices (name, start,
    end, args); actions on the critical path carry ``critical: true``."""
    on_path = set() if critical is None else set(zip(critical["rank"], critical["seq"]))
    per_rank: list[list] = [[] for _ in range(int(timeline["rank"].max()) + 1 if len(timeline) else 0)]
    has_msg = "src" in timeline
    for row in timeline.itertuples(index=False):
        args = {"category": row.category}
        if has_msg and row.src >= 0:
            args.update(src=int(row.src), dst=int(row.dst), tag=int(row.tag))
        if (row.rank, row.seq) in on_path:
            args["critical"] = True
        per_rank[row.rank].append((row.action, float(row.start), float(row.end), args))
    return per_rank
