"""Compressed files (issue 23): expand(compress(t)) is t bit for bit, the Trace API is the same
on both forms, summaries come from the grammar, model files keep the structure, totals and spans,
commands work, and damaged grammars are one-line errors."""
from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

import minitrace
from minitrace import MinitraceError, cli, storage
from tests.support import synthetic
from minitrace.compress.files import write_compressed
from minitrace.compress import pack as P
from minitrace.compress.pack import pack, unpack
from tests.test_compress_grammar import random_trace, repo_traces


def _same(a: np.ndarray, b: np.ndarray, what: str) -> None:
    """Equal bit for bit (NaN payloads, -0.0 included)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, what
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), what


def both_forms(tmp_path, data, volumes="exact"):
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(plain, data)
    write_compressed(str(packed), data, volumes)
    return plain, packed


@pytest.mark.parametrize("name,data", list(repo_traces()), ids=lambda x: x
                         if isinstance(x, str) else "")
def test_expand_compress_is_the_trace_bit_for_bit(tmp_path, name, data):
    plain, packed = both_forms(tmp_path, data)
    with minitrace.open(plain) as u, minitrace.open(packed) as c:
        assert c.compressed and not u.compressed
        a, b = u.data(), c.data()
        for f in a.actions.dtype.names:
            _same(a.actions[f], b.actions[f], f)
        _same(a.vectors, b.vectors, "vectors")
        _same(a.rank_offsets, b.rank_offsets, "rank offsets")
        assert a.strings == b.strings
        assert {k: v.tolist() for k, v in a.comms.items()} == \
            {k: v.tolist() for k, v in b.comms.items()}
        assert u.meta["volume_unit"] == c.meta["volume_unit"]
        pd.testing.assert_frame_equal(u.summary(), c.summary())
        pd.testing.assert_frame_equal(u.matrix(), c.matrix())
        for kind in ("send", "isend", "compute", "alltoallv", "waitall"):
            pd.testing.assert_frame_equal(u.actions(kind=kind), c.actions(kind=kind))
        for r in u.ranks:
            pd.testing.assert_frame_equal(u.actions(r), c.actions(r))
            n = len(a.actions[a.rank_slice(r)])
            for i in {0, n // 2, n - 1} - {-1}:
                _same(u.vector(r, i), c.vector(r, i), f"vector {r} {i}")
    # and the expand command writes the plain form back
    back = tmp_path / "back.h5"
    assert cli.main(["expand", str(packed), "-o", str(back)]) == 0
    with minitrace.open(back) as e, minitrace.open(plain) as u:
        assert not e.compressed
        for f in u.data().actions.dtype.names:
            _same(u.data().actions[f], e.data().actions[f], f)


@pytest.mark.parametrize("volumes", ["exact", "model"])
def test_a_slice_of_a_rank_expands_alone(tmp_path, volumes):
    d = synthetic.loop_trace(3, 30_000, True)
    plain, packed = both_forms(tmp_path, d, volumes)
    with minitrace.open(packed) as c:
        r = c._reader
        full, vec = r.rank(1)
        pieces = list(r.chunks(1, rows=777))
        for f in ("kind", "request", "volume", "t_start", "t_end"):
            np.testing.assert_allclose(np.concatenate([p[0][f] for p in pieces]), full[f],
                                       rtol=1e-12 if volumes == "model" else 0, err_msg=f)
        _same(np.concatenate([p[1] for p in pieces]), vec, "vectors")
        for lo, hi in ((0, 7), (4321, 4400), (9990, 10_000), (5, 5)):
            part, pvec = r.rank(1, lo, hi)
            for f in ("kind", "peer", "volume", "t_start", "t_end", "vec_len"):
                if volumes == "model" and f.startswith("t_"):   # sums in another order
                    np.testing.assert_allclose(part[f], full[f][lo:hi], rtol=1e-12, atol=0)
                else:
                    _same(part[f], full[f][lo:hi], f)
            n_before = int(full["vec_len"][:lo].sum())
            _same(pvec, vec[n_before:n_before + int(part["vec_len"].sum())], "vectors")
        # rows across ranks, as the column reader's read(lo, hi)
        a = r.read(9_995, 10_010)
        _same(a["kind"], d.actions["kind"][9_995:10_010], "kind")


def test_model_keeps_structure_totals_and_spans(tmp_path):
    d = synthetic.loop_trace(4, 20_000, True)
    d.actions["volume"] *= np.random.default_rng(1).uniform(0.5, 2.0, len(d.actions))
    plain, packed = both_forms(tmp_path, d, "model")
    with minitrace.open(plain) as u, minitrace.open(packed) as c:
        a, b = u.data(), c.data()
        for f in ("kind", "peer", "bytes_sent", "request", "vec_len"):
            _same(a.actions[f], b.actions[f], f)
        s, t = u.summary(), c.summary()
        np.testing.assert_array_equal(s["volume"], t["volume"])       # totals: exact
        np.testing.assert_array_equal(s["t_first"], t["t_first"])
        np.testing.assert_array_equal(s["t_last"], t["t_last"])
        for r in c.ranks:
            x, y = a.actions[a.rank_slice(r)], b.actions[b.rank_slice(r)]
            assert y["volume"].sum() == pytest.approx(x["volume"].sum(), rel=1e-9)
            assert (y["volume"][y["kind"] != 2] == x["volume"][x["kind"] != 2]).all()
            # modelled times: each rank's span is the recorded one, in order
            assert y["t_start"][0] == s["t_first"][r]
            assert y["t_end"][-1] == pytest.approx(s["t_last"][r], rel=1e-12)
            assert (np.diff(y["t_start"]) >= 0).all()


def test_an_untimed_trace_compressed_with_model_volumes_reopens(tmp_path):
    """A trace without timestamps has no times to model: its model-mode file is untimed and
    opens like any other (it was refused as an unknown time encoding)."""
    d = synthetic.ring_trace(2, 200)
    p = tmp_path / "m.h5"
    write_compressed(str(p), d, "model")
    with minitrace.open(p) as t:
        back = t.data()
    np.testing.assert_array_equal(back.actions["kind"], d.actions["kind"])
    assert np.isnan(back.actions["t_start"]).all()


def test_compress_command_and_loops(tmp_path, capsys):
    d = synthetic.ring_trace(4, 4 * 4002)
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    storage.write_trace(src, d)
    assert cli.main(["compress", str(src), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "16008 actions" in said and "bytes/action" in said and "M actions/s" in said
    assert cli.main(["info", str(out), "--loops"]) == 0
    said = capsys.readouterr().out
    assert "main loop: 1000 iterations of [isend, irecv, waitall, allreduce]" in said
    with minitrace.open(out) as t:
        loops = t.loops()
        assert loops["iterations"].tolist() == [1000] and loops["ranks"].tolist() == ["0-3"]


def test_only_the_compressed_form_is_written_as_a_newer_version(tmp_path):
    """Plain files stay version 1; a compressed file is 6 (its metadata packed), or 2 written
    unpacked (``compress --unpacked``) when it holds nothing of versions 3-5."""
    plain, packed, unpacked = tmp_path / "p.h5", tmp_path / "c.h5", tmp_path / "u.h5"
    storage.write_trace(plain, synthetic.ring_trace(2, 100))
    write_compressed(str(packed), synthetic.ring_trace(2, 100))
    write_compressed(str(unpacked), synthetic.ring_trace(2, 100), pack=False)
    with h5py.File(plain, "r") as f, h5py.File(packed, "r") as g, \
            h5py.File(unpacked, "r") as h:
        assert (f.attrs["format_version"], g.attrs["format_version"],
                h.attrs["format_version"]) == (1, 6, 2) == (
                    storage.PLAIN_VERSION, storage.PACKED_META_VERSION,
                    storage.COMPRESSED_VERSION)


def test_an_old_version_1_file_still_opens(tmp_path):
    p = tmp_path / "v1.h5"
    storage.write_trace(p, synthetic.ring_trace(2, 100))
    with h5py.File(p, "a") as f:
        f.attrs["format_version"] = 1
    with minitrace.open(p) as t:
        assert t.nactions == 100 and not t.compressed


def stored_pack(g) -> np.ndarray | None:
    """The pack's bytes of the ``/trace`` group ``g``: its attribute (small packs, pack.py),
    or its dataset; None when it has none."""
    if P.BYTES_ATTR in g.attrs:
        return np.frombuffer(P.inflate_inline(g.attrs[P.BYTES_ATTR].tobytes(),
                                              int(g.attrs[P.ATTR])), np.uint8)
    return g[P.DATASET][()] if P.DATASET in g else None


def store_pack(g, raw: np.ndarray) -> None:
    """The pack of the ``/trace`` group ``g`` replaced by ``raw``, as its dataset (either
    form reads)."""
    if P.BYTES_ATTR in g.attrs:
        del g.attrs[P.BYTES_ATTR]
    if P.DATASET in g:
        del g[P.DATASET]
    g.create_dataset(P.DATASET, data=raw)


def _stored(p, name: str) -> np.ndarray:
    """The array ``name`` (under /trace) of the compressed file ``p``: in its pack, or its own
    dataset (files written without a pack, and large arrays)."""
    with h5py.File(p, "r") as f:
        g = f["trace"]
        raw = stored_pack(g)
        arrays = unpack(raw) if raw is not None else {}
        return arrays[name] if name in arrays else g[name][()]


def _edited(p, name: str, edit) -> None:
    """``edit`` (in place) applied to the array ``name`` of ``p``, stored back as int64 where
    it was: the pack rewritten, or the dataset."""
    data = _stored(p, name).astype(np.int64)
    edit(data)
    with h5py.File(p, "a") as f:
        g = f["trace"]
        raw = stored_pack(g)
        arrays = unpack(raw) if raw is not None else {}
        if name in arrays:
            arrays[name] = data
            store_pack(g, pack(arrays))
        else:
            del g[name]
            g.create_dataset(name, data=data)


def _damaged(tmp_path, dataset: str, value, packed: bool = True) -> str:
    d = synthetic.ring_trace(4, 4 * 402)
    p = tmp_path / "c.h5"
    write_compressed(str(p), d, pack=packed)
    with h5py.File(p, "r") as f:
        assert (stored_pack(f["trace"]) is not None) == packed
    _edited(p, dataset, value)
    return str(p)


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("dataset,damage,why", [
    ("grammar/rule_symbols", lambda a: a.__setitem__(0, 10 ** 6), "outside"),
    ("grammar/rule_counts", lambda a: a.__setitem__(0, 2 ** 62), "beyond the limits"),
    ("grammar/top_symbols", lambda a: a.__setitem__(-1, -5), "outside"),
    ("grammar/rank_grammar", lambda a: a.__setitem__(0, 7), "grammar outside"),
    ("signatures/vec", lambda a: a.__setitem__(0, 99), "vector outside"),
    ("requests/offsets", lambda a: a.__setitem__(1, 10 ** 9), "request table"),
    ("exact/volume_offsets", lambda a: a.__setitem__(-1, 3), "volume index"),
])
def test_damaged_compressed_files_are_one_line_errors(tmp_path, dataset, damage, why, packed):
    p = _damaged(tmp_path, dataset, damage, packed)
    with pytest.raises(MinitraceError, match=f"corrupt trace: .*{why}"):
        with minitrace.open(p) as t:
            t.data()


@pytest.mark.parametrize("packed", [True, False])
def test_a_self_referencing_rule_is_refused(tmp_path, packed):
    p = _damaged(tmp_path, "grammar/rule_symbols", lambda a: None, packed)
    nterm = len(_stored(p, "signatures/kind"))
    last_rule = len(_stored(p, "grammar/rule_counts")) - 1
    # the last rule's body names itself: a cycle
    _edited(p, "grammar/rule_symbols", lambda syms: syms.__setitem__(-1, nterm + last_rule))
    with pytest.raises(MinitraceError, match="corrupt trace: .*cycle"):
        minitrace.open(p)


def test_random_structure_round_trips_through_a_file(tmp_path):
    for seed in range(3):
        d = random_trace(seed + 10, nranks=4, n=200)
        plain, packed = both_forms(tmp_path, d)
        with minitrace.open(plain) as u, minitrace.open(packed) as c:
            for f in u.data().actions.dtype.names:
                _same(u.data().actions[f], c.data().actions[f], f)


@pytest.mark.parametrize("volumes", ["exact", "model"])
def test_actions_of_some_iterations_on_both_forms(tmp_path, volumes):
    d = synthetic.stencil_trace(4, 50)
    plain, packed = both_forms(tmp_path, d, volumes)
    with minitrace.open(plain) as u, minitrace.open(packed) as c:
        its = minitrace.compress.loops(c)
        it = its[(its["rank"] == 2) & (its["iteration"].between(10, 12))]
        lo = int(it["first_row"].min() - d.rank_offsets[2])
        hi = int(it["last_row"].max() - d.rank_offsets[2]) + 1
        x, y = u.actions(2, rows=slice(lo, hi)), c.actions(2, rows=slice(lo, hi))
        assert list(x.index) == list(range(lo, hi)) == list(y.index)
        pd.testing.assert_frame_equal(x, u.actions(2).iloc[lo:hi])
        if volumes == "exact":
            pd.testing.assert_frame_equal(x, y)
        else:
            pd.testing.assert_frame_equal(x.drop(columns=["volume", "t_start", "t_end"]),
                                          y.drop(columns=["volume", "t_start", "t_end"]))
        assert (y["kind"].astype(str).tolist()[:11] ==
                ["irecv"] * 4 + ["isend"] * 4 + ["waitall", "compute", "allreduce"])


def test_a_grammar_standing_for_more_than_memory_is_refused_before_expanding(tmp_path):
    from minitrace.compress.store import compress, write
    from minitrace.model import TraceBuilder
    b = TraceBuilder(1)
    b.add(0, "init")
    for _ in range(1000):
        b.add(0, "barrier")
    b.add(0, "finalize")
    c = compress(b.build())
    assert c.grammar.rule_counts.tolist() == [1000]
    c.grammar.rule_counts[0] = 2 ** 40           # consistent everywhere: 2**40 barriers
    c.rank_offsets = np.array([0, 2 + 2 ** 40])
    p = tmp_path / "bomb.h5"
    write(str(p), c)
    with minitrace.open(p) as t:
        assert t.summary()["n_barrier"].tolist() == [2 ** 40]    # from the grammar alone
        with pytest.raises(MinitraceError, match="more than this machine's"):
            t.actions(0)
        assert len(t.actions(0, rows=slice(0, 5))) == 5
    p2 = subprocess_cli(["validate", str(p)])
    assert p2.returncode == 1 and p2.stderr.count("\n") == 1 and "GiB" in p2.stderr


def subprocess_cli(args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "minitrace", *args], capture_output=True,
                          text=True, timeout=300)


def test_pack_round_trips_every_kind_of_array():
    arrays = {"a/i8": np.array([-2 ** 62, 0, 5], np.int64), "a/u1": np.arange(7, dtype=np.uint8),
              "b/f4": np.array([1.5, np.nan, -np.inf], np.float32), "b/empty": np.zeros(0, np.int16),
              "c/m": np.arange(12, dtype=np.int32).reshape(3, 4),
              "c/big_endian": np.array([1, 2], ">i4")}
    back = unpack(pack(arrays))
    assert list(back) == list(arrays)
    for k, a in arrays.items():
        assert back[k].shape == a.shape and back[k].dtype.kind == a.dtype.kind
        assert np.array_equal(back[k], a, equal_nan=True), k


@pytest.mark.parametrize("volumes", ["exact", "model", "bounded:1%"])
def test_packed_and_unpacked_files_read_the_same(tmp_path, volumes):
    """A file with the pack and one written as before it (each array its own dataset): the
    same trace back, bit for bit; the pack holds every small array (one dataset for them)."""
    d = synthetic.ring_trace(4, 4 * 402)
    new, old = tmp_path / "new.h5", tmp_path / "old.h5"
    write_compressed(str(new), d, volumes, pack=True)
    write_compressed(str(old), d, volumes, pack=False)
    with h5py.File(new, "r") as f, h5py.File(old, "r") as g:
        assert f["trace"].attrs["packed"] == P.VERSION >= 4 and "packed" not in g["trace"].attrs
        assert set(f["trace"]) == set() and P.BYTES_ATTR in f["trace"].attrs   # (small)
        assert {"comms", "strings"} <= set(g["trace"])
        assert "grammar" in g["trace"] and "packed" not in g["trace"]
    with minitrace.open(new) as a, minitrace.open(old) as b:
        x, y = a.data(), b.data()
        for f in x.actions.dtype.names:
            assert np.array_equal(np.ascontiguousarray(x.actions[f]).view(np.uint8),
                                  np.ascontiguousarray(y.actions[f]).view(np.uint8)), f
        if volumes == "exact":
            assert np.array_equal(x.actions["volume"], d.actions["volume"])
        assert a.summary().equals(b.summary())
    assert new.stat().st_size < old.stat().st_size


@pytest.mark.parametrize("damage,why", [
    (lambda g: g.attrs.__setitem__("packed", P.VERSION + 1),
     f"pack version {P.VERSION + 1} unknown"),
    (lambda g: g.attrs.__setitem__("packed", 2), "trace@packed_bytes in a pack of version 2"),
    (lambda g: _as_dataset(g, packed=2), "trace/attrs packed in a pack of version 2"),
    (lambda g: _edit_packed(g, "attrs", np.frombuffer(b'{"volumes": "exa', np.uint8)),
     "trace/attrs is not JSON"),
    (lambda g: _edit_packed(g, "attrs", np.frombuffer(b'["volumes"]', np.uint8)),
     "trace/attrs is not a JSON object"),
    (lambda g: _edit_packed(g, "attrs", np.frombuffer(b'{"volumes": ["exact"]}', np.uint8)),
     "trace/attrs is not an object of text, numbers and booleans"),
    (lambda g: _edit_packed(g, "attrs", np.array([1, 2], np.int16)),
     "trace/attrs is not bytes"),
    (lambda g: g.attrs.__setitem__("volumes", "exact"),
     "trace attribute volumes both packed and an attribute"),
    (lambda g: _as_dataset(g, packed=1), "comms/ids packed in a pack of version 1"),
    (lambda g: _edit_packed(g, "strings", np.frombuffer(b'["a", 1]', np.uint8)),
     "strings is not a JSON list of strings"),
    (lambda g: _edit_packed(g, "strings", np.frombuffer(b'["a"', np.uint8)),
     "strings is not a JSON list of strings"),
    (lambda g: _edit_packed(g, "comms/members", np.array([0, 1, 9], np.int32)),
     "communicator table inconsistent"),
    (lambda g: g.create_dataset("strings", data=np.array([b"x"])),
     "strings is both packed and a dataset"),
    (lambda g: _rewrite_pack(g, lambda raw: raw[:-3]), "longer than|beyond"),
    (lambda g: _rewrite_pack(g, lambda raw: np.concatenate([raw, [0]])), "longer than"),
    (lambda g: _rewrite_pack(g, lambda raw: np.concatenate([[255, 255, 255, 255], raw[4:]])),
     "index beyond"),
    (lambda g: _rewrite_pack(g, _first_type_edit), "not allowed|malformed"),
    (lambda g: _rewrite_pack(g, lambda raw: P.pack({k.replace("signatures/kind", "x/kinx"): v
                                                    for k, v in P.unpack(raw).items()})),
     "signatures/kind missing"),
    (lambda g: g.attrs.__delitem__(P.BYTES_ATTR), "trace/packed missing"),
    (lambda g: g.attrs.__setitem__(P.BYTES_ATTR, np.frombuffer(b"x", np.uint8)),
     "trace@packed_bytes is not deflated"),
    (lambda g: g.attrs.__setitem__(P.BYTES_ATTR, np.zeros(3, np.int16)),
     "trace@packed_bytes is not bytes"),
    (lambda g: g.create_dataset(P.DATASET, data=stored_pack(g)),
     f"trace@packed_bytes in a pack of version {P.VERSION} or beside /trace/packed"),
    (lambda g: _widened_pack(g), "packed is uint16, not bytes"),
    (lambda g: g.create_dataset("signatures/kind", data=np.zeros(3, np.uint8)),
     "signatures/kind is both packed and a dataset"),
])
def test_damaged_pack_is_a_one_line_error(tmp_path, damage, why):
    p = tmp_path / "c.h5"
    write_compressed(str(p), synthetic.ring_trace(4, 4 * 402))
    with h5py.File(p, "a") as f:
        damage(f["trace"])
    with pytest.raises(MinitraceError, match=f"corrupt trace: .*({why})"):
        with minitrace.open(p) as t:
            t.data()


def set_trace_attr(f: h5py.File, name: str, value) -> None:
    """Set ``/trace``'s attribute ``name`` where the file keeps it: in the pack (pack version
    3) or as an attribute (a damage the tests of other modules make)."""
    g = f["trace"]
    raw = stored_pack(g)
    arrays = P.unpack(raw) if raw is not None else {}
    if P.ATTRS not in arrays:
        g.attrs[name] = value
        return
    attrs = json.loads(arrays[P.ATTRS].tobytes())
    attrs[name] = value
    arrays[P.ATTRS] = np.frombuffer(json.dumps(attrs).encode(), np.uint8)
    store_pack(g, P.pack(arrays))


def _edit_packed(g, name: str, value: np.ndarray) -> None:
    """The pack with one array replaced."""
    arrays = unpack(stored_pack(g))
    assert name in arrays
    arrays[name] = value
    store_pack(g, pack(arrays))


def _as_dataset(g, **attrs) -> None:
    """The pack as its dataset (as a pack too large for the attribute is), with ``attrs``
    (its index of the pack version they say)."""
    store_pack(g, P.pack(unpack(stored_pack(g)), attrs.get("packed")))
    g.attrs.update(attrs)


def _widened_pack(g) -> None:
    """The pack's bytes stored as uint16 (each byte a wider number: would be narrowed)."""
    store_pack(g, stored_pack(g).astype(np.uint16))


