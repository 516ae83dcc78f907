"""Review of format version 13 (session 27): the coded message sizes come back through chains
of swapped signatures and ids taken back across ranks, and every way their arrays can name
what is not there (a unit below 1, an unknown way of coding swaps, a partner before the first
signature, a negative distance, a fresh code of an id not named yet) is a one-line ``corrupt
trace`` error naming the file, never a trace read wrong or a traceback."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

from minitrace.compress import signatures as SG
from minitrace.compress.files import write_compressed
from tests.support.damage import assert_corrupt, replace
from tests.test_compress_size_tokens import halo_trace


def test_chains_of_swaps_come_back():
    """Signatures whose sizes swap back and forth many times ((a, b), (b, a), (a, b)...: each
    one's partner itself swapped), of send, receive and sendrecv kinds, in both codings."""
    rng = np.random.default_rng(11)
    kinds = [SG.K.CODE[k] for k in ("send", "recv", "sendrecv", "isend", "allreduce")]
    for n in (2, 3, 17, 200):
        pairs = rng.integers(-3, 4, (4, 2)) * 8
        t = np.zeros(n, SG.SIGNATURE_DTYPE)
        t["kind"] = rng.choice(kinds, n)
        which, flip = rng.integers(0, 2, n), rng.integers(0, 2, n).astype(bool)
        p = pairs[which]
        t["bytes_sent"] = np.where(flip, p[:, 1], p[:, 0])
        t["bytes_recv"] = np.where(flip, p[:, 0], p[:, 1])
        for coded in SG.code_sizes(t):
            sent, recv = SG.decode_sizes(t["kind"], coded["size_coding"], coded["size_swaps"],
                                         coded["bytes_sent"], coded["bytes_recv"])
            assert np.array_equal(sent, t["bytes_sent"]) and np.array_equal(recv, t["bytes_recv"])
        if n >= 17:                       # (chains there: a swapped partner of a swapped one)
            swaps = SG.code_sizes(t)[0]["size_swaps"]
            at = np.flatnonzero(swaps)
            assert (swaps[at - swaps[at]] != 0).any()


def test_ids_taken_back_across_ranks_come_back():
    """A rank taking the ids another named first, out of order, and empty ranks between."""
    new = np.array([0, 1, 2, 3, 1, 0, 3, 2, 4, 4, 0, 5, 2, 2])
    offsets = np.array([0, 4, 4, 9, 9, 14])
    code = SG.fresh_code(new, offsets)
    assert (code & 1).any() and not (code & 1).all()
    assert np.array_equal(SG.fresh_decode(code, offsets), new)


def _damage(a: np.ndarray, how: int, what: str) -> np.ndarray:
    a = a.astype(np.int64).copy()
    if what == "unit below 1":
        a[0] = -int(a[0])
    elif what == "unknown coding of swaps":
        a[1] = 2
    elif what == "coding of three":
        a = np.concatenate([a, [0]])
    elif what == "negative distance":
        a[np.flatnonzero(a)[0]] = -1
    elif what == "partner before the first":
        first = np.flatnonzero(a)[0]
        a[first] = first + 1 if how == SG.SWAP_BACK else 2   # (-1 after "before the first")
    elif what == "fresh code negative":
        a[0] = -2
    elif what == "fresh id above any named":             # (the id after the first, taken
        first = SG.fresh_decode(a[:1], np.array([0, 1]))[0]      # back as if named before)
        a[1] = 1 + 2 * 2 * (first + 1)
    return a


DAMAGE = {"unit below 1": "signatures/size_coding",
          "unknown coding of swaps": "signatures/size_coding",
          "coding of three": "signatures/size_coding",
          "negative distance": "signatures/size_swaps",
          "partner before the first": "signatures/size_swaps",
          "fresh code negative": "sizes/fresh",
          "fresh id above any named": "sizes/fresh"}


@pytest.mark.parametrize("what", list(DAMAGE))
def test_references_to_what_is_not_there_are_corrupt(tmp_path, what):
    out = str(tmp_path / "t.h5")
    write_compressed(out, halo_trace(P=3, blocks=8, every=5), "exact", times="exact",
                     pack=False)
    name = DAMAGE[what]
    with h5py.File(out, "r") as f:
        g = f["trace"]
        assert name in g
        how = int(g["signatures/size_coding"][1])
        assert g["sizes/offsets"][1] > 1             # (the first two new ids: the first rank's)
        a = _damage(g[name][()], how, what)
    replace(out, "trace/" + name, a)
    assert_corrupt(out)
