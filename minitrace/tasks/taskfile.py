"""The ``/tasks`` group of a minitrace file (docs/FORMAT.md): a ``TaskGraph``'s tables, one
subgroup each, one dataset per column; text columns as UTF-8 strings.  The machine's
topology is the file's ``/provenance/lstopo_xml``, stored with every file."""
from __future__ import annotations

import h5py
import numpy as np
import pandas as pd

from ..errors import MinitraceError
from ..storage import _atomic_file, _new_file_attrs, check_file, read_attrs
from .graph import MODES, TaskGraph

TASKS_VERSION = 1
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


def write_tasks(path: str, graph: TaskGraph, meta: dict | None = None) -> None:
    """Write ``graph`` as a new minitrace file holding ``/tasks``."""
    with _atomic_file(path) as f:
        f.attrs.update(_new_file_attrs(meta or {}))
        g = f.create_group("tasks")
        g.attrs["version"] = TASKS_VERSION
        for k, v in graph.meta.items():
            g.attrs[k] = v
        for name, cols in TABLES.items():
            t = g.create_group(name)
            df = getattr(graph, name)
            for col, kind in cols.items():
                v = df[col].to_numpy() if col in df else np.zeros(len(df))
                if kind == "S":
                    t.create_dataset(col, data=np.asarray(v, dtype=str).astype(object),
                                     dtype=h5py.string_dtype())
                else:
                    t.create_dataset(col, data=np.asarray(v).astype(
                        {"i": np.int64, "u": np.uint64, "f": np.float64, "b": np.bool_}[kind]),
                        compression="gzip", compression_opts=1, shuffle=True)


def has_tasks(path: str) -> bool:
    """Whether a minitrace file holds a ``/tasks`` group."""
    check_file(path)
    with h5py.File(path, "r") as f:
        return "tasks" in f


def describe(graph: TaskGraph) -> str:
    """One line on a task graph (what ``record --openmp``, ``info`` and ``validate`` print)."""
    s = graph.summary()
    return (f"{s['tasks']} tasks ({s['kernels']} task constructs), {s['edges']} dependences on "
            f"{s['handles']} data handles, {s['threads']} threads, {s['task_seconds']:.6g} s "
            "in tasks")


def read_tasks(path: str) -> TaskGraph:
    """The ``/tasks`` group of a minitrace file as a ``TaskGraph`` (pandas tables)."""
    check_file(path)
    try:
        with h5py.File(path, "r") as f:
            if "tasks" not in f:
                raise MinitraceError("holds no task graph (/tasks): record one with "
                                     "minitrace record --openmp", path)
            g = f["tasks"]
            tables = {name: _read_table(g, name, cols, path) for name, cols in TABLES.items()}
            meta = read_attrs(g)
    except OSError:
        raise MinitraceError("corrupt or truncated HDF5 file", path) from None
    tables["deps"]["mode"] = pd.Categorical(tables["deps"]["mode"],
                                            categories=list(MODES.values()))
    meta.pop("version", None)
    return TaskGraph(meta=meta, **tables)


def _read_table(g: h5py.Group, name: str, cols: dict, path: str) -> pd.DataFrame:
    t = g.get(name)
    if not isinstance(t, h5py.Group):
        raise MinitraceError(f"corrupt task graph: /tasks/{name} missing", path)
    out, n = {}, None
    for col, kind in cols.items():
        ds = t.get(col)
        if not isinstance(ds, h5py.Dataset) or ds.ndim != 1 or \
                (kind == "S") != (ds.dtype.kind == "O") or (n is not None and len(ds) != n):
            raise MinitraceError(f"corrupt task graph: /tasks/{name}/{col} missing, of the "
                                 "wrong type or length", path)
        n = len(ds)
        v = ds[...]
        out[col] = [x.decode() if isinstance(x, bytes) else str(x) for x in v] \
            if kind == "S" else v
    return pd.DataFrame(out)
