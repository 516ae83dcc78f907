"""``minitrace.open``: a minitrace file as pandas tables (trace actions and benchmark results)."""
from __future__ import annotations

import os

import h5py
import numpy as np
import pandas as pd

from . import checked
from . import kinds as K
from .compress.expand import CompressedReader
from .compress.loop_view import loop_summary
from .errors import MinitraceError
from .model import TraceColumns
from .storage import HDF5TraceReader, attr_text, check_file, read_attrs
from .summary import send_matrix, summarize
from .validate import validate

_CATS = pd.CategoricalDtype([name for _, name, _ in K.KINDS])
_LOOKUP = np.full(256, -1, dtype=np.int16)
for _i, (_c, _n, _) in enumerate(K.KINDS):
    _LOOKUP[_c] = _i


def actions_frame(a, rank: int | np.ndarray | None = None) -> pd.DataFrame:
    """ACTION_DTYPE rows (or a dict of its columns) as a DataFrame whose ``kind`` column holds
    the lower-case kind names."""
    names = a.dtype.names if isinstance(a, np.ndarray) else list(a)
    cols = {name: a[name] for name in names if name != "kind"}
    df = pd.DataFrame(cols, copy=False)
    df.insert(0, "kind", pd.Categorical.from_codes(_LOOKUP[a["kind"]], dtype=_CATS))
    if rank is not None:
        df.insert(0, "rank", rank)
    return df


class Trace:
    """An open minitrace file.  Use as a context manager or call ``close()``.

    ``ranks``: the world ranks; ``actions(rank)``: one rank's actions in program order;
    ``actions(kind="send")``: one kind across ranks (read through the kind index);
    ``summary()``: per-rank totals; ``validate()``: consistency report;
    ``bench(suite)``: a benchmark suite's results; ``meta``: file metadata.
    """

    def __init__(self, path: str):
        self.path = os.fspath(path)
        check_file(self.path)
        try:
            # A chunk cache large enough that reading rank after rank decompresses each chunk once.
            self._f = h5py.File(self.path, "r", rdcc_nbytes=256 << 20, rdcc_nslots=100003)
        except (OSError, RuntimeError, ValueError):
            raise MinitraceError("corrupt or truncated HDF5 file", self.path) from None
        try:
            self.meta = read_attrs(self._f)
            top = checked.names(self._f, "file", self.path)
            self._reader = _reader(self._f, self.path) if "trace" in top else None
            self.has_calibration = "calibration" in top
            bench = checked.member(self._f, "bench", "benchmark results", self.path, h5py.Group,
                                   required=False)
            self.suites: list[str] = checked.names(bench, "benchmark results", self.path) \
                if bench is not None else []
        except BaseException:
            self._f.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self._f.close()

    def __repr__(self) -> str:
        what = f"{self.nranks} ranks, {self.nactions} actions" if self.has_trace else "no trace"
        return f"<minitrace.Trace {self.path!r}: {what}, bench={self.suites}>"

    # -- trace ---------------------------------------------------------------------------
    @property
    def has_trace(self) -> bool:
        return self._reader is not None

    def _need_trace(self) -> HDF5TraceReader:
        if self._reader is None:
            raise MinitraceError("holds no trace, only benchmark results", self.path)
        return self._reader

    @property
    def nranks(self) -> int:
        return self._need_trace().nranks

    @property
    def ranks(self) -> list[int]:
        return list(range(self.nranks))

    @property
    def nactions(self) -> int:
        return int(self._need_trace().offsets[-1])

    @property
    def volume_unit(self) -> str:
        return self.meta.get("volume_unit", "seconds")

    @property
    def complete(self) -> bool:
        return bool(self.meta.get("complete", True))

    def actions(self, rank: int | None = None, kind: str | None = None,
                rows: slice | None = None) -> pd.DataFrame:
        """Actions of one rank (program order), one kind (with a ``rank`` column), or both.
        ``rows``: only these actions of the rank (e.g. some iterations of a loop, from
        ``minitrace.compress.loops``), indexed by their place in the rank; a compressed trace
        expands only what they need."""
        r = self._need_trace()
        if rank is not None and not 0 <= rank < r.nranks:
            raise MinitraceError(f"no rank {rank} (ranks 0..{r.nranks - 1})", self.path)
        if kind is None:
            if rank is None:
                raise TypeError("actions() needs a rank, a kind, or both")
            lo, hi = int(r.offsets[rank]), int(r.offsets[rank + 1])
            if rows is None:
                return actions_frame(r.columns(lo, hi))
            a, b, step = rows.indices(hi - lo)
            if step != 1:
                raise TypeError("actions(rows=...) takes a slice without a step")
            b = max(a, b)
            if hasattr(r, "grammar"):       # compressed: expand just these
                df = actions_frame(r.columns(lo + a, lo + b))
            else:                            # columns: times are decoded from the rank's start
                cols = r.columns(lo, lo + b)
                df = actions_frame({k: v[a:] for k, v in cols.items()})
            df.index = pd.RangeIndex(a, b)
            return df
        K.code(kind)
        rows = r.kind_rows(kind)
        if rank is not None:
            rows = rows[(rows >= r.offsets[rank]) & (rows < r.offsets[rank + 1])]
        rank_of = np.searchsorted(r.offsets, rows, side="right") - 1
        parts = []
        for rk in np.unique(rank_of):  # read only the ranks that hold this kind
            lo, hi = int(r.offsets[rk]), int(r.offsets[rk + 1])
            sel = rows[rank_of == rk]
            a = r.read(lo, int(sel.max()) + 1)[sel - lo]
            if (a["kind"] != K.CODE[kind]).any():
                raise MinitraceError(f"corrupt trace: index/kind_rows/{kind} names actions of "
                                     "another kind", self.path)
            parts.append(actions_frame(a, rank=int(rk)).set_index(sel - lo))
        if not parts:
            return actions_frame(np.zeros(0, r.read(0, 0).dtype), rank=np.zeros(0, int))
        return pd.concat(parts)

    def data(self) -> TraceColumns:
        """Everything in memory (for exporters and validation)."""
        d = self._need_trace().all()
        d.meta = dict(self.meta)
        return d

    @property
    def rank_offsets(self) -> np.ndarray:
        """Rank r's actions are rows rank_offsets[r]:rank_offsets[r + 1] (int64, nranks + 1)."""
        return self._need_trace().offsets

    def data_of_ranks(self, lo: int, hi: int) -> TraceColumns:
        """Ranks lo..hi-1 in memory as a trace of their own (rows from 0), with the metadata."""
        r = self._need_trace()
        if not hasattr(r, "read_ranks"):
            raise MinitraceError("a compressed trace is read whole: run this without mpiexec",
                                 self.path)
        d = r.read_ranks(lo, hi)
        d.meta = dict(self.meta)
        return d

    def comms(self) -> dict[int, np.ndarray]:
        """Communicator id -> world ranks of its members, in communicator-rank order."""
        return self._need_trace().comms()

    def vector(self, rank: int, index: int) -> np.ndarray:
        """The per-peer vector of action ``index`` of ``rank`` (empty when it has none)."""
        r = self._need_trace()
        if not 0 <= rank < r.nranks:
            raise MinitraceError(f"no rank {rank} (ranks 0..{r.nranks - 1})", self.path)
        if not 0 <= index < r.offsets[rank + 1] - r.offsets[rank]:
            raise MinitraceError(f"no action {index} on rank {rank}", self.path)
        return r.vector(int(r.offsets[rank]) + index)

    @property
    def compressed(self) -> bool:
        """True for the compressed form (minitrace.compress): same API, expanded lazily."""
        return self.compressed_form is not None

    @property
    def compressed_form(self):
        """The compressed trace as stored (``minitrace.compress.store.Compressed``: signature
        table, loop grammar, side data) for the compressed form, None for the columns."""
        r = self._need_trace()
        return r.c if hasattr(r, "grammar") else None

    def summary(self, ranks: range | None = None) -> pd.DataFrame:
        """Per rank (every rank, or ``ranks``): action count, counts by kind, bytes
        sent/received, compute volume, span (from the grammar, nothing expanded, for a
        compressed trace)."""
        r = self._need_trace()
        if hasattr(r, "summary"):
            s = r.summary()
            return s if ranks is None else s.iloc[ranks.start:ranks.stop]
        return summarize(r, ranks)

    def matrix(self) -> pd.DataFrame:
        """Bytes sent by point-to-point sends from each rank (rows) to each rank (columns)."""
        r = self._need_trace()
        if hasattr(r, "matrix"):
            return r.matrix()
        return send_matrix(self)

    def loops(self) -> pd.DataFrame:
        """Each distinct rank program's top-level loops: where they sit, their iterations, their
        body and their share of the actions and of the time (:mod:`minitrace.compress`)."""
        return loop_summary(self)

    def validate(self):
        """Check the trace's consistency; returns a ``ValidationReport``."""
        return validate(self.data())

    # -- benchmark results ---------------------------------------------------------------
    def bench(self, suite: str) -> "BenchResult":
        """A suite's results, every dataset read checked (``minitrace.checked``)."""
        if suite not in self.suites:
            raise MinitraceError(f"no results for bench suite {suite!r} "
                                 f"(has: {', '.join(self.suites) or 'none'})", self.path)
        g = checked.member(self._f["bench"], suite, "benchmark results", self.path, h5py.Group)
        return BenchResult(g, self.path)


