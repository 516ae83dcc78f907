"""Replays a recorded task graph on a simulated machine (SimGrid): predicts an OpenMP
program's task-region time at another thread count or on another NUMA platform.

One SimGrid actor per OpenMP thread, on the platform's cores in order.  The scheduler is
libomp's, simplified (docs/TASKS.md): a task whose dependences are met goes to the deque of the
thread that created or released it; a thread takes the newest task of its own deque, else
steals the oldest of another's (trying first the victim it last stole from, then the next
threads in turn; an idle thread wakes at every push and may steal at once); the creating
thread goes on creating (breadth-first) unless the task is undeferred (``if(0)``; a team of
one thread makes every task undeferred, which is not carried over); at a taskwait, taskgroup
or barrier a thread runs tasks until the wait is over, within a taskwait of an explicit task
only that task's descendants (the task scheduling constraint of tied tasks); a taskwait waits
for the task's children, a taskgroup's end for the tasks created inside it and all their
descendants (OpenMP's rules); members of a mutexinoutset set never run at once.

Models of a task's time (its recorded compute time D, scaled per segment):

- ``task``: D;
- ``comm``: T = Tc + max(0, Tm - r*Tc): its dependences' data flow between their home memory
  and the core (SimGrid flows, sharing the platform's links with the other threads' flows)
  while a fraction r of its compute Tc runs; Tc is fitted so that a lone thread takes D (Tm
  then taking the uncontended path's time);
- ``cache``: as ``comm`` but only what an LRU model of each L3 misses moves (memory.py).

A simulation runs in a forked child: SimGrid's engine lives once per process.
"""
from __future__ import annotations

import multiprocessing
import os
import tempfile
import traceback
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import MinitraceError
from .graph import TaskGraph
from .memory import L3Caches, comm_flows
from .overlap import describe as describe_overlap
from .overlap import fit_overlap, memory_times
from .numa_platform import (CORE_SPEED, PlatformInfo, Topology, platform_xml,
                            read_platform_info)
from .validate import check_graph

if TYPE_CHECKING:   # pandas: loaded by the first simulation, not by the command's parser
    import pandas as pd

MODELS = ("task", "comm", "cache")
SCHEDULERS = ("libomp",)
SIMGRID_CONFIG = ["--cfg=network/model:CM02", "--cfg=network/TCP-gamma:0",
                  "--cfg=network/crosstraffic:0", "--log=root.thres:critical"]


@dataclass
class SimResult:
    """``predicted_time``: the task region (first parallel region's start to the last one's
    end), seconds; ``total``: the whole program as replayed; ``timeline``: one row per task
    run (thread, task, kernel, start, end); ``notes``: what the prediction rests on that the
    data did not say."""
    predicted_time: float
    total: float
    threads: int
    model: str
    timeline: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"predicted_time": self.predicted_time, "total": self.total,
                "threads": self.threads, "model": self.model, "tasks": int(len(self.timeline)),
                "notes": self.notes}


def simple_platform(threads: int) -> Topology:
    """One package, one NUMA node, one L3 of 32 MiB shared by ``threads`` cores."""
    top = Topology(cores=list(range(threads)), l3_of={c: 0 for c in range(threads)},
                   node_of={c: 0 for c in range(threads)}, package_of_node={0: 0},
                   l3_size={0: 32 << 20}, l3_node={0: 0})
    top.description = f"{threads} cores, 1 L3, 1 NUMA node (default platform)"
    return top