def _rewrite_pack(g, edit) -> None:
    store_pack(g, edit(stored_pack(g)).astype(np.uint8))


def _first_type_edit(raw):
    """The pack with its index's first type byte (after the first name's step, pack version
    5) one of no type."""
    b = bytearray(raw.tobytes())
    b[5] = 0xF8
    return np.frombuffer(bytes(b), np.uint8)


def test_a_packed_nan_volume_total_is_refused(tmp_path):
    """A model's float arrays in the pack: a NaN total is refused as a NaN is in a dataset
    (tests/test_damage.py, unpacked)."""
    p = tmp_path / "m.h5"
    write_compressed(str(p), synthetic.ring_trace(4, 4 * 402), "model")
    with h5py.File(p, "a") as f:
        arrays = unpack(stored_pack(f["trace"]))
        arrays["model/volume_totals"][0] = np.nan
        store_pack(f["trace"], pack(arrays))
    with pytest.raises(MinitraceError, match="corrupt trace: .*holds nan"):
        with minitrace.open(p) as t:
            t.data()


FIXTURES = Path(__file__).parent / "data" / "compressed_pack1"


@pytest.mark.parametrize("volumes", ["exact", "model"])
def test_pack_version_1_files_are_read(tmp_path, volumes):
    """Files of pack version 1 (written by 260110's code, tests/data/compressed_pack1: the
    communicator and string tables as datasets, text attributes variable-length, a model's
    time statistics as floats) read as the same trace compressed by this code (pack version
    2: the tables in the pack, text attributes fixed-length, the statistics as log codes),
    bit for bit but a model's times, which the codes keep within the precision (1%), and its
    volumes (the fixture's drawn from its spread's float quantiles; none drawn since session
    18, and since session 19 the tail holds other calls: each of both within 2.6% of the
    recorded volume on this trace, so within 5% of each other)."""
    d = synthetic.stencil_trace(3, 12, timed=True, seed=0)
    d.strings = ["solve", "région"]
    old, new = FIXTURES / f"stencil3-{volumes}.h5", tmp_path / "new.h5"
    write_compressed(str(new), d, volumes)
    with h5py.File(old, "r") as f, h5py.File(new, "r") as g:
        assert f["trace"].attrs["packed"] == 1 and {"comms", "strings"} <= set(f["trace"])
        assert isinstance(f.attrs["format"], str) and isinstance(g.attrs["format"], bytes)
        assert g["trace"].attrs["packed"] == P.VERSION and set(g["trace"]) == set()
        if volumes == "model":
            was, now = unpack(f["trace/packed"][()], 1), unpack(stored_pack(g["trace"]))
            assert was["model/stats/mean"].dtype == np.float32 and "model/stats/mean" not in now
            assert now["model/stats/mean_code"].dtype.kind == "i"
            assert was["model/spread"].dtype == np.float32 and "model/spread" not in now
            assert now["model/spread_code"].dtype.kind == "i"
    with minitrace.open(old) as a, minitrace.open(new) as b:
        x, y = a.data(), b.data()
        assert a.meta["volume_unit"] == b.meta["volume_unit"] == "seconds"
        for f in x.actions.dtype.names:
            if volumes == "model" and f in ("t_start", "t_end", "volume"):
                rtol = 0.05 if f == "volume" else 0.02
                assert np.allclose(x.actions[f], y.actions[f], rtol=rtol, atol=0), f
                assert not np.array_equal(x.actions[f], y.actions[f])     # (the codes read)
                continue
            assert np.array_equal(np.ascontiguousarray(x.actions[f]).view(np.uint8),
                                  np.ascontiguousarray(y.actions[f]).view(np.uint8)), f
        assert x.strings == y.strings == d.strings
        assert x.comms.keys() == y.comms.keys() == d.comms.keys()
        assert all(np.array_equal(x.comms[k], y.comms[k]) for k in d.comms)
        if volumes == "exact":
            assert np.array_equal(y.actions["volume"], d.actions["volume"])


