"""A model file's pack written as a dataset is LZMA-coded where that is smaller than deflated
(format version 14, session 28: miniAMR 4r's model file 26.6 -> 24.7 KB): it reads back to
the same trace, damage fails as corrupt, a version 13 reader refuses it as newer, and exact
files keep their deflated dataset.  The built loop trace's pack (~13 KB) is made a dataset by
a smaller inline limit (a pack above the limit: public recordings of 100 k actions and more)."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import minitrace
from minitrace.compress import pack as P
from minitrace.compress import store as ST
from minitrace.compress.files import sizes
from tests.support.damage import assert_corrupt, replace
from tests.support.synthetic import loop_trace
from tests.support.versions import assert_refused_as_newer


@pytest.fixture(scope="module")
def trace():
    return loop_trace(4, 200000, timed=True, seed=1)


def _write(path, trace, volumes: str, monkeypatch, limit: int = 2048) -> str:
    monkeypatch.setattr(P, "ATTR_MAX_BYTES", limit)         # (the pack a dataset)
    ST.write(str(path), ST.compress(trace, volumes))
    return str(path)


def test_a_model_pack_dataset_is_lzma_coded_and_reads_back(tmp_path, trace, monkeypatch):
    lz = _write(tmp_path / "lz.h5", trace, "model", monkeypatch)
    inline = str(tmp_path / "inline.h5")
    monkeypatch.undo()
    ST.write(inline, ST.compress(trace, "model"))
    with h5py.File(lz, "r") as f:
        assert list(f["trace"]) == [ST.LZMA_DATASET]
        stored = f["trace"][ST.LZMA_DATASET].id.get_storage_size()
        raw = ST.unlzma_pack(f["trace"][ST.LZMA_DATASET][()].tobytes())
    assert stored < len(P.deflate(raw, ST._pack_level(len(raw), len(trace.actions))))
    assert assert_refused_as_newer(lz) == 14
    part = sizes(lz)                            # (what `compress` prints of the pack's parts)
    assert 0 < part["structure_bytes"] + part["side_bytes"] < part["file_bytes"]
    with minitrace.open(lz) as a, minitrace.open(inline) as b:
        assert np.array_equal(a.data().actions, b.data().actions)


def test_exact_files_keep_the_deflated_dataset(tmp_path, monkeypatch):
    path = _write(tmp_path / "exact.h5", loop_trace(2, 6000, timed=True), "exact", monkeypatch,
                  256)
    with h5py.File(path, "r") as f:
        assert P.DATASET in f["trace"] and ST.LZMA_DATASET not in f["trace"]
        assert int(f.attrs["format_version"]) < 14


def test_damaged_lzma_packs_are_corrupt(tmp_path, trace, monkeypatch):
    path = _write(tmp_path / "lz.h5", trace, "model", monkeypatch)
    with h5py.File(path, "r") as f:
        blob = f["trace"][ST.LZMA_DATASET][()]
    for i, damaged in enumerate((blob[:-3], blob[:5], np.concatenate([blob, blob[-4:]]))):
        copy = tmp_path / f"d{i}.h5"
        copy.write_bytes(open(path, "rb").read())
        replace(str(copy), f"trace/{ST.LZMA_DATASET}", damaged)
        assert_corrupt(str(copy))
    flipped = blob.copy()
    flipped[len(blob) // 2] ^= 0x10
    replace(path, f"trace/{ST.LZMA_DATASET}", flipped)
    assert_corrupt(path)


def test_an_lzma_pack_beside_another_pack_is_corrupt(tmp_path, trace, monkeypatch):
    """One pack a file: the LZMA dataset beside the deflated one or the attribute."""
    path = _write(tmp_path / "lz.h5", trace, "model", monkeypatch)
    with h5py.File(path, "r+") as f:
        f["trace"][P.DATASET] = np.zeros(4, np.uint8)
    assert_corrupt(path)
    path = _write(tmp_path / "lz2.h5", trace, "model", monkeypatch)
    with h5py.File(path, "r+") as f:
        f["trace"].attrs[P.BYTES_ATTR] = np.zeros(4, np.uint8)
    assert_corrupt(path)
