"""A pack's arrays of at least ``pack.BLOCK_BYTES`` deflated in blocks of their own (session
25): one set of Huffman codes served a model's int32 codes, its int8 gaps and its signature
table alike.  Any zlib stream still: the readers are unchanged."""
from __future__ import annotations

import zlib

import numpy as np

from minitrace.compress import pack as P


def _arrays() -> dict:
    rng = np.random.default_rng(3)
    return {"a": np.arange(5, dtype=np.int8),                                 # (small)
            "codes": (1 << 20) - rng.integers(200, 480, 600).astype(np.int32),
            "b": np.array([7, 7, 9], np.int16),                               # (small)
            "gaps": rng.choice(np.array([1, 7, 9, 19], np.int8), 3000),
            "steps": rng.integers(0, 40, 800).astype(np.int8)}


def test_blocks_end_around_the_arrays_of_at_least_block_bytes():
    arrays = _arrays()
    raw = P.pack(arrays).tobytes()
    at = {}
    pos = 4 + int.from_bytes(raw[:4], "little")
    for k, a in arrays.items():
        at[k] = (pos, pos + a.nbytes)
        pos += a.nbytes
    assert P._block_ends(raw) == [at["codes"][0], at["codes"][1], at["gaps"][0],
                                  at["gaps"][1], at["steps"][1]]       # (gaps|steps: one end)
    assert P._block_ends(P.pack({"a": arrays["a"]}).tobytes()) == []


def test_the_blocked_stream_inflates_to_the_pack_and_is_smaller():
    raw = P.pack(_arrays()).tobytes()
    for zdict in (None, P.DICTIONARY):
        blocked = P.deflate(raw, 9, zdict)
        z = zlib.decompressobj(zdict=zdict) if zdict else zlib.decompressobj()
        assert z.decompress(blocked) == raw and z.eof
        one = zlib.compressobj(9, zdict=zdict) if zdict else zlib.compressobj(9)
        assert len(blocked) < len(one.compress(raw) + one.flush())
    assert P.inflate_inline(P.deflate_inline(raw, 9), P.VERSION) == raw


def test_a_pack_dataset_is_deflated_in_blocks(tmp_path):
    """The writer deflates a pack too large for the attribute (a dataset) in blocks as well:
    its chunk is :func:`pack.deflate`'s stream of the packed bytes, not one of zlib's."""
    import h5py

    from minitrace.compress import store as ST
    from tests.support.synthetic import loop_trace
    c = ST.compress(loop_trace(2, 20000, timed=True), "exact")
    out = tmp_path / "x.h5"
    ST.write(str(out), c)
    with h5py.File(out, "r") as f:
        ds = f["trace"][P.DATASET]
        _, chunk = ds.id.read_direct_chunk((0,))
    raw = zlib.decompress(chunk)
    level = ST._pack_level(len(raw), c.nactions)
    assert P._block_ends(raw)                       # (arrays of their own blocks)
    assert chunk == P.deflate(raw, level) != zlib.compress(raw, level)
