"""The adaptive context coder of bounded files (coding of session 31, format version 15): the
volume codes and the duration steps that :mod:`.context_rans` codes in static tables, coded
value after value by a compiled coder (native/adaptive.c) whose estimates learn as they go.

A static table costs its entries and serves only keys with enough values (128): public miniMD's
fine contexts (call site and previous call) hold 17 values each on average, so most of its
values fell to their call site's table.  Here every value is binarized (its bit length against
its context's previous one, then its bits below the leading one) and each binary decision coded
with a probability mixed from what the fine context, the coarse one and all values have seen so
far (docs/COMPRESS.md): nothing is stored but the coded bits.  The decoder is given the same keys
(from the grammar, :func:`.context_rans.call_keys`).

Layout (little-endian): uint32 ``version, n, flags, CRC-32 of the values (int64,
little-endian)``, in version 2 (from 2**32 values, :data:`WIDE`; version 1 below) a fifth, n's
high 32 bits (``n`` its low ones); the range coder's bytes.  ``flags`` bit 0: the values are
coded from 0 (the duration steps: differences from a prediction), else from their coarse
context's first value (the volume codes: log bins about 2**20).
"""
from __future__ import annotations

import zlib

import numpy as np

from . import rans as R
from .native import load

VERSION = 1
#: The header's version from :data:`WIDE` values: their count in two words (session 32; one
#: uint32 ended in a traceback).
WIDE_VERSION = 2
WIDE = 1 << 32
_HEAD = np.dtype("<u4")
_NHEAD = 4
#: ``flags``: values coded from 0, not from their coarse context's first value.
FROM_ZERO = 1


def _ints(a: np.ndarray) -> np.ndarray:
    """``a`` as contiguous int64 (what the C functions take)."""
    return np.ascontiguousarray(a, np.int64)


def _crc(values: np.ndarray) -> int:
    """CRC-32 of the values as little-endian int64 (damaged keys can decode to other
    values)."""
    return zlib.crc32(np.ascontiguousarray(values, "<i8"))


def encode(values: np.ndarray, fine: np.ndarray, coarse: np.ndarray, flags: int = 0) \
        -> np.ndarray:
    """The coded bytes (uint8) of the integers ``values`` in contexts of their ``fine`` and
    ``coarse`` keys (int64, one each per value)."""
    ffi, lib = load()
    values, fine, coarse = _ints(values), _ints(fine), _ints(coarse)
    n = len(values)
    if len(fine) != n or len(coarse) != n:
        raise ValueError("one fine and one coarse key per value")
    # (a value takes 1-20 bits where its contexts fit; at most 23 decisions of 12 bits and 49
    # bits at even odds: 41 bytes)
    for cap in (64 + 4 * n, 64 + 48 * n):
        out = np.empty(cap, np.uint8)
        got = lib.mt_adaptive_encode(ffi.from_buffer("int64_t[]", values),
                                     ffi.from_buffer("int64_t[]", fine),
                                     ffi.from_buffer("int64_t[]", coarse), n, flags,
                                     ffi.from_buffer("uint8_t[]", out), cap)
        if got != -1:                            # (-1: more bytes than cap)
            break
    if got < 0:
        raise MemoryError("adaptive context coder: out of memory")
    words = [VERSION, n, flags, _crc(values)] if n < WIDE else \
        [WIDE_VERSION, n & 0xFFFFFFFF, flags, _crc(values), n >> 32]
    return np.concatenate([np.array(words, _HEAD).view(np.uint8), out[:got]])


def decode(blob: np.ndarray, fine: np.ndarray, coarse: np.ndarray) -> np.ndarray:
    """The int64 values of :func:`encode`'s bytes, given the same keys;
    :class:`.rans.CodeError` when the bytes are not such a coding of as many values."""
    b = np.ascontiguousarray(blob, np.uint8)
    if len(b) < _NHEAD * 4:
        raise R.CodeError("coded array shorter than its header")
    version, n, flags, crc = (int(v) for v in b[:_NHEAD * 4].view(_HEAD))
    if version not in (VERSION, WIDE_VERSION):
        raise R.CodeError(f"adaptive coding version {version} unknown (written by a newer "
                          f"minitrace?)")
    head = _NHEAD + (version == WIDE_VERSION)
    if len(b) < head * 4:
        raise R.CodeError("coded array shorter than its header")
    if version == WIDE_VERSION:
        n |= int(b[16:20].view(_HEAD)[0]) << 32
        if n < WIDE:                # (the writer's version 1: one coding of each array)
            raise R.CodeError(f"coded array's header is version {WIDE_VERSION} for {n} "
                              f"values, fewer than 2**32")
    if n != len(fine) or len(fine) != len(coarse):
        raise R.CodeError(f"coded array holds {n} values, the trace has {len(fine)}")
    if flags & ~FROM_ZERO:
        raise R.CodeError(f"coded array's flags {flags} unknown")
    ffi, lib = load()
    fine, coarse = _ints(fine), _ints(coarse)
    values = np.empty(n, np.int64)
    body = b[head * 4:]
    got = lib.mt_adaptive_decode(ffi.from_buffer("uint8_t[]", body), len(body),
                                 ffi.from_buffer("int64_t[]", fine),
                                 ffi.from_buffer("int64_t[]", coarse), n, flags,
                                 ffi.from_buffer("int64_t[]", values))
    if got == -2:
        raise MemoryError("adaptive context coder: out of memory")
    if got != 0:
        raise R.CodeError("coded array does not decode to its end")
    if _crc(values) != crc:
        raise R.CodeError("coded array decodes to other values than were coded (CRC-32)")
    return values
