"""Size tokens (format version 12) read through every path a reader of a compressed file takes:
whole, per rank, row ranges, kind rows and counts, summary, matrix, vectors and loops, in the
three modes, packed or not, on traces of nonblocking messages, waits, vectors, a communicator
other than the world, empty ranks and a rank of tokens alone; sizes are never approximated."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import MinitraceError
from minitrace import kinds as K
from minitrace.compress import loops
from minitrace.compress import pack as P
from minitrace.compress.files import sizes, write_compressed
from minitrace.compress.store import compress
from minitrace.model import TraceBuilder
from tests.support.synthetic import in_turn

MODES = {"exact": ("exact", "exact"), "bounded": ("bounded:1%", "bounded:1us"),
         "model": ("model", "exact")}
#: the columns every mode keeps as recorded
LOSSLESS = ("kind", "flags", "peer", "tag", "comm", "bytes_sent", "bytes_recv", "request",
            "vec_len", "vec_off")


def ring(P: int = 3, blocks: int = 14, every: int = 4, empty=(), alone=(),
         same_sizes: bool = False):
    """Per rank, blocks of ``every`` steps (a compute, an irecv and isend and their waitall,
    a sendrecv on a communicator of the ranks reversed, an alltoallv, an allreduce) whose
    message sizes change each block (``same_sizes``: the same on every rank, else each
    rank's own); ranks ``empty`` record nothing, ranks ``alone`` only sends whose sizes
    change each block."""
    b = TraceBuilder(P)
    b.add_comm(1, list(range(P - 1, -1, -1)))
    for r in range(P):
        if r in empty:
            continue
        req = 100
        add = in_turn(b, r, 2e-6, 1e-7)
        own = 0 if same_sizes else r
        for blk in range(blocks):
            sz = [8 * (100 + (blk * 131 + own * 17 + k * 7) % 293) for k in range(4)]
            for _ in range(every):
                if r in alone:
                    add("send", peer=(r + 1) % P, tag=3, bytes_sent=sz[0])
                    continue
                add("compute", 1e-4 * (1 + 0.1 * r), volume=1e-4 * (1 + 0.1 * r))
                add("irecv", peer=(r - 1) % P, tag=1, bytes_recv=sz[0], request=req)
                add("isend", peer=(r + 1) % P, tag=1, bytes_sent=sz[1], request=req + 1)
                add("waitall", 3e-6 * (1 + r), vector=[req, req + 1])
                req += 2
                add("sendrecv", 2e-6, peer=(r + 1) % P, tag=0, comm=1, bytes_sent=sz[2],
                    bytes_recv=sz[3], vector=[(r - 1) % P, 0])
                counts = [sz[0] // 8 + q for q in range(P)]
                add("alltoallv", bytes_sent=8 * sum(counts), bytes_recv=8 * sum(counts),
                    vector=counts + counts)
                add("allreduce", bytes_sent=8, bytes_recv=8)
    return b.build()


def world_ring(P: int = 3, blocks: int = 30, every: int = 3):
    """Blocks of ``every`` steps on the world (a compute, rank r's 1 + 0.3 r times longer, an
    irecv and isend and their waitall, a sendrecv, an allreduce) between an init and a
    finalize, the sizes the same on every rank and new each block: a trace that replays."""
    b = TraceBuilder(P)
    for r in range(P):
        req = 100
        add = in_turn(b, r, 2e-6, 1e-7)
        add("init")
        for blk in range(blocks):
            s = [8 * (100 + (blk * 131 + k * 7) % 293) for k in range(2)]
            for _ in range(every):
                add("compute", 1e-4 * (1 + 0.3 * r), volume=1e-4 * (1 + 0.3 * r))
                add("irecv", peer=(r - 1) % P, tag=1, bytes_recv=s[0], request=req)
                add("isend", peer=(r + 1) % P, tag=1, bytes_sent=s[0], request=req + 1)
                add("waitall", 3e-6, vector=[req, req + 1])
                req += 2
                add("sendrecv", peer=(r + 1) % P, tag=0, bytes_sent=s[1], bytes_recv=s[1],
                    vector=[(r - 1) % P, 0])
                add("allreduce", bytes_sent=8, bytes_recv=8)
        add("finalize")
    return b.build()


CASES = {"own sizes": {}, "one rank": {"P": 1}, "an empty rank": {"P": 4, "empty": (1,)},
         "a rank of tokens alone": {"P": 4, "alone": (2,), "empty": (0,)},
         "sizes alike on every rank": {"same_sizes": True}}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", list(MODES))
def test_every_reader_path_gives_the_recorded_sizes(tmp_path, case, mode):
    d = ring(**CASES[case])
    assert compress(d).tokens is not None
    x = d.actions
    for pack in (True, False):
        out = str(tmp_path / f"{pack}.h5")
        write_compressed(out, d, MODES[mode][0], times=MODES[mode][1], pack=pack)
        with minitrace.open(out) as t:
            assert t.compressed_form.tokens is not None
            back = t.data()
            for f in LOSSLESS:
                assert np.array_equal(back.actions[f], x[f]), f
            assert np.array_equal(back.vectors, d.vectors)
            reader = t._reader
            for r in range(d.nranks):
                lo, n = int(d.rank_offsets[r]), int(d.rank_offsets[r + 1] - d.rank_offsets[r])
                for i, j in ((0, n), (n // 3, 2 * n // 3), (max(n - 1, 0), n)):
                    part = reader.read(lo + i, lo + j)
                    for f in LOSSLESS:
                        assert np.array_equal(part[f], x[f][lo + i:lo + j]), (r, i, j, f)
                    for f in ("volume", "t_start", "t_end"):   # (a range as the whole's)
                        np.testing.assert_allclose(part[f], back.actions[f][lo + i:lo + j],
                                                   rtol=1e-12, atol=1e-15)
                for i in np.flatnonzero(x["vec_len"][lo:lo + n])[::5]:
                    o, m = int(x["vec_off"][lo + i]), int(x["vec_len"][lo + i])
                    assert np.array_equal(t.vector(r, int(i)), d.vectors[o:o + m])
            for name in ("irecv", "isend", "sendrecv", "send", "waitall", "alltoallv"):
                assert np.array_equal(reader.kind_rows(name),
                                      np.flatnonzero(x["kind"] == K.CODE[name])), name
            names, counts = reader.kind_counts()
            summary, matrix = t.summary(), t.matrix().to_numpy()
        for r in range(d.nranks):
            kinds = x["kind"][d.rank_slice(r)]
            assert counts[r].tolist() == [int((kinds == K.CODE[k]).sum()) for k in names]
            for col in ("bytes_sent", "bytes_recv"):
                assert summary[col].iloc[r] == x[col][d.rank_slice(r)].sum()
        sends = np.isin(x["kind"], [K.CODE[k] for k in K.SENDS]) & (x["peer"] >= 0)
        want = np.zeros((d.nranks, d.nranks), np.int64)
        np.add.at(want, (d.rank_of()[sends], x["peer"][sends]), x["bytes_sent"][sends])
        assert np.array_equal(matrix, want)


def test_loops_of_a_file_with_size_tokens_are_the_uncompressed_traces(tmp_path):
    """``minitrace.compress.loops`` (what iteration sampling replays and skips) on a file with
    size tokens: the loops of its signatures, as the uncompressed trace's, not those of its
    tokens, whose iterations may differ in sizes (blocks of 3 steps of new sizes: tokens fold
    the blocks into a loop of 30, each iteration its own sizes; the trace's loop has 90)."""
    d = ring(blocks=30, every=3)
    out = str(tmp_path / "t.h5")
    write_compressed(out, d)
    with minitrace.open(out) as t:
        assert t.compressed_form.tokens is not None
        got = loops(t)
    assert got.equals(loops(d))


def test_sampling_finds_the_loops_of_the_uncompressed_trace_in_a_file_with_size_tokens(
        tmp_path):
    """Iteration sampling's loops (``sampling.loops_of``) of that file: those of the
    uncompressed trace (the tokens' loop of 30 blocks, sizes changing from one iteration to
    the next, was taken for alike iterations and sampled so)."""
    from minitrace.replay.sampling import loops_of
    d = world_ring(blocks=30, every=3)
    out = str(tmp_path / "t.h5")
    write_compressed(out, d)
    with minitrace.open(out) as t:
        got, _ = loops_of(t)
    want, _ = loops_of(d)
    assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want))


