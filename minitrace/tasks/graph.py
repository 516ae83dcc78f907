"""A recorded OpenMP program as tables: its tasks, what each did in order (its actions), the
data handles its dependences name and the dependence graph rebuilt from them.

``TaskGraph`` is what the recorder produces (``from_raw``), the StarPU importer too, what
``/tasks`` stores (taskfile.py) and what the simulator reads.  Its tables (pandas):

- ``tasks``: ``task`` (id), ``parent``, ``kind`` (initial / implicit / explicit),
  ``undeferred``, ``kernel`` (the creating code address, as symbol+offset), ``created_by``
  (thread), ``thread`` and ``cpu`` (where it started), ``t_create``, ``t_start``, ``t_end``
  (seconds from the first event), ``duration`` (its own compute, in its thread's CPU time:
  less the time spent in tasks it switched to and in synchronizations), ``region``, ``index``
  (implicit tasks: parallel region, thread number);
- ``actions``: per task, in order: ``compute`` (``duration`` s), ``create`` (``target``:
  child task), ``taskwait``, ``taskgroup_begin`` (the tasks created from here on, and their
  descendants, belong to the group), ``taskgroup`` (the wait at the end of a taskgroup),
  ``barrier``, ``parallel`` (``target``: region, run by the implicit tasks of that region);
- ``deps``: ``task``, ``handle``, ``mode`` (in / out / inout / mutexinoutset / inoutset);
- ``handles``: ``handle``, ``address``, ``size`` (bytes), ``node`` (NUMA node of its first
  page when a task naming it was created; -1 unknown, -2 not yet placed);
- ``edges``: ``src``, ``dst``: the dependence graph, rebuilt from the (address, size, mode)
  sequence of sibling tasks (OpenMP's rules); ``edges_ompt``: what libomp's task-dependence
  callback reported, a cross-check only (it misses edges whose predecessor already finished).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from . import ompt_raw as R
from ..errors import MinitraceError

if TYPE_CHECKING:   # pandas: loaded by the first graph built, not by the commands' parsers
    import pandas as pd

MODES = {1: "in", 2: "out", 3: "inout", 4: "mutexinoutset", 7: "inoutset"}
SYNC_ACTION = {5: "taskwait", 6: "taskgroup"}          # other sync regions are barriers
_COMPLETE = {1, 3}                                      # ompt_task_complete, ompt_task_cancel
_UNDEFERRED = 0x08000000
_TASKGROUP = 6                                          # ompt_sync_region_taskgroup


@dataclass
class TaskGraph:
    tasks: pd.DataFrame
    actions: pd.DataFrame
    deps: pd.DataFrame
    handles: pd.DataFrame
    edges: pd.DataFrame
    edges_ompt: pd.DataFrame = field(default_factory=lambda: _frame(
        {"src": np.zeros(0, np.int64), "dst": np.zeros(0, np.int64)}))
    meta: dict = field(default_factory=dict)

    def explicit(self) -> pd.DataFrame:
        """The explicit tasks (those the dependence graph is about)."""
        return self.tasks[self.tasks["kind"] == "explicit"]

    def summary(self) -> dict:
        """Counts and totals worth printing."""
        ex = self.explicit()
        return {"tasks": int(len(ex)), "edges": int(len(self.edges)),
                "handles": int(len(self.handles)),
                "task_seconds": float(ex["duration"].sum()),
                "threads": int(self.tasks["thread"].max() + 1) if len(self.tasks) else 0,
                "kernels": int(ex["kernel"].nunique())}


def _frame(columns: dict) -> pd.DataFrame:
    import pandas as pd
    return pd.DataFrame(columns)


def _modes(names) -> pd.Categorical:
    """Dependence modes (names of MODES) as a categorical column."""
    import pandas as pd
    return pd.Categorical(names, categories=list(MODES.values()))


def from_tasks(durations: dict[int, float], edges=None, deps=(), sizes: dict | None = None,
               kernels: dict | None = None, nodes: dict | None = None,
               meta: dict | None = None) -> TaskGraph:
    """A graph without program structure (an imported trace, a test): explicit tasks with
    their durations, dependence edges ``(src, dst)``, and optionally dependences
    ``(task, handle, mode)`` on handles of ``sizes`` bytes (home NUMA ``nodes``); without
    edges, they are rebuilt from the dependences.  The simulator has one thread create them
    all, in id order, at no cost."""
    ids = sorted(durations)
    nan = np.full(len(ids), np.nan)
    tasks = _frame({"task": np.array(ids, np.int64), "parent": np.zeros(len(ids), np.int64),
                    "kind": ["explicit"] * len(ids), "undeferred": np.zeros(len(ids), bool),
                    "kernel": [(kernels or {}).get(t, "") for t in ids],
                    "created_by": np.full(len(ids), -1), "thread": np.full(len(ids), -1),
                    "cpu": np.full(len(ids), -1), "t_create": nan, "t_start": nan,
                    "t_end": nan, "duration": np.array([durations[t] for t in ids], float),
                    "region": np.zeros(len(ids), np.int64), "index": np.full(len(ids), -1)})
    actions = _frame({"task": np.array(ids, np.int64), "seq": np.zeros(len(ids), np.int64),
                      "action": ["compute"] * len(ids),
                      "duration": tasks["duration"].to_numpy(),
                      "target": np.zeros(len(ids), np.int64)})
    deps = list(deps)
    sizes = dict(sizes or {})
    handles = sorted(sizes)
    dep_table = _frame({"task": np.array([d[0] for d in deps], np.int64),
                        "handle": np.array([d[1] for d in deps], np.int64),
                        "mode": _modes([d[2] for d in deps])})
    edge_table = rebuild_edges(tasks, dep_table) if edges is None else _frame(
        {"src": np.array([e[0] for e in edges], np.int64),
         "dst": np.array([e[1] for e in edges], np.int64)})
    return TaskGraph(
        tasks, actions, dep_table,
        _frame({"handle": np.array(handles, np.int64),
                "address": np.zeros(len(handles), np.uint64),
                "size": np.array([sizes[h] for h in handles], np.int64),
                "node": np.array([(nodes or {}).get(h, 0) for h in handles], np.int64)}),
        edge_table, meta=dict(meta or {}))


class _Builder:
    """Walks each thread's structural records in order, keeping which task runs there (the
    dependence records, most of a recording, are handled as whole arrays: ``_dependences``)."""

    def __init__(self, codes: dict[int, str]):
        self.codes = codes
        self.tasks: dict[int, dict] = {}
        self.actions: dict[int, list] = defaultdict(list)
        self.pending: dict[int, float] = defaultdict(float)  # compute not yet an action
        self.resume: dict[int, float | None] = {}            # running since (None: not)
        self.waiting: set[int] = set()                       # tasks in a synchronization
        self.parent_of_region: dict[int, int] = {}

    def task(self, tid: int, **kw) -> dict:
        t = self.tasks.get(tid)
        if t is None:
            t = self.tasks[tid] = dict(task=tid, parent=0, kind="explicit", undeferred=False,
                                       kernel="", created_by=-1, thread=-1, cpu=-1,
                                       t_create=np.nan, t_start=np.nan, t_end=np.nan,
                                       region=0, index=-1)
        t.update(kw)
        return t

    def run(self, tid: int, t: float, clock: float, thread: int, cpu: int = -1) -> None:
        """``tid`` runs on ``thread`` from wall time ``t``; ``clock`` is the thread's CPU time
        (what its compute segments are measured in)."""
        info = self.task(tid)
        if info["t_start"] != info["t_start"]:      # NaN: its first start
            info.update(t_start=t, thread=thread, cpu=cpu)
        self.resume[tid] = None if tid in self.waiting else clock

    def stop(self, tid: int, clock: float) -> None:
        since = self.resume.get(tid)
        if since is not None:
            self.pending[tid] += clock - since
        self.resume[tid] = None

    def act(self, tid: int, action: str, target: int = 0) -> None:
        if self.pending[tid] > 0:
            self.actions[tid].append(("compute", self.pending[tid], 0))
        self.pending[tid] = 0.0
        if action != "compute":
            self.actions[tid].append((action, 0.0, target))

    def thread(self, recs: list, t0: int) -> None:
        """One thread's structural records, as (kind, thread, time, cpu, a, b, c, d) tuples;
        compute is measured in the thread's CPU time (``c_`` below), dates in wall time."""
        stack: list[int] = []       # tasks the thread runs, innermost last
        for k, thread, time, cpu_ns, a, b, c, d in recs:
            t, c_ = (time - t0) * 1e-9, cpu_ns * 1e-9
            if k == R.TASK_CREATE:
                self.stop(b, c_)
                self.act(b, "create", a)
                self.resume[b] = c_
                self.task(a, parent=b, created_by=thread, t_create=t,
                          undeferred=bool(c & _UNDEFERRED), kernel=self.codes.get(d, f"{d:#x}"))
            elif k == R.SCHEDULE:
                self.stop(a, c_)
                if b in _COMPLETE:
                    self.act(a, "compute")
                    self.task(a, t_end=t)
                if stack:
                    stack[-1] = c
                else:
                    stack.append(c)
                self.run(c, t, c_, thread, cpu=d)
            elif k == R.IMPLICIT_BEGIN:
                if stack:
                    self.stop(stack[-1], c_)
                flags = d >> 32
                self.task(a, kind="initial" if flags & 1 else "implicit", region=b,
                          index=d & 0xFFFFFFFF, parent=self.parent_of_region.get(b, 0),
                          created_by=thread, t_create=t)
                stack.append(a)
                self.run(a, t, c_, thread)
            elif k == R.IMPLICIT_END:
                if stack:
                    top = stack.pop()
                    self.stop(top, c_)
                    self.act(top, "compute")
                    self.task(top, t_end=t)
                if stack:
                    self.resume[stack[-1]] = c_
            elif k == R.PARALLEL_BEGIN:
                self.parent_of_region[a] = b
                self.stop(b, c_)
                self.act(b, "parallel", a)
            elif k == R.PARALLEL_END:
                self.resume[b] = None if b in self.waiting else c_
            elif k == R.SYNC_BEGIN and b == _TASKGROUP:     # the tasks it creates from here
                self.stop(a, c_)
                self.act(a, "taskgroup_begin")
                self.resume[a] = None if a in self.waiting else c_
            elif k in (R.SYNC_BEGIN, R.WAIT_BEGIN) and (b == _TASKGROUP) == (k == R.WAIT_BEGIN):
                # a wait starts: a taskgroup's at its waiting part, others at their region
                self.stop(a, c_)
                self.act(a, SYNC_ACTION.get(b, "barrier"))
                self.waiting.add(a)
            elif k in (R.SYNC_END, R.WAIT_END) and (b == _TASKGROUP) == (k == R.WAIT_END):
                self.waiting.discard(a)
                if stack and stack[-1] == a:
                    self.resume[a] = c_
        if stack:   # a task still running at the end (the initial task): close it
            self.stop(stack[-1], recs[-1][3] * 1e-9)
            self.act(stack[-1], "compute")


