"""A context coder for integers whose spread depends on where they come from: the log codes
of bounded volumes (docs/COMPRESS.md), and bounded times' duration steps.

Bounded volume codes spread over ~100 bins (6-8 bits) and deflate ~25% above their entropy;
given the call site and the call before it, their entropy is a further 15-20% lower (halo2d
8: 0.567 -> 0.456 B/action).  Each value is coded by rANS (:mod:`.rans`'s interleaved lanes)
in the frequency table of its context: its *fine* key (e.g. call site and previous call) when
that key has at least :data:`MIN_VALUES` values, else its *coarse* key (the call site) when
the values left there are as many, else one pooled table.  A value's symbol is its residual
from its context's base (the middle of its densest window of a sample, :func:`_bases`; the
median until session 25: any base decodes), zigzagged: below ``2**DIRECT_BITS`` its own
symbol; else (version 5) its residual from the context's second base, that of its values
outside that window, in a second window of as many symbols; larger ones one symbol per power
of two (of the residual from the base) with the low bits bit-packed (before version 3: in whole
bytes; :func:`.rans.symbols`): any int64 codes, huge ones at their length.  The
decoder is given the same keys (from the grammar, :func:`call_keys`), so the contexts cost
only their tables.

Layout (little-endian): uint32 ``version, n, lanes, words, rest bytes, fine contexts F,
coarse contexts C, table entries E, CRC-32 of the values (int64, little-endian)``; int64 fine
keys[F] and coarse keys[C], each ascending, stored as differences (the first as is); int64
bases[F + C + 1] (differences); version 5: int64 second bases[F + C + 1] (differences);
uint16 entries per context[F + C + 1]; uint16 symbols[E]
(within a context ascending, stored as differences, the first as is; byte-shuffled); uint8
count codes[E] (:func:`_frequencies`; before version 4: uint16 frequencies[E], a used
context's sum to ``2**SCALE``, symbols not shuffled); uint32 final states[lanes]; the rests
(uint8); uint16 words[words].
"""
from __future__ import annotations

import os
import zlib

import numpy as np
import pandas as pd

from ..errors import MinitraceError
from . import rans as R
from .volumes import segment_sums

#: 2: the header holds the values' CRC-32 (a flipped median or symbol decoded to other
#: values with no error in 1: none was kept, they were written for an hour of session 13);
#: 3 (session 14): the escaped values' rests bit-packed (:func:`.rans.rest_bytes`), not in
#: whole bytes; 4 (session 20): the frequency tables as one byte an entry, a half-octave code of
#: the symbol's count (:func:`_frequencies`; coarser since session 25, :func:`_count_codes`),
#: and the symbols' differences byte-shuffled: the tables were a fifth of a 17 k-action
#: bounded file (CloverLeaf 2r), now ~40% smaller, the values' coding ~0.1-0.3% longer; 5
#: (session 21): a second window per context (:func:`_symbols`).  Versions read:
#: :data:`VERSIONS`.
VERSION = 5
VERSIONS = (2, 3, 4, 5)
SCALE = 12
_TOTAL = 1 << SCALE
DIRECT_BITS = 9
_DIRECT = 1 << DIRECT_BITS
NSYM = _DIRECT + 64 - DIRECT_BITS
#: Symbols of version 5: a second window of ``_DIRECT`` symbols about a context's second base
#: (:func:`_symbols`), then the escapes.
NSYM_TWO = 2 * _DIRECT + 64 - DIRECT_BITS
#: Values a key needs for a table of its own (a table's entries cost ~1-2 bytes each, deflated,
#: since version 4: 256 before session 21, where 128 made miniAMR 2r's bounded file 2.4%
#: smaller, CloverLeaf 2r's 0.6%, 16 others within 0.1%).
MIN_VALUES = 128
#: Fine contexts at most (the most frequent keys); the rest fall to their coarse key.
MAX_CONTEXTS = 2048
_HEAD = np.dtype("<u4")
_NHEAD = 9
#: The header's counts (values, words, rest bytes...) are below this (uint32).
COUNT_LIMIT = 1 << 32
#: A table entry's weight from its one-byte code q (version 4): ``_MANTISSA[q % 2] << (q //
#: 2)``, ~16 * 2**(q / 2), integers so that every machine's decoder finds the coder's
#: frequencies; codes up to :data:`_MAX_CODE` (counts below 2**32, the header's limit).
_MANTISSA = np.array([16, 23], np.int64)
_MAX_CODE = 64
#: Slots a decoder's table may hold (8 bytes each), else it searches the slot's entry.
_SLOT_TABLE = 1 << 22