def test_damaged_tokens_found_by_the_loops_are_a_corrupt_trace(tmp_path):
    """A reference back beyond its site's first: the loops' one-line error names the file."""
    out = str(tmp_path / "t.h5")
    write_compressed(out, ring(), pack=False)
    with h5py.File(out, "r+") as f:
        g = f["trace/sizes"]
        dist = g["distances"][()].astype(np.int64)
        dist[np.argmax(dist)] = 1 << 20
        del g["distances"]
        g["distances"] = dist
    with pytest.raises(MinitraceError, match="corrupt trace") as e:
        with minitrace.open(out) as t:
            loops(t)
    assert out in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("pack", [False, True])
def test_the_size_tokens_count_in_the_files_structure(tmp_path, pack):
    """``files.sizes`` (what ``minitrace compress`` and the size tables report): structure and
    side arrays are every array but the index, communicators, strings and packed attributes,
    the size tokens' too (they were in neither)."""
    out = str(tmp_path / "t.h5")
    write_compressed(out, ring(), pack=pack)
    got = sizes(out)
    with h5py.File(out, "r") as f:
        g = f["trace"]
        if pack:
            packed = g[P.DATASET][()] if P.DATASET in g else P.inflate_inline(
                g.attrs[P.BYTES_ATTR].tobytes(), int(g.attrs[P.ATTR]))
            stored = g[P.DATASET].id.get_storage_size() if P.DATASET in g else \
                len(g.attrs[P.BYTES_ATTR].tobytes())
            raw = {k: a.nbytes for k, a in P.unpack(np.frombuffer(packed, np.uint8)).items()}
            assert any(k.startswith("sizes/") for k in raw)
            share = stored / sum(raw.values())
            want = share * sum(n for k, n in raw.items()
                               if k.split("/")[0] not in ("index", "comms", "strings", "attrs"))
            want += sum(g[k].id.get_storage_size() for k in g if isinstance(g[k], h5py.Dataset)
                        and k != P.DATASET)
        else:
            want = 0
            for name in g:
                if name not in ("index", "comms", "strings"):
                    want += sum(o.id.get_storage_size() for o in _datasets(g[name]))
    assert got["structure_bytes"] + got["side_bytes"] == pytest.approx(want)