_STRUCTURAL = np.zeros(16, bool)
_STRUCTURAL[[R.IMPLICIT_BEGIN, R.IMPLICIT_END, R.PARALLEL_BEGIN, R.PARALLEL_END,
             R.TASK_CREATE, R.SCHEDULE, R.SYNC_BEGIN, R.SYNC_END, R.WAIT_BEGIN,
             R.WAIT_END]] = True


def from_raw(records: np.ndarray, codes: dict[int, str], source: str = "") -> TaskGraph:
    """The task graph of one recorded process."""
    if not len(records):
        raise MinitraceError("the OMPT tool recorded nothing (no OpenMP construct ran)",
                             source)
    if records["kind"].max() >= len(_STRUCTURAL):
        raise MinitraceError(f"unknown record kind {records['kind'].max()}", source)
    bld = _Builder(codes)
    structural = _STRUCTURAL[records["kind"]]
    t0 = int(records["time"][structural].min()) if structural.any() else 0
    records = interpolate_cpu(records, structural)
    for th in np.unique(records["thread"]):
        mine = records[(records["thread"] == th) & structural]
        if len(mine):
            bld.thread(mine.tolist(), t0)
    tasks = _frame(sorted(bld.tasks.values(), key=lambda x: x["task"]))
    rows = [(tid, i, *x) for tid in sorted(bld.actions) for i, x in enumerate(bld.actions[tid])]
    actions = _frame({"task": np.array([r[0] for r in rows], np.int64),
                      "seq": np.array([r[1] for r in rows], np.int64),
                      "action": [r[2] for r in rows],
                      "duration": np.array([r[3] for r in rows], float),
                      "target": np.array([r[4] for r in rows], np.int64)})
    own = actions[actions["action"] == "compute"].groupby("task")["duration"].sum()
    tasks["duration"] = tasks["task"].map(own).fillna(0.0).to_numpy()
    deps, handles = _dependences(records, source)
    edges = rebuild_edges(tasks, deps)
    e = records[records["kind"] == R.EDGE]
    ompt = _frame({"src": e["a"].astype(np.int64), "dst": e["b"].astype(np.int64)})
    return TaskGraph(tasks, actions, deps, handles, edges, ompt,
                     {"source": "ompt", "edges_ompt_not_rebuilt": _missing(ompt, edges)})


