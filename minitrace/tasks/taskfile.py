"""The ``/tasks`` group of a minitrace file (docs/FORMAT.md): the task graphs of one or more
processes (``rank``: the MPI rank of an MPI+OpenMP recording, 0 otherwise), one subgroup per
table, one dataset per column, each table with a ``rank`` column; text columns as UTF-8
strings.  Version 1 files (one process, no ``rank`` column) are read as rank 0.  The machine's
topology is the file's ``/provenance/lstopo_xml``, stored with every file."""
from __future__ import annotations

import h5py
import numpy as np
import pandas as pd

from ..errors import MinitraceError
from ..storage import atomic_file, check_file, new_file, read_attrs
from .graph import MODES, TaskGraph

TASKS_VERSION = 2
READ_VERSIONS = (1, 2)
TABLES = {   # table -> its columns and their kinds (i integer, u unsigned, f float, b bool, S text)
    "tasks": {"task": "i", "parent": "i", "kind": "S", "undeferred": "b", "kernel": "S",
              "created_by": "i", "thread": "i", "cpu": "i", "t_create": "f", "t_start": "f",
              "t_end": "f", "duration": "f", "region": "i", "index": "i"},
    "actions": {"task": "i", "seq": "i", "action": "S", "duration": "f", "target": "i"},
    "deps": {"task": "i", "handle": "i", "mode": "S"},
    "handles": {"handle": "i", "address": "u", "size": "i", "node": "i"},
    "edges": {"src": "i", "dst": "i"},
    "edges_ompt": {"src": "i", "dst": "i"},
}
_NUMPY = {"i": np.int64, "u": np.uint64, "f": np.float64, "b": np.bool_}


def write_tasks(path: str, graphs: TaskGraph | dict[int, TaskGraph],
                meta: dict | None = None) -> None:
    """Write a new minitrace file holding ``/tasks``: one graph, or one per MPI rank."""
    with new_file(path, meta) as f:
        _write_group(f, graphs)


def add_tasks(path: str, graphs: dict[int, TaskGraph]) -> None:
    """Add the ranks' task graphs to an existing minitrace file (an MPI trace just merged)."""
    with atomic_file(path, copy_existing=True) as f:
        if "tasks" in f:
            raise MinitraceError("already holds a task graph (/tasks)", path)
        _write_group(f, graphs)


def _write_group(f: h5py.File, graphs: TaskGraph | dict[int, TaskGraph]) -> None:
    if isinstance(graphs, TaskGraph):
        graphs = {0: graphs}
    ranks = sorted(graphs)
    g = f.create_group("tasks")
    g.attrs["version"] = TASKS_VERSION
    g.attrs["ranks"] = np.array(ranks, np.int64)
    for k in dict.fromkeys(k for r in ranks for k in graphs[r].meta):
        values = [graphs[r].meta[k] for r in ranks if k in graphs[r].meta]
        g.attrs[k] = sum(values) if all(isinstance(v, (int, np.integer)) for v in values) \
            else values[0]
    for name, cols in TABLES.items():
        t = g.create_group(name)
        frames = [getattr(graphs[r], name) for r in ranks]
        t.create_dataset("rank", data=np.repeat(np.array(ranks, np.int64),
                                                [len(df) for df in frames]),
                         compression="gzip", compression_opts=1, shuffle=True)
        for col, kind in cols.items():
            v = np.concatenate([df[col].to_numpy() if col in df else np.zeros(len(df))
                                for df in frames]) if frames else np.zeros(0)
            if kind == "S":
                t.create_dataset(col, data=np.asarray(v, dtype=str).astype(object),
                                 dtype=h5py.string_dtype())
            else:
                t.create_dataset(col, data=np.asarray(v).astype(_NUMPY[kind]),
                                 compression="gzip", compression_opts=1, shuffle=True)