class BenchResult:
    """One suite's stored results: ``attrs`` (parameters), ``arrays`` (name -> ndarray: numbers
    or text, any rank), and ``table()``: every 1-D column of the longest length as a
    DataFrame."""

    def __init__(self, g: h5py.Group, path: str):
        self.name = g.name.rsplit("/", 1)[-1]
        self.attrs = read_attrs(g)
        kind = "benchmark results"
        self.arrays = {k: checked.array(g, k, kind, path, "iufbT", ndim=None)
                       for k in checked.names(g, kind, path)}

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def __contains__(self, name: str) -> bool:
        return name in self.arrays

    def table(self) -> pd.DataFrame:
        one_d = {k: v for k, v in self.arrays.items() if v.ndim == 1}
        if not one_d:
            return pd.DataFrame()
        n = max(len(v) for v in one_d.values())
        return pd.DataFrame({k: v for k, v in one_d.items() if len(v) == n})


def _reader(f: h5py.File, path: str):
    """The storage-layer reader of ``/trace``: columns, or the compressed form."""
    g = checked.member(f, "trace", "trace", path, h5py.Group)   # (a hard link to a group)
    try:
        form = attr_text(g.attrs.get("form"))
    except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
        raise MinitraceError(f"corrupt trace: /trace unreadable ({e})", path) from None
    if form == "grammar":
        return CompressedReader(f, path)
    return HDF5TraceReader(f, path)


def open(path: str) -> Trace:  # noqa: A001 - the public name the API promises
    """Open a minitrace HDF5 file (trace and/or benchmark results)."""
    return Trace(path)
