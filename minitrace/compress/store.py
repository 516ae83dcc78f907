"""A compressed trace in memory (:class:`Compressed`, built by :func:`compress`) and in HDF5
(``/trace`` with ``form = "grammar"``, docs/FORMAT.md): written by :func:`write`, read back and
checked by :func:`read`."""
from __future__ import annotations

import functools
import json
import lzma
import os
import zlib
from dataclasses import dataclass, field, replace

import h5py
import numpy as np
import pandas as pd

from .. import storage as S
from ..errors import MinitraceError
from ..model import VOLUME_UNITS, TraceColumns
from . import grammar as G
from . import epochs as E
from . import signatures as SG
from . import pack as P
from . import rans as R
from . import adaptive as A
from . import context_rans as CR
from . import volumes as V

FORM = "grammar"
#: ``/trace@time_coding`` of bounded times coded as steps against predictions (volumes.py,
#: ``_predicted_steps``): a start at the previous end, a duration its action's volume.
TIME_CODING = "predicted-by-volume"
#: ``time_coding`` of files whose duration steps are coded in contexts of their call site, the
#: call before it and the octave of their predicted duration in steps (volumes.step_keys,
#: session 26; format version 12): read after the volumes they are predicted by.
TIME_CODING_OCTAVES = "predicted-by-volume-octaves"
_GRAMMAR_ARRAYS = ("rule_offsets", "rule_symbols", "rule_counts", "top_offsets", "top_symbols",
                   "rank_grammar")
#: The columns of model/stats: per site (format version 10 on), per signature (before).
_STAT_COLUMNS = ("what", "site", "group", "mean", "per_byte")
_OLD_STAT_COLUMNS = ("what", "signature", "group", "count", "mean", "std")


@dataclass
class Compressed:
    """Everything a compressed trace holds (see docs/FORMAT.md, "Compressed traces")."""

    table: np.ndarray                # SIGNATURE_DTYPE
    vec_offsets: np.ndarray
    vec_values: np.ndarray
    new_requests: np.ndarray
    new_request_offsets: np.ndarray
    grammar: G.Grammar
    has_volume: np.ndarray           # bool per signature: its actions' volumes are stored
    rank_offsets: np.ndarray
    mode: str                        # "exact" or "model"
    side: dict = field(default_factory=dict)   # mode's arrays (volumes.py), name -> array
    attrs: dict = field(default_factory=dict)  # encodings, quanta, t0, precision
    comms: dict = field(default_factory=dict)
    strings: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    #: each action's signature id when compress made it (not stored: the context keys of
    #: write without expanding the grammar again)
    ids: np.ndarray | None = None
    #: message sizes apart from the grammar (format version 12), None where kept in it
    tokens: SG.SizeTokens | None = None
    #: a model's coarser merges of epochs to fall back to (epochs.merge_choices), and the
    #: names of the side arrays and attributes its fit made (:func:`refit`); not stored
    coarser: list = field(default_factory=list)
    fitted: tuple = ((), ())

    @property
    def nranks(self) -> int:
        return len(self.rank_offsets) - 1

    @functools.cached_property
    def size_sites(self) -> tuple[np.ndarray, np.ndarray]:
        """(each signature's size site, its bytes): :func:`.signatures.size_sites` of the
        table, found once for the tokens' resolution, the model's sites and statistics."""
        return SG.size_sites(self.table)

    @property
    def nactions(self) -> int:
        return int(self.rank_offsets[-1])

    @property
    def timed(self) -> bool:
        return self.attrs.get("time_encoding", "untimed") != "untimed"


def compress(data: TraceColumns, volumes: str = "exact", precision: float = 0.01,
             times: str = "exact", sig: SG.Signatures | None = None,
             merge: int | None = None) -> Compressed:
    """The compressed form of ``data``: structure as a grammar, volumes and times as asked
    (``merge``: a model's anchors per epoch, default epochs.merge_choices').

    ``volumes``: ``exact``, ``model`` (statistics within ``precision``) or ``bounded:P%``
    (each volume within P% of its own, stored as a log-scale code); ``times``: ``exact`` or
    ``bounded:T`` (each start and end within T of its own, e.g. ``1us``; not with ``model``,
    which models them)."""
    bound = V.parse_bound(volumes, "volumes")
    quantum = V.parse_quantum(times)
    if bound is None and volumes not in V.MODES:
        raise MinitraceError(f"unknown volume mode {volumes!r} (choose exact, model or "
                             f"bounded:P%)")
    if quantum > 1 and volumes == "model":
        raise MinitraceError("--times bounded goes with exact or bounded volumes: model mode "
                             "models the times")
    if not V.FINEST_PRECISION <= precision < 1:
        raise MinitraceError(f"precision {precision!r} must be from {V.FINEST_PRECISION:g} "
                             f"and below 1")
    cols = SG.action_columns(data.actions)
    if sig is None:                                       # (given: extrapolate's)
        sig = SG.encode(data, cols, completions_apart=True)
    volume = cols["volume"]
    vrow = V.volume_rows(volume)
    has_volume = np.zeros(len(sig.table), bool)
    has_volume[sig.ids[vrow]] = True
    sites = SG.size_sites(sig.table)      # (once: ~0.15 ms a call on tables of 17-513 rows)
    tokens = SG.size_tokens(sig.ids, data.rank_of(), data.nranks, sig.table, has_volume,
                            sites[0])
    symbols, tokens = (sig.ids, None) if tokens is None else tokens
    apart = None if tokens is None else [    # (each rank's sizes: a program as without tokens)
        tokens.new[tokens.new_offsets[r]:tokens.new_offsets[r + 1]].tobytes()
        for r in range(data.nranks)]
    gram = G.build(symbols, data.rank_offsets, len(sig.table) + terminal_count(tokens), apart)
    vrow = has_volume[sig.ids]
    vol_offsets = np.searchsorted(np.nonzero(vrow)[0], data.rank_offsets).astype(np.int64)
    unit = data.meta.get("volume_unit", "seconds")
    side = {"volume_offsets": vol_offsets,     # and each rank's total as its summary sums it
            "volume_totals": np.array([volume[data.rank_slice(r)].sum()
                                       for r in range(data.nranks)], np.float64)}
    attrs = {"volumes": volumes if bound is None else "exact", "precision": float(precision)}
    ts, te = cols["t_start"], cols["t_end"]
    vol_ns = None
    if bound is not None:
        side["volume"] = V.log_codes(volume[vrow], bound)
        attrs["volume_bound"] = bound
        volumes = "exact"
    elif volumes == "exact":
        stored, divisor, scale = V.quantize(volume[vrow], unit)
        side["volume"] = stored
        coded, in_ns = V.quantized_attrs(divisor, scale)
        attrs.update(coded)
        if in_ns and quantum == 1:    # (ns, like the times)
            vol_ns = np.zeros(len(volume), np.int64)
            vol_ns[vrow] = stored
            attrs["duration_less_volume"] = True
    pred = None
    if quantum > 1 and volumes == "exact" and unit == "seconds":
        # bounded times: a compute's duration predicted by its volume as a reader decodes it
        pred = np.zeros(len(volume), np.int64)
        pred[vrow] = V.coded_durations(side["volume"], attrs)
    # the times as a reader of either form decodes them (for the spans and the model)
    enc, t0, cols, (ts, te), predicted = V.encode_times(
        ts, te, data.rank_offsets, vol_ns, quantum, gaps=volumes == "exact", pred=pred)
    if quantum > 1 and enc == "ns-gap":
        attrs["time_quantum"] = quantum
    if predicted:
        attrs["time_coding"] = TIME_CODING_OCTAVES
    if enc != "untimed":
        side["t_first"], side["t_last"] = V.rank_spans(ts, te, data.rank_offsets)
    coarser, fitted = [], ((), ())
    if volumes == "exact":
        side.update(cols)
    else:
        model_side, model_attrs, coarser = E.fit(volume, vrow, sig.ids,
                                                 np.asarray(data.rank_offsets),
                                                 sig.table["kind"], precision,
                                                 token_sites(sites[0], tokens), merge)
        side.update(model_side)
        attrs.update(model_attrs)
        fitted = (tuple(model_side), tuple(model_attrs))
        side.update(_model_times(data, sig.ids, gram.rank_grammar[data.rank_of()], ts, te,
                                 enc != "untimed", precision, sites))
        enc = "model" if enc != "untimed" else enc
    attrs["time_encoding"] = enc
    attrs["t0"] = t0
    return Compressed(sig.table, sig.vec_offsets, sig.vec_values, sig.new_requests,
                      sig.new_request_offsets, gram, has_volume, np.asarray(data.rank_offsets),
                      volumes, side, attrs, dict(data.comms), list(data.strings),
                      dict(data.meta), sig.ids, tokens, coarser, fitted)