def describe(graph: TaskGraph) -> str:
    """One line on a task graph (what ``record --openmp``, ``info`` and ``validate`` print)."""
    s = graph.summary()
    return (f"{s['tasks']} tasks ({s['kernels']} task constructs), {s['edges']} dependences on "
            f"{s['handles']} data handles, {s['threads']} threads, {s['task_seconds']:.6g} s "
            "in tasks")


def task_ranks(path: str) -> list[int]:
    """The ranks whose task graphs a minitrace file holds ([0] for one process)."""
    check_file(path)
    try:
        with h5py.File(path, "r") as f:
            if "tasks" not in f:
                return []
            g = f["tasks"]
            _check_version(g, path)
            return [int(r) for r in g.attrs["ranks"]] if "ranks" in g.attrs else [0]
    except OSError:
        raise MinitraceError("corrupt or truncated HDF5 file", path) from None


def read_tasks(path: str, rank: int | None = None) -> TaskGraph:
    """The task graph of one process (``rank``; may be left out when the file holds one) of a
    minitrace file's ``/tasks`` group as a ``TaskGraph`` (pandas tables)."""
    check_file(path)
    try:
        with h5py.File(path, "r") as f:
            if "tasks" not in f:
                raise MinitraceError("holds no task graph (/tasks): record one with "
                                     "minitrace record --openmp", path)
            g = f["tasks"]
            version = _check_version(g, path)
            ranks = [int(r) for r in g.attrs["ranks"]] if "ranks" in g.attrs else [0]
            if rank is None and len(ranks) > 1:
                raise MinitraceError(f"holds the task graphs of {len(ranks)} ranks "
                                     f"({_ranks_text(ranks)}): choose one (--rank)", path)
            rank = ranks[0] if rank is None else rank
            if rank not in ranks:
                raise MinitraceError(f"holds no task graph of rank {rank} (ranks "
                                     f"{_ranks_text(ranks)})", path)
            tables = {name: _read_table(g, name, cols, path, rank if version > 1 else None)
                      for name, cols in TABLES.items()}
            meta = read_attrs(g)
    except OSError:
        raise MinitraceError("corrupt or truncated HDF5 file", path) from None
    tables["deps"]["mode"] = pd.Categorical(tables["deps"]["mode"],
                                            categories=list(MODES.values()))
    for k in ("version", "ranks"):
        meta.pop(k, None)
    meta["rank"] = rank
    return TaskGraph(meta=meta, **tables)


def _ranks_text(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")


def _check_version(g: h5py.Group, path: str) -> int:
    version = int(g.attrs.get("version", 0))
    if version not in READ_VERSIONS:
        raise MinitraceError(f"task graph format version {version} unknown to this minitrace "
                             f"(reads {', '.join(map(str, READ_VERSIONS))})", path)
    return version


def _read_table(g: h5py.Group, name: str, cols: dict, path: str,
                rank: int | None) -> pd.DataFrame:
    t = g.get(name)
    if not isinstance(t, h5py.Group):
        raise MinitraceError(f"corrupt task graph: /tasks/{name} missing", path)
    out, n = {}, None
    for col, kind in (({"rank": "i"} if rank is not None else {}) | cols).items():
        ds = t.get(col)
        if not isinstance(ds, h5py.Dataset) or ds.ndim != 1 or \
                (kind == "S") != (ds.dtype.kind == "O") or (n is not None and len(ds) != n):
            raise MinitraceError(f"corrupt task graph: /tasks/{name}/{col} missing, of the "
                                 "wrong type or length", path)
        n = len(ds)
        v = ds[...]
        out[col] = [x.decode() if isinstance(x, bytes) else str(x) for x in v] \
            if kind == "S" else v
    if rank is not None:
        keep = out.pop("rank") == rank
        out = {c: (np.asarray(v, dtype=object)[keep].tolist() if isinstance(v, list)
                   else v[keep]) for c, v in out.items()}
    return pd.DataFrame(out)
