"""Message sizes coded for what they are (format version 13): a message's size is the sent size
of one rank's call and the received size of its peer's, so a signature whose two sizes are an
earlier one's swapped refers to it, the others' received size is stored less the sent one, all
in their common unit; new size tokens are coded as fresh ids or ids taken back.  Lossless:
the same actions come back in every mode."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import storage
from minitrace.compress import pack as P
from minitrace.compress import signatures as SG
from minitrace.compress import store
from minitrace.compress.files import write_compressed
from minitrace.compress.store import compress
from tests.support.damage import assert_corrupt, replace
from tests.support.synthetic import stencil_trace
from tests.test_compress_size_tokens import MODES, halo_trace
from tests.support.versions import assert_refused_as_newer


def _arrays(path) -> dict:
    """The arrays of a packed compressed file, by name."""
    with h5py.File(path) as f:
        g = f["trace"]
        raw = g[P.DATASET][()] if P.DATASET in g else np.frombuffer(
            P.inflate_inline(g.attrs[P.BYTES_ATTR].tobytes(), int(g.attrs[P.ATTR])), np.uint8)
    return P.unpack(raw)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("pack", [True, False])
def test_halo_sizes_are_coded_and_come_back_exactly(tmp_path, mode, pack):
    """miniMD's halo (sizes new at each re-neighbouring, each rank's sent sizes its
    neighbours' received ones): the sizes coded (fewer stored than signatures), the file
    version 13, packed or not, and every column but volumes and times and every vector as
    recorded."""
    d = halo_trace(P=3, blocks=8, every=5)
    out = tmp_path / f"{mode}.h5"
    write_compressed(str(out), d, MODES[mode][0], times=MODES[mode][1], pack=pack)
    if pack:
        packed = _arrays(out)
    else:
        with h5py.File(out) as f:
            packed = {f"signatures/{k}": v[()] for k, v in f["trace/signatures"].items()}
    assert "signatures/size_coding" in packed
    assert len(packed["signatures/bytes_sent"]) < len(packed["signatures/kind"])
    with minitrace.open(out) as t:
        assert t.meta["format_version"] == storage.SIZE_CODING_VERSION
        back = t.data()
    for f in d.actions.dtype.names:
        if f not in ("volume", "t_start", "t_end"):
            assert np.array_equal(back.actions[f], d.actions[f]), f
    assert np.array_equal(back.vectors, d.vectors)


def test_decoding_inverts_the_coding():
    """Both ways of coding the swaps, on the halo's table (sendrecvs swapped between
    neighbours, sends and receives of one size) and on random tables (sizes of any sign)."""
    tables = [SG.encode(halo_trace(P=3, blocks=4, every=3)).table]
    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 60):
        t = np.zeros(n, SG.SIGNATURE_DTYPE)
        t["kind"] = rng.choice(sorted(SG.K.NAME), n)
        t["bytes_sent"] = rng.choice([0, -1, 4, 12, 24, 1 << 40], n)
        t["bytes_recv"] = rng.choice([0, 4, 12, 24, 1 << 40], n)
        tables.append(t)
    for t in tables:
        for coded in SG.code_sizes(t):
            sent, recv = SG.decode_sizes(t["kind"], coded["size_coding"], coded["size_swaps"],
                                         coded["bytes_sent"], coded["bytes_recv"])
            assert np.array_equal(sent, t["bytes_sent"])
            assert np.array_equal(recv, t["bytes_recv"])
    assert all(coded["size_swaps"].any() for coded in SG.code_sizes(tables[0]))


def test_fresh_ids_invert():
    """:func:`signatures.fresh_code` and :func:`signatures.fresh_decode` on random streams of
    ids, ranks of any length (none too)."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(0, 30))
        offsets = np.sort(np.concatenate([[0, n], rng.integers(0, n + 1, 3)]))
        ids = rng.integers(0, 20, n)
        assert np.array_equal(SG.fresh_decode(SG.fresh_code(ids, offsets), offsets), ids)


def test_sizes_that_deflate_smaller_as_columns_stay_so(tmp_path):
    """A stencil's few sizes: kept as the columns they were, and the file the version it
    was."""
    out = tmp_path / "s.h5"
    store.write(str(out), compress(stencil_trace(4, 30)))
    assert "signatures/size_coding" not in _arrays(out)
    with minitrace.open(out) as t:
        assert t.meta["format_version"] < storage.SIZE_CODING_VERSION


def test_a_version_12_reader_refuses_the_file_as_newer(tmp_path):
    out = str(tmp_path / "t.h5")
    store.write(out, compress(halo_trace()))
    assert assert_refused_as_newer(out) == storage.SIZE_CODING_VERSION == 13


@pytest.mark.parametrize("damage", ["forward", "count", "unit"])
def test_damaged_size_coding_is_a_corrupt_trace(tmp_path, damage):
    """A swap referring to a later signature, fewer stored sizes than unswapped signatures, a
    unit of 0: one-line ``corrupt trace`` errors naming the file."""
    out = str(tmp_path / "t.h5")
    store.write(out, compress(halo_trace(P=3, blocks=8, every=5)), pack=False)
    name = "trace/signatures/" + {"forward": "size_swaps", "count": "bytes_sent",
                                  "unit": "size_coding"}[damage]
    with h5py.File(out, "r") as f:
        a = f[name][()].astype(np.int64)
    if damage == "forward":
        a[np.flatnonzero(a)[0]] = 1 << 20
    elif damage == "count":
        a = a[:-1]
    else:
        a[0] = 0
    replace(out, name, a)
    assert_corrupt(out)