def refit(c: Compressed, data: TraceColumns, merge: int) -> Compressed:
    """Model ``c`` of ``data`` with its volumes fitted again at ``merge`` anchors an epoch,
    the rest as it was (its structure, times and their statistics do not depend on it: a
    second :func:`compress` took 2.4x the first's time on public PENNANT 4r, the fit alone
    half)."""
    volume = np.asarray(data.actions["volume"], np.float64)
    side, attrs, _ = E.fit(volume, c.has_volume[c.ids], c.ids, c.rank_offsets,
                           c.table["kind"], c.attrs["precision"],
                           token_sites(c.size_sites[0], c.tokens), merge)
    return replace(c, side=_in_place(c.side, c.fitted[0], side),
                   attrs=_in_place(c.attrs, c.fitted[1], attrs), coarser=[],
                   fitted=(tuple(side), tuple(attrs)))


def _in_place(d: dict, old: tuple, new: dict) -> dict:
    """``d`` with its items ``old`` replaced by ``new``'s where the first of them was (the
    order compress gives them: the same file as compress(merge=) writes)."""
    out: dict = {}
    for k, v in d.items():
        if k not in old:
            out[k] = v
        elif not out.keys() & new.keys():
            out.update(new)
    return out


def token_sites(site: np.ndarray, tokens: SG.SizeTokens | None) -> tuple | None:
    """(``site``: each signature's size site, whether each size site's message sizes are
    tokens), as the model's call sites take them (epochs.site_ids); None without tokens."""
    if tokens is None:
        return None
    tokened = np.zeros(int(site.max(initial=-1)) + 1, bool)
    tokened[site[tokens.sites]] = True
    return site, tokened


def terminal_count(tokens: SG.SizeTokens | None) -> int:
    """The grammar's terminals beyond the signatures: its size tokens."""
    return 0 if tokens is None else len(tokens.sites)


def rank_signatures(c: Compressed, rank: int) -> np.ndarray:
    """Every signature id of ``rank``'s actions: its grammar's expansion, size tokens
    resolved (:func:`.signatures.resolve_sizes`)."""
    ids = c.grammar.expand(int(c.grammar.rank_grammar[rank]))
    if c.tokens is None:
        return ids
    t = c.tokens
    lo, hi = int(t.new_offsets[rank]), int(t.new_offsets[rank + 1])
    return SG.resolve_sizes(ids, len(c.table), t, c.size_sites[0], c.has_volume, t.new[lo:hi])


def _model_times(data, ids, group, ts, te, timed: bool, precision: float,
                 sites: tuple[np.ndarray, np.ndarray]) -> dict:
    """Model mode's time statistics: durations and gaps per call site with message sizes set
    aside (:func:`.signatures.size_sites`) and rank group, the mean and a per-byte term
    within ``precision`` (the centres of their log codes, as a file stores them:
    :data:`STAT_CODES`).  Per signature (files before format version 10) they took 4.1 of
    public miniMD 2r's 12.7 KB: each message size its own mean, deviation and count.
    ``sites``: :func:`.signatures.size_sites`' of the table."""
    if not timed:
        return {}
    prev_end = np.empty_like(te)
    prev_end[:1] = np.nan
    prev_end[1:] = te[:-1]
    prev_end[V.rank_starts(data.rank_offsets)] = np.nan
    stats = V.group_stats(ids, group, {"duration": te - ts, "gap": ts - prev_end})
    site, nbytes = sites
    stats = _per_site(stats, site, nbytes, precision)
    # (a mean below the clocks' nanosecond is the rounding of end - start on float seconds:
    # contiguous actions' gaps of +-1e-15..1e-13 s, each a code as dear as a real mean)
    stats["mean"] = np.where(np.abs(stats["mean"]) < TIME_RESOLUTION, 0.0, stats["mean"])
    coded = V.from_codes(V.log_codes(np.concatenate([stats[c] for c in STAT_CODES]),
                                     precision), precision)     # (at once: ~20 us a call)
    for col, values in zip(STAT_CODES, np.split(coded, len(STAT_CODES))):
        stats[col] = values
    return {"stats": pd.DataFrame(stats, copy=False)}     # (its own arrays: no copy)


