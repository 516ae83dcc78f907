"""Raw per-rank files of the PMPI shim (c_shim/) -> one TraceColumns (nothing written or printed:
``minitrace merge``/``record`` write, validate and report it, see commands/merge.py).

Each ``rank-NNNNNN.mtr`` is a 4096-byte header then 4 MiB chunks of 80-byte records, one chunk
per owner thread at a time (the layout is rawlayout.py's, shared with the C shim).  Everything
here is numpy: records are read in place from the memory-mapped chunks (structured views, no
copy of whole records) and written straight into the output array, field by field in blocks of
a few thousand records so that what is being written stays in cache; only rare things
(communicator definitions, region names, chunks, blocks) are Python loops.  Times stay
integer nanoseconds until written.

What the merge adds to the raw records:
* a ``compute`` action before every MPI action (but ``init`` and ``resume``): the volume since
  the thread's previous MPI call (cputime/instructions: counted by the shim; walltime: the gap);
* non-blocking receives patched with the source, tag and size seen at their completion;
* communicator ids that are the same on every rank (member set + creation order; an
  intercommunicator is both its groups, and every action on it has FLAG_INTERCOMM), region
  names in one string table, threads of a rank interleaved by start time;
* ``complete`` = every rank reached MPI_Finalize with its recording on to the end (a killed
  run merges, marked incomplete; so does one where a rank's shim stopped recording, e.g. on a
  full disk: ``disabled_ranks`` and ``disabled_reasons`` say which and why).
"""
from __future__ import annotations

import contextlib
import glob
import os
import re
import sys
from typing import NamedTuple

import numpy as np
try:
    from numpy._core.multiarray import _set_madvise_hugepage
except ImportError:       # (numpy < 2)
    from numpy.core.multiarray import _set_madvise_hugepage

from . import kinds as K
from . import rawlayout as L
from .errors import MinitraceError
from .model import ACTION_DTYPE, NONE, UNDEFINED, TraceColumns, assign_vec_offsets