def call_keys(grammar, nsig: int):
    """(fine, coarse) keys of every action in rank order: fine = call site and the call
    before it in the rank (``site * (nsig + 1) + previous + 1``, previous -1 at a rank's
    start), coarse = the call site.  Each distinct rank grammar is expanded once."""
    distinct = set(grammar.rank_grammar.tolist())
    need = 24 * sum(grammar.rank_length(g) for g in distinct)
    if need > os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"):
        raise R.CodeError(f"context keys of {need // 24} actions need more than this "
                          f"machine's memory")
    per, fine, coarse = {}, [], []
    for g in grammar.rank_grammar.tolist():
        if g not in per:
            per[g] = keys(grammar.expand(g), np.zeros(1, np.int64), nsig)
        fine.append(per[g][0])
        coarse.append(per[g][1])
    if not fine:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(fine), np.concatenate(coarse)


def keys(ids: np.ndarray, starts: np.ndarray, nsig: int):
    """(fine, coarse) keys (:func:`call_keys`) of actions of signature ids ``ids`` whose
    ranks start at rows ``starts``."""
    ids = np.asarray(ids, np.int64)
    prev = np.empty_like(ids)
    prev[:1] = -1
    prev[1:] = ids[:-1]
    prev[starts[starts < len(ids)]] = -1
    return ids * (nsig + 1) + prev + 1, ids


def _index(keys: np.ndarray, of: np.ndarray) -> np.ndarray:
    """Index of each of ``of`` in the ascending ``keys``, -1 where absent: by a table over the
    keys' range where it is small (a binary search of 1.6 M keys took 30 ms), else searched."""
    if not len(keys):
        return np.full(len(of), -1, np.int64)
    lo, span = int(keys[0]), int(keys[-1]) - int(keys[0])
    if span < max(4 * len(of), 1 << 16):
        table = np.full(span + 2, -1, np.int32)
        table[keys - lo] = np.arange(len(keys))
        pos = of - lo
        pos[(pos < 0) | (pos > span)] = span + 1
        return table[pos].astype(np.int64)
    i = np.minimum(np.searchsorted(keys, of), len(keys) - 1)
    return np.where(keys[i] == of, i, -1)


def _contexts(fine: np.ndarray, coarse: np.ndarray, fine_keys: np.ndarray,
              coarse_keys: np.ndarray) -> np.ndarray:
    """Each value's context: index of its fine key in ``fine_keys``, else F + index of its
    coarse key in ``coarse_keys``, else F + C (the pooled table)."""
    nf, nc = len(fine_keys), len(coarse_keys)
    ctx = _index(fine_keys, fine)
    rest = ctx < 0
    if rest.any():
        c = _index(coarse_keys, coarse[rest])
        ctx[rest] = np.where(c >= 0, c + nf, nf + nc)
    return ctx


#: Keys are counted (a bincount over their range) rather than sorted up to this many times as
#: wide as they are many, and below :data:`_COUNTED_MAX`: the counts need no inverse, and a
#: bincount of 16 n keys took half a sort's time (125 k keys: 2.7 vs 5.0 ms; the fine keys of
#: miniAMR 4r, 4.1 n wide: 7 -> 2 ms; session 21); wider keys are hashed (``pd.factorize``,
#: since session 25), as fast as a bincount 16 n wide up to ~100 k keys, 2-4x slower above.
_COUNTED_SPAN = 16
_COUNTED_MAX = 1 << 23


