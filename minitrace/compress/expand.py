"""Lazy expansion of a compressed trace: one rank, or a range of its actions, at a time.

:class:`CompressedReader` answers what :class:`~minitrace.storage.HDF5TraceReader` answers
(``columns``, ``read``, ``kind_rows``, ``kind_counts``, ``vector``, ``comms``...), so
``minitrace.open`` gives the same :class:`~minitrace.trace.Trace` on both forms; counts,
bytes, volumes and the communication matrix come from the grammar without expansion
(:meth:`CompressedReader.summary`, :meth:`CompressedReader.matrix`), but in files whose
message sizes are tokens (format version 12), whose ranks are resolved whole, once.
Everything was checked when the file was read (:func:`.store.read`): expansion cannot loop or
exceed its lengths.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import h5py
import numpy as np
import pandas as pd

from .. import checked
from .. import kinds as K
from ..errors import MinitraceError
from ..storage import INT_COLUMNS, check_meta, read_attrs
from ..model import ACTION_DTYPE, TraceColumns, assign_vec_offsets, vec_offsets
from . import epochs as E
from . import signatures as SG
from . import volumes as V
from .store import Compressed, kind_counts, rank_signatures, read, token_sites

_COLUMN_ORDER = INT_COLUMNS + ("volume", "t_start", "t_end", "vec_off")


@dataclass
class _Position:
    """Where an expansion of one rank stands: what the actions before ``row`` consumed."""

    row: int                 # action within the rank
    requests: int            # new request ids named before it (within the rank's stream)
    latest: int | None       # the last of them
    volumes: int             # volume-side entries before it (global index)
    ns: int = 0              # ns-gap: end of the previous action's time base (see _times)
    top: int = V.NO_TIME     # predicted ns-gap: the latest time decoded (their running max)
    model: float = 0.0       # model: unscaled start of the next action


class Expander:
    """Expands ranks of a :class:`Compressed` trace back into actions, a range at a time:
    what a range needs from the actions before it (request ids, volume entries, the time
    base) is counted from their signature ids and side arrays, never decoded."""

    def __init__(self, c: Compressed, path: str | None = None):
        self.c = c
        self.path = path
        self.offsets = c.rank_offsets
        t = c.table
        vec = t["vec"].astype(np.int64)
        news_in_vec = np.zeros(max(len(c.vec_offsets) - 1, 0), np.int64)
        if len(news_in_vec):      # token vectors: [code, (mode, value)...]
            starts, ends = c.vec_offsets[:-1], c.vec_offsets[1:]
            owner = np.repeat(np.arange(len(starts)), ends - starts)
            pos = np.arange(len(c.vec_values)) - starts[owner]
            is_new = (c.vec_values[starts][owner] == SG.VEC_REQUESTS) & (pos % 2 == 1) & \
                (c.vec_values == SG.REQ_NEW)
            news_in_vec = np.bincount(owner[is_new], minlength=len(starts))
        #: new request ids each signature names
        self.sig_news = (t["req_mode"] == SG.REQ_NEW).astype(np.int64) + \
            np.where(vec >= 0, news_in_vec[np.maximum(vec, 0)] if len(news_in_vec) else 0, 0)
        self._means = None
        self._model = None
        self._model_rank = None      # (rank, its modelled volumes)
        #: each rank's signature ids, size tokens resolved (files that hold them: a reference
        #: may reach any earlier occurrence of its site, so a rank is resolved whole, once)
        self._resolved: dict[int, np.ndarray] = {}

    @property
    def nranks(self) -> int:
        return self.c.nranks

    @property
    def grammar(self):
        return self.c.grammar

    def _fail(self, e) -> MinitraceError:
        return MinitraceError(f"corrupt trace: {e}", self.path)

    def affordable(self, n: int, per_action: int = 3 * ACTION_DTYPE.itemsize) -> None:
        """Refuse, before expanding, ``n`` actions that would not fit in this machine's memory
        (a grammar of a few bytes can stand for 2**48 actions)."""
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        if n * per_action > memory:
            raise MinitraceError(f"expanding {n} actions needs {n * per_action / 2**30:.0f} "
                                 f"GiB, more than this machine's {memory / 2**30:.0f} GiB: "
                                 f"read a rank or a range of actions at a time", self.path)

    def rank_ids(self, rank: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Signature ids of actions ``lo:hi`` of ``rank`` (within the rank)."""
        n = int(self.offsets[rank + 1] - self.offsets[rank])
        if self.c.tokens is None:
            self.affordable(min(n if hi is None else hi, n) - max(lo, 0), per_action=16)
            return self.c.grammar.expand(int(self.c.grammar.rank_grammar[rank]), lo, hi)
        ids = self._resolved.get(rank)
        if ids is None:
            self.affordable(n, per_action=48)
            try:
                ids = rank_signatures(self.c, rank)
            except ValueError as e:
                raise self._fail(e) from None
            self._resolved[rank] = ids.astype(np.int32 if len(self.c.table) < 1 << 31
                                              else np.int64)
            ids = self._resolved[rank]
        return ids[max(lo, 0):hi].astype(np.int64)

    def position(self, rank: int, row: int) -> _Position:
        """The state at action ``row`` of ``rank``, from the ids and side arrays before it."""
        c, side = self.c, self.c.side
        before = self.rank_ids(rank, 0, row)
        k = int(self.sig_news[before].sum())
        r0 = int(c.new_request_offsets[rank])
        if k > c.new_request_offsets[rank + 1] - r0:
            raise self._fail("more new request ids named than stored")
        vol = int(side["volume_offsets"][rank])
        nvol = int(c.has_volume[before].sum())
        pos = _Position(row, k, int(c.new_requests[r0 + k - 1]) if k else None, vol + nvol)
        enc = c.attrs.get("time_encoding")
        a0 = int(self.offsets[rank])
        if enc == "ns-gap" and row and c.attrs.get("time_coding"):
            vols = np.zeros(row)
            vols[c.has_volume[before]] = V.dequantize(side["volume"][vol:vol + nvol], c.attrs)
            _, _, pos.ns, pos.top = V.decode_predicted(
                side["t_gap"][a0:a0 + row], side["t_duration"][a0:a0 + row],
                V.predicted_durations(vols), c.attrs["time_quantum"], 0, V.NO_TIME)
        elif enc == "ns-gap" and row:
            pos.ns = (int(side["t_gap"][a0:a0 + row].sum(dtype=np.int64)) +
                      int(side["t_duration"][a0:a0 + row].sum(dtype=np.int64))) * \
                int(c.attrs.get("time_quantum", 1))
            if c.attrs.get("duration_less_volume"):
                pos.ns += int(side["volume"][vol:vol + nvol].sum(dtype=np.int64))
        elif enc == "model" and row:
            gap, dur = self._model_means(rank)
            pos.model = float(gap[before[1:]].sum() + dur[before].sum())
        return pos

    def chunk(self, rank: int, pos: _Position, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(actions, vectors) of ``pos.row:hi`` of ``rank``; ``pos`` moves to ``hi``."""
        c = self.c
        self.affordable(hi - pos.row)
        ids = self.rank_ids(rank, pos.row, hi)
        k = int(self.sig_news[ids].sum())
        r0 = int(c.new_request_offsets[rank]) + pos.requests
        if r0 + k > c.new_request_offsets[rank + 1]:
            raise self._fail("more new request ids named than stored")
        try:
            out, vectors = SG.decode(c.table, ids, rank, c.nranks, c.vec_offsets, c.vec_values,
                                     c.new_requests[r0:r0 + k], pos.latest)
        except (ValueError, IndexError) as e:
            raise self._fail(e) from None
        out["vec_off"] = vec_offsets(out["vec_len"])
        row0 = int(self.offsets[rank]) + pos.row
        nvol = self._values(out, rank, pos, ids)
        checked.finite_columns(out, row0, self.path)
        pos.row = hi
        pos.requests += k
        if k:
            pos.latest = int(c.new_requests[r0 + k - 1])
        pos.volumes += nvol
        return out, vectors

    def rank(self, rank: int, lo: int = 0, hi: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(ACTION_DTYPE rows, their vectors back to back) of actions ``lo:hi`` of ``rank``."""
        n = int(self.offsets[rank + 1] - self.offsets[rank])
        hi = n if hi is None else min(hi, n)
        lo = max(0, min(lo, hi))
        return self.chunk(rank, self.position(rank, lo), hi)

    def chunks(self, rank: int, rows: int = 1 << 16):
        """``rank``'s (actions, vectors) in consecutive ranges of at most ``rows`` actions."""
        n = int(self.offsets[rank + 1] - self.offsets[rank])
        pos = self.position(rank, 0)
        while pos.row < n:
            yield self.chunk(rank, pos, min(pos.row + rows, n))

    def _values(self, out: np.ndarray, rank: int, pos: _Position, ids: np.ndarray) -> int:
        """Fill volumes and times of the rows from ``pos``; the volume entries they used."""
        c, side = self.c, self.c.side
        mine = c.has_volume[ids]
        nvol = int(mine.sum())
        v0 = pos.volumes
        if v0 + nvol > int(side["volume_offsets"][rank + 1]):
            raise self._fail("more volumes named than stored")
        vols = np.zeros(len(out))
        if c.mode == "exact":
            stored = side["volume"][v0:v0 + nvol]
            vols[mine] = V.dequantize(stored, c.attrs)
        else:
            vols[mine] = self._model_volumes(rank, pos, ids)[mine]
        out["volume"] = vols
        enc = c.attrs.get("time_encoding")
        a = int(self.offsets[rank]) + pos.row
        n = len(out)
        if enc == "untimed":
            out["t_start"] = out["t_end"] = np.nan
        elif enc == "float-seconds":
            out["t_start"] = side["t_start"][a:a + n]
            out["t_end"] = side["t_end"][a:a + n]
        elif enc == "ns-gap" and c.attrs.get("time_coding"):
            start, end, pos.ns, pos.top = V.decode_predicted(
                side["t_gap"][a:a + n], side["t_duration"][a:a + n],
                V.predicted_durations(vols), c.attrs["time_quantum"], pos.ns, pos.top)
            t0 = float(c.attrs["t0"])
            out["t_start"] = start / V.NS + t0
            out["t_end"] = end / V.NS + t0
        elif enc == "ns-gap":
            quantum = int(c.attrs.get("time_quantum", 1))
            gap = side["t_gap"][a:a + n].astype(np.int64) * quantum
            dur = side["t_duration"][a:a + n].astype(np.int64) * quantum
            if c.attrs.get("duration_less_volume"):
                dur[mine] += stored.astype(np.int64)
            steps = gap.copy()
            steps[1:] += dur[:-1]
            start = pos.ns + np.cumsum(steps, dtype=np.int64)
            t0 = float(c.attrs["t0"])
            out["t_start"] = start / V.NS + t0
            out["t_end"] = out["t_start"] + dur / V.NS
            pos.ns += int(gap.sum(dtype=np.int64)) + int(dur.sum(dtype=np.int64))
        else:
            out["t_start"], out["t_end"] = self._model_times(rank, pos, ids)
        return nvol

    def _model_volumes(self, rank: int, pos: _Position, ids: np.ndarray) -> np.ndarray:
        """Model-mode volumes of rows ``ids`` from ``pos``: the epoch model (epochs.py) of
        the whole rank, kept for the next range of the same rank."""
        c = self.c
        if self._model is None:
            self._model = E.EpochVolumes(c.side, c.attrs, c.has_volume, c.table["kind"],
                                         c.nranks, token_sites(c.size_sites[0], c.tokens))
        if self._model_rank is None or self._model_rank[0] != rank:
            try:
                v = self._model.rank(self.rank_ids(rank), rank,
                                     float(c.side["volume_totals"][rank]))
            except ValueError as e:
                raise self._fail(e) from None
            self._model_rank = (rank, v)
        return self._model_rank[1][pos.row:pos.row + len(ids)]

    def _model_means(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        """(mean gap, mean duration) of each signature in ``rank``'s group."""
        c = self.c
        if self._means is None:
            st = c.side["stats"]
            G = max(len(c.grammar.top_offsets) - 1, 1)
            self._means = {}
            per_site = "site" in st.columns      # (format version 10 on; else per signature)
            n = len(c.table)
            site, nbytes = c.size_sites if per_site else \
                (np.arange(n), np.zeros(n, np.int64))
            for what in ("gap", "duration"):
                sel = st[st["what"] == V.QUANTITIES.index(what)]
                at = (sel["site" if per_site else "signature"].to_numpy(np.int64),
                      sel["group"].to_numpy(np.int64))
                mean = np.zeros((int(site.max(initial=-1)) + 1, G))
                per_byte = np.zeros_like(mean)
                mean[at] = sel["mean"].to_numpy(np.float64)
                if per_site:
                    per_byte[at] = sel["per_byte"].to_numpy(np.float64)
                self._means[what] = mean[site] + per_byte[site] * nbytes[:, None]
        g = int(c.grammar.rank_grammar[rank])
        return self._means["gap"][:, g], self._means["duration"][:, g]

    def _model_times(self, rank: int, pos: _Position, ids: np.ndarray):
        """Modelled times: each action its group's mean gap then mean duration, the rank's
        sequence stretched to its exact first start and last end."""
        c = self.c
        gap_m, dur_m = self._model_means(rank)
        gap, dur = gap_m[ids], dur_m[ids]
        if pos.row == 0 and len(gap):
            gap = gap.copy()
            gap[0] = 0.0
        steps = gap.copy()
        steps[1:] += dur[:-1]
        start = pos.model + np.cumsum(steps)
        end = start + dur
        counts = c.grammar.terminal_counts(int(c.grammar.rank_grammar[rank])) \
            if c.tokens is None else np.bincount(self.rank_ids(rank), minlength=len(c.table))
        first = int(self.rank_ids(rank, 0, 1)[0]) if self.offsets[rank + 1] > \
            self.offsets[rank] else 0
        total = float(counts @ gap_m - gap_m[first] + counts @ dur_m)
        if len(gap):
            pos.model = float(end[-1])
        t_first, t_last = float(c.side["t_first"][rank]), float(c.side["t_last"][rank])
        scale = (t_last - t_first) / total if total > 0 else 0.0
        return t_first + start * scale, t_first + end * scale

    def all(self) -> TraceColumns:
        """The whole trace expanded in memory."""
        self.affordable(self.c.nactions)
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
        n = len(self.c.table)
        if self.c.tokens is not None:    # (each rank's own sizes)
            return np.stack([np.bincount(self.rank_ids(r), minlength=n)
                             for r in range(self.nranks)]) if self.nranks else \
                np.zeros((0, n), np.int64)
        per = {}
        rows = []
        for g in self.c.grammar.rank_grammar.tolist():
            if g not in per:
                per[g] = self.c.grammar.terminal_counts(g)
            rows.append(per[g])
        return np.stack(rows) if rows else np.zeros((0, n), np.int64)

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
        check_meta(read_attrs(f), path)
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
