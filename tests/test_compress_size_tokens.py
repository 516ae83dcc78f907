"""Message sizes apart from the grammar (format version 12): where a call's sizes change from
step to step (public miniMD's halo sendrecvs at each re-neighbouring), its actions are size
tokens, new or the same as an occurrence back, so that every block of steps reads alike and the
grammar folds the loop; the sizes still come back exactly, in every mode."""
from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import storage
from minitrace import kinds as K
from minitrace.compress import signatures as SG
from minitrace.compress import store
from minitrace.compress.files import write_compressed
from minitrace.compress.store import compress
from minitrace.model import TraceBuilder
from tests.support.damage import assert_corrupt
from tests.support.synthetic import in_turn, stencil_trace
from tests.support.versions import assert_refused_as_newer

#: halo_trace(P=2, blocks=6, every=8, slower=0) written by the code before size tokens (its
#: signatures and grammar hold the sizes): format versions 6 (exact, bounded) and 10 (model).
BEFORE = Path(__file__).parent / "data" / "halo_before_v12"
MODES = {"exact": ("exact", "exact"), "bounded": ("bounded:1%", "bounded:1us"),
         "model": ("model", "exact")}


def halo_trace(P: int = 2, blocks: int = 10, every: int = 20, slower: float = 3.0):
    """miniMD's pattern: each step a compute and a forward and reverse exchange of two
    sendrecvs right and left, whose sizes (each rank's own) change every ``every`` steps, the
    re-neighbouring, which exchanges counts (4 bytes) and atoms first; and a send right and
    receive from the left of an eighth of the forward sizes (for the matrix).  Rank r's
    sendrecvs last 2 (1 + ``slower`` r) us."""
    b = TraceBuilder(P)
    for r in range(P):
        add = in_turn(b, r, 2e-6, 1e-7)

        def sendrecv(right: bool, sent: int, recv: int):
            peer = (r + 1) % P if right else (r - 1) % P
            add("sendrecv", 2e-6 * (1 + slower * r), peer=peer, tag=0, bytes_sent=sent,
                bytes_recv=recv, vector=[(r - 1) % P if right else (r + 1) % P, 0])
        add("init")
        for blk in range(blocks):
            size = [[24 * (3800 + (q * 7919 + blk * 104729 + side * 613) % 400)
                     for side in range(2)] for q in range(P)]
            for right in (True, False):
                sendrecv(right, 4, 4)
                sendrecv(right, 8 * (900 + (r + blk * 31 + right) % 90),
                         8 * (900 + ((r + 1) % P + blk * 31 + right) % 90))
            for step in range(every):
                add("compute", 1e-4, volume=1e-4)
                sendrecv(True, size[r][0], size[(r - 1) % P][0])
                sendrecv(False, size[r][1], size[(r + 1) % P][1])
                add("send", peer=(r + 1) % P, tag=1, bytes_sent=size[r][0] // 8)
                add("recv", peer=(r - 1) % P, tag=1, bytes_recv=size[(r - 1) % P][0] // 8)
                add("compute", 5e-5, volume=5e-5)
                sendrecv(False, size[(r - 1) % P][0], size[r][0])
                sendrecv(True, size[(r + 1) % P][1], size[r][1])
            add("allreduce", bytes_sent=8, bytes_recv=8)
        add("finalize")
    return b.build()


def test_steps_whose_sizes_change_fold_into_one_loop():
    """Twice the re-neighbourings, the same grammar but the loop's count: the top-level
    sequence no longer grows with the blocks of new sizes (each block's signatures were new
    ones), and the sizes wait in the stream of new tokens."""
    c10, c20 = (compress(halo_trace(blocks=n)) for n in (10, 20))
    for c in (c10, c20):
        assert c.tokens is not None
        sr = K.CODE["sendrecv"]
        assert sr in c.table["kind"][c.tokens.sites]
    assert len(c20.grammar.top_symbols) == len(c10.grammar.top_symbols)
    assert len(c20.grammar.rule_symbols) == len(c10.grammar.rule_symbols)
    assert len(c20.tokens.sites) == len(c10.tokens.sites)
    assert len(c20.tokens.new) > len(c10.tokens.new)


@pytest.mark.parametrize("mode", list(MODES))
def test_every_size_comes_back_exactly(tmp_path, mode):
    """Every column but volumes and times as recorded (and in exact mode those too, to the
    nanosecond) and every vector; the summary's and the matrix's bytes the recorded sums; a range of a rank read
    alone is the same rows as the whole rank's."""
    d = halo_trace(P=3, blocks=6, every=7)
    out = tmp_path / f"{mode}.h5"
    write_compressed(str(out), d, *MODES[mode][:1], times=MODES[mode][1])
    with minitrace.open(out) as t:
        assert t.meta["format_version"] >= storage.SIZE_TOKENS_VERSION
        assert t._reader.c.tokens is not None
        back = t.data()
        summary, matrix = t.summary(), t.matrix()
        lo, hi = int(d.rank_offsets[1]) + 37, int(d.rank_offsets[1]) + 120
        part = t._reader.read(lo, hi)
        first = t._reader.kind_counts()
    a, x = back.actions, d.actions
    for f in x.dtype.names:
        if f not in ("volume", "t_start", "t_end"):
            assert np.array_equal(a[f], x[f]), f
        elif mode == "exact":                   # (times to the nanosecond, as stored)
            np.testing.assert_allclose(a[f], x[f], rtol=0, atol=1e-9, err_msg=f)
    assert np.array_equal(back.vectors, d.vectors)
    for col in ("bytes_sent", "bytes_recv"):
        assert summary[col].tolist() == [int(x[col][d.rank_slice(r)].sum())
                                         for r in range(d.nranks)]
    sends = x["kind"] == K.CODE["send"]
    want = np.zeros((d.nranks, d.nranks), np.int64)
    np.add.at(want, (d.rank_of()[sends], x["peer"][sends]), x["bytes_sent"][sends])
    assert want.any() and np.array_equal(matrix.to_numpy(), want)
    for f in ("kind", "peer", "bytes_sent", "bytes_recv"):
        assert np.array_equal(part[f], x[f][lo:hi])
    names, counts = first
    kinds = [K.NAME[int(k)] for k in x["kind"][d.rank_slice(0)]]
    assert dict(zip(names, counts[0].tolist())) == {k: kinds.count(k) for k in set(kinds)}


def test_sizes_that_alternate_between_a_few_stay_in_the_signatures():
    """A stencil's messages of a few sizes in the same order every step: their signatures fold
    as they are, tokens would only add a first iteration of their own."""
    assert compress(stencil_trace(4, 30)).tokens is None


def test_a_version_11_reader_refuses_the_file_as_newer(tmp_path):
    out = str(tmp_path / "t.h5")
    store.write(out, compress(halo_trace()))
    assert assert_refused_as_newer(out) >= storage.SIZE_TOKENS_VERSION == 12


@pytest.mark.parametrize("damage", ["back", "new", "site"])
def test_damaged_tokens_are_a_corrupt_trace(tmp_path, damage):
    """A reference back beyond its site's first occurrence, a new token's signature outside
    the table, one of another call site: one-line ``corrupt trace`` errors naming the file."""
    c = compress(halo_trace(blocks=3))
    out = str(tmp_path / "t.h5")
    store.write(out, c, pack=False)
    with h5py.File(out, "r+") as f:
        g = f["trace/sizes"]
        if damage == "back":
            dist = g["distances"][()].astype(np.int64)
            dist[np.argmax(dist)] = 1 << 20
            del g["distances"]
            g["distances"] = dist
        else:           # (coded as fresh ids or ids back since format version 13)
            name = "fresh" if "fresh" in g else "new"
            off = g["offsets"][()].astype(np.int64)
            new = g[name][()].astype(np.int64)
            if name == "fresh":
                new = SG.fresh_decode(new, off)
            other = np.flatnonzero(c.table["kind"] == K.CODE["compute"])[0]
            new[0] = len(c.table) + 5 if damage == "new" else other
            del g[name]
            g[name] = SG.fresh_code(new, off) if name == "fresh" else new
    assert_corrupt(out)


def test_resolving_follows_references_to_their_new_token():
    """:func:`signatures.resolve_sizes` inverts :func:`signatures.size_tokens` on every rank."""
    d = halo_trace(P=3, blocks=5, every=9)
    sig = SG.encode(d)
    has_volume = np.zeros(len(sig.table), bool)
    has_volume[sig.ids[d.actions["volume"] > 0]] = True
    symbols, tokens = SG.size_tokens(sig.ids, d.rank_of(), d.nranks, sig.table, has_volume)
    site = SG.size_sites(sig.table)[0]
    for r in range(d.nranks):
        new = tokens.new[tokens.new_offsets[r]:tokens.new_offsets[r + 1]]
        got = SG.resolve_sizes(symbols[d.rank_slice(r)], len(sig.table), tokens, site,
                               has_volume, new)
        assert np.array_equal(got, sig.ids[d.rank_slice(r)])


@pytest.mark.parametrize("mode", list(MODES))
def test_files_written_before_size_tokens_read_as_they_did(mode):
    """Files of the code before format version 12 (sizes in the signatures) read as that code
    wrote them: every column but volumes and times as recorded, volumes and times within
    their mode's bounds, the sizes the same as the file written now (with tokens) gives."""
    d = halo_trace(P=2, blocks=6, every=8, slower=0)
    with minitrace.open(BEFORE / f"halo-{mode}.h5") as t:
        assert t.meta["format_version"] < storage.SIZE_TOKENS_VERSION
        assert t._reader.c.tokens is None
        back = t.data()
    a, x = back.actions, d.actions
    for f in x.dtype.names:
        if f not in ("volume", "t_start", "t_end"):
            assert np.array_equal(a[f], x[f]), f
    if mode != "model":
        bound = {"exact": (0, 1e-9), "bounded": (0.01, 1e-6)}[mode]
        np.testing.assert_allclose(a["volume"], x["volume"], rtol=bound[0] * 1.001, atol=1e-12)
        for f in ("t_start", "t_end"):
            np.testing.assert_allclose(a[f], x[f], rtol=0, atol=bound[1])
    assert compress(d).tokens is not None


def test_loops_of_a_file_with_size_tokens_name_their_calls(tmp_path):
    """``Trace.loops()`` on a file with size tokens: each loop's body names the tokens by
    their call site's kind (a token is no signature of the table)."""
    out = tmp_path / "t.h5"
    write_compressed(str(out), halo_trace())
    with minitrace.open(out) as t:
        assert t._reader.c.tokens is not None
        loops = t.loops()
    main = loops[loops["main"]]           # (each rank its program: its own sizes)
    assert len(main) == 2 and (main["iterations"] > 1).all()
    assert all("sendrecv" in b and "send," in b for b in main["body"])


def test_ranks_of_the_same_calls_with_other_sizes_keep_their_own_times(tmp_path):
    """Two ranks whose size tokens read alike but whose sizes differ run programs of their
    own, as without tokens: the model's time statistics stay per rank program, and each
    rank's modelled sendrecv time is its own (pooled, both took their mean: rank 0's 2 us
    sendrecvs 5 us)."""
    d = halo_trace()
    c = compress(d, "model")
    out = tmp_path / "m.h5"
    store.write(str(out), c)
    with minitrace.open(out) as t:
        back = t.data()
    for r in range(d.nranks):
        x, a = d.actions[d.rank_slice(r)], back.actions[back.rank_slice(r)]
        sr = x["kind"] == K.CODE["sendrecv"]
        want = (x["t_end"] - x["t_start"])[sr].sum()
        got = (a["t_end"] - a["t_start"])[sr].sum()
        assert got == pytest.approx(want, rel=0.05)
    assert c.tokens is not None and len(set(c.grammar.rank_grammar.tolist())) == d.nranks
