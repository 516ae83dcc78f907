"""Pack version 5 (session 27): the pack's index in binary, names as steps in a frozen list
(others spelled), types as a byte, a repeated shape as one; packs of version 4 (a text
index) read alike."""
from __future__ import annotations

import zlib

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import MinitraceError
from minitrace.compress import pack as P
from minitrace.compress.files import write_compressed
from tests.support import synthetic


def test_the_names_are_the_ones_files_were_written_with():
    assert zlib.adler32("\n".join(P.NAMES).encode()) == P.NAMES_ADLER32


def test_any_arrays_come_back_in_their_order():
    """Known names in and out of order, names the list lacks, every type, 0-2 dimensions,
    repeated shapes, nothing at all."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        names = list(rng.choice([*P.NAMES[:20], "x/own", "zz"], int(rng.integers(0, 10)),
                                replace=False))
        arrays = {}
        for name in names:
            code = rng.choice(P.DTYPES)
            shape = [(), (int(rng.integers(0, 5)),), (2, 3)][int(rng.integers(0, 3))]
            arrays[name] = rng.integers(0, 100, shape).astype(code)
        back = P.unpack(P.pack(arrays))
        assert list(back) == list(arrays)
        for name, a in arrays.items():
            assert back[name].dtype == a.dtype and np.array_equal(back[name], a)


def test_the_binary_index_is_smaller_than_the_text_one():
    """A compressed file's index: fewer bytes deflated than as text (version 4)."""
    arrays = {f"signatures/{k}": np.zeros(40, np.uint8) for k in ("kind", "flags", "peer")}
    arrays.update({"grammar/rule_offsets": np.arange(9), "model/tail_gaps": np.zeros(5)})
    index = []
    for version in (4, 5):
        raw = P.pack(arrays, version).tobytes()
        index.append(raw[4:4 + int.from_bytes(raw[:4], "little")])
    assert len(index[1]) < len(index[0]) / 3

    def deflated(b: bytes) -> int:          # (against the inline pack's dictionary)
        z = zlib.compressobj(9, zdict=P.DICTIONARY)
        return len(z.compress(b) + z.flush())
    assert deflated(index[1]) < deflated(index[0])


@pytest.mark.parametrize("volumes", ["exact", "model", "bounded:1%"])
def test_files_of_pack_version_4_read_alike(tmp_path, volumes, monkeypatch):
    d = synthetic.ring_trace(4, 4 * 402)
    new, old = tmp_path / "new.h5", tmp_path / "old.h5"
    write_compressed(str(new), d, volumes)
    monkeypatch.setattr(P, "VERSION", 4)             # (as sessions 24-26 wrote them)
    write_compressed(str(old), d, volumes)
    monkeypatch.undo()
    with h5py.File(new, "r") as f, h5py.File(old, "r") as g:
        assert f["trace"].attrs[P.ATTR] == 5 and g["trace"].attrs[P.ATTR] == 4
    with minitrace.open(new) as a, minitrace.open(old) as b:
        assert a.data().actions.tobytes() == b.data().actions.tobytes()
    assert new.stat().st_size < old.stat().st_size


@pytest.mark.parametrize("damage", [b"\x7f", b"\x01\xff", b"\x00\x40a"])
def test_a_damaged_index_is_a_one_line_error(tmp_path, damage):
    """An index naming no known array, a type of no number, a spelled name cut short."""
    p = tmp_path / "c.h5"
    write_compressed(str(p), synthetic.ring_trace(4, 4 * 402))
    with h5py.File(p, "a") as f:
        g = f["trace"]
        raw = P.inflate_inline(g.attrs[P.BYTES_ATTR].tobytes(), P.VERSION)
        size = int.from_bytes(raw[:4], "little")
        index = damage + raw[4 + len(damage):4 + size]
        del g.attrs[P.BYTES_ATTR]
        g.create_dataset(P.DATASET, data=np.frombuffer(raw[:4] + index + raw[4 + size:],
                                                       np.uint8))
    with pytest.raises(MinitraceError, match="corrupt trace") as e:
        with minitrace.open(p) as t:
            t.data()
    assert str(p) in str(e.value) and "\n" not in str(e.value)