def interpolate_cpu(records: np.ndarray, timed: np.ndarray) -> np.ndarray:
    """The records with the CPU time of each ``timed`` one that did not read the thread's
    CPU clock (cpu 0: the tool reads it at most every millisecond on task creations and
    switches) interpolated linearly in wall time between the reads around it on its thread,
    after the last one advanced by the wall time (the thread running)."""
    missing = timed & (records["cpu"] == 0)
    if not missing.any():
        return records
    out = records.copy()
    for th in np.unique(records["thread"][missing]):
        mine = records["thread"] == th
        read = np.nonzero(mine & timed & (records["cpu"] > 0))[0]
        fill = np.nonzero(mine & missing)[0]
        if not len(read):
            continue
        t, c = records["time"][read].astype(float), records["cpu"][read].astype(float)
        tf = records["time"][fill].astype(float)
        v = np.interp(tf, t, c)
        after = tf > t[-1]
        v[after] = c[-1] + (tf[after] - t[-1])
        out["cpu"][fill] = np.round(v).astype(np.uint64)
    return out


def _dependences(records: np.ndarray, source: str):
    """(deps, handles): dependences with sizes from libomp's entry points (each DEP_SIZED
    record belongs to the next TASK_CREATE of its thread), checked against the addresses OMPT
    reported (the tool writes OMPT's DEP records only when they differ from the sized ones or
    have none); a task with OMPT dependences but no sized ones keeps size 0 (unknown)."""
    kind, thread = records["kind"], records["thread"]
    sized_rows, owners = [], []
    for th in np.unique(thread):
        idx = np.nonzero(thread == th)[0]
        creates = idx[kind[idx] == R.TASK_CREATE]
        sized = idx[kind[idx] == R.DEP_SIZED]
        nxt = np.searchsorted(creates, sized)
        ok = nxt < len(creates)
        ok[ok] &= ((records["c"][creates[nxt[ok]]] >> 32) & 1).astype(bool)
        sized_rows.append(sized[ok])
        owners.append(records["a"][creates[nxt[ok]]])
    sized_rows = np.concatenate(sized_rows) if sized_rows else np.zeros(0, np.int64)
    s_task = np.concatenate(owners).astype(np.int64) if owners else np.zeros(0, np.int64)
    s = records[sized_rows]
    order = np.argsort(s_task, kind="stable")
    s_task, s = s_task[order], s[order]
    o = records[kind == R.DEP]
    o_task = o["a"].astype(np.int64)
    o = o[np.argsort(o_task, kind="stable")]
    o_task = o["a"].astype(np.int64)
    has_sized = np.isin(o_task, s_task)
    checked = o[has_sized]
    both = np.isin(s_task, o_task)      # (the tool leaves out OMPT's records that agree)
    if len(checked) != both.sum() or not (
            np.array_equal(checked["a"].astype(np.int64), s_task[both])
            and np.array_equal(checked["b"], s["b"][both])):
        bad = next((int(t) for t in np.unique(s_task[both])
                    if not np.array_equal(s["b"][s_task == t], checked["b"][checked["a"] == t])),
                   int(s_task[0]) if len(s_task) else -1)
        raise MinitraceError(f"task {bad}: the dependences libomp was given and those OMPT "
                             "reported differ (an OpenMP runtime this recorder does not know?)",
                             source)
    rest = o[~has_sized]
    task = np.concatenate([s_task, rest["a"].astype(np.int64)])
    addr = np.concatenate([s["b"], rest["b"]]).astype(np.uint64)
    size = np.concatenate([s["c"], np.zeros(len(rest), np.uint64)]).astype(np.int64)
    mode = np.concatenate([s["d"] & 0xFFFFFFFF, rest["c"]]).astype(np.int64)
    node = np.concatenate([(s["d"] >> 32).astype(np.uint32).view(np.int32),
                           np.full(len(rest), -1, np.int32)]).astype(np.int64)
    order = np.argsort(task, kind="stable")
    task, addr, size, mode, node = task[order], addr[order], size[order], mode[order], node[order]
    addrs, handle = np.unique(addr, return_inverse=True)
    hsize = np.zeros(len(addrs), np.int64)
    np.maximum.at(hsize, handle, size)
    hnode = np.full(len(addrs), -1, np.int64)
    np.maximum.at(hnode, handle, node)      # a placed page's node over -1 / -2
    names = np.array([MODES.get(m, str(m)) for m in range(8)], dtype=object)
    deps = _frame({"task": task, "handle": handle.astype(np.int64),
                   "mode": _modes(names[np.clip(mode, 0, 7)])})
    handles = _frame({"handle": np.arange(len(addrs), dtype=np.int64), "address": addrs,
                      "size": hsize, "node": hnode})
    return deps, handles


