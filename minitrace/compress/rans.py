"""An order-0 entropy coder for the small integers of bounded time steps (interleaved rANS).

Deflate codes a byte in no less than a bit and finds few repeats in noise: the steps of
bounded times (``volumes._predicted_steps``, 2-3 bits of entropy each, mostly 0) deflate
40-50% above their entropy.  Here each value is a symbol of a fitted frequency table (the
zigzag values 0..31, then one per power of two with its low bits stored in whole bytes
beside), coded by rANS (Duda; 32-bit state, 16-bit words, 12-bit frequencies) in ``lanes``
interleaved states so that numpy codes a step of every lane at once: value ``i`` is lane
``i % lanes``'s ``i // lanes``-th symbol.  Decoding checks that every word is used and every
state returns to its start, so damaged bytes fail instead of decoding wrong.

Layout (little-endian): uint32 ``n, lanes, words, rest bytes``; uint16 frequencies[NSYM]
(summing to 4096); uint32 final states[lanes]; the rests (uint8, each value's ceil(k / 8)
bytes); uint16 words[words] in the order the decoder reads them.
"""
from __future__ import annotations

import numpy as np

SCALE = 12
_TOTAL = 1 << SCALE
LOW = 1 << 16                  # states live in [LOW, 2**32)
#: zigzag values below this are symbols of their own; larger ones a symbol per power of two
_DIRECT = 32
_DIRECT_BITS = 5
NSYM = _DIRECT + 64 - _DIRECT_BITS
#: Values per lane, about: fewer lanes cost less state (4 bytes each), more cost fewer numpy
#: steps (3-7 us each); at least _MIN_LANES lanes (16 k values: 128 steps, ~1 ms; 64 made
#: bounded files of 9-30 k actions 1-3% smaller and 5-8% slower, session 20).
_PER_LANE = 512
_MIN_LANES = 128
_MAX_LANES = 4096
_HEAD = np.dtype("<u4")
_HEAD_LEN = 4 * _HEAD.itemsize


class CodeError(ValueError):
    """Coded bytes that do not decode to what they say (the reader's ``corrupt trace``)."""


def zigzag(v: np.ndarray) -> np.ndarray:
    """Integers ``v`` (as int64) coded 0, 1, 2, 3... for 0, -1, 1, -2... (uint64, wrapping at
    int64's ends): small for either sign."""
    v = np.asarray(v).astype(np.int64, copy=False)
    return ((v << 1) ^ (v >> 63)).view(np.uint64)


def unzigzag(u: np.ndarray) -> np.ndarray:
    """The int64 values of :func:`zigzag`'s codes ``u`` (of any integer type)."""
    u = np.asarray(u).astype(np.uint64, copy=False)
    return ((u >> np.uint64(1)) ^ (np.uint64(0) - (u & np.uint64(1)))).view(np.int64)


def symbols(values: np.ndarray, direct_bits: int = _DIRECT_BITS):
    """(symbol of each value, the escaped ones' positions, their bits k and rests): zigzag u
    (0, -1, 1, -2...) below ``2**direct_bits`` is its own symbol; a larger one the symbol of
    its power of two k, its k low bits the rest."""
    direct = 1 << direct_bits
    u = zigzag(values)
    sym = u.view(np.int64).copy()
    big = np.flatnonzero(u >= direct)
    ub = u[big]
    # (float log2 rounds near powers of two: set k so that 2**k <= u < 2**(k+1))
    k = np.minimum(np.floor(np.log2(ub.astype(np.float64))), 63).astype(np.int64)
    k -= ub < (np.uint64(1) << k.astype(np.uint64))
    k += (ub >> k.astype(np.uint64)) >= 2
    sym[big] = direct + k - direct_bits
    return sym, big, k, ub - (np.uint64(1) << k.astype(np.uint64))


def _frequencies(sym: np.ndarray) -> np.ndarray:
    """Frequencies summing to 2**SCALE, each >= 1 for a symbol that occurs."""
    cnt = np.bincount(sym, minlength=NSYM).astype(np.float64)
    freq = np.maximum(np.floor(cnt * (_TOTAL / len(sym))), cnt > 0).astype(np.int64)
    top = int(np.argmax(freq))
    freq[top] += _TOTAL - int(freq.sum())   # (the rounding's rest: at most NSYM < top's)
    return freq


