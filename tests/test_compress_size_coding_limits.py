"""Review of format version 13 (message sizes coded) and pack version 5 (binary index): sizes
at the ends of int64 come back exactly, and damage to what the new arrays lean on (a kind, a
spelled name) is a one-line ``corrupt trace`` error."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import MinitraceError
from minitrace.compress import pack as P
from minitrace.compress import signatures as SG
from minitrace.compress.files import write_compressed
from tests.test_compress_size_tokens import halo_trace


def test_sizes_whose_difference_overflows_come_back_exactly():
    """A received size less a sent one beyond int64 (sizes of 3 * 2**61 and their negatives,
    unit 3 * 2**61): the coded difference must be exact modulo 2**64, as the reader adds the
    sent size back."""
    big = 3 << 61
    t = np.zeros(3, SG.SIGNATURE_DTYPE)
    t["kind"] = SG.K.CODE["sendrecv"]
    t["bytes_sent"] = [big, -big, big]
    t["bytes_recv"] = [-big, -big, big]
    for coded in SG.code_sizes(t):
        sent, recv = SG.decode_sizes(t["kind"], coded["size_coding"], coded["size_swaps"],
                                     coded["bytes_sent"], coded["bytes_recv"])
        assert np.array_equal(sent, t["bytes_sent"]) and np.array_equal(recv, t["bytes_recv"])


def test_a_kind_out_of_range_beside_coded_sizes_is_a_corrupt_trace(tmp_path):
    out = str(tmp_path / "t.h5")
    write_compressed(out, halo_trace(P=3, blocks=8, every=5), "model", pack=False)
    with h5py.File(out, "r+") as f:
        g = f["trace/signatures"]
        assert "size_coding" in g
        kind = g["kind"][()].astype(np.int64)
        kind[0] = 300
        del g["kind"]
        g["kind"] = kind
    with pytest.raises(MinitraceError, match="corrupt trace") as e:
        with minitrace.open(out) as t:
            t.data()
    assert out in str(e.value) and "\n" not in str(e.value)


def test_a_spelled_name_of_a_newline_is_refused_on_one_line():
    """A binary index's spelled name ``a\\nb`` (which :func:`pack.pack` never writes) and a bad
    type byte after it."""
    raw = np.frombuffer(np.array([6], "<u4").tobytes() + b"\0\x03a\nb\xff", np.uint8)
    with pytest.raises(P.PackError) as e:
        P.unpack(raw, P.BINARY_INDEX_VERSION)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("dtype", [np.float16, np.longdouble, np.int8, np.uint64, np.float32])
def test_what_packs_can_be_packed_and_comes_back(dtype):
    """:func:`pack.packs` says which arrays go into the pack; the binary index must then hold
    their type (pack.DTYPES), or the writer fails on a KeyError."""
    a = np.arange(3).astype(dtype)
    if P.packs(a):
        back = P.unpack(P.pack({"x/y": a}))["x/y"]
        assert back.dtype == a.dtype and np.array_equal(back, a)
