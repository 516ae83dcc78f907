"""Review of session 28's LZMA-coded model pack (51963de, format version 14): the reader
inflates whatever length the pack's header names (up to 2 GiB: ``store.unlzma_pack``, "at
most the length it names is inflated"), and raw LZMA codes a run of zeros ~7,000 times
smaller, where the inline pack keeps deflate's ~1,032 ("a size the file holds").  A 9.5 KB
/trace/packed_lzma naming 64 MiB of zeros (with their CRC) is inflated whole before the pack
is found corrupt: ~200 MB traced for a file of 13.5 KB, whose whole read takes 3 MB (a
41 KB file naming 256 MiB: 854 MB peak RSS, 2.2 s), where a length the file's actions could
hold, or the ratio of the stream's bytes, would refuse it first."""
from __future__ import annotations

import lzma
import tracemalloc
import zlib

import numpy as np
import pytest

from minitrace.compress import pack as P
from minitrace.compress import store as ST
from tests.support.damage import assert_corrupt, replace
from tests.support.synthetic import loop_trace

NAMED = 64 << 20


def _zeros_blob(n: int) -> np.ndarray:
    """A packed_lzma of ``n`` zero bytes, header and CRC right, coded cheaply (a 4 KiB
    dictionary: any larger one decodes it)."""
    filters = [{"id": lzma.FILTER_LZMA1, "dict_size": 4096, "lc": 0, "lp": 0, "pb": 0,
                "mode": lzma.MODE_FAST, "mf": lzma.MF_HC3, "nice_len": 273}]
    body = lzma.compress(bytes(n), format=lzma.FORMAT_RAW, filters=filters)
    head = np.array([n, zlib.crc32(bytes(n))], "<u4").tobytes()
    return np.frombuffer(head + body, np.uint8)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="review s28: an LZMA pack naming "
                   "64 MiB in 9.5 KB is inflated whole before it is found corrupt")
def test_a_small_lzma_pack_naming_a_huge_length_is_refused_before_inflating(tmp_path,
                                                                            monkeypatch):
    monkeypatch.setattr(P, "ATTR_MAX_BYTES", 256)             # (the pack a dataset)
    path = str(tmp_path / "bomb.h5")
    ST.write(path, ST.compress(loop_trace(2, 20000, timed=True, seed=1), "model"))
    monkeypatch.undo()
    blob = _zeros_blob(NAMED)
    assert len(blob) < 16 << 10
    replace(path, f"trace/{ST.LZMA_DATASET}", blob)
    tracemalloc.start()
    try:
        assert_corrupt(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < NAMED // 4, peak