def simulate(graph: TaskGraph, threads: int, model: str = "task",
             platform: str | None = None, overlap: float | None = None,
             scheduler: str = "libomp") -> SimResult:
    """Simulate ``graph`` on ``threads`` threads (the platform's first cores).

    Parameters
    ----------
    graph : the recorded task graph (checked first: a broken one raises one line).
    threads : OpenMP threads to simulate.
    model : ``task``, ``comm`` or ``cache`` (module docstring).
    platform : a SimGrid platform file (``minitrace numa-platform``); default: one NUMA node,
        one shared L3, default bandwidths.
    overlap : r, the fraction of a task's compute its memory traffic overlaps (comm, cache);
        None: fitted per kernel from the recording (overlap.py).

    Returns
    -------
    SimResult
    """
    if model not in MODELS:
        raise MinitraceError(f"unknown model {model!r} (one of {', '.join(MODELS)})")
    if scheduler not in SCHEDULERS:
        raise MinitraceError(f"unknown scheduler {scheduler!r} (one of {', '.join(SCHEDULERS)})")
    if threads < 1:
        raise MinitraceError(f"--threads must be at least 1 (got {threads})")
    if overlap is not None and not 0.0 <= overlap <= 1.0:
        raise MinitraceError(f"--overlap must be within 0..1 (got {overlap})")
    check_graph(graph)
    with tempfile.TemporaryDirectory(prefix="minitrace-tasks-") as tmp:
        if platform is None:
            platform = os.path.join(tmp, "platform.xml")
            with open(platform, "w") as f:
                f.write(platform_xml(simple_platform(threads)))
        info = read_platform_info(platform)
        if threads > len(info.cores):
            raise MinitraceError(f"{threads} threads but the platform has {len(info.cores)} "
                                 "cores", platform)
        return _in_child(_Simulation(graph, threads, model, platform, info, overlap))


def _in_child(sim: "_Simulation") -> SimResult:
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, args=(sim, child))
    proc.start()
    child.close()
    try:
        kind, payload = parent.recv()
    except EOFError:
        kind, payload = "crash", "the simulation process died"
    finally:
        proc.join()
    if kind == "ok":
        return payload
    if kind == "user":
        raise MinitraceError(payload)
    raise RuntimeError(f"task simulation failed: {payload}")


def _child_main(sim: "_Simulation", conn) -> None:
    try:
        conn.send(("ok", sim.run()))
    except MinitraceError as e:
        conn.send(("user", str(e)))
    except BaseException:
        conn.send(("crash", traceback.format_exc()))
    finally:
        conn.close()
        os._exit(0)


