"""The signatures' vector contents numbered by one exact number each where their entries span
few values (signatures._content_keys), else by a checked hash (signatures._hashed_contents):
both number the distinct contents in order of first appearance, as a factorization of the
contents' bytes does."""
from __future__ import annotations

from unittest import mock

import numpy as np

from minitrace.compress import signatures as SG


def _reference(code, entries, modes, lens):
    """Content ids by the contents' bytes, in order of first appearance."""
    starts = np.cumsum(lens) - lens
    seen: dict[bytes, int] = {}
    return np.array([seen.setdefault(b"%d:" % c + entries[s:s + k].tobytes() +
                                     modes[s:s + k].tobytes(), len(seen))
                     for c, s, k in zip(code.tolist(), starts.tolist(), lens.tolist())])


def _vectors(rng, n, span):
    """``n`` vectors of 1-4 entries in [-span, span], their codes and modes as encode makes
    them (modes 1-2 in request vectors, code 2; 0 elsewhere)."""
    lens = rng.integers(1, 5, n).astype(np.int64)
    code = rng.integers(0, 3, n).astype(np.int64)
    entries = rng.integers(-span, span + 1, int(lens.sum())).astype(np.int64)
    modes = np.where(np.repeat(code == SG.VEC_REQUESTS, lens),
                     rng.integers(1, 3, len(entries)), 0).astype(np.int64)
    return code, entries, modes, lens


def test_few_values_numbered_exactly_as_by_their_bytes():
    rng = np.random.default_rng(5)
    code, entries, modes, lens = _vectors(rng, 3000, 2)
    starts = np.cumsum(lens) - lens
    assert SG._content_keys(code, entries, modes, lens, starts) is not None
    ids, off, values = SG._dedup_contents(code, entries, modes, lens)
    hashed, _ = SG._hashed_contents(code, entries, modes, lens, starts)
    want = _reference(code, entries, modes, lens)
    assert np.array_equal(ids, want) and np.array_equal(hashed, want)
    assert len(off) - 1 == want.max() + 1


def test_contents_apart_by_length_code_or_mode_alone():
    """[0] and [0, 0], the same entries under two codes or two modes: four contents."""
    code = np.array([0, 0, 1, 2, 2], np.int64)
    lens = np.array([1, 2, 1, 1, 1], np.int64)
    entries = np.zeros(6, np.int64)
    modes = np.array([0, 0, 0, 0, 1, 2], np.int64)
    ids, _, _ = SG._dedup_contents(code, entries, modes, lens)
    assert ids.tolist() == [0, 1, 2, 3, 4]
    assert ids.tolist() == _reference(code, entries, modes, lens).tolist()


def test_wide_entries_take_the_checked_hash():
    rng = np.random.default_rng(6)
    code, entries, modes, lens = _vectors(rng, 2000, 1 << 40)
    entries[: len(entries) // 2] = entries[len(entries) // 2: 2 * (len(entries) // 2)]
    starts = np.cumsum(lens) - lens
    assert SG._content_keys(code, entries, modes, lens, starts) is None
    ids, _, _ = SG._dedup_contents(code, entries, modes, lens)
    assert np.array_equal(ids, _reference(code, entries, modes, lens))


def test_the_hash_weighs_a_vectors_first_entry():
    """Vectors equal but for their first entry ([k, 0]: CoMD's request pairs) get their own
    ids from the hash, without the exact per-vector path (a second ``_first_of``)."""
    k = 500
    entries = np.zeros(4 * k, np.int64)
    entries[0::2] = np.arange(2 * k) % k            # [0,0] [1,0] ... [k-1,0] twice
    lens = np.full(2 * k, 2, np.int64)
    code = np.zeros(2 * k, np.int64)
    with mock.patch.object(SG, "_first_of", wraps=SG._first_of) as first_of:
        ids, _ = SG._hashed_contents(code, entries, np.zeros_like(entries), lens,
                                     np.cumsum(lens) - lens)
    assert first_of.call_count == 1
    assert np.array_equal(ids, np.tile(np.arange(k), 2))
