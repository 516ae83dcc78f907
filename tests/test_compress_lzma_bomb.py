"""A damaged LZMA-coded model pack (format version 14, session 28) must not make its reader
inflate more than its file could hold: raw LZMA codes a run of zeros ~7,000 times smaller,
where deflate (the inline pack, and the pack dataset's HDF5 filter) keeps ~1,032.  Found by
the session's review: a 9.5 KB /trace/packed_lzma naming 64 MiB of zeros (with their CRC)
was inflated whole, ~200 MB traced for a file of 13.5 KB, before the pack was found corrupt
(a 41 KB file naming 256 MiB: 854 MB peak RSS).  ``store.LZMA_MAX_RATIO`` refuses a length
beyond deflate's own limit first; the writer keeps deflate where LZMA would code denser."""
from __future__ import annotations

import lzma
import tracemalloc
import zlib

import h5py
import numpy as np

import minitrace
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


def test_the_writer_keeps_deflate_where_lzma_would_code_beyond_the_limit(tmp_path,
                                                                         monkeypatch):
    """A pack LZMA codes more densely than the reader takes stays a deflated dataset, which
    reads back; at the limit's value the same trace's pack is LZMA-coded."""
    trace = loop_trace(2, 20000, timed=True, seed=1)
    monkeypatch.setattr(P, "ATTR_MAX_BYTES", 256)             # (the pack a dataset)
    lz, kept = str(tmp_path / "lz.h5"), str(tmp_path / "kept.h5")
    ST.write(lz, ST.compress(trace, "model"))
    with monkeypatch.context() as m:
        m.setattr(ST, "LZMA_MAX_RATIO", 1)
        ST.write(kept, ST.compress(trace, "model"))
    with h5py.File(lz, "r") as f, h5py.File(kept, "r") as g:
        assert ST.LZMA_DATASET in f["trace"] and P.DATASET not in f["trace"]
        assert P.DATASET in g["trace"] and ST.LZMA_DATASET not in g["trace"]
    with minitrace.open(lz) as a, minitrace.open(kept) as b:
        assert a.data().actions.tobytes() == b.data().actions.tobytes()
