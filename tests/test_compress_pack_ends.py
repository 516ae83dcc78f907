"""The block ends of a pack as it is made (``pack.pack_ends``) are where the index read back
says (``pack._block_ends``), so that the writer deflates the same stream without reading its
own index again."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.compress import pack as P


def _arrays() -> dict:
    rng = np.random.default_rng(5)
    return {"signatures/kind": np.arange(3, dtype=np.uint8),
            "exact/volume": rng.integers(0, 1 << 30, 700).astype(np.int64),   # (a block)
            "exact/t_gap": np.zeros(64, np.int32),                            # (exactly one)
            "grammar/rule_symbols": rng.integers(0, 9, (4, 3)).astype(np.int16),
            "x/unnamed": rng.integers(0, 200, 2000).astype(np.uint8),       # (spelled)
            "model/stats/mean_code": np.array([1.5, 2.5], np.float64)}


@pytest.mark.parametrize("version", [4, P.VERSION])
def test_the_ends_made_with_the_pack_are_those_its_index_gives(version):
    arrays = _arrays()
    raw, ends = P.pack_ends(arrays, version)
    assert ends and ends == P._block_ends(raw.tobytes(), version)
    assert np.array_equal(raw, P.pack(arrays, version))
    if version == P.VERSION:                    # (deflate reads the index of this version)
        for level in (1, 7):
            assert P.deflate(raw.tobytes(), level, ends=ends) == P.deflate(raw.tobytes(), level)
