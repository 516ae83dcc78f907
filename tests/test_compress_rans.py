"""The order-0 entropy coder (``minitrace/compress/rans.py``): any int64 array round-trips,
damaged bytes are refused rather than decoded wrong.  Bounded files of sessions 11-12 hold
their duration steps so (``.rans``); since session 13 they are coded in contexts: their files
are tested in test_compress_context.py."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.compress import rans as R

_RNG = np.random.default_rng(7)
_I64 = np.iinfo(np.int64)


@pytest.mark.parametrize("values", [
    np.zeros(0, np.int64), np.array([0]), np.array([-1]), np.array([_I64.min, _I64.max, 0]),
    _RNG.integers(-3, 4, 5000),                                  # small: direct symbols
    _RNG.geometric(0.2, 70_000) * _RNG.choice([-1, 1], 70_000),   # a tail of escapes
    np.r_[np.zeros(3000, np.int64), _RNG.integers(_I64.min, _I64.max, 500, endpoint=True)],
    2 ** np.arange(63) - 1, -(2 ** np.arange(63)), 2 ** np.arange(63),    # powers' edges
])
def test_round_trip(values):
    coded = R.encode(values)
    assert coded.dtype == np.uint8
    assert np.array_equal(R.decode(coded), np.asarray(values, np.int64))


def test_small_values_take_less_than_their_bytes():
    values = _RNG.choice([0, 0, 0, 0, 1, -1, 2], 100_000)      # ~1.4 bits each
    assert len(R.encode(values)) < len(values) / 4


@pytest.mark.parametrize("damage", ["truncate", "extend", "flip_word", "flip_state",
                                    "header", "frequencies"])
def test_damaged_bytes_are_refused(damage):
    values = _RNG.geometric(0.3, 20_000) - 1
    b = R.encode(values).copy()
    if damage == "truncate":
        b = b[:-3]
    elif damage == "extend":
        b = np.append(b, np.uint8(1))
    elif damage == "flip_word":
        b[-10] ^= 0x5A
    elif damage == "flip_state":
        b[16 + 2 * R.NSYM] ^= 0x01
    elif damage == "header":
        b[4] ^= 0x03                                      # lanes
    elif damage == "frequencies":
        b[16] ^= 0x01
    with pytest.raises(R.CodeError):
        R.decode(b)


def _push_one_by_one(freq, start, lanes, scale):
    """rANS written out in integers, one value at a time: each lane's values from its last
    (32-bit state from 2**16; a 16-bit word out where the state would pass 2**32), the words
    of each step in lane order, the steps from the first."""
    n = len(freq)
    x = [1 << 16] * lanes
    steps = []
    for j in range(-(-n // lanes) - 1, -1, -1):
        words = []
        for lane in range(min(lanes, n - j * lanes)):
            i = j * lanes + lane
            f, c = int(freq[i]), int(start[i])
            if x[lane] >= f << (32 - scale):
                words.append(x[lane] & 0xFFFF)
                x[lane] >>= 16
            x[lane] = ((x[lane] // f) << scale) + x[lane] % f + c
        steps.append(words)
    return x, [w for words in steps[::-1] for w in words]


@pytest.mark.parametrize("seed", range(40))
def test_push_is_rans_one_value_at_a_time(seed):
    """``push`` (every lane of a step at once, in floats) gives the states and words of the
    integer coder one value at a time: tables of one symbol, of rare symbols (a word out at
    most steps), partial last steps, one lane."""
    rng = np.random.default_rng(seed)
    scale = 12 if seed % 4 else 8
    n = int(rng.integers(1, 3000)) if seed % 5 else int(rng.integers(1, 40))
    freq = rng.integers(1, 1 << scale, n) if seed % 3 else np.ones(n, np.int64)
    start = rng.integers(0, 1 << scale, n) % ((1 << scale) - freq + 1)
    lanes = R.lane_count(n) if seed % 7 else 1
    x, words = R.push(freq, start, lanes, scale)
    want_x, want_words = _push_one_by_one(freq, start, lanes, scale)
    assert x.tolist() == want_x
    assert words.dtype == np.uint16 and words.tolist() == want_words


@pytest.mark.parametrize("cells", [1, 1000, R.PUSH_CELLS])
def test_push_many_is_each_coding_pushed_alone(monkeypatch, cells):
    """``push_many`` (the steps of several codings taken together, the shorter ones' lanes
    padded with values that leave a state as it is, a table of ``cells`` at a time) gives
    each coding's states and words of ``push`` alone (one value at a time: the test above):
    codings of other lengths and lanes, an empty one, rare symbols, a step a table."""
    streams = _streams()
    monkeypatch.setattr(R, "PUSH_CELLS", cells)
    for (freq, start, lanes), (x, words) in zip(streams, R.push_many(streams)):
        want_x, want_words = _push_one_by_one(freq.astype(np.int64), start.astype(np.int64),
                                              lanes, R.SCALE)
        assert x.tolist() == want_x
        assert words.dtype == np.uint16 and words.tolist() == want_words
    assert R.push_many([]) == []


def _streams():
    rng = np.random.default_rng(3)
    streams = []
    for n in (3000, 1500, 0, 1, 700, 20_000):
        freq = rng.integers(1, 4096, n) if n != 700 else np.ones(n, np.int64)
        start = rng.integers(0, 4096, n) % (4097 - freq)
        streams.append((freq.astype(np.float64), start.astype(np.float64),
                        R.lane_count(n) if n else 1))
    return streams
