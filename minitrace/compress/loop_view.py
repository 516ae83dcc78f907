"""The loops a user (or iteration sampling) wants to see: the top-level loops of each rank's
grammar, with their iterations' row ranges, and a readable description of a loop's body."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import kinds as K
from ..errors import MinitraceError
from .grammar import Grammar, build
from .signatures import encode, terminal_signatures
from .store import rank_signatures

#: A top-level loop covering less than this share of its rank's actions is not listed.
MIN_SHARE = 0.01
COLUMNS = ["loop", "iteration", "rank", "first_row", "last_row", "main"]
#: Calls that only ask whether a request completed or a message arrived: how many a rank
#: makes, and which of them succeed, depend on timing (SNAP's sweep polls its upstream faces
#: until they arrive), so they say nothing about which iteration of a loop a rank is in.
POLLS = frozenset({"test", "testany", "testsome", "testall", "iprobe", "improbe"})
#: Calls that return without waiting for another rank: between two calls that may wait, the
#: order in which a rank makes them can follow the order in which messages arrive (SNAP
#: starts the sweep corner whose faces came first), and polls come in any number.
UNORDERED = K.REQUEST_KINDS | K.STARTS | POLLS | {"compute"}
_UNORDERED = K.mask(UNORDERED)
#: :func:`step_view`'s id of a run of calls that do not wait.
RUN = 0


def step_view(ids: np.ndarray, kind: np.ndarray, rank_offsets: np.ndarray):
    """A rank's actions as steps, for a loop search that timing must not defeat: each call that
    may wait for another rank (a collective, a wait, a blocking message) is a step of its own
    (its id), and each run of calls between two of them that do not wait (posts, polls,
    computes) is one step, the same whatever it holds.  Without it no two iterations of a
    pipelined sweep are alike (SNAP: the number of failed polls between two messages, which
    poll sees a message arrive, and the order in which a rank posts its corners' messages
    change from one iteration to the next; a sweep's extent changes as groups converge).
    What such a run holds is the iteration's cost, which sampling regresses on, and whether
    it may be skipped, which sampling checks on the trace's own rows.

    Returns (each step's id, dense from 0; the number of ids; each step's first row of the
    trace; each rank's first step, [nranks + 1]).  A step's rows run to the next step's first
    row."""
    kind = np.asarray(kind)
    n = len(kind)
    free = _UNORDERED[kind]
    start = np.zeros(n, bool)
    start[rank_offsets[:-1][rank_offsets[:-1] < n]] = True
    rows = np.flatnonzero(~free | start | (free & ~np.r_[True, free[:-1]]))
    waits = ~free[rows]
    step = np.full(len(rows), RUN, np.int64)
    step[waits], m = pd.factorize(ids[rows][waits])
    step[waits] += RUN + 1
    return step, len(m) + 1, rows, np.searchsorted(rows, rank_offsets)


def rows_of_view(bounds: np.ndarray, keep: np.ndarray, view_offsets: np.ndarray,
                 rank_offsets: np.ndarray) -> np.ndarray:
    """Iteration bounds [nranks, iterations + 1] found among a :func:`step_view`'s rows, as
    rows of the trace: an iteration starts at its first row in the view, and the polls and
    computes left out after an iteration's last row belong to it (a loop ending where its rank
    does ends at the rank's end)."""
    at = np.r_[keep, rank_offsets[-1]][bounds]
    ends = bounds >= view_offsets[1:, None]
    return np.where(ends, rank_offsets[1:, None], at).astype(np.int64)


def top_loops(grammar: Grammar, g: int, min_share: float = MIN_SHARE) -> pd.DataFrame:
    """Top-level loops of grammar ``g``: ``start`` (first action, within the rank), ``rows``
    (actions in all iterations), ``iterations``, ``per_iteration`` (actions), ``rule``."""
    return pd.DataFrame(_top(grammar, g, min_share))


def _top(grammar: Grammar, g: int, min_share: float) -> dict[str, np.ndarray]:
    """:func:`top_loops` as columns."""
    top = grammar.top(g)
    lens = grammar.lengths()[top] if len(top) else np.zeros(0, np.int64)
    total = int(lens.sum())
    starts = np.cumsum(lens) - lens
    is_rule = top >= grammar.nterm
    keep = is_rule & (lens >= max(1, min_share * total))
    rules = top[keep] - grammar.nterm
    counts = grammar.rule_counts[rules] if len(rules) else np.zeros(0, np.int64)
    return {"start": starts[keep], "rows": lens[keep], "iterations": counts,
            "per_iteration": lens[keep] // np.maximum(counts, 1), "rule": rules}


def nested(grammar: Grammar, loops: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Of each loop of :func:`top_loops`' columns, the first run of the longest loop in its
    body (the same columns; loops without one are left out): where a rank's outer loop runs a
    few times, its inner one may be what repeats (SNAP: time steps of outer iterations of a
    varying number of sweeps)."""
    lens = grammar.lengths()
    rows = []
    for start, loop_rule in zip(loops["start"].tolist(), loops["rule"].tolist()):
        body = grammar.body(int(loop_rule))
        inner = np.flatnonzero(body >= grammar.nterm)
        if not len(inner):
            continue
        j = int(inner[np.argmax(lens[body[inner]])])
        rule = int(body[j]) - grammar.nterm
        count = int(grammar.rule_counts[rule])
        rows.append((int(start) + int(lens[body[:j]].sum()), int(lens[body[j]]), count,
                     int(lens[body[j]]) // count, rule))
    names = ("start", "rows", "iterations", "per_iteration", "rule")
    return {c: np.array([r[k] for r in rows], np.int64) for k, c in enumerate(names)}


def iterations(grammar: Grammar, rank_offsets: np.ndarray,
               min_share: float = MIN_SHARE, depth: int = 0) -> pd.DataFrame:
    """Every iteration of every top-level loop of every rank (see :func:`loops`); with
    ``depth``, of the loops that many levels inside them (:func:`nested`)."""
    return pd.DataFrame(iteration_columns(grammar, rank_offsets, min_share, depth))[COLUMNS]


def iteration_columns(grammar: Grammar, rank_offsets: np.ndarray,
                      min_share: float = MIN_SHARE, depth: int = 0) -> dict[str, np.ndarray]:
    """:func:`iterations` as a dict of numpy columns, without the DataFrame (iteration
    sampling searches tens of grammars' loops, a DataFrame of each rank's costing more than
    the search)."""
    parts = []
    per_grammar = {}
    for rank, g in enumerate(grammar.rank_grammar.tolist()):
        if g not in per_grammar:
            per_grammar[g] = _top(grammar, g, min_share)
            for _ in range(depth):
                per_grammar[g] = nested(grammar, per_grammar[g])
        t = per_grammar[g]
        if not len(t["rows"]):
            continue
        main = int(np.argmax(t["rows"]))
        its = t["iterations"]
        loop = np.repeat(np.arange(len(its)), its)
        it = np.arange(int(its.sum())) - np.repeat(np.cumsum(its) - its, its)
        per = np.repeat(t["per_iteration"], its)
        first = rank_offsets[rank] + np.repeat(t["start"], its) + it * per
        parts.append((loop, it, np.full(len(it), rank, np.int64), first, first + per - 1,
                      loop == main))
    types = (np.int64,) * 5 + (bool,)
    return {c: np.concatenate([p[k] for p in parts]).astype(types[k]) if parts else
            np.zeros(0, types[k]) for k, c in enumerate(COLUMNS)}


def loops(data, min_share: float = MIN_SHARE) -> pd.DataFrame:
    """Where each rank's main loop(s) are: one row per (loop, iteration, rank).

    Parameters
    ----------
    data : minitrace.model.TraceColumns or minitrace.trace.Trace
        An uncompressed trace in memory (its grammar is built here, at millions of actions
        per second) or an open file, compressed (its stored grammar is used, nothing is
        expanded) or not.
    min_share : float
        Loops covering less than this share of their rank's actions are left out.

    Returns
    -------
    pandas.DataFrame
        Columns ``loop`` (the rank's top-level loops, numbered 0, 1... in program order),
        ``iteration`` (0-based), ``rank``, ``first_row`` and ``last_row`` (inclusive: global
        row numbers of ``data.actions``, rank-major, so rank r's row ``i`` within the rank is
        ``first_row - rank_offsets[r]``), ``main`` (True for the rank's loop covering the most
        actions).  A loop is the outermost repetition the grammar found: its body is one
        iteration, however many nested loops it holds; iterations of one loop have equal
        lengths.  Ranks without a loop have no rows.
    """
    grammar, offsets = _grammar_of(data)
    return iterations(grammar, offsets, min_share)


def _grammar_of(data) -> tuple[Grammar, np.ndarray]:
    c = getattr(data, "compressed_form", None)
    if c is not None:
        return signature_grammar(c, getattr(data, "path", None)), c.rank_offsets
    if hasattr(data, "compressed_form"):
        data = data.data()
    sig = encode(data)
    return build(sig.ids, data.rank_offsets, len(sig.table)), data.rank_offsets


def signature_grammar(c, path: str | None = None) -> Grammar:
    """The grammar of a compressed trace ``c``'s signatures: its stored one, but where it
    holds size tokens (format version 12), one built again on the rank's signatures, tokens
    resolved.  A loop of tokens may run over iterations whose sizes differ (miniMD's blocks
    of steps between re-neighbourings), which iteration sampling would take for alike
    iterations: the loops are those of the file written without tokens, as the
    uncompressed trace's are (``path``: the file, named by the error where its tokens do not
    resolve)."""
    if c.tokens is None:
        return c.grammar
    try:
        ids = [rank_signatures(c, r) for r in range(c.nranks)]
    except ValueError as e:
        raise MinitraceError(f"corrupt trace: {e}", path) from None
    return build(np.concatenate(ids + [np.zeros(0, np.int64)]), c.rank_offsets, len(c.table))


def describe(grammar: Grammar, table: np.ndarray, rule: int, limit: int = 12) -> str:
    """A rule's body as the user reads it: "[6 isend, 6 irecv, waitall, compute, allreduce]"
    (runs of one kind counted; nested loops shown as "N x [...]")."""
    items = []
    body = grammar.body(rule)
    for s in body.tolist():
        if s < grammar.nterm:
            name = K.NAME.get(int(table["kind"][s]), "?")
            if items and items[-1][1] == name:
                items[-1][0] += 1
            else:
                items.append([1, name])
        else:
            inner = s - grammar.nterm
            items.append([1, f"{grammar.rule_counts[inner]} x "
                             f"{describe(grammar, table, inner, limit)}"])
    shown = [f"{n} {name}" if n > 1 else name for n, name in items[:limit]]
    if len(items) > limit:
        shown.append(f"... {len(items) - limit} more")
    return "[" + ", ".join(shown) + "]"


def _ranges(ranks: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    out, start = [], None
    for i, r in enumerate(ranks):
        if start is None:
            start = r
        if i + 1 == len(ranks) or ranks[i + 1] != r + 1:
            out.append(f"{start}" if start == r else f"{start}-{r}")
            start = None
    return ",".join(out)


def loop_summary(trace, min_share: float = MIN_SHARE) -> pd.DataFrame:
    """One row per top-level loop of each distinct rank program of an open trace: ``ranks``
    running it, ``loop``, ``iterations``, ``per_iteration``, ``first``/``last`` (actions within
    the rank), ``share_actions``, ``share_time`` (of the first such rank's span; NaN untimed),
    ``main`` (the one loop covering the most actions; none where several tie: 49 equal loops
    of miniMD's, re-neighboured every 20 steps, are no main loop), ``shape`` (equal for rank
    programs that differ only in loop counts) and ``body``
    ("[6 isend, 6 irecv, waitall, compute, allreduce]")."""
    c = trace.compressed_form
    if c is not None:
        grammar, table = c.grammar, c.table[terminal_signatures(len(c.table), c.tokens)]
    else:
        data = trace.data()
        sig = encode(data)
        grammar, table = build(sig.ids, data.rank_offsets, len(sig.table)), sig.table
    rows = []
    shapes = grammar.shapes()
    for g in range(len(grammar.top_offsets) - 1):
        ranks = np.nonzero(grammar.rank_grammar == g)[0].tolist()
        if not ranks:
            continue
        t = top_loops(grammar, g, min_share)
        n = grammar.rank_length(g)
        most = t["rows"].to_numpy() == t["rows"].max() if len(t) else np.zeros(0, bool)
        times = None
        for j, loop in enumerate(t.itertuples()):
            if times is None:
                times = _rank_times(trace, ranks[0])
            ts, te = times
            lo, hi = int(loop.start), int(loop.start + loop.rows)
            span = np.nanmax(te) - np.nanmin(ts) if np.isfinite(ts).any() else np.nan
            share_t = (te[hi - 1] - ts[lo]) / span if span and np.isfinite(span) else np.nan
            rows.append({"ranks": _ranges(ranks), "loop": j, "iterations": int(loop.iterations),
                         "per_iteration": int(loop.per_iteration), "first": lo, "last": hi - 1,
                         "share_actions": loop.rows / max(n, 1), "share_time": share_t,
                         "main": bool(most[j] and most.sum() == 1),
                         "shape": int(shapes[g]),
                         "body": describe(grammar, table, int(loop.rule))})
    return pd.DataFrame(rows, columns=["ranks", "loop", "iterations", "per_iteration", "first",
                                       "last", "share_actions", "share_time", "main", "shape",
                                       "body"])


def _rank_times(trace, rank: int):
    a = trace.actions(rank)
    return a["t_start"].to_numpy(), a["t_end"].to_numpy()


def loop_lines(table: pd.DataFrame) -> list[str]:
    """The loop summary as a user reads it: "main loop: 500 iterations of [...]"; rank
    programs that differ only in loop counts are said to."""
    lines = []
    programs = table.drop_duplicates("ranks")
    for shape, same in programs.groupby("shape"):
        if len(same) > 1:
            lines.append(f"ranks {' and '.join(same['ranks'])} run the same loops, for "
                         f"different numbers of iterations")
    for row in table.itertuples():
        what = "main loop" if row.main else f"loop {row.loop}"
        time = f", {row.share_time:.0%} of its time" if np.isfinite(row.share_time) else ""
        lines.append(f"ranks {row.ranks}: {what}: {row.iterations} iterations of {row.body} "
                     f"({row.per_iteration} actions each), actions {row.first}-{row.last}: "
                     f"{row.share_actions:.0%} of the rank's actions{time}")
    return lines
