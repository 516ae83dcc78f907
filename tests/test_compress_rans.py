"""The entropy coder of bounded time steps (``minitrace/compress/rans.py``): any int64 array
round-trips, damaged bytes are refused rather than decoded wrong, and a bounded file large
enough to use it reads back within its bounds (a damaged coded array: one-line error)."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import storage
from minitrace.compress import pack as P
from minitrace.compress import rans as R
from minitrace.compress.files import write_compressed
from minitrace.compress.store import RANS_MIN, RANS_SUFFIX
from minitrace.errors import MinitraceError
from tests.test_compress_bounded import _check_bounds, _ranges_match_whole, _timed_stencil

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


def _big_bounded(tmp_path):
    data = _timed_stencil(iterations=1200)
    assert len(data.actions) >= RANS_MIN                 # (enough actions for the coder)
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(str(plain), data)
    write_compressed(str(packed), data, "bounded:1%", times="bounded:1us")
    return plain, packed


def test_bounded_file_with_coded_steps_within_bounds(tmp_path):
    plain, packed = _big_bounded(tmp_path)
    with h5py.File(packed, "r") as f:
        names = P.unpack(f["trace"][P.DATASET][()]) if P.DATASET in f["trace"] else {}
        names = set(names) | {f"exact/{k}" for k in f["trace"].get("exact", {})}
    assert f"exact/t_duration{RANS_SUFFIX}" in names and "exact/t_duration" not in names
    _check_bounds(plain, packed, 0.01, 1e-6)
    _ranges_match_whole(packed)


def test_damaged_coded_steps_are_a_corrupt_trace(tmp_path):
    _, packed = _big_bounded(tmp_path)
    with h5py.File(packed, "a") as f:
        g = f["trace"]
        arrays = P.unpack(g[P.DATASET][()])
        name = f"exact/t_duration{RANS_SUFFIX}"
        if name not in arrays:                    # (large: a dataset of its own)
            ds = g[name]
            v = ds[()]
            v[-7] ^= 0x33
            ds[...] = v
        else:
            arrays[name] = arrays[name].copy()
            arrays[name][-7] ^= 0x33
            del g[P.DATASET]
            g.create_dataset(P.DATASET, data=P.pack(arrays))
    with pytest.raises(MinitraceError, match="corrupt trace: exact/t_duration.rans"):
        with minitrace.open(str(packed)) as c:
            c.data()
