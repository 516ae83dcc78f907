"""A pack whose inline stream fits is inline, whichever path ``store._deflated_pack`` takes.
Session 28's review of 4cb43f7 found the quick path kept a dataset where a pack's stream
without the dictionary was above ``pack.ATTR_MAX_BYTES`` by more than ``text`` (its index and
attributes), on the premise that the dictionary saves at most about that; a pack that spells
the dictionary in an array of its own (here a string table holding pack.DICTIONARY's text)
saves ~950 bytes by it, not ``text``'s 10: deflated 16,395 bytes, inline 15,452 (under the
16,384 limit).  The quick path now keeps what the dictionary can save at most in hand
(``store._DICTIONARY_SAVES``)."""
from __future__ import annotations

import numpy as np

from minitrace.compress import pack as P
from minitrace.compress import store as ST


def _pack():
    """Packed bytes: the dictionary's text, then 47,636 bytes of 2-6-byte tokens drawn from
    64 (level 1 deflates them ~15% larger than level 7)."""
    rng = np.random.default_rng(2)
    toks = [rng.integers(0, 256, int(rng.integers(2, 7))).astype(np.uint8) for _ in range(64)]
    stream = np.concatenate([toks[i] for i in rng.integers(0, len(toks), 60000)])
    return P.pack_ends({"strings": np.frombuffer(P.DICTIONARY, np.uint8).copy(),
                        "exact/volume": stream[:47636].copy()})


def test_a_pack_whose_inline_stream_fits_is_inline():
    raw, ends = _pack()
    rb = raw.tobytes()
    text = int(raw[:4].view("<u4")[0])
    assert ST.PACK_QUICK_FROM < len(rb) <= ST.PACK_LARGE_BYTES and ST._likely_dataset(rb)
    fits = len(P.deflate_inline(rb, 7, ends)) <= P.ATTR_MAX_BYTES
    inline, _ = ST._deflated_pack(rb, 7, text, ends)
    assert fits and inline is not None
