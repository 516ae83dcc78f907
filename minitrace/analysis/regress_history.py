"""The non-regression history file: one row per run (its metrics, date, host, source file,
command line and provenance), stored as the group ``/bench/history`` of a file of its own.

Appending is read, extend, write a new file, rename: a reader never sees half a history.  The
whole read-test-append of ``minitrace regress`` holds an exclusive ``flock`` on the side file
``HISTORY.lock`` (never removed: removing a lock file lets two processes lock different
files), so processes appending at the same time take turns and none loses another's runs.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np

from ..checked import corrupt
from ..errors import MinitraceError
from ..storage import (locked, read_provenance,  # noqa: F401 (locked: the history's lock)
                       write_bench)
from ..trace import open as open_file
from .regress_metrics import HISTORY_SUITE, run_metrics

_RUN_COLUMNS = ("date", "host", "source", "command_line")
_PER_RUN = ("date", "command_line")  # provenance fields kept per run, not in the shared record


@dataclass
class Run:
    """One new run: its metrics (name -> (value, direction)) and where it comes from."""
    metrics: dict
    date: str
    host: str
    source: str
    command_line: str
    provenance: dict | None


def read_run(path: str) -> Run:
    """The metrics and metadata of a minitrace file holding benchmark results."""
    with open_file(path) as t:
        metrics = run_metrics(t)
        meta = t.meta
    if not metrics:
        raise MinitraceError("its benchmark results give no metric to test", path)
    p = read_provenance(path)
    hosts = meta.get("hosts")
    host = ",".join(dict.fromkeys(hosts)) if isinstance(hosts, list) and hosts else \
        (p or {}).get("hostname", "")
    return Run(metrics=metrics, date=str(meta.get("date") or meta.get("created") or ""),
               host=host, source=os.path.abspath(path),
               command_line=str(meta.get("command_line") or (p or {}).get("command_line", "")),
               provenance=p)


@dataclass
class History:
    """Runs x metrics (NaN where a run lacks a metric), the metrics' names and directions, and
    per-run metadata; ``provenance`` holds the distinct provenance records (JSON) that runs
    point to with ``runs['provenance_index']``."""
    metrics: list[str] = field(default_factory=list)
    directions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    values: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    runs: dict = field(default_factory=lambda: {k: np.zeros(0, object) for k in _RUN_COLUMNS}
                       | {"provenance_index": np.zeros(0, np.int32)})
    provenance: list[str] = field(default_factory=list)

    @property
    def nruns(self) -> int:
        return len(self.values)

    def extended(self, new: list[Run]) -> "History":
        """This history with ``new`` appended (metrics first seen are added as columns, NaN
        for the earlier runs; a known metric keeps its direction)."""
        names = list(self.metrics)
        index = {n: j for j, n in enumerate(names)}
        directions = list(self.directions)
        for run in new:
            for name in sorted(run.metrics):
                if name not in index:
                    index[name] = len(names)
                    names.append(name)
                    directions.append(run.metrics[name][1])
        values = np.full((self.nruns + len(new), len(names)), np.nan)
        values[:self.nruns, :len(self.metrics)] = self.values
        for i, run in enumerate(new):
            for name, (v, _) in run.metrics.items():
                values[self.nruns + i, index[name]] = v
        shared = list(self.provenance)
        where = {s: k for k, s in enumerate(shared)}
        pidx = []
        for run in new:
            rec = json.dumps({k: v for k, v in (run.provenance or {}).items()
                              if k not in _PER_RUN}, sort_keys=True)
            if rec not in where:
                where[rec] = len(shared)
                shared.append(rec)
            pidx.append(where[rec])
        runs = {k: np.concatenate([self.runs[k], np.array([getattr(r, k) for r in new],
                                                          dtype=object)])
                for k in _RUN_COLUMNS}
        runs["provenance_index"] = np.concatenate([self.runs["provenance_index"],
                                                   np.array(pidx, np.int32)])
        return History(names, np.array(directions, np.int8), values, runs, shared)


def read(path: str) -> History:
    """The history in ``path`` (an empty one when the file does not exist yet), checked: the
    documented columns with their types and shapes (``values`` runs x metrics, one name per
    metric, unique), directions in {-1, 0, 1}, provenance indices in range."""
    if not os.path.exists(path):
        return History()
    with open_file(path) as t:
        if HISTORY_SUITE not in t.suites:
            raise MinitraceError(f"not a regression history (no /bench/{HISTORY_SUITE} group)",
                                 path)
        b = t.bench(HISTORY_SUITE)
    a = b.arrays

    def bad(what: str) -> MinitraceError:
        return corrupt("history", what, path)

    def column(name, text, ndim=1):
        v = a.get(name)
        if v is None:
            raise bad(f"no {name} column")
        if v.ndim != ndim or (v.dtype == object) != text or \
                (not text and v.dtype.kind not in ("iu" if name != "values" else "iuf")):
            raise bad(f"{name} is {v.dtype} of shape {v.shape}, not "
                      f"{'text' if text else 'numbers'} of rank {ndim}")
        return v

    metrics = column("metric", True)
    values = column("values", False, ndim=2)
    nruns = len(values)
    if values.shape[1] != len(metrics):
        raise bad(f"values are {values.shape[0]} x {values.shape[1]}, not runs x the "
                  f"{len(metrics)} metrics")
    if len(set(metrics.tolist())) != len(metrics):
        raise bad("a metric name appears twice")
    values = values.astype(float)
    if np.isinf(values).any():
        raise bad("an infinite value")
    directions = column("direction", False)
    if len(directions) != len(metrics) or not np.isin(directions, (-1, 0, 1)).all():
        raise bad("direction is not one of -1, 0, 1 per metric")
    provenance = column("provenance", True)
    runs = {k: column(k, True) for k in _RUN_COLUMNS}
    runs["provenance_index"] = column("provenance_index", False)
    for k, v in runs.items():
        if len(v) != nruns:
            raise bad(f"{k} has {len(v)} rows for {nruns} runs")
    pidx = runs["provenance_index"]
    if len(pidx) and (pidx.min() < 0 or pidx.max() >= len(provenance)):
        raise bad("provenance_index beyond the provenance records")
    for key, n in (("runs", nruns), ("metrics", len(metrics))):
        if key in b.attrs and b.attrs[key] != n:
            raise bad(f"attribute {key} = {b.attrs[key]!r} but {n} stored")
    runs["provenance_index"] = pidx.astype(np.int32)
    return History(metrics=[str(x) for x in metrics], directions=directions.astype(np.int8),
                   values=values, runs=runs, provenance=[str(x) for x in provenance])


def write(path: str, h: History) -> None:
    """Replace the history in ``path`` by ``h``: written as a new file then renamed over it
    (rewriting the group in place would leave HDF5 the dead copy's space at every append)."""
    columns = {"values": h.values, "metric": np.array(h.metrics, dtype=object),
               "direction": h.directions, "provenance": np.array(h.provenance, dtype=object),
               **h.runs}
    write_bench(path, HISTORY_SUITE, columns, fresh=True,
                attrs={"content": "minitrace regress history", "runs": h.nruns,
                       "metrics": len(h.metrics)})
