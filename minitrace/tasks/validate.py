"""Checks a task graph before it is simulated: a simulation of a broken graph would hang
(a cycle, a dependence on a task that never runs) or answer with a number the data does not
support (a dependence on data never described).  Each problem is one ``MinitraceError`` line."""
from __future__ import annotations

from collections import deque

import numpy as np

from ..errors import MinitraceError
from .graph import TaskGraph


def check_graph(g: TaskGraph, path: str | None = None) -> None:
    """Raise a one-line ``MinitraceError`` for the first problem found, else return."""
    known = set(g.tasks["task"].tolist())
    if len(known) != len(g.tasks):
        raise MinitraceError("task graph: a task id appears twice", path)
    for col in ("src", "dst"):
        bad = ~g.edges[col].isin(known)
        if bad.any():
            e = g.edges[bad].iloc[0]
            raise MinitraceError(f"task graph: dependence {e['src']} -> {e['dst']} names "
                                 f"unknown task {e[col]}", path)
    bad = ~g.deps["task"].isin(known)
    if bad.any():
        raise MinitraceError(f"task graph: a dependence of unknown task "
                             f"{g.deps['task'][bad].iloc[0]}", path)
    bad = ~g.deps["handle"].isin(set(g.handles["handle"].tolist()))
    if bad.any():
        r = g.deps[bad].iloc[0]
        raise MinitraceError(f"task graph: task {r['task']} depends on data handle "
                             f"{r['handle']}, which is not described (/tasks/handles)", path)
    creates = g.actions[g.actions["action"] == "create"]["target"]
    bad = ~creates.isin(known)
    if bad.any():
        raise MinitraceError(f"task graph: creation of unknown task {creates[bad].iloc[0]}",
                             path)
    explicit = g.tasks[g.tasks["kind"] == "explicit"]["task"]
    counts = creates.value_counts()
    wrong = explicit[explicit.map(counts).fillna(0).to_numpy() != 1]
    structured = (g.tasks["kind"] == "initial").any()     # (an imported graph has none)
    if structured and len(wrong):
        t = wrong.iloc[0]
        raise MinitraceError(f"task graph: task {t} is created {int(counts.get(t, 0))} times "
                             "(once expected)", path)
    for table, col in ((g.tasks, "duration"), (g.actions, "duration"), (g.tasks, "thread"),
                       (g.tasks, "cpu")):
        v = table[col].to_numpy(np.float64)
        bad = np.isinf(v) | (v < (-1 if col in ("thread", "cpu") else 0)) | \
            ((v != np.round(v)) if col in ("thread", "cpu") else False)
        if bad.any():     # (NaN: not recorded)
            raise MinitraceError(f"task graph: a {col} of {v[bad][0]} "
                                 f"({'tasks' if table is g.tasks else 'actions'} table)", path)
    cycle = find_cycle(g.edges["src"].to_numpy(), g.edges["dst"].to_numpy())
    if cycle:
        raise MinitraceError("task graph: dependence cycle " + " -> ".join(map(str, cycle)),
                             path)


def find_cycle(src: np.ndarray, dst: np.ndarray) -> list[int]:
    """A cycle of the directed graph (its tasks, the first repeated at the end), or []."""
    succ: dict[int, list[int]] = {}
    pred: dict[int, list[int]] = {}
    indeg: dict[int, int] = {}
    for s, d in zip(src.tolist(), dst.tolist()):
        succ.setdefault(s, []).append(d)
        pred.setdefault(d, []).append(s)
        indeg[d] = indeg.get(d, 0) + 1
        indeg.setdefault(s, 0)
    ready = deque(n for n, k in indeg.items() if k == 0)
    while ready:   # Kahn: what is left holds a cycle
        n = ready.popleft()
        for m in succ.get(n, ()):
            indeg[m] -= 1
            if indeg[m] == 0:
                ready.append(m)
    left = {n for n, k in indeg.items() if k > 0}
    if not left:
        return []
    # walk predecessors within what is left until one repeats: every task left has one (a
    # task left may have no successor left: one downstream of the cycle)
    n, path, seen = min(left), [], {}
    while n not in seen:
        seen[n] = len(path)
        path.append(n)
        n = next(m for m in pred[n] if m in left)
    cycle = path[seen[n]:][::-1]
    first = cycle.index(min(cycle))
    cycle = cycle[first:] + cycle[:first]
    return cycle + [cycle[0]]
