"""The signatures' vector contents (request lists, per-peer counts) deduplicated by a hash that
every entry of a vector moves."""
from __future__ import annotations

from unittest import mock

import numpy as np

from minitrace.compress import signatures as SG


def test_vectors_differing_in_their_first_entry_take_the_hashed_path():
    """Vectors equal but for their first entry ([k, 0]: CoMD's request pairs) get their own
    content ids from the hash; the exact per-vector path (a second ``_first_of``) is taken
    only on a collision, and it was taken on every such trace while the first entry weighed
    0 in the hash."""
    k = 500
    entries = np.zeros(4 * k, np.int64)
    entries[0::2] = np.arange(2 * k) % k            # [0,0] [1,0] ... [k-1,0] twice
    lens = np.full(2 * k, 2, np.int64)
    code = np.zeros(2 * k, np.int64)
    modes = np.zeros_like(entries)
    with mock.patch.object(SG, "_first_of", wraps=SG._first_of) as first_of:
        ids, off, values = SG._dedup_contents(code, entries, modes, lens)
    assert first_of.call_count == 1
    assert np.array_equal(ids, np.tile(np.arange(k), 2))
    assert np.array_equal(off, np.arange(0, 3 * k + 1, 3))
    assert np.array_equal(values.reshape(k, 3), np.stack([np.zeros(k), np.arange(k),
                                                            np.zeros(k)], 1))


def test_empty_vectors_hash_anywhere():
    """Empty vectors, last, alone or between others, are one content (a reduceat at the end
    of the entries raised IndexError; between others it took the next vector's first entry:
    the exact check caught it)."""
    for lens in ([2, 2, 0], [0], [0, 0, 3], [1, 0, 1, 0]):
        lens = np.array(lens)
        entries = np.arange(lens.sum(), dtype=np.int64) % 2
        with mock.patch.object(SG, "_first_of", wraps=SG._first_of) as first_of:
            ids, off, values = SG._dedup_contents(np.zeros(len(lens), np.int64), entries,
                                                  np.zeros_like(entries), lens)
        assert first_of.call_count == 1
        contents = [tuple(values[off[i]:off[i + 1]]) for i in ids]
        starts = np.cumsum(lens) - lens
        assert contents == [(0, *entries[s:s + k]) for s, k in zip(starts, lens)]
        empty = ids[lens == 0]
        assert (empty == empty[0]).all()