class _Simulation:
    def __init__(self, g: TaskGraph, threads: int, model: str, platform: str,
                 info: PlatformInfo, overlap: float | None):
        self.n, self.model, self.platform, self.info = threads, model, platform, info
        self.overlap = overlap          # None: r fitted per kernel
        self.r: dict = {}               # kernel -> r, when fitted
        self.notes: list[str] = []
        t = g.tasks
        self.parent = dict(zip(t["task"].tolist(), t["parent"].tolist()))
        self.kind = dict(zip(t["task"].tolist(), t["kind"].tolist()))
        self.kernel = dict(zip(t["task"].tolist(), t["kernel"].tolist()))
        self.region = dict(zip(t["task"].tolist(), t["region"].tolist()))
        self.index = dict(zip(t["task"].tolist(), t["index"].tolist()))
        self.duration = dict(zip(t["task"].tolist(), t["duration"].tolist()))
        self.t_start = {k: v for k, v in zip(t["task"].tolist(), t["t_start"].tolist())
                        if v == v}
        self.body: dict[int, list] = defaultdict(list)
        for task, action, dur, target in zip(g.actions["task"].tolist(),
                                             g.actions["action"].tolist(),
                                             g.actions["duration"].tolist(),
                                             g.actions["target"].tolist()):
            self.body[task].append((action, dur, target))
        self.team_size = t[t["kind"] == "implicit"].groupby("region").size().to_dict()
        undeferred = dict(zip(t["task"].tolist(), t["undeferred"].tolist()))
        self.undeferred = {k for k, v in undeferred.items() if v and self.kind[k] == "explicit"
                           and self.team_size.get(self._region_of(k), 1) > 1}
        self.succ: dict[int, list] = defaultdict(list)
        self.npred: dict[int, int] = defaultdict(int)
        for s, d in zip(g.edges["src"].tolist(), g.edges["dst"].tolist()):
            self.succ[s].append(d)
            self.npred[d] += 1
        self.deps: dict[int, list] = defaultdict(list)
        for task, h, m in zip(g.deps["task"].tolist(), g.deps["handle"].tolist(),
                              g.deps["mode"].astype(str).tolist()):
            self.deps[task].append((h, m))
        self.size = dict(zip(g.handles["handle"].tolist(), g.handles["size"].tolist()))
        self.home = dict(zip(g.handles["handle"].tolist(), g.handles["node"].tolist()))
        self.mutex = {task: [h for h, m in hs if m == "mutexinoutset"]
                      for task, hs in self.deps.items()}
        self.initial = next((k for k, v in self.kind.items() if v == "initial"), None)
        if self.initial is None:     # an imported graph: one thread submits every task
            self._synthesize_initial()
        team = defaultdict(list)        # region -> its implicit tasks (synthesized ones too)
        for k, kind in self.kind.items():
            if kind == "implicit":
                team[self.region[k]].append(k)
        self.region_bodies = {r: self._bodies(r, members) for r, members in team.items()}

    # -- the program's structure -------------------------------------------------------
    def _region_of(self, task: int) -> int:
        while task in self.parent and self.kind.get(task) == "explicit":
            task = self.parent[task]
        return self.region.get(task, 0)

    def _synthesize_initial(self) -> None:
        explicit = sorted(k for k, v in self.kind.items() if v == "explicit")
        self.initial = -1
        self.kind.update({-1: "initial", -2: "implicit"})
        self.parent.update({-2: -1, **{k: -2 for k in explicit}})
        self.region[-2], self.index[-2] = 1, 0
        self.body[-1] = [("parallel", 0.0, 1)]
        self.body[-2] = [("create", 0.0, k) for k in explicit] + [("barrier", 0.0, 0)]
        self.notes.append("no program structure recorded: one thread creates every task at "
                          "no cost, in task order")

    def _bodies(self, region: int, members: list) -> list:
        """The n threads' bodies for a region: the recorded implicit tasks that created
        tasks first, then the others by thread number; threads beyond the recorded team only
        meet the region's barriers."""
        creates = {k for k in members if any(a == "create" for a, _, _ in self.body[k])}
        order = sorted(members, key=lambda k: (k not in creates, self.index[k]))
        if any(a == "parallel" for k in order for a, _, _ in self.body[k]):
            raise MinitraceError("nested parallel regions are not simulated")
        dropped = order[self.n:]
        if any(k in creates for k in dropped):
            raise MinitraceError(f"region {region}: {len(creates)} threads created tasks, "
                                 f"more than the {self.n} threads simulated")
        lost = sum(self.duration.get(k, 0.0) for k in dropped)
        if lost > 0:
            self.notes.append(f"region {region}: {lost:.3g} s of implicit-task work of "
                              f"{len(dropped)} recorded threads not replayed (fewer threads)")
        for k in order:   # a region ends with a barrier (a team of one records none)
            if not [a for a, _, _ in self.body[k] if a != "compute"][-1:] == ["barrier"]:
                self.body[k].append(("barrier", 0.0, 0))
        barriers = max((sum(a == "barrier" for a, _, _ in self.body[k]) for k in order),
                       default=1)
        bodies = [(k, self.body[k]) for k in order[:self.n]]
        while len(bodies) < self.n:
            bodies.append((None, [("barrier", 0.0, 0)] * barriers))
        return bodies

    # -- the run --------------------------------------------------------------------------
    def run(self) -> SimResult:
        from ..replay.libsimgrid import load_simgrid
        saved = os.dup(2)       # the import announces its thread contexts on stderr
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 2)
                sg = load_simgrid()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        engine = sg.Engine(["minitrace-tasks", *SIMGRID_CONFIG])
        engine.load_platform(self.platform)
        self.sg = sg
        self.hosts = [sg.Host.by_name(h) for h in self.info.cores[:self.n]]
        self.mem_hosts = {k: sg.Host.by_name(v) for k, v in self.info.memories.items()}
        self.deques = [deque() for _ in range(self.n)]
        self.last_victim = [(i + 1) % self.n for i in range(self.n)]
        self.idle: dict[int, object] = {}
        self.actors: list = [None] * self.n
        self.done: set[int] = set()
        self.created: set[int] = set()
        self.children = defaultdict(int)
        self.open_groups = defaultdict(list)   # task -> its open taskgroups, innermost last
        self.groups_of = {}                     # task -> the taskgroups it belongs to
        self.group_pending = defaultdict(int)   # taskgroup -> its members not completed
        self.next_group = 0
        self.started: set = set()
        self.region_pending = defaultdict(int)
        self.arrivals = defaultdict(int)
        self.barrier_count = [0] * self.n
        self.held: set[int] = set()
        self.assignment: list = [None] * self.n
        self.finished_bodies = 0
        self.stop = False
        self.rows: list = []
        self.regions: list = []
        self.caches = L3Caches(self.info.l3_size) if self.model == "cache" else None
        self.tc = self._fit_compute() if self.model != "task" else {}
        self.error = None
        self.current_region = 0
        for i in range(1, self.n):
            self.actors[i] = sg.Actor.create(f"thread{i}", self.hosts[i], self._guarded,
                                             self._worker, i)
        self.actors[0] = sg.Actor.create("thread0", self.hosts[0], self._guarded, self._master)
        engine.run()
        if self.error is not None:
            raise self.error
        total = engine.clock
        if len(self.done) < sum(v == "explicit" for v in self.kind.values()):
            raise MinitraceError(f"the simulation ended with {len(self.done)} of "
                                 f"{sum(v == 'explicit' for v in self.kind.values())} tasks run")
        region = (max(e for _, e in self.regions) - min(s for s, _ in self.regions)) \
            if self.regions else total
        import pandas as pd
        timeline = pd.DataFrame(self.rows, columns=["thread", "task", "kernel", "start", "end"])
        return SimResult(region, total, self.n, self.model, timeline, self.notes)

    def _guarded(self, fn, *args) -> None:
        """An actor's function: an exception stops the simulation and is raised by ``run``
        (SimGrid would only print it)."""
        try:
            fn(*args)
        except BaseException as e:      # noqa: BLE001 - handed to the caller
            self.error = self.error or e
            self.stop = True
            self._wake_all()

    def _master(self) -> None:
        self._run_body(0, self.initial, self.body[self.initial])
        self.stop = True
        self._wake_all()

    def _worker(self, i: int) -> None:
        while True:
            while self.assignment[i] is None and not self.stop:
                self._park(i)
            if self.stop:
                return
            task, body = self.assignment[i]
            self.assignment[i] = None
            self._run_body(i, task, body)
            self.finished_bodies += 1
            self._wake_all()

    def _park(self, i: int) -> None:
        self.idle[i] = self.actors[i]
        self.sg.this_actor.suspend()

    def _wake_all(self) -> None:
        idle, self.idle = self.idle, {}
        for actor in idle.values():
            actor.resume()

    def _wait(self, i: int, done, within: int | None = None) -> None:
        """Run tasks (descendants of ``within`` only, if given) until ``done()``."""
        while not done():
            t = self._pick(i, within)
            if t is None:
                self._park(i)
            else:
                self._execute(i, t)

    def _run_body(self, i: int, task, body: list) -> None:
        scale = self._compute_scale(task)
        if task not in self.started:
            self.started.add(task)
            # a taskgroup end without its begin (files recorded before taskgroup_begin): the
            # group is taken to open at the task's start
            actions = [a for a, _, _ in self.body.get(task, body)]
            for _ in range(actions.count("taskgroup") - actions.count("taskgroup_begin")):
                self._open_group(task)
        for action, dur, target in body:
            if action == "compute":
                self._compute(i, dur * scale)
            elif action == "create":
                self._create(i, task, target)
            elif action == "taskwait":
                self._wait(i, lambda: self.children[task] == 0,
                           task if self.kind.get(task) == "explicit" else None)
            elif action == "taskgroup_begin":
                self._open_group(task)
            elif action == "taskgroup":
                group = self.open_groups[task].pop()
                self._wait(i, lambda: self.group_pending[group] == 0,
                           task if self.kind.get(task) == "explicit" else None)
            elif action == "barrier":
                self._barrier(i, task)
            elif action == "parallel":
                self._parallel(i, target)

    def _parallel(self, i: int, region: int) -> None:
        start = self.sg.Engine.clock
        bodies = self.region_bodies.get(region)
        if bodies is None:
            return
        self.finished_bodies = 0
        self.current_region = region
        self.barrier_count = [0] * self.n
        for j in range(1, self.n):
            self.assignment[j] = bodies[j]
        self._wake_all()     # (a resume is a scheduling point: the state is set before it)
        task, body = bodies[0]
        self._run_body(0, task, body)
        self._wait(0, lambda: self.finished_bodies >= self.n - 1)
        self.regions.append((start, self.sg.Engine.clock))

    def _barrier(self, i: int, task) -> None:
        k = (self.current_region, self.barrier_count[i])
        self.barrier_count[i] += 1
        self.arrivals[k] += 1
        self._wake_all()
        self._wait(i, lambda: self.arrivals[k] >= self.n and
                   self.region_pending[self.current_region] == 0)

    def _open_group(self, task) -> None:
        self.next_group += 1
        self.open_groups[task].append(self.next_group)

    def _create(self, i: int, parent: int, child: int) -> None:
        self.created.add(child)
        self.children[parent] += 1
        # the groups open in its creator, and those its creator belongs to (descendants)
        groups = (*self.groups_of.get(parent, ()), *self.open_groups.get(parent, ()))
        self.groups_of[child] = groups
        for g in groups:
            self.group_pending[g] += 1
        self.region_pending[self.current_region] += 1
        if child in self.undeferred:
            self._wait(i, lambda: self.npred[child] == 0, parent
                       if self.kind.get(parent) == "explicit" else None)
            self._execute(i, child)
        elif self.npred[child] == 0:
            self._push(i, child)

    def _push(self, i: int, task: int) -> None:
        self.deques[i].append(task)
        self._wake_all()

    def _allowed(self, task: int, within: int | None) -> bool:
        if any(h in self.held for h in self.mutex.get(task, ())):
            return False
        if within is None:
            return True
        a = self.parent.get(task)
        while a is not None and a != within and self.kind.get(a) == "explicit":
            a = self.parent.get(a)
        return a == within

    def _pick(self, i: int, within: int | None):
        own = self.deques[i]
        for j in range(len(own) - 1, -1, -1):       # newest first
            if self._allowed(own[j], within):
                t = own[j]
                del own[j]
                return t
        for step in range(self.n - 1):
            v = (self.last_victim[i] + step) % self.n
            if v == i:
                v = (v + 1) % self.n
            for j, t in enumerate(self.deques[v]):   # oldest first
                if self._allowed(t, within):
                    del self.deques[v][j]
                    self.last_victim[i] = v
                    return t
        return None

    def _execute(self, i: int, t: int) -> None:
        start = self.sg.Engine.clock
        self.held.update(self.mutex.get(t, ()))
        if self.model == "task":
            self._run_body(i, t, self.body[t])
        else:
            self._run_with_memory(i, t)
        self.held.difference_update(self.mutex.get(t, ()))
        self.rows.append((i, t, self.kernel.get(t, ""), start, self.sg.Engine.clock))
        self._complete(i, t)

    def _complete(self, i: int, t: int) -> None:
        self.done.add(t)
        for s in self.succ.get(t, ()):
            self.npred[s] -= 1
            if self.npred[s] == 0 and s in self.created and s not in self.undeferred:
                self.deques[i].append(s)
        self.children[self.parent.get(t)] -= 1
        for g in self.groups_of.get(t, ()):
            self.group_pending[g] -= 1
        self.region_pending[self.current_region] -= 1
        self._wake_all()

    def _compute(self, i: int, seconds: float) -> None:
        if seconds > 0:
            self.sg.this_actor.execute(seconds * CORE_SPEED)

    # -- memory models ---------------------------------------------------------------------
    def _compute_scale(self, task) -> float:
        d = self.duration.get(task, 0.0)
        return self.tc[task] / d if task in self.tc and d > 0 else 1.0

    def _node(self, handle: int) -> int:
        """The platform's NUMA node holding ``handle``: its recorded one if the platform has
        it, else the first (unknown or not yet placed data, a smaller machine)."""
        node = int(self.home.get(handle, 0))
        return node if node in self.info.memories else min(self.info.memories)

    def _mem_host(self, handle: int):
        return self.mem_hosts[self._node(handle)]

    def _flows(self, i: int, t: int) -> tuple[list, list]:
        """([(handle, bytes) read], [(handle, bytes) written back]) of task t on thread i."""
        if self.model == "comm":
            return comm_flows(self.deps.get(t, []), self.size)
        l3 = self.info.l3[self.info.cores[i]]
        reads, writes = [], []
        for h, m in self.deps.get(t, []):
            r, evicted = self.caches.access(l3, h, self.size[h], m)
            if r:
                reads.append((h, r))
            writes += evicted
        return reads, writes

    def _run_with_memory(self, i: int, t: int) -> None:
        """T = Tc + max(0, Tm - r*Tc): the flows start with the task; the body's first r*Tc of
        compute runs alongside them, the rest once they are over."""
        reads, writes = self._flows(i, t)
        host = self.hosts[i]
        comms = [self.sg.Comm.sendto_async(self._mem_host(h), host, b) for h, b in reads] + \
                [self.sg.Comm.sendto_async(host, self._mem_host(h), b) for h, b in writes]
        budget = self._r(t) * self.tc.get(t, 0.0)
        scale = self._compute_scale(t)
        body = self.body[t]
        for action, dur, target in body:
            if action == "compute" and comms:
                dur *= scale
                first = min(dur, budget)
                self._compute(i, first)
                budget -= first
                if budget <= 0:
                    self._wait_comms(comms)
                    comms = []
                self._compute(i, dur - first)
            elif action == "compute":
                self._compute(i, dur * scale)
            else:
                self._run_body(i, t, [(action, dur, target)])
        self._wait_comms(comms)

    def _wait_comms(self, comms: list) -> None:
        for c in comms:
            c.wait()

    def _fit_compute(self) -> dict:
        """Tc per explicit task, from D = Tc + max(0, Tm1 - r*Tc) with Tm1 its flows' time
        alone on the first core (overlap.memory_times, the CACHE model's through one L3
        replayed in recorded start order) and r its kernel's (fitted: overlap.py)."""
        order = sorted((k for k, v in self.kind.items() if v == "explicit"),
                       key=lambda k: (self.t_start.get(k, 0.0), k))
        times = {cached: memory_times(order, self.deps, self.size, self._node, self.info,
                                      cached) for cached in {self.model == "cache", True}}
        if self.overlap is None:
            fits = fit_overlap(self.kernel, self.duration, times[True])
            self.r = {k: f.r for k, f in fits.items()}
            self.notes += describe_overlap(fits)
        tc, impossible = {}, 0
        for t, tm in times[self.model == "cache"].items():
            d, r = self.duration.get(t, 0.0), self._r(t)
            if tm <= r * d:
                tc[t] = d
            elif d > tm:      # (then r < 1)
                tc[t] = (d - tm) / (1 - r)
            else:
                tc[t] = 0.0
                impossible += 1
        if impossible:
            self.notes.append(f"{impossible} tasks took less than their data's time on the "
                              "platform's links alone: the platform's bandwidths are too low")
        return tc

    def _r(self, task: int) -> float:
        """r of the task's kernel: fitted, else --overlap's (default 0)."""
        return self.r.get(self.kernel.get(task, ""), self.overlap or 0.0)