def _per_site(stats: dict, site: np.ndarray, nbytes: np.ndarray, precision: float) -> dict:
    """The per-signature ``stats`` (``volumes.group_stats``) per (quantity, site, group): the
    mean over the site's signatures, or, where the site's sizes vary and a line in the bytes
    (slope > 0; through 0 where the least-squares intercept is negative) at least halves the
    site's error while that error is above the precision of its total, the intercept as the
    mean and the slope as ``per_byte`` (a send's duration grows with its size; most sites' do
    not: their term is 0)."""
    sig = stats["signature"].astype(np.int64)
    w = stats["count"].astype(np.float64)
    m = stats["mean"].astype(np.float64)
    x = nbytes[sig].astype(np.float64)
    ngroup = int(stats["group"].max()) + 1 if len(sig) else 1
    nsite = int(site.max()) + 1 if len(site) else 1
    key = (stats["what"].astype(np.int64) * nsite + site[sig]) * ngroup + stats["group"]
    uniq, inv = V.dense_unique(key)

    def total(v):
        return np.bincount(inv, weights=v, minlength=len(uniq))
    W = np.maximum(total(w), 1e-300)
    mx, my = total(w * x) / W, total(w * m) / W
    vx = np.maximum(total(w * x * x) / W - mx * mx, 0.0)
    spread = vx > 1e-12 * np.maximum(mx * mx, 1.0)
    b = np.where(spread, (total(w * x * m) / W - mx * my) / np.where(spread, vx, 1.0), 0.0)
    a = my - b * mx
    # (a latency below the noise fits a little below 0, or -1e-25 from rounding alone where
    # durations are proportional to the bytes: then the line through 0)
    below = a < 0
    sxx = total(w * x * x)
    b = np.where(below, total(w * x * m) / np.maximum(sxx, 1e-300), b)
    a = np.where(below, 0.0, a)
    err0 = total(w * np.abs(m - my[inv]))
    err1 = total(w * np.abs(m - (a[inv] + b[inv] * x)))
    line = spread & (b > 0) & (2 * err1 <= err0) & (err0 > precision * total(w * np.abs(m)))
    return {"what": (uniq // ngroup // nsite).astype(np.int8), "site": uniq // ngroup % nsite,
            "group": uniq % ngroup, "mean": np.where(line, a, my),
            "per_byte": np.where(line, b, 0.0)}


#: Model time means below this (s), the recorders' clock resolution, are stored as 0: public
#: Nekbone 4r's model file 7.6% smaller, the 30 recordings of session 25 2.6%.
TIME_RESOLUTION = 1e-9
#: Model statistics stored as log codes (volumes.log_codes at the model's precision, 1-2 bytes
#: each: float32 took 4 and half of a model's bytes on LULESH 8), in columns of this name +
#: ``_code``; files before session 12 hold them as floats under their own names.
STAT_CODES = ("mean", "per_byte")
#: ... and those of files before format version 10 (per signature: count, mean, deviation).
OLD_STAT_CODES = ("mean", "std")
_CODE_SUFFIX = "_code"


# -- writing -----------------------------------------------------------------------------------

def _delta_per_rank(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    d = values.copy()
    if len(d):
        d[1:] -= values[:-1]
        firsts = V.rank_starts(offsets)
        d[firsts] = values[firsts]
    return d


def _undelta_per_rank(d: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_delta_per_rank` (wrapping arithmetic: exact for any int64)."""
    with np.errstate(over="ignore"):
        out = np.cumsum(d, dtype=np.int64)
        base = np.concatenate([[0], out])[offsets[:-1]]
        return out - np.repeat(base, np.diff(offsets))


#: Side arrays entropy-coded in files of bounded, predicted times (their steps: deflate is
#: 10-45% above their entropy; the gaps, nearly all 0, deflate to less): by rans.py (order 0)
#: as uint8 named with RANS_SUFFIX in files of sessions 11-12 (from 16,384 actions), read
#: still; since session 13 in contexts (below).
RANS_CODED = ("t_duration",)
RANS_SUFFIX = ".rans"
#: Side arrays of bounded files coded in contexts of their call site and the call before it
#: (context_rans.py, session 13), stored as uint8 named with CONTEXT_SUFFIX: the volume codes
#: (one per volume action) and the time steps of RANS_CODED; from CONTEXT_MIN values always,
#: below where they deflate smaller so (a table's entries can cost more than they save).
CONTEXT_CODED = ("volume",) + RANS_CODED
CONTEXT_SUFFIX = ".ctx"
CONTEXT_MIN = 8192
#: Since session 31 (format version 15) the same arrays are coded by the adaptive context coder
#: (adaptive.py), stored as uint8 named with ADAPTIVE_SUFFIX; files with ``.ctx`` arrays are
#: read alike (ADAPTIVE false writes them: tests check that they still read).
ADAPTIVE_SUFFIX = ".actx"
ADAPTIVE = True


def _context_keys(c: Compressed, name: str, cache: dict):
    """(fine, coarse) context keys of side array ``name``'s values (``cache``: the trace's,
    every action's, computed once)."""
    if "all" not in cache:
        ids = c.ids
        if ids is None and c.tokens is not None:     # (each rank's own sizes: no sharing)
            ids = np.concatenate([rank_signatures(c, r) for r in range(c.nranks)] or
                                 [np.zeros(0, np.int64)])
        cache["all"] = CR.call_keys(c.grammar, len(c.table)) if ids is None else \
            CR.keys(ids, V.rank_starts(c.rank_offsets), len(c.table))
    fine, coarse = cache["all"]
    if name in RANS_CODED and c.attrs.get("time_coding") == TIME_CODING_OCTAVES:
        mine = c.has_volume[coarse]
        volume = c.side.get("volume")
        if volume is None or len(volume) != int(mine.sum()):
            raise R.CodeError("duration steps without the volumes that predict them")
        octave = np.zeros(len(fine), np.int64)
        octave[mine] = V.duration_octaves(volume, c.attrs, c.attrs["time_quantum"])
        return V.step_keys(fine, coarse, octave)
    if name != "volume":
        return fine, coarse
    mine = c.has_volume[coarse]
    return fine[mine], coarse[mine]


def _context_coded(c: Compressed, name: str, arr: np.ndarray, cache: dict):
    """(side array ``name`` (``arr``: ``c.side``'s) coded in contexts, its suffix), or None
    where :func:`write` stores it as is: the arrays of :data:`CONTEXT_CODED` by the adaptive
    coder (the duration steps, differences from predictions, coded from 0, the volume codes
    from their call site's first), or (:data:`ADAPTIVE` false) by context_rans.py's static
    tables, every such array of ``c`` at once (``CR.encode_many``: their rANS steps together;
    ``cache``: :func:`_context_keys`', and those codings)."""
    def coded_here(k: str, a) -> bool:
        return len(a) > 0 and (k == "volume" and "volume_bound" in c.attrs or
                               k in RANS_CODED and bool(c.attrs.get("time_coding")))
    if not coded_here(name, arr):
        return None
    if ADAPTIVE:
        coded, suffix = A.encode(arr, *_context_keys(c, name, cache),
                                 flags=A.FROM_ZERO if name in RANS_CODED else 0), \
            ADAPTIVE_SUFFIX
    else:
        if "coded" not in cache:
            names = [k for k, a in c.side.items() if coded_here(k, a)]
            cache["coded"] = dict(zip(names, CR.encode_many(
                [(c.side[k], *_context_keys(c, k, cache)) for k in names])))
        coded, suffix = cache["coded"][name], CONTEXT_SUFFIX
    if len(arr) >= CONTEXT_MIN or len(zlib.compress(coded.tobytes(), 6)) < \
            P.deflated_size(arr):
        return coded, suffix
    return None


#: What a chunked dataset's index takes of the file, about (HDF5's version-1 B-tree node).
CHUNK_INDEX_BYTES = 2048


#: The deflate level of grammar arrays too large for the pack (an irregular code's top-level
#: sequences: miniAMR 4r's 57 k symbols took 14.6 KB, 0.12 B/action, at storage's level 1;
#: 9.8 KB at 6 for ~1.4 ms more; level 7 saves 1% more for 0.9 ms, 9 3% for 12 ms.  SNAP 2r's
#: 241 k, its polls between messages: 69.5 -> 44.0 KB, writes 0.96-0.98x).
GRAMMAR_GZIP_LEVEL = 6


def _dataset(group, name: str, data: np.ndarray, deferred: list, noisy: bool = False,
             level: int = S.COMPRESSION["compression_opts"], **attrs) -> None:
    """:func:`storage.dataset` (its chunks deflated at ``level``), or a plain
    (contiguous, uncompressed) dataset where deflating would save less than the chunk index
    costs (small arrays); its data written by what it appends to ``deferred``
    (``storage.dataset``: every header first, no hole), its text attributes fixed-length
    (``storage.new_attrs``: requests/new's encoding took a 4 KB global heap, 7-12% of
    CloverLeaf 8-16r's model files)."""
    data = np.ascontiguousarray(data)
    if data.nbytes > 16 * CHUNK_INDEX_BYTES or data.nbytes - len(zlib.compress(
            data.view(np.uint8).reshape(-1, data.itemsize).T.tobytes())) > CHUNK_INDEX_BYTES:
        ds = S.dataset(group, name, data, noisy, deferred, level)
    else:
        ds = group.create_dataset(name, shape=data.shape, dtype=data.dtype)
        if data.size:
            deferred.append(lambda: ds.write_direct(data))
    S.new_attrs(ds, attrs, fixed=True)


#: The pack's deflate level, in one chunk: a pack is most of a small file; storage's level 1
#: in chunks of 256 KB left it 10% larger (LULESH 8r's model pack: 37.2 -> 33.6 KB).  Level 9
#: where the pack holds at most :data:`PACK_BYTES_PER_ACTION` bytes (before deflating) per
#: action, else :data:`PACK_GZIP_LEVEL_LARGE` (session 13): level 9's longer match searches
#: take up to ~0.12 us a byte (5-26 ms a pack of 50-220 KB on 13 recorded traces, 3 modes), so
#: at most a quarter of the 0.5 us an action of 2 M actions per CPU second; level 7 took
#: 2-6x less on the larger packs (exact modes' noisy volumes and times: miniFE 2r 11 bytes an
#: action, 4.6 -> 1.1 ms) for 0.0-1.4% of the pack.  Above :data:`PACK_NOISY_BYTES_PER_ACTION`
#: (exact modes' recorded times and volumes, ~11 bytes an action, which storage deflates at
#: level 4 too) :data:`PACK_GZIP_LEVEL_NOISY` (session 14): level 7 took 0.19-0.21 us an
#: action there (1.1-2.3 ms on miniFE 2r, noisy 8, cg3d 8), 40% of the 0.5 us, level 4
#: 0.09-0.11 us for +0.6-2.0% of the pack (+0.4-1.8% of the file).  Level 9 also only up to
#: :data:`PACK_LEVEL9_BYTES` (session 19): the model's tail (the calls its means miss, at
#: irregular places) made CloverLeaf 8r's 121 KB pack take 26 ms at level 9, 4.2 at level 7,
#: for 0.9% of it (0.0013 B/action); 16 KiB since session 25 (32 before): miniAMR 2r's model
#: pack of 32 KB took 2.1 ms at level 9, 0.7 at level 7, for 0.7% of it (42 bytes; 6% of its
#: model compression), miniGhost BSPMA 4r's of 25 KB 2.0 and 0.65 ms for 1.0%.
PACK_GZIP_LEVEL = 9
PACK_LEVEL9_BYTES = 16 << 10
PACK_GZIP_LEVEL_LARGE = 7
PACK_GZIP_LEVEL_NOISY = 4
PACK_BYTES_PER_ACTION = 1
PACK_NOISY_BYTES_PER_ACTION = 8


def _pack_level(nbytes: int, nactions: int) -> int:
    """The pack's deflate level for ``nbytes`` of pack (before deflating) and ``nactions``."""
    if nbytes <= min(PACK_BYTES_PER_ACTION * nactions, PACK_LEVEL9_BYTES):
        return PACK_GZIP_LEVEL
    return PACK_GZIP_LEVEL_LARGE if nbytes <= PACK_NOISY_BYTES_PER_ACTION * nactions else \
        PACK_GZIP_LEVEL_NOISY


#: The HDF5 1.10 file format (readable by HDF5 >= 1.10, 2016): its groups hold their links in
#: their header and its chunk indexes are arrays, where the 1.6 format's default takes a
#: B-tree and a heap per group and a B-tree per chunked dataset: 12-20 KB less per compressed
#: file, which for traces under ~50 k actions is a quarter of the file or more.
LIBVER = ("v110", "v110")


#: ``/trace``'s and the root's attributes are kept in their headers up to this many (HDF5's
#: default, 8, moves ``/trace``'s 10-14 and the root's ~19 to a heap and a B-tree each: 1.8
#: and ~1 KB more per file).
COMPACT_ATTRIBUTES = (32, 24)
_LIBVER = {"v110": h5py.h5f.LIBVER_V110}


@functools.lru_cache(maxsize=1)
def _plists():
    """(file access, file creation, ``/trace``'s group creation) property lists, made once
    a process (HDF5 copies what a new object takes of them)."""
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_fclose_degree(h5py.h5f.CLOSE_STRONG)      # (as h5py.File's)
    fapl.set_libver_bounds(*(_LIBVER[v] for v in LIBVER))
    fapl.set_meta_block_size(0)     # (HDF5 gathers metadata in blocks of 2 KB: the last one's
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)          # unused part stays in the file)
    fcpl.set_attr_phase_change(*COMPACT_ATTRIBUTES)
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_attr_phase_change(*COMPACT_ATTRIBUTES)
    for p in (fcpl, gcpl):      # (no access, change and birth times: 16 bytes a group, as
        p.set_obj_track_times(False)        # storage's datasets; "created" says when)
    return fapl, fcpl, gcpl


def _create(tmp: str) -> h5py.File:
    """A new HDF5 file in the :data:`LIBVER` format whose root keeps its attributes in its
    header (h5py.File takes no file creation property list)."""
    fapl, fcpl, _ = _plists()
    return h5py.File(h5py.h5f.create(os.fsencode(tmp), h5py.h5f.ACC_TRUNC, fcpl=fcpl,
                                     fapl=fapl))


#: Packs of more bytes than this (before deflating) are deflated for a dataset first, and
#: against the dictionary too only where that stream may still fit inline
#: (:func:`_deflated_pack`): none of the 90 file-modes of session 25's 30 public recordings
#: above it was inline (the largest inline: 124 KB, miniGhost 4r's model pack), and deflating
#: twice took 1.1-1.4 ms of PENNANT 2r's exact files (151 KB).
PACK_LARGE_BYTES = 8 * P.ATTR_MAX_BYTES
#: Packs of more bytes than this, up to :data:`PACK_LARGE_BYTES`, are deflated for a dataset
#: first where a quick deflate (level 1, no dictionary) of every other :data:`QUICK_BLOCK`
#: bytes of them, doubled, is above :data:`QUICK_BYTES` (of the whole pack until session
#: 29: on session 25's 90 packs at most 17.2 KB where inline, 21.4 KB at least where not,
#: 0.04-0.8 ms against their level 7's 0.15-2.4 ms; on the 123 of session 28's 41
#: recordings, codings of format version 13: at most 16.4 KB where inline, 18.8 KB at least
#: where not: 18 KB (at 20, miniMD 2r's bounded pack and NPB MG A 2r's exact one were
#: deflated twice: ~0.7, 1 ms).  Every other block, on the 92 packs in that range of the 56
#: recordings' 168 file-modes: at most 17.9 KB where inline, 19.8 KB at least where not (the
#: whole pack: 16.8, 19.3), for half the time: the exact packs of CloverLeaf 2r 480 and
#: miniMD 2r and the bounded ones of miniAMR 2r and miniMD 4r, datasets, took 0.31-0.45 ms
#: so, 0.15-0.23 now; inline ones 0.08-0.14 ms, 0.05-0.08 now).
PACK_QUICK_FROM = 2 * P.ATTR_MAX_BYTES
QUICK_BYTES = 9 * P.ATTR_MAX_BYTES // 8
QUICK_BLOCK = 2048


def _likely_dataset(raw: bytes) -> bool:
    """Whether packed bytes ``raw`` deflate quickly (level 1, every other
    :data:`QUICK_BLOCK`, doubled) to more than :data:`QUICK_BYTES`: then seldom inline
    (stopped as soon as they do)."""
    z = zlib.compressobj(1)
    n = 0
    for at in range(0, len(raw), 2 * QUICK_BLOCK):
        n += 2 * len(z.compress(raw[at:at + QUICK_BLOCK]))
        if n > QUICK_BYTES:
            return True
    return n + 2 * len(z.flush()) > QUICK_BYTES


#: Bytes the inline stream's dictionary (``pack.DICTIONARY``) can save at most, with room:
#: twice what its own text deflates to (a stream can refer to it where it would otherwise
#: code that text once; a pack whose string table spells the whole dictionary saves ~950).
_DICTIONARY_SAVES = 2 * len(zlib.compress(P.DICTIONARY, 9))


def _deflated_pack(raw: bytes, level: int, text: int,
                   ends: list[int] | None = None) -> tuple[bytes | None, bytes | None]:
    """(the inline stream, or None where it is above ``pack.ATTR_MAX_BYTES``; the dataset's
    stream, or None where inline) of packed bytes ``raw``: the dictionary's stream first,
    the one without only for a dataset (whose filter takes none), but for packs that are
    seldom inline (:data:`PACK_LARGE_BYTES`, :func:`_likely_dataset`), whose stream without
    the dictionary, when above the limit by more than the dictionary can save
    (:data:`_DICTIONARY_SAVES`, or ``text``, the bytes of the pack it spells, its index and
    attributes, where more), is the dataset's at once (the dictionary saved 136-355 bytes on
    the 90 packs of session 25; of the 123 packs of 41 recordings in session 28, the inline
    ones deflate to at most 16.4 KB, the others to 18.8 KB or more), so the order changes
    what is deflated, not the streams kept.  ``ends``: its blocks' (``pack.pack_ends``), when
    the caller has them."""
    deflated = None
    if len(raw) > PACK_LARGE_BYTES or (len(raw) > PACK_QUICK_FROM and _likely_dataset(raw)):
        deflated = P.deflate(raw, level, ends=ends)
        if len(deflated) > P.ATTR_MAX_BYTES + max(text, _DICTIONARY_SAVES):
            return None, deflated
    inline = P.deflate_inline(raw, level, ends)
    if len(inline) <= P.ATTR_MAX_BYTES:
        return inline, None
    return None, P.deflate(raw, level, ends=ends) if deflated is None else deflated


#: A model file's pack written as a dataset is this dataset, LZMA-coded (:func:`lzma_pack`),
#: where that is smaller than the deflated dataset (format version 14, session 28): LZMA's
#: adaptive range coder and its matches at repeated distances take 7-11% less than deflate's
#: Huffman blocks of the tail's gaps and steps, the grammar's top level and the request ids
#: (miniAMR 4r's model file 26.6 -> 24.7 KB, 0.212 -> 0.197 B/action).  Model packs only:
#: they hold about a byte per action before coding (LZMA codes ~14 MB/s here, deflate ~40),
#: where exact and bounded packs hold 2-8.
LZMA_DATASET = "packed_lzma"
_LZMA_HEAD = np.dtype("<u4")
#: The most bytes a pack of :data:`LZMA_DATASET` names per byte it holds: deflate's own limit
#: (~1,032), so that no pack inflates beyond a size its file holds, as a deflated one cannot.
#: The writer keeps deflate where LZMA would code more densely (no model pack of the 47
#: recordings comes within 100 times of it); the reader refuses a longer length as damage
#: before inflating it (a 9.5 KB stream can name 64 MiB of zeros).
LZMA_MAX_RATIO = 1032


def _lzma_filters(n: int) -> list[dict]:
    """The raw LZMA1 coding of a pack of ``n`` bytes: a dictionary as large as the pack, no
    literal or position context bits (byte-shuffled arrays: a byte's neighbours say little of
    it), a binary-tree match finder of short nice matches (miniAMR 4r's model pack: a third
    of preset 6's time for 5% more bytes; hash chains of the same length: 20% faster, 1.4%
    more, too many for its 0.2 B/action)."""
    return [{"id": lzma.FILTER_LZMA1, "dict_size": max(4096, 1 << max(n - 1, 1).bit_length()),
             "lc": 0, "lp": 0, "pb": 0, "mode": lzma.MODE_NORMAL, "mf": lzma.MF_BT4,
             "nice_len": 16}]


def lzma_pack(raw: bytes) -> bytes:
    """Packed bytes ``raw`` as :data:`LZMA_DATASET` holds them: uint32 their length and CRC-32
    (raw LZMA has no check of its own: damage must fail, not decode), then the raw LZMA1
    stream (:func:`_lzma_filters`, with its end marker)."""
    head = np.array([len(raw), zlib.crc32(raw)], _LZMA_HEAD).tobytes()
    return head + lzma.compress(raw, format=lzma.FORMAT_RAW, filters=_lzma_filters(len(raw)))


def unlzma_pack(blob: bytes) -> bytes:
    """The packed bytes of :func:`lzma_pack`'s ``blob``; ValueError where it is not one (at
    most the length it names is inflated, and no more than :data:`LZMA_MAX_RATIO` times its
    own)."""
    head = 2 * _LZMA_HEAD.itemsize
    if len(blob) < head:
        raise ValueError("too short")
    n, crc = (int(x) for x in np.frombuffer(blob[:head], _LZMA_HEAD))
    if n > LZMA_MAX_RATIO * len(blob):
        raise ValueError(f"names {n} bytes in {len(blob)}")
    d = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=_lzma_filters(n))
    try:
        out = d.decompress(blob[head:], max_length=n)
        if not d.eof and len(out) == n:              # (the end marker after the last byte)
            out += d.decompress(b"", max_length=1)
    except lzma.LZMAError as e:
        raise ValueError(str(e)) from None
    if not d.eof or d.unused_data or len(out) != n or zlib.crc32(out) != crc:
        raise ValueError("incomplete, trailing or of another CRC")
    return out


_SIZE_COLUMNS = ("bytes_sent", "bytes_recv")
#: The arrays of a file whose message sizes are coded for what they are (format version 13).
_SIZE_CODING_NAMES = ("signatures/size_coding", "sizes/fresh")
#: Bytes each array more must save in :func:`_size_arrays`' trial: an index line, and the
#: arrays deflated alone overstate what coding saves in the pack (on 39 public recordings the
#: trial's gains of 9-58 bytes were 0-19 in the files, some a loss of up to 12; those of 90
#: bytes or more at least half of it).
ARRAY_COST = 32


def _size_arrays(table: np.ndarray) -> dict[str, np.ndarray]:
    """The signatures' message sizes as their columns, or coded for what they are
    (:func:`.signatures.code_sizes`, either way of coding the swaps) where that deflates
    smaller: a trial (on 39 public recordings it pays where sizes change from step to step,
    miniMD, miniAMR, Nekbone; IMB's sizes, the same few at every call site, deflate smaller
    as columns)."""
    best = {k: table[k].astype(np.int64) for k in _SIZE_COLUMNS}
    cost = sum(P.deflated_size(a) for a in best.values())
    if cost <= ARRAY_COST * 2:        # (a coding of two arrays more cannot pay: no trial)
        return best
    codings = SG.code_sizes(table)
    shared = {k: P.deflated_size(codings[0][k]) for k in _SIZE_COLUMNS}   # (every coding's)
    for coded in codings:
        size = sum(shared[k] if k in shared else P.deflated_size(a) for k, a in coded.items()) \
            + ARRAY_COST * (len(coded) - len(best))
        if size < cost:
            best, cost = coded, size
    return best


def write(path: str, c: Compressed, meta: dict | None = None, pack: bool = True) -> None:
    """Write ``c`` as a new minitrace file (``/trace@form = "grammar"``); ``pack``: its small
    arrays, the communicator and string tables and ``/trace``'s attributes among them, in one
    dataset (:mod:`.pack`) and its root's attributes and provenance in one attribute
    (``storage.META_ATTR``: format version 6), else each its own (the version of what the
    file holds, 2-5); version 7 either way where it holds ``model/in_call_totals``.  Its text
    attributes are fixed-length strings (``storage.new_attrs``: no 4 KB heap)."""
    m = dict(c.meta)
    m.update(meta or {})
    if m.get("volume_unit") not in VOLUME_UNITS:
        raise MinitraceError(f"unknown volume unit {m.get('volume_unit')!r}", path)
    small = S.smallest_int
    arrays: dict[str, tuple[np.ndarray, dict]] = {}     # "group/name" -> (array, attrs)

    def put(name: str, data: np.ndarray, **kw) -> None:
        arrays[name] = (small(data) if data.dtype.kind == "i" else data, kw)

    for name in SG.SIGNATURE_DTYPE.names:
        if name not in _SIZE_COLUMNS:
            put(f"signatures/{name}", c.table[name].astype(np.int64)
                if c.table[name].dtype.kind == "i" else c.table[name])
    for name, a in _size_arrays(c.table).items():
        put(f"signatures/{name}", a)
    put("signatures/has_volume", c.has_volume.astype(np.uint8))
    put("signatures/vector_offsets", c.vec_offsets)
    put("signatures/vector_values", c.vec_values)
    for name in _GRAMMAR_ARRAYS:
        put(f"grammar/{name}", getattr(c.grammar, name), level=GRAMMAR_GZIP_LEVEL)
    if c.tokens is not None:
        put("sizes/sites", c.tokens.sites)
        put("sizes/distances", c.tokens.distances)
        put("sizes/offsets", c.tokens.new_offsets)
        by_rank = _delta_per_rank(c.tokens.new, c.tokens.new_offsets)
        fresh = SG.fresh_code(c.tokens.new, c.tokens.new_offsets)
        if P.deflated_size(fresh) < P.deflated_size(by_rank):
            put("sizes/fresh", fresh)
        else:
            put("sizes/new", by_rank, encoding="delta-per-rank")
    put("requests/offsets", c.new_request_offsets)
    put("requests/new", _delta_per_rank(c.new_requests, c.new_request_offsets),
        encoding="delta-per-rank")
    put("index/rank_offsets", c.rank_offsets)
    codes, counts = kind_counts(c)
    put("index/kind_codes", codes)
    put("index/kind_counts", counts)
    cache: dict = {}
    for name, arr in c.side.items():
        coded = _context_coded(c, name, arr, cache)
        if coded is not None:
            put(f"{c.mode}/{name}{coded[1]}", coded[0])
        elif isinstance(arr, pd.DataFrame):
            for col, values in arr.items():     # (a third of arr[col]'s time)
                if name == "stats" and col in STAT_CODES:
                    put(f"{c.mode}/{name}/{col}{_CODE_SUFFIX}",
                        V.log_codes(values.to_numpy(np.float64), c.attrs["precision"]))
                else:
                    put(f"{c.mode}/{name}/{col}", values.to_numpy())
        else:
            put(f"{c.mode}/{name}", arr, noisy=len(arr) > c.nranks + 1)
    tables = {**{f"comms/{k}": a for k, a in S.comms_arrays(c.comms).items()},
              P.STRINGS: np.frombuffer(json.dumps([S.hdf5_text(x) for x in c.strings])
                                       .encode(), np.uint8)}
    tables_packed = pack and all(P.packs(a) for a in tables.values())
    if tables_packed:
        for name, a in tables.items():
            put(name, a)
    packed = {k: a for k, (a, _) in arrays.items() if P.packs(a)} if pack else {}
    arrays = {k: v for k, v in arrays.items() if k not in packed}
    names = (*arrays, *packed)              # (older readers say "newer", not "corrupt")
    # (every model file holds its time statistics per size site (version 10) and its ranks'
    # own sites (9), which versions 4, 5 and 7 did not mark; templates of the stretches
    # between anchors: 11; message sizes apart from the grammar, or duration steps in
    # contexts of their predictions' octaves: 12; message sizes coded for what they are: 13;
    # arrays of the adaptive context coder: 15; model call sites of two modes: 16)
    version = S.MODEL_MODES_VERSION if E.MODE_GAPS in c.side else \
        S.ADAPTIVE_VERSION if any(k.endswith(ADAPTIVE_SUFFIX) for k in names) else \
        S.SIZE_CODING_VERSION if any(k in names for k in _SIZE_CODING_NAMES) else \
        S.SIZE_TOKENS_VERSION if c.tokens is not None or \
        c.attrs.get("time_coding") == TIME_CODING_OCTAVES else \
        S.TEMPLATE_UNITS_VERSION if E.TEMPLATE_UNIT_OFFSETS in c.side else \
        S.SIZE_SITES_VERSION if c.mode == "model" else \
        S.SECOND_WINDOW_VERSION if any(k.endswith(CONTEXT_SUFFIX) for k in names) else \
        S.PACKED_META_VERSION if pack else S.COMPRESSED_VERSION
    attrs = {"nranks": c.nranks, "nactions": c.nactions, "timed": c.timed, "form": FORM,
             **c.attrs}
    if pack:          # (its metadata packed too: the root's and /provenance by new_file)
        kept = {k: v for k, v in attrs.items() if k in P.KEPT_ATTRS or not S.packable(v)}
        packed[P.ATTRS] = np.frombuffer(S.pack_json({k: v for k, v in attrs.items()
                                                     if k not in kept}), np.uint8)
        attrs = {**kept, P.ATTR: P.VERSION}
    if packed:
        raw, ends = P.pack_ends(packed)
        level = _pack_level(len(raw), c.nactions)
        text = int(raw[:4].view("<u4")[0]) + \
            (packed[P.ATTRS].nbytes if P.ATTRS in packed else 0)    # (index, attributes)
        inline_bytes, deflated = _deflated_pack(raw.tobytes(), level, text, ends)
        inline = inline_bytes is not None
        if inline:
            attrs[P.BYTES_ATTR] = np.frombuffer(inline_bytes, np.uint8)
        elif c.mode == "model":
            lz = lzma_pack(raw.tobytes())
            if len(lz) < len(deflated) and len(raw) <= LZMA_MAX_RATIO * len(lz):
                deflated, version = None, max(version, S.LZMA_PACK_VERSION)
    with S.new_file(path, m, version, create=_create, fixed=True, packed=pack) as f:
        g = h5py.Group(h5py.h5g.create(f.id, b"trace", gcpl=_plists()[2]))
        S.new_attrs(g, attrs, fixed=True)
        if packed and not inline and deflated is None:
            g.create_dataset(LZMA_DATASET, data=np.frombuffer(lz, np.uint8),
                             track_times=False)
        elif packed and not inline:
            S.one_chunk_dataset(g, P.DATASET, len(raw), deflated, level)
        deferred: list = []
        for name, (arr, kw) in arrays.items():
            *groups, leaf = name.split("/")
            _dataset(g.require_group("/".join(groups)), leaf, arr, deferred, **kw)
        for write_data in deferred:
            write_data()
        if not tables_packed:
            S.write_comms_strings(g, c.comms, c.strings)


def _epoch_words(merge: int, anchor: str) -> str:
    """What ends an epoch (``epochs.choose_anchors``' name), in words: "between its
    collectives", "every 4 of its alltoall calls", "the whole run" (no anchor)."""
    if anchor == "none":
        return "the whole run"
    calls = anchor if anchor == "collectives" else f"{anchor} calls"
    return f"between its {calls}" if merge == 1 else f"every {merge} of its {calls}"


def lost(c: Compressed) -> str:
    """What the compressed form kept of the volumes and times, in words (``info``)."""
    if c.mode == "model":
        kept = len(c.side.get("tail_gaps", ()))      # (one a kept call; values may be steps)
        apart = "in_call_totals" in c.side
        epoch = _epoch_words(c.attrs.get("epoch_merge", 1), c.attrs.get("epoch_anchor", "none"))
        modes = len(c.side.get(E.MODE_GAPS, ())) - c.nranks
        second = f" (a second mode of {modes} calls: its own)" if modes > 0 else ""
        vols = (f"volumes modelled: each rank's total exact, its {'work' if apart else 'total'} "
                f"in each epoch ({epoch})"
                f"{', its CPU time inside MPI calls in all' if apart else ''}, "
                f"each call site's mean{second} and {kept} calls kept with their own values, "
                f"within {c.attrs.get('precision', 0.01):.3g}; lost: each other call's own value "
                f"within its epoch (spread and order)")
    elif "volume_bound" in c.attrs:
        vols = f"volumes each within {100 * c.attrs['volume_bound']:.3g}% of its own"
    else:
        vols = "volumes exact"
    enc = c.attrs.get("time_encoding")
    st = c.side.get("stats")
    aside = " with message sizes set aside (a per-byte term)" \
        if st is not None and "site" in st.columns else ""
    times = {"untimed": "no times", "model": f"times modelled (mean durations and gaps per call "
             f"site{aside} within {c.attrs.get('precision', 0.01):.3g}, or 0 below "
             f"{TIME_RESOLUTION * 1e9:g} ns)"}.get(enc, "times exact")
    if c.attrs.get("time_quantum", 1) > 1:
        times = f"times each within {c.attrs['time_quantum'] / 2000:g} us of its own"
    return f"{vols}, {times}"


def kind_counts(c: Compressed, terminal: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(kind codes present, [nranks, kinds] counts) from the grammar, nothing expanded
    (``terminal``: each program's terminal counts, where the caller has them)."""
    per_grammar = {}
    rows = []
    kinds = c.table["kind"][SG.terminal_signatures(len(c.table), c.tokens)]   # (a token's:
    kinds = kinds.astype(np.int64)                                              # its site's)
    for g in c.grammar.rank_grammar.tolist():
        if g not in per_grammar:
            n = c.grammar.terminal_counts(g) if terminal is None else terminal[g]
            per_grammar[g] = np.bincount(kinds, weights=n, minlength=256).astype(np.int64)
        rows.append(per_grammar[g])
    counts = np.stack(rows) if rows else np.zeros((0, 256), np.int64)
    present = np.nonzero(counts.sum(axis=0))[0]
    return present.astype(np.uint8), counts[:, present]


# -- reading -----------------------------------------------------------------------------------

def _corrupt(what: str, path: str) -> MinitraceError:
    return MinitraceError(f"corrupt trace: {what}", path)


class _Arrays:
    """Where :func:`read` finds each array: in the pack (:mod:`.pack`) when the file has one,
    else as its own dataset (every file written before the pack, and large arrays)."""

    def __init__(self, g: h5py.Group, attrs: dict, path: str):
        self.g, self.path = g, path
        self.packed = {}
        version = attrs.get(P.ATTR)
        if version is not None:
            if not isinstance(version, (int, np.integer)) or version not in P.VERSIONS:
                raise _corrupt(f"pack version {version!r} unknown (written by a newer "
                               f"minitrace?)", path)
            raw = self._inline(attrs.get(P.BYTES_ATTR), version) \
                if P.BYTES_ATTR in attrs else self._lzma() if LZMA_DATASET in g else \
                S.trace_array(g, P.DATASET, path, kinds="u")
            if raw.dtype != np.uint8:           # (bytes: a wider type would be narrowed)
                raise _corrupt(f"{g.name}/{P.DATASET} is {raw.dtype}, not bytes", path)
            try:
                self.packed = P.unpack(raw, int(version))
            except P.PackError as e:
                raise _corrupt(str(e), path) from None
            both = sorted(k for k in self.packed if k in g)
            if both:                             # (FORMAT.md: in the pack or its own dataset)
                raise _corrupt(f"{g.name}/{both[0]} is both packed and a dataset", path)
            tables = [k for k in self.packed if k.startswith("comms/") or k == P.STRINGS]
            if tables and (version < 2 or "comms" in g or "strings" in g):
                raise _corrupt(f"{g.name}/{tables[0]} packed in a pack of version {version} "
                               f"or beside its dataset", path)
            if P.ATTRS in self.packed and version < 3:
                raise _corrupt(f"{g.name}/{P.ATTRS} packed in a pack of version {version}",
                               path)

    def _inline(self, value, version: int) -> np.ndarray:
        """The pack's bytes from ``/trace``'s attribute :data:`.pack.BYTES_ATTR`."""
        where = f"{self.g.name}@{P.BYTES_ATTR}"
        beside = [k for k in (P.DATASET, LZMA_DATASET) if k in self.g]
        if version < 3 or beside:
            raise _corrupt(f"{where} in a pack of version {version} or beside "
                           f"{self.g.name}/{(beside or [P.DATASET])[0]}", self.path)
        if not isinstance(value, np.ndarray) or value.dtype != np.uint8 or value.ndim != 1:
            raise _corrupt(f"{where} is not bytes", self.path)
        try:            # (deflate inflates at most ~1,032 times: a size the file holds)
            return np.frombuffer(P.inflate_inline(value.tobytes(), version), np.uint8)
        except zlib.error:
            raise _corrupt(f"{where} is not deflated", self.path) from None

    def _lzma(self) -> np.ndarray:
        """The pack's bytes from the dataset :data:`LZMA_DATASET`."""
        where = f"{self.g.name}/{LZMA_DATASET}"
        if P.DATASET in self.g:
            raise _corrupt(f"{where} beside {self.g.name}/{P.DATASET}", self.path)
        blob = S.trace_array(self.g, LZMA_DATASET, self.path, kinds="u")
        if blob.dtype != np.uint8:
            raise _corrupt(f"{where} is {blob.dtype}, not bytes", self.path)
        try:
            return np.frombuffer(unlzma_pack(blob.tobytes()), np.uint8)
        except ValueError:
            raise _corrupt(f"{where} is not an LZMA-coded pack", self.path) from None

    def attrs(self, attrs: dict) -> dict:
        """``/trace``'s attributes ``attrs`` with those in the pack (pack version 3), as
        ``storage.read_attrs`` reads them (in name order), the pack's bytes left out."""
        attrs = {k: v for k, v in attrs.items() if k != P.BYTES_ATTR}
        if P.ATTRS not in self.packed:
            return attrs
        what = f"{self.g.name}/{P.ATTRS}"
        packed = S.scalars(S.unpack_json(self.packed[P.ATTRS], what, self.path), what,
                           self.path)
        return S.merged_attrs(attrs, {k: S.attr_value(v) for k, v in packed.items()}, None,
                              self.g.name, self.path)

    def __call__(self, name: str, kinds: str = "iu", ndim: int = 1) -> np.ndarray:
        v = self.packed.get(name)
        if v is None:
            *groups, leaf = name.split("/")
            where = self.g
            for sub in groups:
                where = where.get(sub)
                if not isinstance(where, h5py.Group):
                    raise _corrupt(f"{self.g.name}/{name} missing", self.path)
            return S.trace_array(where, leaf, self.path, kinds, ndim)
        if v.dtype.kind not in kinds or v.ndim != ndim:
            raise _corrupt(f"{self.g.name}/{name} is {v.dtype} {v.shape}, not numbers of rank "
                           f"{ndim}", self.path)
        return v

    def comms(self, nranks: int) -> dict[int, np.ndarray]:
        """The communicator table: packed (pack version 2) or its datasets."""
        if "comms/ids" not in self.packed:
            return S.read_comms(self.g, nranks, self.path)
        ids, offs, mem = (self(f"comms/{k}") for k in ("ids", "offsets", "members"))
        return S.comms_table(ids.astype(np.int32), offs.astype(np.int64),
                             mem.astype(np.int32), nranks, self.path)

    def strings(self) -> list[str]:
        """The string table (region names): packed as UTF-8 JSON (pack version 2) or its
        dataset."""
        if P.STRINGS not in self.packed:
            return S.read_strings(self.g, self.path)
        raw = self(P.STRINGS, kinds="u")
        try:
            out = json.loads(raw.astype(np.uint8).tobytes().decode())
        except ValueError:              # (UnicodeDecodeError is one)
            out = None
        if not isinstance(out, list) or not all(isinstance(x, str) for x in out):
            raise _corrupt(f"{self.g.name}/{P.STRINGS} is not a JSON list of strings",
                           self.path)
        return out

    def has(self, name: str) -> bool:
        """Whether the file has the array ``name`` (packed or a dataset)."""
        return name in self.packed or isinstance(self.g.get(name), h5py.Dataset)

    def holds(self, group: str) -> bool:
        """Whether the file has arrays under ``group`` (packed or datasets)."""
        return any(k.startswith(group + "/") for k in self.packed) or \
            isinstance(self.g.get(group), h5py.Group)

    def names(self, group: str) -> list[str]:
        """The arrays under ``group``: ``name``, or ``table/column`` for a table's columns."""
        out = [k[len(group) + 1:] for k in self.packed if k.startswith(group + "/")]
        sub = self.g.get(group)
        if isinstance(sub, h5py.Group):
            for name, obj in sub.items():
                out += [f"{name}/{col}" for col in obj] if isinstance(obj, h5py.Group) \
                    else [name]
        elif not out:
            raise _corrupt(f"{self.g.name}/{group} missing", self.path)
        return out


def read(g: h5py.Group, path: str) -> Compressed:
    """The compressed ``/trace`` group ``g``, every table checked (one-line ``corrupt trace``
    errors naming ``path``) before anything is expanded."""
    attrs = S.read_attrs(g)
    arr = _Arrays(g, attrs, path)
    attrs = arr.attrs(attrs)
    mode = attrs.get("volumes")
    if mode not in V.MODES:
        raise _corrupt(f"unknown volume mode {mode!r}", path)
    n_sig = None
    table_cols = {}
    coded = arr.has("signatures/size_coding")
    for name in SG.SIGNATURE_DTYPE.names:
        if coded and name in _SIZE_COLUMNS:
            continue
        v = arr(f"signatures/{name}")
        if n_sig is not None and len(v) != n_sig:
            raise _corrupt("signature columns of different lengths", path)
        n_sig = len(v)
        table_cols[name] = v
    if coded:
        try:
            table_cols.update(zip(_SIZE_COLUMNS, SG.decode_sizes(
                table_cols["kind"].astype(np.int64),
                *(arr(f"signatures/{k}").astype(np.int64) for k in
                  ("size_coding", "size_swaps", *_SIZE_COLUMNS)))))
        except ValueError as e:
            raise _corrupt(str(e), path) from None
    table = np.zeros(n_sig or 0, SG.SIGNATURE_DTYPE)
    for name, v in table_cols.items():
        info = np.iinfo(SG.SIGNATURE_DTYPE[name])
        if len(v) and (v.min() < info.min or v.max() > info.max):
            raise _corrupt(f"signature column {name} out of range", path)
        table[name] = v
    vec_offsets = arr("signatures/vector_offsets").astype(np.int64)
    vec_values = arr("signatures/vector_values").astype(np.int64)
    why = SG.check_table(table, vec_offsets, vec_values)
    if why:
        raise _corrupt(why, path)
    has_volume = arr("signatures/has_volume").astype(bool)
    if len(has_volume) != len(table):
        raise _corrupt("has_volume does not match the signature table", path)
    offsets = arr("index/rank_offsets").astype(np.int64)
    nranks = len(offsets) - 1
    tokens = _tokens(arr, table, has_volume, nranks, path) if arr.holds("sizes") else None
    gram = G.Grammar(nterm=len(table) + terminal_count(tokens),
                     **{k: arr(f"grammar/{k}").astype(np.int64) for k in _GRAMMAR_ARRAYS})
    if nranks < 0 or offsets[0] != 0 or (np.diff(offsets) < 0).any() or \
            offsets[-1] != attrs.get("nactions") or len(gram.rank_grammar) != nranks:
        raise _corrupt("rank index does not match the grammar", path)
    try:
        gram.check()
        lengths = [gram.rank_length(int(x)) for x in range(len(gram.top_offsets) - 1)]
    except G.GrammarError as e:
        raise _corrupt(str(e), path) from None
    if nranks and not np.array_equal(np.array(lengths, np.int64)[gram.rank_grammar],
                                     np.diff(offsets)):
        raise _corrupt("a rank's grammar expands to another length than the index says", path)
    req_off = arr("requests/offsets").astype(np.int64)
    new = arr("requests/new").astype(np.int64)
    if len(req_off) != nranks + 1 or (len(req_off) and (req_off[0] != 0 or req_off[-1] !=
                                                         len(new) or (np.diff(req_off) < 0)
                                                         .any())):
        raise _corrupt("request table inconsistent", path)
    side, tables = {}, {}
    partial = Compressed(table, vec_offsets, vec_values, new, req_off, gram, has_volume,
                         offsets, mode, side, attrs, tokens=tokens)  # (what keys need)
    cache: dict = {}
    names = arr.names(mode)
    time_coding = attrs.get("time_coding")
    if time_coding is not None and time_coding not in (TIME_CODING, TIME_CODING_OCTAVES):
        # (before the duration steps' keys are made from it)
        raise _corrupt(f"time coding {time_coding!r} unknown or without a time grid", path)
    # (the duration steps after the volumes: their contexts hold the predicted durations)
    for name in sorted(names, key=lambda k: k.split(".")[0] in RANS_CODED):
        frame, _, col = name.partition("/")
        coding = next(((sfx, known) for sfx, known in ((RANS_SUFFIX, RANS_CODED),
                                                        (CONTEXT_SUFFIX, CONTEXT_CODED),
                                                        (ADAPTIVE_SUFFIX, CONTEXT_CODED))
                       if name.endswith(sfx) and name[:-len(sfx)] in known), None)
        if col:
            tables.setdefault(frame, {})[col] = arr(f"{mode}/{name}", kinds="iuf")
        elif coding:
            base = name[:-len(coding[0])]
            if base in side or len({base, base + RANS_SUFFIX, base + CONTEXT_SUFFIX,
                                    base + ADAPTIVE_SUFFIX} & set(names)) > 1:
                raise _corrupt(f"{mode}/{base} stored twice", path)
            coded = arr(f"{mode}/{name}", kinds="u")
            if coded.dtype != np.uint8:
                raise _corrupt(f"{mode}/{name} is {coded.dtype}, not bytes", path)
            try:
                if coding[0] == RANS_SUFFIX:
                    side[base] = R.decode(coded)
                else:
                    decode = CR.decode if coding[0] == CONTEXT_SUFFIX else A.decode
                    side[base] = decode(coded, *_context_keys(partial, base, cache))
            except R.CodeError as e:
                raise _corrupt(f"{mode}/{name}: {e}", path) from None
        else:
            side[name] = arr(f"{mode}/{name}", kinds="iuf")
    for name, cols in tables.items():
        if len({len(v) for v in cols.values()}) > 1:
            raise _corrupt(f"{mode}/{name} columns of different lengths", path)
        if name == "stats":
            for col in sorted({*STAT_CODES, *OLD_STAT_CODES}):
                coded = cols.pop(col + _CODE_SUFFIX, None)
                if coded is not None and col in cols:
                    raise _corrupt(f"{mode}/stats/{col} stored twice", path)
                if coded is not None:
                    if coded.dtype.kind not in "iu":
                        raise _corrupt(f"{mode}/stats/{col}{_CODE_SUFFIX} is not integers", path)
                    cols[col] = V.from_codes(coded.astype(np.int64), _precision(attrs, path))
        side[name] = pd.DataFrame(cols)
    vol_off = side.get("volume_offsets")
    if vol_off is None or len(vol_off) != nranks + 1 or (len(vol_off) and vol_off[0] != 0) or \
            (np.diff(vol_off) < 0).any():
        raise _corrupt("volume index inconsistent", path)
    c = Compressed(table, vec_offsets, vec_values,
                   _undelta_per_rank(new, req_off), req_off, gram, has_volume, offsets, mode,
                   side, attrs, arr.comms(nranks), arr.strings(), tokens=tokens)
    terminal = {g: gram.terminal_counts(g) for g in set(gram.rank_grammar.tolist())}
    _check_side(c, path, terminal)
    _check_kind_index(arr, c, terminal, path)
    return c


def _tokens(arr, table: np.ndarray, has_volume: np.ndarray, nranks: int,
            path: str) -> SG.SizeTokens:
    """The size tokens (``sizes/*``, format version 12), checked against the tables: each
    token's site a signature whose site's signatures all have or all lack volumes, the
    stream of new ones of the ranks' lengths and inside the table.  That each reference
    finds a new token of its site is checked as each rank is resolved."""
    sites, dist = (arr(f"sizes/{k}").astype(np.int64) for k in ("sites", "distances"))
    off = arr("sizes/offsets").astype(np.int64)
    fresh = arr.has("sizes/fresh")
    new = arr(f"sizes/{'fresh' if fresh else 'new'}").astype(np.int64)
    if len(sites) != len(dist) or (len(sites) and (sites.min() < 0 or sites.max() >= len(table)
                                                   or dist.min() < 0)):
        raise _corrupt("size token table inconsistent", path)
    if len(off) != nranks + 1 or off[0] != 0 or off[-1] != len(new) or (np.diff(off) < 0).any():
        raise _corrupt("size token stream inconsistent", path)
    site = SG.size_sites(table)[0]
    n = np.bincount(site, minlength=len(table))
    v = np.bincount(site, weights=has_volume, minlength=len(table))
    if ((v != 0) & (v != n))[site[sites]].any():
        raise _corrupt("size tokens at a call site of actions with and without volumes", path)
    try:
        new = SG.fresh_decode(new, off) if fresh else _undelta_per_rank(new, off)
    except ValueError as e:
        raise _corrupt(str(e), path) from None
    if len(new) and (new.min() < 0 or new.max() >= len(table)):
        raise _corrupt("a new message size names a signature outside the table", path)
    return SG.SizeTokens(sites, dist, new, off)


def _check_kind_index(arr, c: Compressed, terminal: dict, path: str) -> None:
    """``index/kind_codes`` and ``index/kind_counts``, which minitrace does not read (it
    counts kinds on the grammar), as the grammar's: a plain h5py reader takes them as the
    trace's counts."""
    codes, counts = kind_counts(c, terminal)
    stored_codes, stored = arr("index/kind_codes"), arr("index/kind_counts", ndim=2)
    if not np.array_equal(stored_codes.astype(np.int64), codes.astype(np.int64)) or \
            (stored.size or counts.size) and not np.array_equal(stored, counts):
        raise _corrupt("index/kind_counts disagrees with the grammar (the index is damaged)",
                       path)


def _precision(attrs: dict, path: str) -> float:
    """The model's precision, checked (read decodes the statistics' codes by it before
    :func:`_check_side` runs)."""
    p = attrs.get("precision", 0.01)
    if not isinstance(p, float) or not 0 < p < 1:
        raise _corrupt(f"precision {p!r} invalid", path)
    return p


def _check_side(c: Compressed, path: str, terminal: dict) -> None:
    """Side arrays of the lengths the grammar implies (volumes per volume action, times per
    action), encodings known (``terminal``: each program's terminal counts)."""
    vol_off = c.side["volume_offsets"].astype(np.int64)
    per_rank = {}
    has_volume = c.has_volume[SG.terminal_signatures(len(c.table), c.tokens)]  # (a token's:
    #                                                                             its site's)
    for g in set(c.grammar.rank_grammar.tolist()):
        per_rank[g] = int(terminal[g][has_volume].sum())
    want = np.array([per_rank[int(g)] for g in c.grammar.rank_grammar], np.int64)
    if not np.array_equal(np.diff(vol_off), want):
        raise _corrupt("volume index does not match the grammar", path)
    if c.mode == "exact" and ("volume" not in c.side or len(c.side["volume"]) != vol_off[-1]):
        raise _corrupt("exact/volume missing or of the wrong length", path)
    enc = c.attrs.get("time_encoding")
    need = {"untimed": (), "ns-gap": ("t_gap", "t_duration"),
            "float-seconds": ("t_start", "t_end"), "model": ("t_first", "t_last")}
    # exact traces keep their own times; modelled ones model them, or have none (untimed)
    if enc not in need or (enc == "model") != (c.mode == "model" and enc != "untimed"):
        raise _corrupt(f"unknown time encoding {enc!r}", path)
    for col in need[enc] + (("t_first", "t_last") if enc != "untimed" else ()):
        n = c.nranks if col in ("t_first", "t_last") else c.nactions
        if col not in c.side or len(c.side[col]) != n:
            raise _corrupt(f"{c.mode}/{col} missing or of the wrong length", path)
    t0 = c.attrs.get("t0", 0.0)
    q = c.attrs.get("volume_divisor")
    scale = c.attrs.get("volume_scale")
    bound = c.attrs.get("volume_bound")
    quantum = c.attrs.get("time_quantum", 1)
    _precision(c.attrs, path)
    if not isinstance(t0, (int, float)) or not np.isfinite(t0) or \
            any(x is not None and not (isinstance(x, float) and np.isfinite(x) and x > 0)
                for x in (q, scale)) or sum(x is not None for x in (q, scale, bound)) > 1 or \
            (bound is not None and not (isinstance(bound, float) and 0 < bound < 1)) or \
            not isinstance(quantum, (int, np.integer)) or not 1 <= quantum <= V.NS:
        raise _corrupt("t0, volume divisor, scale or bound, or time quantum invalid", path)
    coding = c.attrs.get("time_coding")
    if coding is not None and (coding not in (TIME_CODING, TIME_CODING_OCTAVES) or
                               enc != "ns-gap" or quantum < 2):
        raise _corrupt(f"time coding {coding!r} unknown or without a time grid", path)
    if quantum > 1 and c.attrs.get("duration_less_volume"):
        # written by `compress --volumes exact --times bounded` before 2026-11-28 (session 10),
        # whose durations were off by up to the volume x quantum: not read as if right
        raise MinitraceError("bounded times stored less the exact volumes: written by a "
                             "minitrace whose times were off by up to the volume x quantum; "
                             "compress the recording again", path)
    if c.mode == "model":
        why = E.check(c.side, c.attrs, len(c.table), c.nranks, c.tokens is not None)
        if why:
            raise _corrupt(why, path)
    if c.mode == "model" and enc == "model":
        st = c.side.get("stats")
        if not isinstance(st, pd.DataFrame):
            raise _corrupt("model/stats missing", path)
        per_site = "site" in st.columns
        if not set(_STAT_COLUMNS if per_site else _OLD_STAT_COLUMNS) <= set(st.columns):
            raise _corrupt("model/stats lacks a column", path)
        key, n = ("site", int(c.size_sites[0].max(initial=-1)) + 1) if per_site \
            else ("signature", len(c.table))
        if len(st) and (st[key].min() < 0 or st[key].max() >= n or st["group"].min() < 0 or
                        st["group"].max() >= len(c.grammar.top_offsets) - 1):
            raise _corrupt(f"model/stats names a {key} or group outside the tables", path)
    if len(c.side.get("volume_totals", ())) != c.nranks:
        raise _corrupt(f"{c.mode}/volume_totals missing or of the wrong length", path)
    _check_finite(c, path)


def _check_finite(c: Compressed, path: str) -> None:
    """Side numbers that are numbers (the expanded trace's volumes among them): NaN passes
    every comparison above (NaN < 0 is false) and would reach the replayer; times may be NaN
    (not recorded), not infinite, and so may a rank's first and last time where it has no
    action (:func:`.volumes.rank_spans`)."""
    empty = np.diff(c.rank_offsets) == 0
    cols = {}
    for name, v in c.side.items():
        for col, x in (v.items() if isinstance(v, pd.DataFrame) else [("", v)]):
            cols[f"{name}/{col}".rstrip("/")] = np.asarray(x)
    if c.mode == "exact" and "volume" in cols:
        cols["volume"] = V.dequantize(cols["volume"], c.attrs)
    for name, x in cols.items():
        if x.dtype.kind == "f":
            bad = np.isinf(x) if name in ("t_start", "t_end") else ~np.isfinite(x)
            if name in ("t_first", "t_last") and len(x) == len(empty):
                bad &= ~(empty & np.isnan(x))
            if bad.any():
                raise _corrupt(f"{c.mode}/{name} holds {x[bad][0]}", path)