def rebuild_edges(tasks: pd.DataFrame, deps: pd.DataFrame) -> pd.DataFrame:
    """OpenMP's dependence rules over sibling tasks in creation order: a reader waits for the
    last writers of the handle; a writer for them and the readers since; consecutive
    mutexinoutset (or inoutset) tasks form a set that waits like a writer, that later readers
    and writers wait for, and whose members do not wait for one another (mutexinoutset members
    still never run at once: the simulator keeps them apart)."""
    parent = dict(zip(tasks["task"].tolist(), tasks["parent"].tolist()))
    edges = set()
    state: dict = {}    # (parent, handle) -> its last writers, readers since, open set
    order = np.argsort(deps["task"].to_numpy(), kind="stable")
    for task, handle, mode in zip(deps["task"].to_numpy()[order].tolist(),
                                  deps["handle"].to_numpy()[order].tolist(),
                                  np.asarray(deps["mode"].astype(str))[order].tolist()):
        s = state.get((parent.get(task, 0), handle))
        if s is None:
            s = state[(parent.get(task, 0), handle)] = {"writers": [], "readers": [],
                                                         "set": None, "set_preds": []}
        if mode == "in":
            preds = s["writers"]
            s["readers"].append(task)
        elif mode == s["set"] and not s["readers"]:     # joins the open set
            preds = s["set_preds"]
            s["writers"].append(task)
        else:
            preds = s["writers"] + s["readers"]
            opens = mode in ("mutexinoutset", "inoutset")
            s.update(writers=[task], readers=[], set=mode if opens else None,
                     set_preds=preds if opens else [])
        edges.update((p, task) for p in preds if p != task)
    e = sorted(edges)
    return _frame({"src": np.array([x[0] for x in e], np.int64),
                   "dst": np.array([x[1] for x in e], np.int64)})


def _missing(ompt: pd.DataFrame, edges: pd.DataFrame) -> int:
    """OMPT edges the rebuilt graph lacks (0 when the two agree)."""
    have = set(zip(edges["src"], edges["dst"]))
    return sum((s, d) not in have for s, d in zip(ompt["src"], ompt["dst"]))
