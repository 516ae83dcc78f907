"""StarPU's (and TiKKi's) ``tasks.rec`` task traces (recutils records, as ``starpu_fxt_tool``
writes them) into a task graph, the format the sOMP thesis simulated.

A record is ``Field: value`` lines, records separated by blank lines.  Read: ``JobId``,
``SubmitOrder`` (creation order; else JobId's), ``Name`` (else ``Model``) as the kernel,
``DependsOn`` (job ids), ``Handles``/``Modes``/``Sizes`` (one entry per data access; modes
R, W, RW, with COMMUTE as mutexinoutset), ``StartTime``/``EndTime`` (milliseconds, StarPU's
unit), ``WorkerId``.  Records without a JobId (StarPU's own control records) are skipped;
a task without both times is refused (the simulator needs its duration)."""
from __future__ import annotations

from ..errors import MinitraceError
from .graph import TaskGraph, from_tasks

_MODES = {"R": "in", "W": "out", "RW": "inout", "RWCOMMUTE": "mutexinoutset",
          "WCOMMUTE": "mutexinoutset"}


def records(text: str):
    """The records of a recutils file as dicts (a field given twice keeps its last value)."""
    rec: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if rec:
                yield rec
            rec = {}
        elif not line.startswith("#") and ":" in line:
            k, _, v = line.partition(":")
            rec[k.strip()] = v.strip()
    if rec:
        yield rec


def read_rec(path: str) -> TaskGraph:
    """The task graph of a ``tasks.rec`` file."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise MinitraceError(f"cannot read: {e.strerror}", path) from None
    jobs = [r for r in records(text) if "JobId" in r]
    if not jobs:
        raise MinitraceError("no task record (JobId) in this file: not a StarPU tasks.rec?",
                             path)

    def number(rec, key, cast=float):
        try:
            return cast(rec[key])
        except (KeyError, ValueError):
            raise MinitraceError(f"task {rec.get('JobId')}: {key} missing or not a number "
                                 f"({rec.get(key)!r})", path) from None

    jobs.sort(key=lambda r: (number(r, "SubmitOrder", int) if "SubmitOrder" in r else 0,
                             number(r, "JobId", int)))
    task_of = {r["JobId"]: i + 1 for i, r in enumerate(jobs)}     # creation order
    durations, kernels, edges, deps, sizes, handle_of = {}, {}, [], [], {}, {}
    for r in jobs:
        t = task_of[r["JobId"]]
        durations[t] = (number(r, "EndTime") - number(r, "StartTime")) * 1e-3
        kernels[t] = r.get("Name") or r.get("Model", "")
        for dep in r.get("DependsOn", "").split():
            if dep not in task_of:
                raise MinitraceError(f"task {r['JobId']} depends on unknown task {dep}", path)
            edges.append((task_of[dep], t))
        handles, modes = r.get("Handles", "").split(), r.get("Modes", "").split()
        nbytes = r.get("Sizes", "").split()
        if not (len(handles) == len(modes) and (not nbytes or len(nbytes) == len(handles))):
            raise MinitraceError(f"task {r['JobId']}: Handles, Modes and Sizes differ in "
                                 "length", path)
        for i, (h, m) in enumerate(zip(handles, modes)):
            hid = handle_of.setdefault(h, len(handle_of))
            size = number({"JobId": r["JobId"], "Sizes": nbytes[i]}, "Sizes", int) \
                if nbytes else 0
            sizes[hid] = max(sizes.get(hid, 0), size)
            deps.append((t, hid, _MODES.get(m.upper(), "inout")))
    g = from_tasks(durations, edges, deps, sizes, kernels, meta={"source": "starpu-rec"})
    workers = {task_of[r["JobId"]]: number(r, "WorkerId", int) for r in jobs if "WorkerId" in r}
    starts = {task_of[r["JobId"]]: number(r, "StartTime") * 1e-3 for r in jobs}
    g.tasks["thread"] = g.tasks["task"].map(workers).fillna(-1).astype(int)
    g.tasks["t_start"] = g.tasks["task"].map(starts)
    g.tasks["t_end"] = g.tasks["t_start"] + g.tasks["duration"]
    return g
