"""Which keys of the context coder (``minitrace/compress/context_rans.py``) get a table of their
own: a fine key (call site and the call before it) of fewer than MIN_VALUES values but at
least MIN_WEIGHED takes one where it pays (its values unlike the rest of its call site's), not
where its values are its site's; the coded values round-trip either way."""
from __future__ import annotations

import numpy as np

from minitrace.compress import context_rans as CR


def _site_with_two_small_keys():
    """(values, fine, coarse): one call site (coarse 0) of three fine keys: 4,000 values about
    1,000 (key 1), 100 about 1,300 (key 2: a mode of its own) and 100 drawn as key 1's (key
    3), keys 2 and 3 between MIN_WEIGHED and MIN_VALUES."""
    rng = np.random.default_rng(3)
    fine = rng.permutation(np.repeat([1, 2, 3], [4000, 100, 100]))
    values = 1000 + rng.integers(-40, 41, len(fine))
    values[fine == 2] = 1300 + rng.integers(-2, 3, 100)
    return values.astype(np.int64), fine.astype(np.int64), np.zeros(len(fine), np.int64)


def test_a_small_key_unlike_its_site_takes_a_table_of_its_own():
    values, fine, coarse = _site_with_two_small_keys()
    assert CR.MIN_WEIGHED <= 100 < CR.MIN_VALUES
    fine_keys, coarse_keys, ctx = CR._choose(fine, coarse, values)
    assert list(fine_keys) == [1, 2]             # (3: its values are key 1's, no table)
    assert list(coarse_keys) == []               # (key 3's 100 values: the pooled table)
    assert np.array_equal(ctx, CR._contexts(fine, coarse, fine_keys, coarse_keys))
    assert list(CR._choose(fine, coarse)[0]) == [1]          # (by counts alone: key 1)
    coded = CR.encode(values, fine, coarse)
    nf, nc = (int(v) for v in np.frombuffer(coded[20:28].tobytes(), "<u4"))
    assert (nf, nc) == (2, 0)
    assert np.array_equal(CR.decode(coded, fine, coarse), values)


def test_weighed_keys_spread_over_int64_decode():
    """Keys spread over int64's range (hashed, not counted), one of them (70 values) near
    int64's top in a call site of small values: that one takes a table, and the coded values
    round-trip."""
    rng = np.random.default_rng(4)
    fine = rng.permutation(np.repeat([-(1 << 50), 7, 1 << 52], [CR.MIN_VALUES, 70, 3000]))
    values = rng.integers(-5, 6, len(fine)).astype(np.int64)
    values[fine == 7] = np.iinfo(np.int64).max - rng.integers(0, 3, 70)
    coarse = np.sign(fine)
    assert 7 in CR._choose(fine, coarse, values)[0]
    coded = CR.encode(values, fine, coarse)
    assert np.array_equal(CR.decode(coded, fine, coarse), values)
