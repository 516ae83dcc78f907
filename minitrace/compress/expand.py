"""Lazy expansion of a compressed trace: one rank, or a range of its actions, at a time.

:class:`CompressedReader` answers what :class:`~minitrace.storage.HDF5TraceReader` answers
(``columns``, ``read``, ``kind_rows``, ``kind_counts``, ``vector``, ``comms``...), so
``minitrace.open`` gives the same :class:`~minitrace.trace.Trace` on both forms; counts,
bytes, volumes and the communication matrix come from the grammar without expansion
(:meth:`CompressedReader.summary`, :meth:`CompressedReader.matrix`).  Everything was checked
when the file was read (:func:`.store.read`): expansion cannot loop or exceed its lengths.
"""
from __future__ import annotations

import h5py
import numpy as np
import pandas as pd

from .. import kinds as K
from ..errors import MinitraceError
from ..storage import _INT_COLUMNS, _check_meta, read_attrs
from ..model import ACTION_DTYPE, TraceColumns, assign_vec_offsets, vec_offsets
from . import signatures as SG
from . import volumes as V
from .store import Compressed, read

_COLUMN_ORDER = _INT_COLUMNS + ("volume", "t_start", "t_end", "vec_off")


class Expander:
    """Expands ranks of a :class:`Compressed` trace back into actions."""

    def __init__(self, c: Compressed, path: str | None = None):
        self.c = c
        self.path = path
        self.offsets = c.rank_offsets
        self._model_means = None

    @property
    def nranks(self) -> int:
        return self.c.nranks

    @property
    def grammar(self):
        return self.c.grammar

    def _fail(self, e: Exception) -> MinitraceError:
        return MinitraceError(f"corrupt trace: {e}", self.path)

    def rank_ids(self, rank: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Signature ids of actions ``lo:hi`` of ``rank`` (within the rank)."""
        return self.c.grammar.expand(int(self.c.grammar.rank_grammar[rank]), lo, hi)

    def rank(self, rank: int, lo: int = 0, hi: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(ACTION_DTYPE rows, their vectors back to back) of actions ``lo:hi`` of ``rank``."""
        c = self.c
        n = int(self.offsets[rank + 1] - self.offsets[rank])
        hi = n if hi is None else min(hi, n)
        lo = max(0, min(lo, hi))
        prefix = self.rank_ids(rank, 0, hi)          # the requests before lo are needed too
        r0, r1 = c.new_request_offsets[rank:rank + 2]
        try:
            full, vectors = SG.decode(c.table, prefix, rank, c.nranks, c.vec_offsets,
                                      c.vec_values, self._requests_upto(rank, prefix, r0, r1))
        except (ValueError, IndexError) as e:
            raise self._fail(e) from None
        out = full[lo:]
        vbefore = int(full["vec_len"][:lo].sum())
        vectors = vectors[vbefore:]
        out["vec_off"] = vec_offsets(out["vec_len"])
        self._fill_values(out, rank, lo, prefix)
        return out, vectors

    def _requests_upto(self, rank: int, ids: np.ndarray, r0: int, r1: int) -> np.ndarray:
        """The new request ids named by the first ``len(ids)`` actions of ``rank``."""
        c = self.c
        news = c.new_requests[r0:r1]
        col_new = (c.table["req_mode"] == SG.REQ_NEW).astype(np.int64)
        vec = c.table["vec"].astype(np.int64)
        per_vec = np.zeros(len(c.vec_offsets), np.int64)
        if len(c.vec_values):
            starts, ends = c.vec_offsets[:-1], c.vec_offsets[1:]
            req = c.vec_values[starts] == SG.VEC_REQUESTS
            modes = c.vec_values.copy()
            isnew = np.zeros(len(modes) + 1, np.int64)
            pos = np.arange(len(modes))
            owner = np.repeat(np.arange(len(starts)), ends - starts)
            is_mode = req[owner] & ((pos - starts[owner]) % 2 == 1)
            isnew[1:] = is_mode & (modes == SG.REQ_NEW)
            csum = np.cumsum(isnew)
            per_vec[:-1] = csum[ends] - csum[starts]
        per_sig = col_new + np.where(vec >= 0, per_vec[np.maximum(vec, 0)], 0)
        k = int(per_sig[ids].sum()) if len(ids) else 0
        if k > len(news):
            raise self._fail("more new requests than stored")
        return news[:k] if len(ids) < self.offsets[rank + 1] - self.offsets[rank] else news

    def _fill_values(self, out: np.ndarray, rank: int, lo: int, prefix: np.ndarray) -> None:
        """Volumes and times of rows ``lo:lo+len(out)`` of ``rank`` (``prefix``: its ids from
        the rank's start)."""
        c, side = self.c, self.c.side
        hv = c.has_volume[prefix]
        v0 = int(side["volume_offsets"][rank]) + int(hv[:lo].sum())
        mine = hv[lo:]
        vols = np.zeros(len(out))
        if c.mode == "exact":
            vols[mine] = V.dequantize(side["volume"][v0:v0 + int(mine.sum())],
                                      c.attrs.get("volume_divisor"))
        else:
            vols[mine] = V.from_codes(side["volume_code"][v0:v0 + int(mine.sum())],
                                      c.attrs["precision"])
        out["volume"] = vols
        enc = c.attrs.get("time_encoding")
        a0 = int(self.offsets[rank])
        if enc == "untimed":
            out["t_start"] = out["t_end"] = np.nan
        elif enc == "float-seconds":
            out["t_start"] = side["t_start"][a0 + lo:a0 + lo + len(out)]
            out["t_end"] = side["t_end"][a0 + lo:a0 + lo + len(out)]
        elif enc == "ns-gap":
            hi = lo + len(out)
            cols = {k: side[k][a0:a0 + hi].astype(np.int64) for k in ("t_gap", "t_duration")}
            vol_ns = None
            if c.attrs.get("duration_less_volume"):
                vol_ns = np.zeros(hi, np.int64)
                vol_ns[hv] = side["volume"][int(side["volume_offsets"][rank]):v0 + int(
                    mine.sum())]
            ts, te = V.decode_times(enc, float(c.attrs["t0"]), cols, vol_ns)
            out["t_start"], out["t_end"] = ts[lo:], te[lo:]
        else:
            ts, te = self._model_times(rank, prefix)
            out["t_start"], out["t_end"] = ts[lo:], te[lo:]

    def _model_times(self, rank: int, ids: np.ndarray):
        """Modelled times: each action its group's mean gap then mean duration, the rank's
        sequence stretched to its exact first and last times."""
        c = self.c
        if self._model_means is None:
            st = c.side["stats"]
            G = len(c.grammar.top_offsets) - 1
            means = {}
            for what in ("duration", "gap"):
                m = np.zeros((len(c.table), max(G, 1)))
                sel = st[st["what"].astype(str) == what]
                m[sel["signature"].to_numpy(np.int64), sel["group"].to_numpy(np.int64)] = \
                    sel["mean"].to_numpy(np.float64)
                means[what] = m
            self._model_means = means
        g = int(c.grammar.rank_grammar[rank])
        dur = self._model_means["duration"][ids, g]
        gap = self._model_means["gap"][ids, g]
        if len(gap):
            gap[0] = 0.0
        start = np.cumsum(gap + np.concatenate([[0.0], dur[:-1]]))
        end = start + dur
        t_first, t_last = float(c.side["t_first"][rank]), float(c.side["t_last"][rank])
        span = end[-1] - start[0] if len(end) else 0.0
        scale = (t_last - t_first) / span if span > 0 else 0.0
        return t_first + start * scale, t_first + end * scale

    def all(self) -> TraceColumns:
        """The whole trace expanded in memory."""
        parts, vecs = [], []
        for r in range(self.nranks):
            a, v = self.rank(r)
            parts.append(a)
            vecs.append(v)
        actions = np.concatenate(parts) if parts else np.zeros(0, ACTION_DTYPE)
        assign_vec_offsets(actions)
        return TraceColumns(actions, self.offsets.copy(),
                            np.concatenate(vecs) if vecs else np.zeros(0, np.int64),
                            dict(self.c.comms), list(self.c.strings), dict(self.c.meta))

    # -- without expanding --------------------------------------------------------------------
    def signature_counts(self) -> np.ndarray:
        """[nranks, signatures] occurrences, from the grammar (each distinct grammar once)."""
        per = {}
        rows = []
        for g in self.c.grammar.rank_grammar.tolist():
            if g not in per:
                per[g] = self.c.grammar.terminal_counts(g)
            rows.append(per[g])
        return np.stack(rows) if rows else np.zeros((0, len(self.c.table)), np.int64)

    def matrix(self) -> pd.DataFrame:
        """Bytes sent from each rank to each peer by point-to-point sends (rows: senders,
        columns: receivers), from signature counts: rank-relative peers resolved per rank."""
        c = self.c
        counts = self.signature_counts()
        t = c.table
        send = K.mask(K.SENDS)[t["kind"]] & (t["peer"] >= 0)
        P = c.nranks
        m = np.zeros((P, P), np.int64)
        sig = np.nonzero(send)[0]
        for r in range(P):
            n = counts[r, sig]
            use = n > 0
            s = sig[use]
            peer = np.where(t["peer_mode"][s] == 1, (t["peer"][s].astype(np.int64) + r) % P,
                            t["peer"][s])
            ok = (peer >= 0) & (peer < P)
            np.add.at(m[r], peer[ok], (n[use] * t["bytes_sent"][s])[ok])
        return pd.DataFrame(m, index=pd.Index(range(P), name="sender"),
                            columns=pd.Index(range(P), name="receiver"))


class CompressedReader(Expander):
    """The storage-layer reader of a compressed ``/trace`` (the HDF5TraceReader interface)."""

    def __init__(self, f: h5py.File, path: str):
        _check_meta(read_attrs(f), path)
        try:
            c = read(f["trace"], path)
        except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
            raise MinitraceError(f"corrupt trace: {str(e).splitlines()[0] if str(e) else e!r}",
                                 path) from None
        c.meta = {}
        super().__init__(c, path)
        self.timed = c.timed
        self.t0 = float(c.attrs.get("t0", 0.0))

    def columns(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        a = self.read(lo, hi)     # (in the column reader's order)
        return {name: a[name] for name in _COLUMN_ORDER}

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Global rows lo:hi (any range), expanding only the ranks and rows they cover."""
        parts = []
        first = int(np.searchsorted(self.offsets, lo, side="right")) - 1
        r = max(first, 0)
        while r < self.nranks and self.offsets[r] < hi:
            a0 = int(self.offsets[r])
            a, _ = self.rank(r, max(lo - a0, 0), hi - a0)
            parts.append(a)
            r += 1
        out = np.concatenate(parts) if parts else np.zeros(0, ACTION_DTYPE)
        out["vec_off"] = vec_offsets(out["vec_len"], self._vec_base(lo))
        return out

    def _vec_base(self, lo: int) -> int:
        """Offset of global row lo's vector in the expanded vector table."""
        c = self.c
        vec = c.table["vec"].astype(np.int64)
        clen = np.diff(c.vec_offsets)
        codes = np.concatenate([c.vec_values, [-1]])[c.vec_offsets[:-1]] if len(clen) else \
            np.zeros(0, np.int64)
        n_entries = np.where(codes == SG.VEC_REQUESTS, (clen - 1) // 2, clen - 1)
        lens = np.where(vec >= 0, n_entries[np.maximum(vec, 0)] if len(n_entries) else 0, 0)
        counts = self.signature_counts()
        r = int(np.searchsorted(self.offsets, lo, side="right")) - 1
        base = int((counts[:max(r, 0)] @ lens).sum()) if r > 0 else 0
        if 0 <= r < self.nranks and lo > self.offsets[r]:
            ids = self.rank_ids(r, 0, lo - int(self.offsets[r]))
            base += int(lens[ids].sum())
        return base

    def kind_rows(self, name: str) -> np.ndarray:
        code = K.CODE[name]
        sig_of_kind = self.c.table["kind"] == code
        rows = []
        for r in range(self.nranks):
            ids = self.rank_ids(r)
            rows.append(np.nonzero(sig_of_kind[ids])[0] + self.offsets[r])
        return np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)

    def kind_counts(self) -> tuple[list[str], np.ndarray]:
        from .store import kind_counts
        codes, counts = kind_counts(self.c)
        return [K.NAME.get(int(k), str(k)) for k in codes], counts

    def vectors(self) -> np.ndarray:
        return self.all().vectors

    def vector(self, row: int) -> np.ndarray:
        r = int(np.searchsorted(self.offsets, row, side="right")) - 1
        i = row - int(self.offsets[r])
        a, v = self.rank(r, i, i + 1)
        return v[:int(a["vec_len"][0])] if a["vec_len"][0] > 0 else np.zeros(0, np.int64)

    def comms(self) -> dict[int, np.ndarray]:
        return dict(self.c.comms)

    def strings(self) -> list[str]:
        return list(self.c.strings)

    def summary(self) -> pd.DataFrame:
        """Per rank, as :func:`minitrace.summary.summarize`, from the grammar alone: counts
        and bytes are signature counts times the signature's bytes; volumes are the stored
        side arrays' sums (model: the exact per-rank totals); times the rank's first and
        last."""
        c = self.c
        counts = self.signature_counts()
        t = c.table
        rows = []
        for r in range(self.nranks):
            n = counts[r]
            v0, v1 = (int(x) for x in c.side["volume_offsets"][r:r + 2])
            if c.mode == "exact":
                vol = float(V.dequantize(c.side["volume"][v0:v1],
                                         c.attrs.get("volume_divisor")).sum())
            else:
                vol = float(c.side["volume_totals"][r])
            t_first, t_last = self._span(r)
            rows.append({"rank": r, "actions": int(self.offsets[r + 1] - self.offsets[r]),
                         "bytes_sent": int(n @ t["bytes_sent"]),
                         "bytes_recv": int(n @ t["bytes_recv"]),
                         "volume": vol, "t_first": t_first, "t_last": t_last,
                         "span": t_last - t_first})
        df = pd.DataFrame(rows).set_index("rank")
        names, kc = self.kind_counts()
        for j, name in enumerate(names):
            df[f"n_{name}"] = kc[:, j]
        return df

    def _span(self, r: int) -> tuple[float, float]:
        """First start and last end of rank ``r``, stored per rank in both modes."""
        side = self.c.side
        if "t_first" not in side:
            return np.nan, np.nan
        return float(side["t_first"][r]), float(side["t_last"][r])