RAW_DTYPE = L.RECORD.dtype()
HEADER_DTYPE = L.HEADER.dtype()
CHUNK_DTYPE = L.CHUNK.dtype()
CONT, STRING, COMMDEF, RESOLVE = (L.INTERNAL[k] for k in ("cont", "string", "commdef", "resolve"))
_VOLUME_NAME = {code: name for name, code in L.VOLUMES.items()}
_CLOCK_NAME = {code: name for name, code in L.CLOCKS.items()}
_RANK_FILE = re.compile(r"rank-(\d+)\.mtr$")
_FINALIZE = K.CODE["finalize"]
_INIT = K.CODE["init"]
_KNOWN_KIND = np.zeros(256, bool)
_KNOWN_KIND[list(K.NAME)] = True
_KNOWN_KIND[[CONT, STRING, COMMDEF, RESOLVE]] = True
_MAX_RANKS = 1 << 22      # a world size beyond this in a header is corruption, not a run
_READABLE_VERSIONS = (3, 4, 5, 6, 7, L.VERSION)   # 3: the same layout without check words;
#                                                 4: without the recorder's clock reads; 5: no
#                                                 record says its vector was dropped; 6: no
#                                                 persistent receive resolved; 7: no poll folded
_CHECK = np.array(L.CHECK, np.uint64)
_SEED = np.uint64(L.CHECK_SEED)
_MASKED = np.uint64((L.CHECK[L.CHECK_MASK_WORD] << 32) & (2**64 - 1))   # check's contribution


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s+l) for each (s, l), without a Python loop."""
    lengths = lengths.astype(np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    return np.repeat(starts.astype(np.int64) - (ends - lengths), lengths) + np.arange(total)


class _Rank:
    """One raw file: its header when made (cheap: every worker of a parallel merge reads every
    header), its chunks parsed into threads of records by ``load``."""

    def __init__(self, path: str):
        self.path = path
        try:
            raw = np.memmap(path, dtype=np.uint8, mode="r") if os.path.getsize(path) else \
                np.zeros(0, np.uint8)
        except OSError as e:
            raise MinitraceError(f"cannot read: {e.strerror}", path) from None
        if len(raw) < HEADER_DTYPE.itemsize:
            raise MinitraceError("too short for a minitrace raw file", path)
        h = np.frombuffer(raw[:HEADER_DTYPE.itemsize].tobytes(), HEADER_DTYPE)[0]
        if h["magic"] != L.MAGIC:
            if raw[:8].any():
                raise MinitraceError("not a minitrace raw trace file (bad magic)", path)
            self.readable = False        # killed inside MPI_Init: nothing recorded
            return
        self.readable = True
        if h["version"] not in _READABLE_VERSIONS:
            raise MinitraceError(f"raw format version {h['version']} unknown to this minitrace "
                                 f"(recorded by another version)", path)
        if h["rec_bytes"] != RAW_DTYPE.itemsize:
            raise MinitraceError(f"record size {h['rec_bytes']} unknown to this minitrace", path)
        self.h = h
        self.rank, self.size = int(h["rank"]), int(h["size"])
        self.aborted = bool(h["aborted"])
        self.disabled = ""          # why the shim stopped recording early, if it did
        if h["disabled"]:
            self.disabled = (f"{h['disabled_what'].decode(errors='replace')}: "
                             f"{os.strerror(int(h['disabled_errno']))}")
        self.complete = bool(h["finalized"]) and not self.aborted and not self.disabled
        hb, cb = int(h["header_bytes"]), int(h["chunk_bytes"])
        rec = RAW_DTYPE.itemsize
        if hb != L.HEADER_BYTES or cb < 2 * rec:
            raise MinitraceError(f"corrupt header (header {hb} B, chunks {cb} B)", path)
        if not 0 <= self.rank < self.size <= _MAX_RANKS:
            raise MinitraceError(f"corrupt header (rank {self.rank} of {self.size})", path)
        for field, codes in (("clock", L.CLOCKS), ("volume", L.VOLUMES),
                             ("volume_requested", L.VOLUMES)):
            if int(h[field]) not in codes.values():
                raise MinitraceError(f"corrupt header ({field} code {int(h[field])})", path)
        self._raw = raw
        self.host = h["host"].decode(errors="replace")

    def records(self) -> int:
        """Records its chunks' headers count (what a merge will read, found without it)."""
        raw, h, rec = self._raw, self.h, RAW_DTYPE.itemsize
        hb, cb = int(h["header_bytes"]), int(h["chunk_bytes"])
        nchunks = max(len(raw) - hb - rec + cb, 0) // cb
        if not nchunks:                       # (a file cut inside its first chunk's header)
            return 0
        heads = np.ndarray((nchunks,), CHUNK_DTYPE, raw, hb, (cb,))
        return int(np.minimum(heads["count"].astype(np.int64), cb // rec - 1).sum())

    def load(self) -> None:
        """Parse the chunks: ``threads`` (each its records in order), ``warnings`` (damaged or
        cut records), ``complete`` (finalized, not aborted nor disabled, nothing damaged)."""
        raw, h, path = self._raw, self.h, self.path
        hb, cb = int(h["header_bytes"]), int(h["chunk_bytes"])
        rec = RAW_DTYPE.itemsize
        # a file cut short (copied while written, a full disk) ends inside a chunk: its whole
        # records are kept, the cut ones counted in ``dropped``
        nchunks = max(len(raw) - hb - rec + cb, 0) // cb
        self.dropped = self.damaged = self.damaged_chunks = self.unused = 0
        checked = h["version"] >= 4
        per_thread: dict[int, list] = {}
        calib = [tuple(h["calib"][0]), tuple(h["calib"][1])]
        if h["calib"][2][1]:
            calib.append(tuple(h["calib"][2]))
        slots = cb // rec
        for c in range(nchunks):
            off = hb + c * cb
            ch = np.frombuffer(raw, CHUNK_DTYPE, 1, off)[0]
            want = min(int(ch["count"]), slots - 1)
            n = _whole_records(raw, off, min(want, (len(raw) - off) // rec - 1))
            if checked and not _chunk_ok(raw, off):
                self.damaged_chunks += 1      # whose thread, in which order: unknown
                self.unused += want
                continue
            self.dropped += want - n
            if ch["calib_ns"]:
                calib.append((int(ch["calib_raw"]), int(ch["calib_ns"])))
            if n:
                recs = np.frombuffer(raw, RAW_DTYPE, n, off + RAW_DTYPE.itemsize)
                if checked:
                    recs, bad = _checked(recs)
                    self.damaged += bad
                per_thread.setdefault(int(ch["thread"]), []).append((int(ch["seq"]), recs))
        self._to_ns = self._calibration(int(h["clock"]), np.array(calib, dtype=np.int64))
        self.threads = [[r for _, r in sorted(parts, key=lambda p: p[0])]
                        for _, parts in sorted(per_thread.items())]
        name = os.path.basename(path)
        self.warnings = []
        if self.damaged_chunks:
            self.warnings.append(f"{name}: {self.damaged_chunks} chunk header(s) fail their "
                                 f"check word (damaged): their {self.unused} record(s) are "
                                 f"not used")
        if self.damaged:
            self.warnings.append(f"{name}: {self.damaged} record(s) fail their check word "
                                 f"(damaged) and were dropped, every other record kept")
        if self.dropped:
            self.warnings.append(f"{name} is cut short: {self.dropped} record(s) of its last "
                                 f"chunk lost, every whole record kept")
        gaps = sum(sorted(q for q, _ in parts) != list(range(len(parts)))
                   for parts in per_thread.values())
        if gaps:
            self.warnings.append(f"{name}: chunks missing in {gaps} thread(s)")
        if self.complete and not any((r["kind"] == _FINALIZE).any()
                                     for parts in per_thread.values() for _, r in parts):
            self.warnings.append(f"{name} lost its end: finalized, but no MPI_Finalize record")
        if self.warnings:
            self.complete = False

    @staticmethod
    def _calibration(clock: int, pts: np.ndarray):
        """raw clock -> CLOCK_MONOTONIC ns: identity, or a least-squares line through the TSC
        calibration points (init start/end, each chunk start, finalize)."""
        if clock == L.CLOCKS["monotonic"]:
            return lambda t: t.astype(np.int64)
        r0, n0 = pts[0]
        dr = (pts[:, 0] - r0).astype(np.float64)
        dn = (pts[:, 1] - n0).astype(np.float64)
        slope = float(dr @ dn / (dr @ dr)) if (dr @ dr) > 0 else 1.0
        return lambda t: n0 + np.rint((t - r0).astype(np.float64) * slope).astype(np.int64)


def _chunk_ok(raw: np.ndarray, off: int) -> bool:
    """Whether the chunk header at ``off`` matches its check word (rawlayout.CHECK)."""
    w = np.frombuffer(raw, np.uint64, 5, off)
    return int(L.fold(w[1:4] @ _CHECK[1:4])) == int(w[4] & np.uint64(0xFFFFFFFF))


def _checked(recs: np.ndarray) -> tuple[np.ndarray, int]:
    """``recs`` without the records (and their continuation slots) whose check word does not
    match, and how many were dropped.  A record's extent is its slot and the continuation
    slots after it, whatever its (possibly damaged) vec_len says."""
    words = recs.view(np.uint64).reshape(len(recs), -1)
    main = recs["kind"] != CONT
    sums = L.slot_sums(words)
    check = recs["check"].astype(np.uint64)
    sums[main] -= check[main] * _MASKED        # the check word's own bits read as 0
    starts = np.flatnonzero(main)
    ok = L.fold(np.add.reduceat(sums, starts) + _SEED) == recs["check"][starts] if len(starts) else \
        np.zeros(0, bool)
    orphans = int(starts[0]) if len(starts) else len(recs)   # continuations with no record
    if ok.all() and not orphans:
        return recs, 0
    keep = np.zeros(len(recs), bool)
    keep[orphans:] = np.repeat(ok, np.diff(np.append(starts, len(recs))))
    return recs[keep], int((~ok).sum()) + (orphans > 0)


def _whole_records(raw: np.ndarray, off: int, n: int) -> int:
    """How many of the first ``n`` records of the chunk at ``off`` end with their vector (a
    cut may fall between a record and its continuation records)."""
    if n <= 0:
        return 0
    recs = np.frombuffer(raw, RAW_DTYPE, n, off + RAW_DTYPE.itemsize)
    main = np.flatnonzero(recs["kind"] != CONT)
    if not len(main):
        return 0
    last = int(main[-1])
    need = (max(int(recs["vec_len"][last]), 0) + L.CONT_WORDS - 1) // L.CONT_WORDS
    return n if last + need < n else last


class _Thread:
    """The records of one thread (its chunks, in order) split into MPI actions (``blocks`` of
    records, in order), vectors and internal records (communicators, strings, resolutions)."""

    def __init__(self, chunks: list[np.ndarray], path: str):
        kind = np.concatenate([c["kind"] for c in chunks])
        vec_len = np.concatenate([c["vec_len"] for c in chunks])
        chunks, vec_len = self._without_dropped(chunks, kind, vec_len)
        wrong = ~_KNOWN_KIND[kind] | ((vec_len < -2) & (kind != CONT))   # (<= 2 inlined)
        if wrong.any():
            bad = np.flatnonzero(wrong)[0]
            raise MinitraceError(f"corrupt record {bad} (kind {kind[bad]}, vector length "
                                 f"{vec_len[bad]})", path)
        special = kind >= RESOLVE                     # internal or continuation records
        self.comm_defs, self.strings = [], {}
        # the MPI records stay in the (memory-mapped) chunks: a chunk with special records
        # contributes a copy of its other records; the special ones are gathered apart
        self.blocks, sp_rows, base = [], [], 0
        for c in chunks:
            s = special[base:base + len(c)]
            base += len(c)
            if s.any():
                self.blocks.append(c[~s])
                sp_rows.append(c[s])
            else:
                self.blocks.append(c)
        if not sp_rows and not (vec_len < 0).any():   # no vector, nothing internal
            self.vecs = np.zeros(0, np.int64)
            self.resolve = tuple(np.zeros(0, np.int64) for _ in range(5))
            return
        sp = np.concatenate(sp_rows) if sp_rows else np.zeros(0, RAW_DTYPE)
        sw = sp.view(np.int64).reshape(len(sp), -1)
        # vectors follow their record (kept or internal) in CONT records, or (<= 2 int32
        # values, vec_len < 0) are inlined in the record's request field
        main = kind != CONT
        vl = vec_len[main].astype(np.int64)
        lens, inl = np.maximum(vl, 0), np.maximum(-vl, 0)
        spk = sp["kind"]
        payload = sw[spk == CONT, 1:].ravel()
        ncont = (lens + L.CONT_WORDS - 1) // L.CONT_WORDS
        start = np.cumsum(ncont * L.CONT_WORDS) - ncont * L.CONT_WORDS
        if int((ncont * L.CONT_WORDS).sum()) > len(payload):
            # a record and its vector are committed together: a corrupt file
            raise MinitraceError("vector records missing", path)
        vecs = payload[_ranges(start, lens)]
        if inl.any():
            tot = lens + inl
            off = np.cumsum(tot) - tot
            allv = np.empty(int(tot.sum()), np.int64)
            allv[_ranges(off, lens)] = vecs
            rows = np.flatnonzero(inl)
            req = np.concatenate([c["request"] for c in chunks])[main][rows]
            allv[off[rows]] = (req & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
            two = inl[rows] == 2
            allv[off[rows[two]] + 1] = (req[two] >> 32).astype(np.int32)
            vecs, lens = allv, tot
        internal = kind[main] >= RESOLVE
        isp = sp[spk != CONT]                          # the internal records, in order
        ik = isp["kind"]
        vpos = (np.cumsum(lens) - lens)[internal]
        ilen = lens[internal]
        for j in np.flatnonzero(ik != RESOLVE):
            v = vecs[vpos[j]:vpos[j] + ilen[j]]
            if ik[j] == COMMDEF:
                self.comm_defs.append((int(isp["tag"][j]), tuple(int(x) for x in v),
                                       bool(isp["peer"][j])))
            else:
                self.strings[int(isp["tag"][j])] = \
                    v.tobytes()[:int(isp["peer"][j])].decode("utf-8", "replace")
        res = isp[ik == RESOLVE]
        # (bytes_sent: a persistent receive's activation, 1, 2, ...; raw version 7)
        self.resolve = (res["request"], res["peer"], res["tag"], res["bytes_recv"],
                        res["bytes_sent"])
        self.vecs = vecs[~np.repeat(internal, lens)]

    def _without_dropped(self, chunks: list, kind: np.ndarray, vec_len: np.ndarray):
        """The records whose vector the shim dropped (rawlayout.VEC_DROPPED: it had no room
        for it) read as records without one, copied out of the file's chunks; ``no_vector``
        counts them by kind code, for the rank's warning (parse_rank)."""
        lost = (vec_len == L.VEC_DROPPED) & (kind != CONT)
        codes, counts = np.unique(kind[lost], return_counts=True)
        self.no_vector = dict(zip(codes.tolist(), counts.tolist()))
        if not self.no_vector:
            return chunks, vec_len
        out, base = [], 0
        for c in chunks:
            part = lost[base:base + len(c)]
            base += len(c)
            if part.any():
                c = c.copy()
                c["vec_len"][part] = 0
            out.append(c)
        return out, np.where(lost, 0, vec_len)


_IS_REDUCTION = K.mask(K.REDUCTIONS)
_NO_COMPUTE = K.mask({"init", "resume"})        # no compute action before these
_IS_NEW_COMM = K.mask(K.NEW_COMM_KINDS)
_IS_REGION = K.mask({"region_begin", "region_end"})
_COPIED = ("flags", "peer", "tag", "comm", "bytes_sent", "bytes_recv", "request", "vec_len")


def _n_out(th: _Thread) -> int:
    """Actions of a thread once a compute is put before each MPI action but init/resume, and
    each ``startall`` is its starts (:func:`_startalls_as_starts`)."""
    return sum(len(b) + int(np.count_nonzero(~_NO_COMPUTE[b["kind"]])) for b in th.blocks) \
        + _startall_extra(th)


_STARTALL, _START = K.CODE["startall"], K.CODE["start"]


def _startall_extra(th: _Thread) -> int:
    """Rows a thread's ``startall`` records add once each is a start per request."""
    extra = 0
    for b in th.blocks:
        n = np.abs(b["vec_len"][b["kind"] == _STARTALL].astype(np.int64))
        extra += int(np.maximum(n - 1, 0).sum())
    return extra


def _startalls_as_starts(a: np.ndarray, vecs: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` with the actions ``a`` (of one rank, vectors ``vecs``), each ``startall``
    of n requests written as n ``start`` actions, one per request in its order, with the
    call's times (MPI_Startall is MPI_Start of each; consecutive starts with no compute
    between them are one call, as the merge puts a compute before every call); returns the
    vectors left.  Then each start of a persistent receive takes its own completion's
    source, tag and size (:func:`_resolve_starts`), which a startall, whose vector holds only
    ids, could not (a wildcard ``recv_init`` started so matched no message)."""
    lens = a["vec_len"].astype(np.int64)
    sa = (a["kind"] == _STARTALL) & (lens > 0)
    src = np.repeat(np.arange(len(a)), np.where(sa, lens, 1))
    out[:] = a[src]
    rows = np.flatnonzero(sa[src])
    entries = vecs[_ranges((np.cumsum(lens) - lens)[sa], lens[sa])]
    partitioned = a["request"][K.mask({"psend_init", "precv_init"})[a["kind"]]]
    flag = np.where(np.isin(entries, partitioned), K.FLAG_PARTITIONED, K.FLAG_PERSISTENT)
    keep = out["flags"][rows] & ~np.uint8(K.FLAG_PERSISTENT | K.FLAG_PARTITIONED)
    out["kind"][rows] = _START
    out["request"][rows] = entries
    out["vec_len"][rows] = 0
    out["flags"][rows] = np.where(entries >= 0, keep | flag, out["flags"][rows])
    return vecs[~np.repeat(sa, lens)]


_COMPUTE_ROW = np.zeros(1, ACTION_DTYPE)
_COMPUTE_ROW["kind"] = K.CODE["compute"]
for _f in ("peer", "tag", "comm", "request"):
    _COMPUTE_ROW[_f] = NONE
_VOID = np.dtype(f"V{ACTION_DTYPE.itemsize}")   # whole rows as opaque bytes: fast fills/gathers
_MAX_PIECES = 64


def _pieces(need: np.ndarray, base: int):
    """Where one thread's actions and computes go in its output rows, as (rows, source) pairs:
    a compute precedes each action with ``need``, so the rows alternate compute/action in runs
    broken only by init/resume.  Few runs: strided slices (much faster than index arrays)."""
    n = len(need)
    ncomp = np.cumsum(need)
    act_row = np.arange(base, base + n) + ncomp
    breaks = np.flatnonzero(~need)
    if len(breaks) > _MAX_PIECES:
        return [(act_row, slice(None))], [(act_row[need] - 1, slice(None))]
    acts, comps = [], []
    s = 0
    for b in [*breaks.tolist(), n]:
        if b > s:                                   # actions s..b-1, each after its compute
            p, c = int(act_row[s]), int(ncomp[s]) - 1
            acts.append((slice(p, p + 2 * (b - s), 2), slice(s, b)))
            comps.append((slice(p - 1, p - 1 + 2 * (b - s), 2), slice(c, c + b - s)))
        if b < n:                                   # init/resume: no compute before it
            p = int(act_row[b])
            acts.append((slice(p, p + 1), slice(b, b + 1)))
        s = b + 1
    return acts, comps


_BLOCK = 8192


def _expand(rank: _Rank, th: _Thread, walltime: bool, seconds: bool, out: np.ndarray) -> None:
    """Fill ``out`` (ACTION_DTYPE, _n_out rows) with one thread's actions, a compute action
    before each MPI action but init/resume; times in seconds.  Works in blocks of _BLOCK
    records so that the temporaries and the output rows being written stay in cache."""
    pos, last_end = 0, None
    for blk in th.blocks:
        for s in range(0, len(blk), _BLOCK):
            pos, last_end = _expand_block(rank, blk[s:s + _BLOCK], walltime, seconds, out, pos,
                                          last_end)


def _expand_block(rank, r, walltime, seconds, out, pos, last_end):
    """One block of records -> rows pos.. of out; returns the next row and the block's end."""
    n = len(r)
    ts, te = rank._to_ns(r["t_start"]), rank._to_ns(r["t_end"])
    prev_end = np.empty_like(te)
    prev_end[0] = ts[0] if last_end is None else last_end   # the thread's first call: no gap
    prev_end[1:] = te[:-1]
    kind = r["kind"]
    need = ~_NO_COMPUTE[kind]
    if walltime:
        pre = np.maximum(ts - prev_end, 0)
        inside = te - ts
    else:
        pre = np.maximum(r["pre_volume"], 0)
        inside = np.maximum(r["volume"], 0)
    scale = 1e-9 if seconds else 1.0
    acts, comps = _pieces(need, pos)
    end = pos + n + int(np.count_nonzero(need))
    out[pos:end].view(_VOID)[:] = _COMPUTE_ROW.view(_VOID)[0]   # compute defaults, one pass
    fields = {f: r[f] for f in ("kind",) + _COPIED}
    inlined = fields["vec_len"] < 0                 # a vector inlined in the request field
    if inlined.any():
        fields["vec_len"] = np.abs(fields["vec_len"])
        fields["request"] = np.where(inlined, NONE, fields["request"])
    act_cols = list(fields.items()) + [
        ("volume", np.where(_IS_REDUCTION[kind], inside * scale, 0.0)),
        ("t_start", ts / 1e9), ("t_end", te / 1e9)]
    comp_cols = [("volume", pre[need] * scale), ("t_start", prev_end[need] / 1e9),
                 ("t_end", ts[need] / 1e9)]
    for pieces, cols in ((acts, act_cols), (comps, comp_cols)):
        for f, v in cols:
            o = out[f]
            for rows, src in pieces:
                o[rows] = v[src]
    return end, te[-1]


def _merge_threads(rank: _Rank, threads: list, walltime: bool, seconds: bool, out: np.ndarray):
    """Fill ``out`` with all threads of a rank, interleaved by start time (a compute stays
    before its action); returns the rank's vectors in that order."""
    if len(threads) == 1:
        _expand(rank, threads[0], walltime, seconds, out)
        return threads[0].vecs
    if not threads:
        return np.zeros(0, np.int64)
    parts, keys, rows, tids = [], [], [], []
    for i, th in enumerate(threads):
        a = np.empty(_n_out(th), ACTION_DTYPE)
        _expand(rank, th, walltime, seconds, a)
        comp = a["kind"] == K.CODE["compute"]
        # a compute sorts with its action; never before the thread's previous call (clocks of
        # two cores may disagree a little: the thread's own order is the truth)
        keys.append(np.maximum.accumulate(np.where(comp, a["t_end"], a["t_start"])))
        rows.append(np.arange(len(a)))
        tids.append(np.full(len(a), i))
        parts.append(a)
    a = np.concatenate(parts)
    vecs = np.concatenate([th.vecs for th in threads])
    lens = a["vec_len"].astype(np.int64)
    vstart = np.cumsum(lens) - lens
    # ties between threads (two calls in one ns: a CI saw it under Open MPI) are broken by
    # thread, then by the thread's own order, so that no compute is parted from its call
    order = np.lexsort((np.concatenate(rows), np.concatenate(tids), np.concatenate(keys)))
    out.view(np.uint8).reshape(len(out), -1)[:] = a.view(np.uint8).reshape(len(a), -1)[order]
    return vecs[_ranges(vstart[order], lens[order])]


def _resolve_irecvs(acts: np.ndarray, resolves: tuple) -> None:
    """Patch each irecv with the source/tag/size its completion saw.  One that MPI_Cancel
    cancelled received nothing: it becomes a receive of no message (peer -1, 0 bytes, as from
    MPI_PROC_NULL), and the ``cancel`` action of its request takes FLAG_COMPLETED (it took)
    and the receive's posted source, tag and size (LLNL Quicksilver cancels its pre-posted
    receives: read as 0-byte messages they shifted the matching of every later one)."""
    irecv = np.flatnonzero(acts["kind"] == K.CODE["irecv"])
    if not len(irecv):
        return
    req = resolves[0]
    ids = acts["request"][irecv]
    order = np.argsort(ids)
    pos = np.minimum(np.searchsorted(ids[order], req), len(ids) - 1)
    hit = ids[order][pos] == req
    rows = irecv[order][pos[hit]]
    peer = resolves[1][hit]
    gone = peer == L.CANCELLED_PEER
    if gone.any():
        _cancelled(acts, rows[gone])
    acts["peer"][rows] = np.where(gone, -1, peer)
    # (a cancelled receive's status tag is undefined: it keeps the posted one)
    acts["tag"][rows] = np.where(gone, acts["tag"][rows], resolves[2][hit])
    acts["bytes_recv"][rows] = resolves[3][hit]
    unresolved = np.ones(len(irecv), bool)
    unresolved[np.searchsorted(irecv, rows)] = False
    acts["flags"][irecv[unresolved]] |= K.FLAG_UNRESOLVED


def _resolve_starts(acts: np.ndarray, resolves: tuple) -> None:
    """Patch each ``start`` of a persistent receive (``recv_init``) with the source, tag and
    size its completion saw, and COMPLETED, which says the start holds them (until then its
    ``recv_init``'s posted ones stood for every start: wildcards matched nothing, sizes were
    the buffer's; public graph500's aml receives so).  A resolve names its request's
    activation (1, 2, ...: the request's starts in program order, a startall's among them);
    a cancelled start received nothing (peer -1, 0 bytes).  A start of a wildcard
    ``recv_init`` never completed is UNRESOLVED; one of a fixed source keeps the posted
    values."""
    init = np.flatnonzero(acts["kind"] == K.CODE["recv_init"])
    if not len(init):
        return
    ids = acts["request"][init]
    rows = np.flatnonzero((acts["kind"] == _START) & np.isin(acts["request"], ids))
    if not len(rows):
        return
    req = acts["request"][rows].astype(np.int64)
    # every activation of these requests, numbered within its request in program order
    order = np.lexsort((rows, req))
    rows, req = rows[order], req[order]
    nth = np.arange(len(req)) - np.searchsorted(req, req) + 1
    r_req, r_nth = resolves[0].astype(np.int64), resolves[4].astype(np.int64)
    span = int(nth.max()) + 1
    key = req * span + nth                      # (ascending: sorted by request, then nth)
    pos = np.searchsorted(key, r_req * span + np.clip(r_nth, 0, span - 1))
    pos = np.minimum(pos, len(key) - 1)
    hit = (key[pos] == r_req * span + r_nth) & (r_nth > 0) & (r_nth < span)
    done, src = rows[pos[hit]], np.flatnonzero(hit)
    peer = resolves[1][src]
    gone = peer == L.CANCELLED_PEER
    if gone.any():                       # (the cancel takes its recv_init's posted values)
        by_id = np.argsort(ids, kind="stable")
        at = np.searchsorted(ids[by_id], acts["request"][done[gone]])
        _cancelled(acts, done[gone], init[by_id][np.minimum(at, len(ids) - 1)])
    acts["peer"][done] = np.where(gone, -1, peer)
    acts["tag"][done] = np.where(gone, acts["tag"][done], resolves[2][src])
    acts["bytes_recv"][done] = np.where(gone, 0, resolves[3][src])
    acts["flags"][done] |= K.FLAG_COMPLETED
    wild = ids[(acts["flags"][init] & (K.FLAG_ANY_SOURCE | K.FLAG_ANY_TAG)) != 0]
    left = rows[~np.isin(rows, done) & np.isin(acts["request"][rows], wild)]
    acts["flags"][left] |= K.FLAG_UNRESOLVED


def _cancelled(acts: np.ndarray, rows: np.ndarray, posted: np.ndarray | None = None) -> None:
    """The ``cancel`` action of each cancelled receive of ``rows`` (the first cancel of its
    request after it) takes the receive's posted source, tag and size (those of the rows
    ``posted``, one per receive: a persistent receive's start, its ``recv_init``; default the
    receives' own, read before they are patched), and FLAG_COMPLETED."""
    cancel = np.flatnonzero(acts["kind"] == K.CODE["cancel"])
    if not len(cancel) or not len(rows):
        return
    req = acts["request"][cancel].astype(np.int64)
    order = np.lexsort((cancel, req))
    cancel, req = cancel[order], req[order]
    span = len(acts) + 1
    key = req * span + cancel
    want = acts["request"][rows].astype(np.int64)
    pos = np.minimum(np.searchsorted(key, want * span + rows), len(key) - 1)
    found = (req[pos] == want) & (cancel[pos] > rows)
    src = (rows if posted is None else posted)[found]
    c = cancel[pos[found]]
    for f in ("peer", "tag", "bytes_recv"):
        acts[f][c] = acts[f][src]
    acts["flags"][c] |= K.FLAG_COMPLETED


def rank_files(directory: str) -> list[str]:
    files = sorted(f for f in glob.glob(os.path.join(directory, "rank-*.mtr"))
                   if _RANK_FILE.search(f))
    if not files:
        raise MinitraceError("no per-rank raw trace files (rank-*.mtr) here", directory)
    return files


class RawRun:
    """The headers of a raw directory's files (phase 1 of a merge): which ranks recorded, the
    world size, the volume measure; runs mixed or nothing recorded are refused here."""

    def __init__(self, directory: str):
        self.directory = directory
        ranks = [_Rank(f) for f in rank_files(directory)]
        good = [r for r in ranks if r.readable]
        if not good:
            raise MinitraceError("no rank got past MPI_Init: nothing was recorded", directory)
        self.size = size = good[0].size
        if any(r.size != size for r in good):
            raise MinitraceError("raw files of different runs mixed (world sizes differ)",
                                 directory)
        self.by_rank = by_rank = {r.rank: r for r in good}
        if len(by_rank) < len(good):
            dup = next(r for r in good if by_rank[r.rank] is not r)
            raise MinitraceError(f"two raw files of rank {dup.rank}: "
                                 f"{os.path.basename(dup.path)} and "
                                 f"{os.path.basename(by_rank[dup.rank].path)} (runs mixed?)",
                                 directory)
        self.vol_code = int(good[0].h["volume"])
        self.walltime = self.vol_code == L.VOLUMES["walltime"]
        self.seconds = self.vol_code != L.VOLUMES["instructions"]

    def raw_bytes(self) -> np.ndarray:
        """Size of each world rank's raw file (0 for a rank that left none): the work."""
        out = np.zeros(self.size, np.int64)
        for rk, r in self.by_rank.items():
            out[rk] = len(r._raw)
        return out

    def meta(self, command_line: str | None, tables: dict) -> dict:
        """The trace's metadata, from the headers and every recorded rank's ``RankTables``."""
        by_rank, size = self.by_rank, self.size
        ranks = [by_rank[rk] for rk in sorted(by_rank)]
        h0 = by_rank.get(0, ranks[0]).h
        hosts, rank_to_node = [], []
        for rk in range(size):
            host = by_rank[rk].host if rk in by_rank else "?"
            if host not in hosts:
                hosts.append(host)
            rank_to_node.append(hosts.index(host))
        missing = [rk for rk in range(size) if rk not in by_rank]
        meta = {
            "volume_unit": "seconds" if self.seconds else "instructions",
            "volume_source": _VOLUME_NAME.get(self.vol_code, "?"),
            "volume_requested": _VOLUME_NAME.get(int(h0["volume_requested"]), "?"),
            "nranks": size,
            "producer": "minitrace record",
            "command_line": command_line or h0["cmdline"].decode(errors="replace").strip(),
            "mpi_library": h0["library"].decode(errors="replace"),
            "hosts": hosts,
            "rank_to_node": rank_to_node,
            "clock": _CLOCK_NAME.get(int(h0["clock"]), "?"),
            "complete": not missing and all(tables[rk].complete for rk in by_rank),
            "aborted": any(r.aborted for r in ranks),
            "missing_ranks": missing,
            "disabled_ranks": [r.rank for r in ranks if r.disabled],
            "disabled_reasons": [f"rank {r.rank}: {r.disabled}" for r in ranks if r.disabled],
        }
        if all(by_rank[rk].h["version"] >= 5 for rk in by_rank) and not missing:
            meta["recorder_seconds"] = [_recorder_seconds(by_rank[rk].h) for rk in range(size)]
        if not missing and all(tables[rk].in_mpi[1] > 0 for rk in by_rank):
            meta["in_mpi_seconds"] = [list(tables[rk].in_mpi) for rk in range(size)]
        warnings = [w for rk in sorted(by_rank) for w in tables[rk].warnings]
        threads = [tables[rk].threads if rk in tables else 0 for rk in range(size)]
        if max(threads, default=1) > 1:                 # (MPI_THREAD_MULTIPLE at work)
            meta["mpi_threads"] = threads
            meta["mpi_overlapping_calls"] = [tables[rk].overlapping if rk in tables else 0
                                             for rk in range(size)]
        folded = [int(by_rank[rk].h["folded_polls"]) if rk in by_rank and
                  by_rank[rk].h["version"] >= 8 else 0 for rk in range(size)]
        if any(folded):                                 # (the shim's, docs/RECORDER.md)
            meta["folded_polls"] = folded
        if warnings:                                    # (then meta["complete"] is False)
            meta["raw_warnings"] = warnings
        return meta


def _recorder_seconds(h) -> float:
    """The recorder's own time in a rank (its CPU-clock reads, ``clock_ticks`` of the header),
    in seconds, by the raw clock's calibration through the header's points (init start, init
    end, finalize), as the rank's timestamps."""
    pts = h["calib"][:3 if h["calib"][2][1] else 2].astype(np.int64)
    to_ns = _Rank._calibration(int(h["clock"]), pts)
    r0 = pts[:1, 0]
    return float((to_ns(r0 + int(h["clock_ticks"])) - to_ns(r0))[0]) * 1e-9


class RankTables(NamedTuple):
    """What one rank contributes to the trace-wide tables and metadata (small: what the
    workers of a parallel merge exchange)."""
    comm_defs: list          # (local id, members, is_inter), sorted
    strings: dict            # local string id -> text
    n_actions: int           # rows once computes are added
    complete: bool
    warnings: list
    in_mpi: tuple = (0.0, 0.0)   # (CPU, wall) seconds inside its MPI calls (cputime volumes)
    threads: int = 1             # its threads that made MPI calls
    overlapping: int = 0         # its MPI calls that began while another thread's was in one


def _in_mpi(r: _Rank) -> tuple[float, float]:
    """CPU and wall seconds inside a rank's MPI calls but MPI_Init and MPI_Finalize, all
    threads; (0, 0) unless the volumes are thread CPU time.  MPICH and Open MPI busy-poll
    while they wait, so CPU below wall there is the rank descheduled inside its calls, where
    the CPU time between calls does not show it (a recording beside co-runners: 99% and 94%
    of a core between calls, 1% and 14% inside them)."""
    if int(r.h["volume"]) != L.VOLUMES["cputime"]:
        return 0.0, 0.0
    cpu = wall = 0
    for parts in r.threads:
        for recs in parts:
            k = recs["kind"]
            mpi = (k < min(L.INTERNAL.values())) & (k != _FINALIZE) & (k != _INIT)
            cpu += int(recs["volume"][mpi].sum())
            wall += int((r._to_ns(recs["t_end"][mpi]) - r._to_ns(recs["t_start"][mpi])).sum())
    return cpu * 1e-9, wall * 1e-9


def _overlapping_calls(r: _Rank) -> int:
    """A rank's MPI calls that began while another of its threads was inside one: where there
    are none (one thread, or MPI_THREAD_SERIALIZED), its calls in start order are a sequential
    program, which a replay runs as recorded; where there are, it may not be (a thread's wait
    for what another thread's later call sends)."""
    if len(r.threads) < 2:
        return 0
    starts, ends = [], []
    for parts in r.threads:
        for recs in parts:
            mpi = recs["kind"] < min(L.INTERNAL.values())      # (the MPI calls)
            starts.append(recs["t_start"][mpi])
            ends.append(recs["t_end"][mpi])
    start, end = r._to_ns(np.concatenate(starts)), r._to_ns(np.concatenate(ends))
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    # (a thread's own calls follow each other: a call that begins before the latest end of the
    # calls begun before it began inside another thread's)
    return int((start[1:] < np.maximum.accumulate(end)[:-1]).sum())


#: what a raw warning says of records whose vector the shim dropped (commands/merge.py
#: names that reason for an incomplete trace)
NO_VECTOR = "without their vector"


def parse_rank(r: _Rank, size: int) -> tuple[list, RankTables]:
    """Phase 2: one rank's chunks into threads of actions, and its ``RankTables``."""
    r.load()
    in_mpi = _in_mpi(r)
    ths = [_Thread(recs, r.path) for recs in r.threads]
    dropped: dict[int, int] = {}
    for th in ths:
        for code, n in th.no_vector.items():
            dropped[code] = dropped.get(code, 0) + n
    if dropped:         # (a rank's warning makes the trace incomplete)
        what = ", ".join(f"{n} {K.NAME.get(c, 'internal')}" for c, n in sorted(dropped.items()))
        r.warnings.append(f"{os.path.basename(r.path)}: {sum(dropped.values())} record(s) "
                          f"{NO_VECTOR} ({what}): the recorder had no room for it "
                          f"(the requests a completion names, a collective's counts are "
                          f"missing)")
        r.complete = False
    comm_defs = sorted(d for th in ths for d in th.comm_defs)
    if any(not all(m == UNDEFINED or 0 <= m < size for m in d[1]) for d in comm_defs):
        raise MinitraceError("corrupt communicator definition (member beyond the world)", r.path)
    strings: dict[int, str] = {}
    for th in ths:
        strings.update(th.strings)
    return ths, RankTables(comm_defs, strings, sum(_n_out(th) for th in ths), r.complete,
                           r.warnings, in_mpi, sum(_n_out(th) > 0 for th in ths),
                           _overlapping_calls(r))


class Tables(NamedTuple):
    """Phase 3: the trace-wide communicator and string tables, and each rank's local ids in
    them (the same on every worker: computed from every rank's ``RankTables``)."""
    comms: dict
    local_to_global: list    # per world rank: local comm id -> global id
    inter_ids: np.ndarray
    strings: list
    string_maps: list        # per world rank: local string id -> global index (changed only)


def trace_tables(size: int, tables: dict) -> Tables:
    """The global tables from every recorded rank's ``RankTables`` (``tables[rank]``)."""
    empty = RankTables([], {}, 0, True, [])
    comms, local_to_global, inter = _global_comms(
        [tables.get(rk, empty).comm_defs for rk in range(size)], size)
    strings: list[str] = []
    sidx: dict[str, int] = {}
    for rk in range(size):
        for s in tables.get(rk, empty).strings.values():
            if s not in sidx:
                sidx[s] = len(strings)
                strings.append(s)
    smaps = [{k: sidx[s] for k, s in tables.get(rk, empty).strings.items() if sidx[s] != k}
             for rk in range(size)]
    return Tables(comms, local_to_global, np.array(sorted(inter), dtype=np.int64), strings,
                  smaps)


def fill_rank(run: RawRun, rk: int, threads: list, tables: Tables, part: np.ndarray):
    """Phase 4: one rank's actions into ``part`` (its ``n_actions`` rows, filled in place field
    by field), ids made global; returns its vectors."""
    extra = sum(_startall_extra(th) for th in threads)
    if extra:
        a = np.empty(len(part) - extra, ACTION_DTYPE)
        vecs = _merge_threads(run.by_rank[rk], threads, run.walltime, run.seconds, a)
        vecs = _startalls_as_starts(a, vecs, part)
    else:
        vecs = _merge_threads(run.by_rank[rk], threads, run.walltime, run.seconds, part)
    resolves = tuple(np.concatenate(f) for f in zip(*(th.resolve for th in threads))) \
        if threads else tuple(np.zeros(0, np.int64) for _ in range(5))
    _resolve_irecvs(part, resolves)
    if run.by_rank[rk].h["version"] >= 7:     # (older shims resolved no persistent receive)
        _resolve_starts(part, resolves)
    m = {k: v for k, v in tables.local_to_global[rk].items() if k != v}
    if m:
        keys = np.array(sorted(m), dtype=np.int64)
        vals = np.array([m[k] for k in keys], dtype=np.int64)
        _remap(part["comm"], keys, vals)
        is_comm = _IS_NEW_COMM[part["kind"]]
        req = part["request"][is_comm]
        _remap(req, keys, vals)
        part["request"][is_comm] = req
    if len(tables.inter_ids):
        on_inter = np.isin(part["comm"], tables.inter_ids) | \
            (_IS_NEW_COMM[part["kind"]] & np.isin(part["request"], tables.inter_ids))
        part["flags"][on_inter] |= K.FLAG_INTERCOMM
    smap = tables.string_maps[rk]
    if smap:
        region = _IS_REGION[part["kind"]]
        keys = np.array(sorted(smap), dtype=np.int64)
        vals = np.array([smap[k] for k in keys], dtype=np.int64)
        tag = part["tag"][region]
        _remap(tag, keys, vals)
        part["tag"][region] = tag
    return vecs


def merge_ranks(run: RawRun, ranks: list, tables: Tables, parsed: dict):
    """Phase 4 over ``ranks`` (consecutive world ranks): (actions, per-rank offsets from 0,
    vectors) of those ranks, each rank's threads popped from ``parsed`` once filled."""
    counts = [parsed[rk][1].n_actions if rk in parsed else 0 for rk in ranks]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    actions = np.empty(int(offsets[-1]), ACTION_DTYPE)
    vec_parts = [np.zeros(0, np.int64)]
    for i, rk in enumerate(ranks):
        if rk in parsed:
            ths = parsed.pop(rk)[0]
            vec_parts.append(fill_rank(run, rk, ths, tables,
                                       actions[offsets[i]:offsets[i + 1]]))
    assign_vec_offsets(actions)
    return actions, offsets, np.concatenate(vec_parts).astype(np.int64, copy=False)


@contextlib.contextmanager
def small_pages():
    """numpy's new arrays without transparent huge pages (numpy asks for them from 4 MB):
    the merge fills fresh arrays once, and on the 2-core VM its parsing, merging and encoding
    took 1.3-1.5x the CPU with them, whether the kernel granted them varying from run to run
    (benchmarks/RESULTS.md, issue 38, session 11); numpy's setting is restored after (also a
    decorator)."""
    before = _set_madvise_hugepage(False)
    try:
        yield
    finally:
        _set_madvise_hugepage(before)


#: Bytes of memory a merge and its validation hold at their peak per action: 180-340 (README;
#: public graph500 2r, 0.85 M actions: 340).
BYTES_PER_ACTION = (180, 340)


def available_memory() -> int | None:
    """Bytes of memory this machine can give without swapping (MemAvailable), None unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_memory(records: int, directory: str, available: int | None) -> str | None:
    """Refuse, before it starts, a merge of ``records`` raw records (of ``directory``) that
    cannot fit in ``available`` bytes even at the least it takes an action (a polling
    program's raw files grow by GBs a second: one of 13 GB grew a merge to 23 GB and the
    kernel killed it, the machine's other work at risk); a warning (else None) where it may
    not fit at the most."""
    if available is None:
        return None
    # a record is an action (most with a compute before it: two) or holds a vector's values
    # (as much memory merged: 380-490 bytes a record measured), a few are internal
    low, high = records * BYTES_PER_ACTION[0], 2 * records * BYTES_PER_ACTION[1]
    gib, many = 1 << 30, f"{records / 1e6:.1f} M raw records"
    if low > available:
        raise MinitraceError(f"merging needs at least {low / gib:.3g} GiB of memory for {many} "
                             f"({BYTES_PER_ACTION[0]} bytes each at least), and "
                             f"{available / gib:.3g} GiB are available: merge on a machine "
                             f"with more memory, or record fewer steps", directory)
    if high > available:
        return (f"{directory}: merging may need up to {high / gib:.3g} GiB of memory for "
                f"{many} (2 x {BYTES_PER_ACTION[1]} bytes each at most), and "
                f"{available / gib:.3g} GiB are available")
    return None


@small_pages()
def merge_dir(directory: str, command_line: str | None = None) -> TraceColumns:
    """Read every ``rank-*.mtr`` of ``directory`` into one TraceColumns: headers (RawRun),
    each rank parsed (parse_rank), the global tables (trace_tables), each rank filled
    (merge_ranks), the metadata (RawRun.meta); arrays on small pages (:func:`small_pages`).
    One that cannot fit in this machine's memory is refused first (:func:`check_memory`)."""
    run = RawRun(directory)
    warning = check_memory(sum(r.records() for r in run.by_rank.values()), run.directory,
                           available_memory())
    if warning:
        print(f"minitrace: warning: {warning}", file=sys.stderr)
    parsed = {rk: parse_rank(run.by_rank[rk], run.size) for rk in sorted(run.by_rank)}
    rank_tables = {rk: p[1] for rk, p in parsed.items()}
    tables = trace_tables(run.size, rank_tables)
    actions, offsets, vectors = merge_ranks(run, list(range(run.size)), tables, parsed)
    return TraceColumns(actions, offsets, vectors, tables.comms, tables.strings,
                        run.meta(command_line, rank_tables))


def _global_comms(comm_lists: list, size: int):
    """Communicator ids shared by all ranks, from each rank's definitions (local id, members,
    inter) in creation order -> (members of each id, local -> global id per rank, intercomm ids).

    An intracommunicator is its member list plus how many earlier ones of the rank had the same
    members.  An intercommunicator is defined by its remote group: the n-th one of the ranks L
    whose remote group is R and the n-th one of the ranks R whose remote group is L are one
    communicator, whose members are both groups in world rank order.  One whose other side was
    not recorded (e.g. spawned processes, not in the world: -32766 = MPI_UNDEFINED) keeps its
    remote group as members."""
    keys_of, holders = [], {}
    for rk, defs in enumerate(comm_lists):
        seen: dict[tuple, int] = {}
        keys = []
        for lid, members, is_inter in defs:
            occ = seen.get((is_inter, members), 0)
            seen[(is_inter, members)] = occ + 1
            key = (is_inter, members, occ)
            keys.append((lid, key))
            if is_inter:
                holders.setdefault(key, []).append(rk)
        keys_of.append(keys)
    canon = {}
    for key, ranks in holders.items():
        _, remote, occ = key
        other = holders.get((True, tuple(ranks), occ), None)
        if other is not None and sorted(other) == sorted(remote):
            canon[key] = (True, tuple(sorted(set(ranks) | set(remote))), occ,
                          min(tuple(ranks), tuple(sorted(remote))))
    gids: dict[tuple, int] = {(False, tuple(range(size)), 0): 0}
    comms: dict[int, np.ndarray] = {0: np.arange(size, dtype=np.int32)}
    inter: set[int] = set()
    local_to_global = []
    for keys in keys_of:
        m = {}
        for lid, key in keys:
            key = canon.get(key, key)
            if key not in gids:
                gids[key] = len(comms)
                comms[gids[key]] = np.array(key[1], dtype=np.int32)
                if key[0]:
                    inter.add(gids[key])
            m[lid] = gids[key]
        local_to_global.append(m)
    return comms, local_to_global, inter


def _remap(col: np.ndarray, keys: np.ndarray, vals: np.ndarray) -> None:
    """In place: values found in sorted ``keys`` become the matching ``vals`` (others kept)."""
    if not len(col):
        return
    pos = np.minimum(np.searchsorted(keys, col), len(keys) - 1)
    hit = keys[pos] == col
    col[hit] = vals[pos[hit]]