def test_tables_too_big_for_the_pack_are_datasets(tmp_path):
    """A string table beyond the pack's 64 KiB: the communicator and string tables stay
    datasets (as in pack version 1), read back the same."""
    d = synthetic.ring_trace(4, 4 * 402)
    d.strings = [f"région {i:06d} " + "x" * 40 for i in range(2000)]
    p = tmp_path / "s.h5"
    write_compressed(str(p), d)
    with h5py.File(p, "r") as f:
        assert {"comms", "strings"} <= set(f["trace"]) and stored_pack(f["trace"]) is not None
        assert f["trace"].attrs["packed"] == P.VERSION
    with minitrace.open(p) as t:
        back = t.data()
    assert back.strings == d.strings and back.comms.keys() == d.comms.keys()


@pytest.mark.parametrize("many", [False, True])
def test_a_nul_in_a_name_reads_back_as_in_the_plain_file(tmp_path, many):
    """A NUL inside a name (a damaged source): the plain file and the dataset form store
    U+FFFD (HDF5 strings end at a NUL); the pack's JSON kept the NUL, so the same trace read
    back differently as its table fitted the pack or not."""
    d = synthetic.ring_trace(4, 40)
    d.strings = ["a\0b"] + ([f"name {i:06d} " + "x" * 40 for i in range(2000)] if many else [])
    plain, packed = tmp_path / "p.h5", tmp_path / "c.h5"
    storage.write_trace(str(plain), d)
    write_compressed(str(packed), d)
    with minitrace.open(plain) as a, minitrace.open(packed) as b:
        assert a.data().strings == b.data().strings
        assert b.data().strings[0] == "a\ufffdb"