def _datasets(group):
    out = []
    group.visititems(lambda _, o: out.append(o) if isinstance(o, h5py.Dataset) else None)
    return out


@pytest.mark.parametrize("damage", ["count", "code", "shape", "missing"])
@pytest.mark.parametrize("tokens", [True, False])
def test_a_damaged_kind_index_is_a_corrupt_trace(tmp_path, damage, tokens):
    """``index/kind_counts`` and ``index/kind_codes``, which minitrace does not read (it counts
    kinds on the grammar) but a plain h5py user takes for the trace's counts: a count, a code,
    a shape changed or the counts missing are a one-line ``corrupt trace`` naming the file
    when it is opened (minitrace showed the grammar's counts, right, and said nothing)."""
    d = ring() if tokens else ring(blocks=2)
    assert (compress(d).tokens is not None) == tokens
    out = str(tmp_path / "t.h5")
    write_compressed(out, d, pack=False)
    with minitrace.open(out) as t:
        t.summary()
    with h5py.File(out, "r+") as f:
        g = f["trace/index"]
        codes, counts = g["kind_codes"][()], g["kind_counts"][()]
        del g["kind_counts"]
        if damage == "count":
            counts[-1, 0] += 1
        elif damage == "code":
            del g["kind_codes"]
            codes[codes == K.CODE["isend"]] = K.CODE["issend"]
            g["kind_codes"] = codes
        elif damage == "shape":
            counts = counts[:-1]
        if damage != "missing":
            g["kind_counts"] = counts
    with pytest.raises(MinitraceError, match="corrupt trace") as e:
        with minitrace.open(out) as t:
            t.summary()
    assert out in str(e.value) and "\n" not in str(e.value)
    assert ("missing" if damage == "missing" else "disagrees with the grammar") in str(e.value)