def _frequent(keys: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """(the keys of at least :data:`MIN_VALUES` of ``keys``, the ``limit`` commonest of them at
    most, ascending; the index of each value's key among them, -1 where none): counted or
    hashed (:data:`_COUNTED_SPAN`), each value's index by a table over the count's bins or the
    hash's codes (a search of the keys took 0.07-0.32 ms of the duration steps of public
    miniMD 2r and 4r, and again for their coarse keys)."""
    if not len(keys):
        return keys, np.zeros(0, np.int64)
    lo, hi, n = int(keys.min()), int(keys.max()), len(keys)
    # (counted where sorting costs more: up to 16 n wide below 2**23, 4 n wide above)
    if lo >= 0 and hi < max(4 * n + 4096, min(_COUNTED_SPAN * n, _COUNTED_MAX)):
        count = np.bincount(keys)                # (few keys for their range: counted,
        uniq = np.flatnonzero(count >= MIN_VALUES)               # no sort)
        count, codes, bins, size = count[uniq], keys, uniq, hi + 1
    else:                                        # (hashed: a sort of miniMD 4r's 68 k
        codes, distinct = pd.factorize(keys)     # fine keys, 4.7 k of them over 5.6 M,
        count = np.bincount(codes)               # took 3.5 ms, their hash 0.35)
        ok = np.flatnonzero(count >= MIN_VALUES)
        order = np.argsort(distinct[ok])         # (ascending, as the ties' order below)
        bins, size = ok[order], len(distinct)
        uniq, count = distinct[bins], count[bins]
    if len(uniq) > limit:                        # (uniq ascending: the commonest, in order)
        top = np.sort(np.argsort(-count, kind="stable")[:limit])
        uniq, bins = uniq[top], bins[top]
    index = np.full(size, -1, np.int32)         # (as wide as the count's bins: half their
    index[bins] = np.arange(len(uniq))           # bytes)
    return uniq, index[codes].astype(np.int64)


def _choose(fine: np.ndarray, coarse: np.ndarray):
    """(fine keys, coarse keys) with tables of their own (ascending), and each value's context
    in them (:func:`_contexts`' numbers, from :func:`_frequent`'s indices)."""
    fine_keys, ctx = _frequent(fine, MAX_CONTEXTS)
    left = ctx < 0
    coarse_keys, c = _frequent(coarse[left], MAX_CONTEXTS)
    if left.any():
        nf, nc = len(fine_keys), len(coarse_keys)
        ctx[left] = np.where(c >= 0, c + nf, nf + nc)
    return fine_keys, coarse_keys, ctx


#: Values a context's bases are taken from, about (every k-th value: sorting 1.6 M contexts
#: took 80 ms; any base decodes, a sample's codes about as small).
_BASE_SAMPLE = 1 << 16


#: Bins of :func:`_bases`' counts per context: values within this window about the sample's
#: median are counted one bin a value, the others in a bin below or above it.
_BASE_BINS = 1 << 10


#: Above this many bins a sampled value, the bases are found by a sort (2,049 contexts:
#: 2.1 M bins for 46 k values took 16 ms, their sort 10-12; session 19).
_BASE_BINS_PER_VALUE = 8


def _bases(values: np.ndarray, ctx: np.ndarray, nctx: int) -> np.ndarray:
    """Each context's base: that of the window of ``_DIRECT`` values (a base's symbols) from
    the first value of its first densest window, of every k-th value; a context without
    such values its first value; 0 for one without values.  Until session 25 the median (a
    median between two modes, a wait nil or ~4 ms, or a tail longer on one side, left values
    to escape that a window at the mode takes: miniMD 4r's bounded time steps, 31 k of 68 k
    escaped; its file 13% smaller).  From the first value, not about the median of the
    window's values: a context narrower than half a window then takes odd symbols only, its
    table's entries in the order of its values, whose counts deflate smaller (about the
    median, bounded files were up to 1% larger: PENNANT 4r sq's volume tables 2.7 KB
    deflated, 2.4 from the first value).  Found by counting the values in bins of one value
    about the sample's median; a context whose values beyond an edge of the bins, with those
    of the bins within a window of that edge, outnumber its densest window in the bins (a
    window across the edge may hold more: 100 values at -500, 40 at 300 and 90 at 600 beside
    bins up to 511 took the 100, not the 130 from 300), and every context where the bins
    would outnumber the values, by a sort of their values (:func:`_sorted_bases`)."""
    out = np.zeros(nctx, np.int64)
    step = max(1, len(values) // _BASE_SAMPLE)
    if step > 1:                             # (else every context with values has a base)
        out[ctx[::-1]] = values[::-1]        # (repeated indices: the last assignment stays)
    v, k = values[::step], ctx[::step]
    if not len(v):
        return out
    lo, hi = int(v.min()), int(v.max())
    if hi - lo >= _BASE_BINS:                # (the bins about the sample's median)
        few = v[::max(1, len(v) // 1024)]
        lo = min(max(int(np.partition(few, len(few) // 2)[len(few) // 2]) - _BASE_BINS // 2,
                     lo), hi - _BASE_BINS + 1)
    width = _BASE_BINS + 2                   # (bin 0: below lo, the last: above the bins)
    if nctx * width > _BASE_BINS_PER_VALUE * len(v):      # (more bins than values: sorted)
        has = np.flatnonzero(np.bincount(k, minlength=nctx))
        out[has] = _sorted_bases(v, k, has)
        return out
    i64 = np.iinfo(np.int64)                 # (bounds within int64: no value lies beyond)
    below, above = max(lo - 1, i64.min), min(lo + _BASE_BINS, i64.max)
    b = np.clip(v, below, above) - below
    b += k * width + (below - (lo - 1))
    count = np.bincount(b, minlength=nctx * width)
    cum = np.cumsum(count)                   # (one running count of every context's bins)
    rows = cum.reshape(nctx, width)
    # the window of _DIRECT bins from each bin (1.._BASE_BINS - _DIRECT + 1 of a row)
    win = rows[:, _DIRECT:_BASE_BINS + 1] - rows[:, :_BASE_BINS + 1 - _DIRECT]
    start = np.argmax(win, axis=1) + 1       # (the first densest)
    best = win[np.arange(nctx), start - 1]
    row0 = np.arange(nctx) * width
    # its first value: the first bin whose count passes the count before the window
    first = np.searchsorted(cum, cum[row0 + start - 1], "right") - row0
    end = rows[:, -1]
    has = end > np.concatenate([[0], end[:-1]])
    low = rows[:, _DIRECT - 1] - rows[:, 0] + count[row0]       # (bins 0 .. _DIRECT - 1)
    high = rows[:, -1] - rows[:, _BASE_BINS + 1 - _DIRECT]      # (the last _DIRECT bins)
    inside = (best > 0) & (low <= best) & (high <= best)
    with np.errstate(over="ignore"):         # (a base may wrap: any base decodes)
        out[inside] = lo + (first[inside] + (_DIRECT // 2 - 1))
    outside = np.flatnonzero(has & ~inside)
    if len(outside):                         # (sorted once: a scan of the whole sample a
        out[outside] = _sorted_bases(v, k, outside)                       # context, 0.2 ms)
    return out


def _sorted_bases(v: np.ndarray, k: np.ndarray, ctxs: np.ndarray) -> np.ndarray:
    """:func:`_bases` of the values ``v`` of contexts ``ctxs`` (ascending, each with values)
    by one sort of their values: the window from each value holds the values up to
    ``_DIRECT - 1`` above it; the upper median where values and contexts overflow one int64
    key (values spread over most of int64's range)."""
    mine = np.zeros(int(k.max()) + 1, bool)
    mine[ctxs] = True
    kv, vv = k[mine[k]].astype(np.int64, copy=False), v[mine[k]]
    lo, span = int(vv.min()), int(vv.max()) - int(vv.min()) + _DIRECT
    if span * (int(ctxs[-1]) + 1) >= 1 << 63:
        order = np.lexsort((vv, kv))
        count = np.bincount(kv, minlength=int(ctxs[-1]) + 1)[ctxs]
        return vv[order][np.searchsorted(kv[order], ctxs) + count // 2]
    key = kv * span + (vv - lo)              # (one sort of int64 keys: lexsort took 3x)
    if span * (int(ctxs[-1]) + 1) < 1 << 31:  # (as int32 where they fit: miniMD 4r's 33 k
        key = key.astype(np.int32)           # duration steps far from their bases sorted
    key.sort()                               # in 0.6 ms, as int64 in 1.0)
    held = np.searchsorted(key, key + (_DIRECT - 1), "right")   # (never past its context)
    held -= np.arange(len(key))
    start = np.searchsorted(key, (ctxs * span).astype(key.dtype))
    end = np.append(start[1:], len(key))
    best = np.maximum.reduceat(held, start)
    at = np.flatnonzero(held == np.repeat(best, end - start))
    at = at[np.searchsorted(at, start)]      # (each context's first densest window)
    with np.errstate(over="ignore"):
        return (key[at] - ctxs * span + _DIRECT // 2) + lo


#: Counts below this take one code, :data:`_RARE_CODE` (~3 values' weight), and up to
#: :data:`_HALF_OCTAVE` the code of their octave (an even code), from there their half octave:
#: a table's codes, fewer distinct, deflate smaller than what the coarser weights cost the
#: values' coding, whose loss grows with the count (until session 25 every count its half
#: octave: 30 bounded files 0.2-4.3% larger, CloverLeaf 2r 480 1.016 -> 0.972 B/action).
_RARE = 12
_RARE_CODE = 3
_HALF_OCTAVE = 256


def _count_codes(count: np.ndarray) -> np.ndarray:
    """Each count's one-byte code (version 4; the writer's choice, any code decodes): one for
    the rare, an octave's, or twice its log2, rounded (:data:`_RARE`)."""
    log = np.log2(count)
    codes = np.where(count < _HALF_OCTAVE, 2 * np.rint(log), np.rint(2 * log))
    codes[count < _RARE] = _RARE_CODE
    return np.clip(codes, 0, _MAX_CODE).astype(np.int64)


def _frequencies(codes: np.ndarray, per: np.ndarray) -> np.ndarray:
    """Each table entry's frequency out of ``2**SCALE`` from the entries' count codes, ``per``
    entries a context one context after the other: one slot each, the rest shared by weight
    (rounded down), the rounding's rest to the context's first heaviest entry.  Integer
    arithmetic: the coder and any decoder agree."""
    w = _MANTISSA[codes % 2] << (codes // 2)
    ctx = np.repeat(np.arange(len(per)), per)
    first = np.cumsum(per) - per
    room = (_TOTAL - per)[ctx]
    freq = 1 + w * room // np.maximum(segment_sums(w, first, per)[ctx], 1)
    if len(w):
        # the first entry of each context's largest weight: entries sorted by (context, -w)
        order = np.lexsort((-w, ctx))
        has = per > 0
        freq[order[first[has]]] += _TOTAL - segment_sums(freq, first, per)[has]
    return freq


def _diff(a: np.ndarray) -> np.ndarray:
    """Differences of ``a`` (the first as is; wrapping)."""
    d = a.astype(np.int64, copy=True)
    d[1:] -= a[:-1]
    return d


def _within(a: np.ndarray, first: np.ndarray, per: np.ndarray) -> np.ndarray:
    """Running sums of ``a`` within each context's entries (``per`` of them from ``first``)."""
    total = np.cumsum(a)
    has = per > 0
    return total - np.repeat(total[first[has]] - a[first[has]], per[has])


def encode(values: np.ndarray, fine: np.ndarray, coarse: np.ndarray) -> np.ndarray:
    """The coded bytes (uint8) of the integers ``values`` in contexts of their ``fine`` and
    ``coarse`` keys (int64, one each per value)."""
    return encode_many([(values, fine, coarse)])[0]


def encode_many(arrays) -> list[np.ndarray]:
    """:func:`encode` of several ``(values, fine, coarse)`` at once: their rANS steps taken
    together (:func:`.rans.push_many`: a bounded file's volume codes and time steps)."""
    tables = [_tables(*a) for a in arrays]
    # as many steps as the longest takes: the others in fewer lanes (4 bytes of state each)
    steps = max([-(-len(t["values"]) // t["lanes"]) for t in tables] + [1])
    for t in tables:
        t["lanes"] = min(t["lanes"], max(1, -(-len(t["values"]) // steps)))
    pushed = R.push_many([(t["f"], t["c"], t["lanes"]) for t in tables], SCALE)
    return [_layout(t, x, words) for t, (x, words) in zip(tables, pushed)]


def _second_bases(far: np.ndarray, ctx: np.ndarray, nctx: int) -> np.ndarray:
    """Each context's second base (version 5): the base (:func:`_bases`) of (a sample of) its
    values ``far`` outside its first window (contexts ``ctx``), 0 where none is: a wait
    either nil or long, a volume code either side of a gap, took a power of two and its bits
    where it now takes a symbol (miniAMR 4r's bounded time steps: 7,453 zeros escaped beside
    medians of 2-4 k)."""
    step = max(1, len(far) // _SECOND_SAMPLE)
    return _bases(far[::step], ctx[::step], nctx)     # (a sample: every context's own, or 0)


#: Values a context's second base is taken from, about (every k-th of the far ones: their
#: medians from CloverLeaf 16r's 150 k far time steps took 10 ms, a 1/8 k-sample's 1).
_SECOND_SAMPLE = 1 << 13


def _symbols(values: np.ndarray, ctx: np.ndarray, base: np.ndarray, two: bool):
    """(symbol, bits k and rest of each escaped value, in order, the second bases or None) of
    ``values`` in contexts ``ctx``: the zigzagged difference from the context's base below
    ``2**DIRECT_BITS``; else (``two``: version 5) that from its second base
    (:func:`_second_bases`), after those; else the power of two of the difference from the
    base, its low bits the rest (:func:`.rans.symbols`)."""
    with np.errstate(over="ignore"):
        d = values - base[ctx]
        if not two:
            sym, _, k, rest = R.symbols(d, DIRECT_BITS)
            return sym, k, rest, None
        z = R.zigzag(d)
        far = np.flatnonzero(z >= _DIRECT)
        second = _second_bases(values[far], ctx[far], len(base))
        d2 = values[far] - second[ctx[far]]
        z2 = R.zigzag(d2)
    sym = z.view(np.int64)
    in2 = z2 < _DIRECT
    sym[far[in2]] = _DIRECT + z2[in2].view(np.int64)
    esc = far[~in2]
    s, _, k, rest = R.symbols(d[esc], DIRECT_BITS)    # (all escaped: >= _DIRECT)
    sym[esc] = s + _DIRECT
    return sym, k, rest, second


def _values(sym: np.ndarray, extra: np.ndarray, ctx: np.ndarray, base: np.ndarray,
            second: np.ndarray | None, version: int) -> np.ndarray:
    """The int64 values of symbols ``sym`` (:func:`_symbols`) and the escaped ones' rests
    ``extra``: the inverse the decoder applies after rANS, one window or two by version."""
    with np.errstate(over="ignore"):
        if second is None:
            return R.escaped(sym, extra, DIRECT_BITS, bits=version >= 3) + base[ctx]
        out = np.empty(len(sym), np.int64)
        two = (sym >= _DIRECT) & (sym < 2 * _DIRECT)
        out[two] = R.unzigzag(sym[two] - _DIRECT) + second[ctx[two]]
        rest = ~two
        s = sym[rest]
        s[s >= 2 * _DIRECT] -= _DIRECT
        out[rest] = R.escaped(s, extra, DIRECT_BITS, bits=True) + base[ctx[rest]]
    return out


def _tables(values: np.ndarray, fine: np.ndarray, coarse: np.ndarray) -> dict:
    """What :func:`encode` writes of ``values`` but the rANS states and words, and each
    value's frequency and start (``f``, ``c``) in its context's table, as floats."""
    values = np.asarray(values, np.int64)
    n = len(values)
    fine_keys, coarse_keys, ctx = _choose(fine, coarse)
    nctx = len(fine_keys) + len(coarse_keys) + 1
    base = _bases(values, ctx, nctx)
    sym, k, rest, second = _symbols(values, ctx, base, VERSION >= 5)
    nsym = NSYM_TWO if second is not None else NSYM
    cell = ctx * nsym + sym
    count = np.bincount(cell, minlength=nctx * nsym)
    entries = np.flatnonzero(count)
    codes = _count_codes(count[entries])
    per = np.bincount(entries // nsym, minlength=nctx)
    freqs = _frequencies(codes, per)
    starts = _within(freqs, np.cumsum(per) - per, per) - freqs     # (in its context's table)
    entry = np.zeros(nctx * nsym, np.intp)   # (each value's entry: the tables' grid, one
    entry[entries] = np.arange(len(entries))            # int a cell, no cumsum over it)
    entry = entry[cell]
    return {"values": values, "fine_keys": fine_keys, "coarse_keys": coarse_keys,
            "base": base, "second": second, "nsym": nsym, "per": per, "entries": entries,
            "codes": codes,
            "freqs": freqs, "k": k, "rest": rest,
            "lanes": R.lane_count(n) if n else 1,
            "f": freqs.astype(np.float64)[entry],   # (the tables as floats: no copy a value)
            "c": starts.astype(np.float64)[entry]}


def _layout(t: dict, x: np.ndarray, words: np.ndarray) -> np.ndarray:
    """The bytes of :func:`encode` from :func:`_tables`' ``t`` and the rANS states and
    words."""
    values, entries = t["values"], t["entries"]
    extra = R.rest_bytes(t["k"], t["rest"], bits=VERSION >= 3)
    e_ctx, e_sym = np.divmod(entries, t["nsym"])
    e_sym_d = e_sym.copy()
    e_sym_d[1:] -= np.where(e_ctx[1:] == e_ctx[:-1], e_sym[:-1], 0)
    fields = [VERSION, len(values), t["lanes"], len(words), len(extra), len(t["fine_keys"]),
              len(t["coarse_keys"]), len(entries), _crc(values)]
    if max(fields) >= COUNT_LIMIT:               # (numpy's overflow was a traceback)
        raise MinitraceError(f"the context coder's header counts below {COUNT_LIMIT}: an "
                             f"array of {len(values)} values takes {max(fields)}")
    head = np.array(fields, _HEAD)
    return np.frombuffer(b"".join([
        head.tobytes(), _diff(t["fine_keys"]).astype("<i8").tobytes(),
        _diff(t["coarse_keys"]).astype("<i8").tobytes(), _diff(t["base"]).astype("<i8").tobytes(),
        b"" if t["second"] is None else _diff(t["second"]).astype("<i8").tobytes(),
        t["per"].astype("<u2").tobytes(), *_entry_bytes(e_sym_d, t),
        x.astype("<u4").tobytes(), extra.tobytes(),
        words.astype("<u2").tobytes()]), np.uint8)


def _entry_bytes(e_sym_d: np.ndarray, t: dict) -> tuple[bytes, bytes]:
    """The tables' symbols (differences) and frequencies as :data:`VERSION` stores them:
    byte-shuffled symbols and count codes (4), else both uint16 (older codings, which tests
    write: the frequencies are the same)."""
    sym = e_sym_d.astype("<u2")
    if VERSION >= 4:
        return sym.view(np.uint8).reshape(-1, 2).T.tobytes(), t["codes"].astype(np.uint8) \
            .tobytes()
    return sym.tobytes(), t["freqs"].astype("<u2").tobytes()


def decode(blob: np.ndarray, fine: np.ndarray, coarse: np.ndarray) -> np.ndarray:
    """The int64 values of :func:`encode`'s bytes, given the same keys; :class:`.rans.CodeError`
    when the bytes are not such a coding of as many values."""
    b = np.ascontiguousarray(blob, np.uint8).tobytes()
    if len(b) < _NHEAD * 4:
        raise R.CodeError("coded array shorter than its header")
    head = [int(v) for v in np.frombuffer(b[:_NHEAD * 4], _HEAD)]
    version, n, lanes, nwords, nextra, nf, nc, ne, crc = head
    if version not in VERSIONS:
        raise R.CodeError(f"context coding version {version} unknown (written by a newer "
                          f"minitrace?)")
    if n != len(fine) or len(fine) != len(coarse):
        raise R.CodeError(f"coded array holds {n} values, the trace has {len(fine)}")
    nctx = nf + nc + 1
    two = version >= 5
    sizes = [8 * nf, 8 * nc, 8 * nctx, 8 * nctx if two else 0, 2 * nctx, 2 * ne,
             ne if version >= 4 else 2 * ne, 4 * lanes, nextra, 2 * nwords]
    if not 1 <= lanes <= max(n, 1) or len(b) != _NHEAD * 4 + sum(sizes):
        raise R.CodeError("coded array's lengths do not match its header")
    at = np.cumsum([_NHEAD * 4] + sizes)
    part = [b[at[i]:at[i + 1]] for i in range(len(sizes))]
    with np.errstate(over="ignore"):
        fine_keys, coarse_keys, base, second = (
            np.cumsum(np.frombuffer(p, "<i8"), dtype=np.int64) for p in part[:4])
    per = np.frombuffer(part[4], "<u2").astype(np.int64)
    if version >= 4:          # (symbols byte-shuffled, frequencies as count codes)
        e_sym = np.frombuffer(part[5], np.uint8).reshape(2, ne).T.copy().view("<u2")[:, 0] \
            .astype(np.int64)
        codes = np.frombuffer(part[6], np.uint8).astype(np.int64)
        if (codes > _MAX_CODE).any() or int(per.sum()) != ne:
            raise R.CodeError("coded array's frequency codes invalid")
        e_f = _frequencies(codes, per)
    else:
        e_sym = np.frombuffer(part[5], "<u2").astype(np.int64)
        e_f = np.frombuffer(part[6], "<u2").astype(np.int64)
    x = np.frombuffer(part[7], "<u4").astype(np.uint64)
    extra = np.frombuffer(part[8], np.uint8)
    words = np.frombuffer(part[9], "<u2")
    if (fine_keys[1:] <= fine_keys[:-1]).any() or \
            (coarse_keys[1:] <= coarse_keys[:-1]).any() or int(per.sum()) != ne:
        raise R.CodeError("coded array's context keys or tables invalid")
    e_ctx = np.repeat(np.arange(nctx), per)
    first = np.cumsum(per) - per
    # symbols: ascending within a context (differences; the first as is)
    e_sym = _within(e_sym, first, per)
    sums = np.bincount(e_ctx, weights=e_f, minlength=nctx)
    if (e_f < 1).any() or (e_sym >= (NSYM_TWO if two else NSYM)).any() or \
            ((np.diff(e_sym) <= 0) & (np.diff(e_ctx) == 0)).any() or \
            ((per > 0) & (sums != _TOTAL)).any() or (x < R.LOW).any():
        raise R.CodeError("coded array's frequency tables or states invalid")
    ctx = _contexts(np.asarray(fine, np.int64), np.asarray(coarse, np.int64), fine_keys,
                    coarse_keys)
    if n and (per[ctx] == 0).any():
        raise R.CodeError("coded array has no table for a context of its values")
    e_start = _within(e_f, first, per) - e_f
    ff, cf = e_f.astype(np.float64), e_start.astype(np.float64)
    used = per > 0
    if int(used.sum()) * _TOTAL <= _SLOT_TABLE:   # each slot's entry by a table: the used
        entry = np.repeat(np.arange(ne), e_f)     # contexts' slots one after the other
        slot_base = (np.cumsum(used) - 1)[ctx] * _TOTAL

        def look(slot, lo, hi):
            e = entry[slot_base[lo:hi] + slot]
            return e_sym[e], ff[e], cf[e]
    else:                                         # (many contexts: searched)
        where = e_ctx * _TOTAL + e_start          # (ascending)
        slot_base = ctx * _TOTAL

        def look(slot, lo, hi):
            e = np.searchsorted(where, slot_base[lo:hi] + slot, "right") - 1
            return e_sym[e], ff[e], cf[e]

    sym = R.pop(x, words, n, lanes, look, SCALE) if n else np.zeros(0, np.int64)
    values = _values(sym, extra, ctx, base, second if two else None, version)
    if _crc(values) != crc:
        raise R.CodeError("coded array decodes to other values than were coded (CRC-32)")
    return values


def _crc(values: np.ndarray) -> int:
    """CRC-32 of the values as little-endian int64: a damaged median, key or table can still
    decode to the start states, each value shifted (the array's own buffer: no copy)."""
    return zlib.crc32(np.ascontiguousarray(values, "<i8"))