def test_a_timed_trace_with_an_empty_rank_reads_back(tmp_path):
    """A rank without actions has no first and last time (NaN, as the column form's summary
    says): compress wrote such files in every mode and its reader refused them as corrupt."""
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for i in range(5):
        b.add(0, "compute", volume=1e-3, t_start=float(i), t_end=i + 0.5)
    data = b.build()
    for volumes, times in (("exact", "exact"), ("model", "exact"),
                           ("bounded:1%", "bounded:1us")):
        out = tmp_path / f"{volumes[:5]}.h5"
        write_compressed(str(out), data, volumes, times=times)
        with minitrace.open(str(out)) as t:
            got = t.data()
        assert list(np.diff(got.rank_offsets)) == [5, 0]
        if volumes == "exact":
            for f in ("volume", "t_start", "t_end"):
                assert (got.actions[f] == data.actions[f]).all()


def test_packs_above_32_kib_are_deflated_below_level_9():
    """Level 9 only for a pack of at most a byte per action and 32 KiB (session 19: a model's
    121 KB pack took 26 ms at level 9, 4.2 at level 7, for 0.9% of it); above 8 bytes per
    action, level 4."""
    from minitrace.compress import store as ST
    big = 10 ** 7                                        # (actions: a byte per action is far)
    assert ST._pack_level(ST.PACK_LEVEL9_BYTES, big) == ST.PACK_GZIP_LEVEL == 9
    assert ST._pack_level(ST.PACK_LEVEL9_BYTES + 1, big) == ST.PACK_GZIP_LEVEL_LARGE
    assert ST._pack_level(1000, 999) == ST.PACK_GZIP_LEVEL_LARGE
    assert ST._pack_level(9000, 1000) == ST.PACK_GZIP_LEVEL_NOISY
