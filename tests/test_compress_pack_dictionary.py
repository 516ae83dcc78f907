"""Inline packs of version 4 (session 24): ``/trace@packed_bytes`` deflated against the pack's
preset dictionary (the index's and ``/trace``'s attributes' vocabulary, ~450 bytes of a small
file's index spelled out in each); files of version 3 read alike."""
from __future__ import annotations

import zlib

import h5py
import numpy as np
import pytest

import minitrace
from minitrace.compress import pack as P
from minitrace.compress.files import sizes, write_compressed
from tests.support import synthetic


def test_the_dictionary_is_the_one_files_were_written_with():
    assert zlib.adler32(P.DICTIONARY) == P.DICTIONARY_ADLER32


@pytest.mark.parametrize("volumes", ["exact", "model", "bounded:1%"])
def test_an_inline_pack_needs_the_dictionary_and_version_3_reads_alike(tmp_path, volumes,
                                                                        monkeypatch):
    d = synthetic.ring_trace(4, 4 * 402)
    new, old = tmp_path / "new.h5", tmp_path / "old.h5"
    write_compressed(str(new), d, volumes)
    with h5py.File(new, "r") as f:
        g = f["trace"]
        assert g.attrs[P.ATTR] == P.VERSION >= 4
        deflated = g.attrs[P.BYTES_ATTR].tobytes()
        with pytest.raises(zlib.error):             # (a preset dictionary's stream)
            zlib.decompress(deflated)
        raw = P.inflate_inline(deflated, 4)
        assert P.unpack(np.frombuffer(raw, np.uint8))
    monkeypatch.setattr(P, "VERSION", 3)             # (as session 18-23 wrote them)
    monkeypatch.setattr(P, "deflate_inline",
                        lambda raw, level, ends=None: zlib.compress(raw, level))
    write_compressed(str(old), d, volumes)
    monkeypatch.undo()
    with h5py.File(old, "r") as f:
        assert f["trace"].attrs[P.ATTR] == 3
    with minitrace.open(new) as a, minitrace.open(old) as b:
        assert a.data().actions.tobytes() == b.data().actions.tobytes()
    assert sizes(str(new))["file_bytes"] < sizes(str(old))["file_bytes"]


@pytest.mark.parametrize("noise", [0, 4300, 9000])
def test_a_large_pack_deflated_for_a_dataset_first_is_stored_as_before(noise, monkeypatch):
    """store._deflated_pack: a pack above PACK_LARGE_BYTES is deflated without the dictionary
    first (or above PACK_QUICK_FROM where a quick deflate guesses it is no inline pack), and
    with it only where it may still fit inline; it keeps the streams the
    dictionary's stream first kept (inline where it fits, else the dataset's): an inline
    pack, one a little above the limit, one far above it."""
    from minitrace.compress import store
    a = np.arange(16000, dtype=np.int32) % 7
    a[:noise] = np.random.default_rng(noise).integers(0, 1 << 30, noise)
    raw = P.pack({"exact/volume": a}).tobytes()
    inline = P.deflate_inline(raw, 7)
    want = (inline, None) if len(inline) <= P.ATTR_MAX_BYTES else (None, P.deflate(raw, 7))
    assert (want[0] is None) == (noise > 0)
    assert store._likely_dataset(raw) == (noise > 4300)   # (a quick deflate's guess)
    for large, quick in ((0, 0), (len(raw), 0), (len(raw), len(raw))):
        monkeypatch.setattr(store, "PACK_LARGE_BYTES", large)   # (without it first, by size
        monkeypatch.setattr(store, "PACK_QUICK_FROM", quick)    # or by the guess; with it)
        for text in (int.from_bytes(raw[:4], "little"), 1 << 20):   # (then with it too)
            assert store._deflated_pack(raw, 7, text) == want