def rest_bytes(k: np.ndarray, rest: np.ndarray, bits: bool = False) -> np.ndarray:
    """The rests of the escaped values, each in its ceil(k / 8) bytes, little-endian; or
    (``bits``: context_rans version 3) each in its k bits, one after the other from bit 0 of
    byte 0 (a wait's 10-16 bit rests took 2 bytes: 0.04-0.14 B/action of bounded files)."""
    if bits:
        return _rest_bits(np.asarray(k, np.int64), rest)
    width = (k + 7) // 8
    out = np.zeros(int(width.sum()), np.uint8)
    at = np.cumsum(width) - width
    for b in range(8):
        m = width > b
        out[at[m] + b] = ((rest[m] >> np.uint64(8 * b)) & np.uint64(0xFF)).astype(np.uint8)
    return out


def _bit_places(k: np.ndarray):
    """(word, shift, spills into the next word) of each k-bit rest packed from bit 0."""
    off = np.cumsum(k) - k
    return off // 64, (off % 64).astype(np.uint64), off % 64 + k > 64


def _rest_bits(k: np.ndarray, rest: np.ndarray) -> np.ndarray:
    total = int(k.sum())
    word, shift, spill = _bit_places(k)
    start = np.flatnonzero(np.concatenate([[True], word[1:] != word[:-1]])) if len(k) else \
        np.zeros(0, np.int64)
    out = np.zeros(total // 64 + 2, "<u8")
    with np.errstate(over="ignore"):
        out[word[start]] = np.bitwise_or.reduceat(rest << shift, start) if len(k) else 0
        out[word[spill] + 1] |= rest[spill] >> (np.uint64(64) - shift[spill])
    return out.view(np.uint8)[:(total + 7) // 8].copy()


def _unpack_bits(extra: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The k-bit rests of :func:`_rest_bits`' bytes; CodeError for other lengths or bits
    set past the last rest."""
    total = int(k.sum())
    if len(extra) != (total + 7) // 8 or (total % 8 and len(extra) and
                                          int(extra[-1]) >> (total % 8)):
        raise CodeError("coded array's escaped values do not match its symbols")
    padded = np.zeros(total // 64 + 2, "<u8")
    padded.view(np.uint8)[:len(extra)] = extra
    word, shift, spill = _bit_places(k)
    rest = padded[word] >> shift
    rest[spill] |= padded[word[spill] + 1] << (np.uint64(64) - shift[spill])
    return rest & ((np.uint64(1) << k.astype(np.uint64)) - np.uint64(1))


def lane_count(n: int) -> int:
    """Interleaved states for ``n`` values (:data:`_PER_LANE` each, within the limits)."""
    return int(min(_MAX_LANES, max(n // _PER_LANE, min(n, _MIN_LANES))))


def push(freq: np.ndarray, start: np.ndarray, lanes: int, scale: int = SCALE):
    """(final states, uint16 words in the order a decoder reads them) of rANS-coding values
    whose symbols have frequencies ``freq`` and cumulative starts ``start`` (one per value,
    out of ``2**scale``), value ``i`` in lane ``i % lanes``."""
    return push_many([(freq, start, lanes)], scale)[0]


#: Cells (steps x lanes) of :func:`push_many`'s tables at a time: their rows stay in cache
#: and a large trace's tables take ~3 MB, not ~40 bytes a value.
PUSH_CELLS = 1 << 16


def push_many(streams, scale: int = SCALE) -> list:
    """:func:`push` of several codings ``(freq, start, lanes)`` at once: a numpy step codes a
    value of every lane of every coding (a step costs ~10 numpy calls whatever its lanes: a
    bounded file's two codings took twice the steps one by one).  A coding's lanes are padded
    to whole steps with values that leave a state as it is (frequency ``2**scale``, start 0:
    no word out, ``x // f << scale`` + ``x % f`` = x)."""
    total = float(1 << scale)
    steps = [-(-len(f) // lanes) for f, _, lanes in streams]
    nsteps, width = max(steps, default=0), sum(lanes for _, _, lanes in streams)
    col = np.cumsum([0] + [lanes for _, _, lanes in streams]).tolist()
    rows = max(1, min(nsteps, PUSH_CELLS // max(width, 1)))
    # (states as float64: every value below 2**48 is exact, and numpy divides floats 4-10x
    # faster than integers; the steps' frequencies, starts and limits in rows of 2-D tables,
    # PUSH_CELLS at a time from the last step down, no more rows than steps: five tables of
    # 512 KB for a bounded file of 14-20 k actions' 113-158 steps were 2.6 MB that the
    # allocator mapped afresh on some calls, 120-440 page faults of ~2 us, session 27)
    f, c, limit, grow, shifted = (np.empty((rows, width)) for _ in range(5))
    out = np.empty((rows, width), bool)          # a word out of the lane at this step, and
    x = np.full(width, float(LOW))               # x / 2**16 then (exact: the word in its
    high, q = np.empty(width), np.empty(width)   # fraction, x // 2**16 its floor)
    words: list[list] = [[] for _ in streams]
    for top in range(nsteps, 0, -rows):
        first = max(0, top - rows)
        r = top - first
        for (freq, start, lanes), lo in zip(streams, col):
            part = slice(first * lanes, min(len(freq), top * lanes))
            whole, rest = divmod(max(part.stop - part.start, 0), lanes)
            for table, v, pad in ((f, freq, total), (c, start, 0.0)):
                block = table[:r, lo:lo + lanes]
                seg = v[part]
                block[:whole] = seg[:whole * lanes].reshape(whole, lanes)
                block[whole:] = pad
                if rest:
                    block[whole, :rest] = seg[whole * lanes:]
        np.multiply(f[:r], float(1 << (32 - scale)), out=limit[:r])   # emit at or above
        np.subtract(total, f[:r], out=grow[:r])
        back = slice(r - 1, None, -1)            # (rows as an iterator's views: ~0.1 us each)
        for lim, o, sh, fj, gj, cj in zip(limit[back], out[back], shifted[back], f[back],
                                          grow[back], c[back]):
            np.greater_equal(x, lim, o)
            np.multiply(x, 1.0 / 65536.0, sh)
            np.floor(sh, high)
            np.putmask(x, o, high)
            np.divide(x, fj, q)                  # x += (x // f) * (2**scale - f) + c
            np.floor(q, q)
            np.multiply(q, gj, q)
            np.add(x, q, x)
            np.add(x, cj, x)
        for mine, (_, _, lanes), lo in zip(words, streams, col):
            s = shifted[:r, lo:lo + lanes][out[:r, lo:lo + lanes]]
            mine.append(((s - np.floor(s)) * 65536.0).astype(np.uint16))
    return [(x[lo:lo + lanes].copy(),
             np.concatenate(mine[::-1]) if mine else np.zeros(0, np.uint16))
            for mine, (_, _, lanes), lo in zip(words, streams, col)]


def pop(x: np.ndarray, words: np.ndarray, n: int, lanes: int, look, scale: int = SCALE):
    """The ``n`` symbols :func:`push` coded into states ``x`` and ``words``; ``look(slots,
    lo, hi)`` gives (symbol, its frequency, its start) of values ``lo:hi`` from their slots.
    :class:`CodeError` unless every word is used and every state returns to its start."""
    total = float(1 << scale)
    x = x.astype(np.float64)
    wordsf = words.astype(np.float64)
    nwords = len(words)
    sym = np.empty(n, np.int64)
    pos = 0
    for j in range(-(-n // lanes)):
        lo, hi = j * lanes, min(n, (j + 1) * lanes)
        xj = x[:hi - lo]
        high = np.floor(xj / total)
        slot = xj - high * total
        s, f, c = look(slot.astype(np.int64), lo, hi)
        sym[lo:hi] = s
        xj = f * high + slot - c
        need = np.flatnonzero(xj < LOW)
        if pos + len(need) > nwords:
            raise CodeError("coded array ends early")
        xj[need] = xj[need] * 65536.0 + wordsf[pos:pos + len(need)]
        pos += len(need)
        x[:hi - lo] = xj
    if pos != nwords or (x != LOW).any():
        raise CodeError("coded array does not decode to its start")
    return sym


def escaped(sym: np.ndarray, extra: np.ndarray, direct_bits: int = _DIRECT_BITS,
            bits: bool = False) -> np.ndarray:
    """The int64 values of symbols ``sym`` (:func:`symbols`) and the escaped ones' rests
    ``extra`` (:func:`rest_bytes`, with the same ``bits``)."""
    direct = 1 << direct_bits
    u = sym.astype(np.uint64)
    big = np.flatnonzero(sym >= direct)
    k = sym[big] - direct + direct_bits
    if bits:
        rest = _unpack_bits(extra, k)
    else:
        width = (k + 7) // 8
        if int(width.sum()) != len(extra):
            raise CodeError("coded array's escaped values do not match its symbols")
        rest = np.zeros(len(big), np.uint64)
        off = np.cumsum(width) - width
        for byte in range(8):
            m = width > byte
            rest[m] |= extra[off[m] + byte].astype(np.uint64) << np.uint64(8 * byte)
    if (rest >> k.astype(np.uint64) != 0).any():
        raise CodeError("coded array's escaped value out of its range")
    u[big] = (np.uint64(1) << k.astype(np.uint64)) + rest
    return unzigzag(u)


def encode(values: np.ndarray) -> np.ndarray:
    """The coded bytes (uint8) of the integers ``values``."""
    values = np.asarray(values, np.int64)
    n = len(values)
    if n == 0:
        return np.frombuffer(np.zeros(4, _HEAD).tobytes(), np.uint8)
    sym, _, k, rest = symbols(values)
    freq = _frequencies(sym)
    extra = rest_bytes(k, rest)
    lanes = lane_count(n)
    x, words = push(freq[sym], (np.cumsum(freq) - freq)[sym], lanes)
    head = np.array([n, lanes, len(words), len(extra)], _HEAD)
    return np.frombuffer(b"".join([
        head.tobytes(), freq.astype("<u2").tobytes(), x.astype("<u4").tobytes(),
        extra.tobytes(), words.astype("<u2").tobytes()]), np.uint8)


def decode(blob: np.ndarray) -> np.ndarray:
    """The int64 values of :func:`encode`'s bytes; :class:`CodeError` when they are not
    such bytes."""
    b = np.ascontiguousarray(blob, np.uint8).tobytes()
    if len(b) < _HEAD_LEN:
        raise CodeError("coded array shorter than its header")
    n, lanes, nwords, nextra = (int(v) for v in np.frombuffer(b[:_HEAD_LEN], _HEAD))
    if n == 0:
        if len(b) != _HEAD_LEN:
            raise CodeError("coded array of no values with content")
        return np.zeros(0, np.int64)
    sizes = [2 * NSYM, 4 * lanes, nextra, 2 * nwords]
    if not 1 <= lanes <= n or len(b) != _HEAD_LEN + sum(sizes):
        raise CodeError("coded array's lengths do not match its header")
    at = np.cumsum([_HEAD_LEN] + sizes)
    freq = np.frombuffer(b[at[0]:at[1]], "<u2").astype(np.int64)
    x = np.frombuffer(b[at[1]:at[2]], "<u4").astype(np.uint64)
    extra = np.frombuffer(b[at[2]:at[3]], np.uint8)
    words = np.frombuffer(b[at[3]:at[4]], "<u2")
    if int(freq.sum()) != _TOTAL or (x < LOW).any():
        raise CodeError("coded array's frequency table or states invalid")
    slot_sym = np.repeat(np.arange(NSYM), freq)
    ff, cf = freq.astype(np.float64), (np.cumsum(freq) - freq).astype(np.float64)

    def look(slot, lo, hi):
        s = slot_sym[slot]
        return s, ff[s], cf[s]

    return escaped(pop(x, words, n, lanes, look), extra)
