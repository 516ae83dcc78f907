"""Packed metadata (format version 6, issue 38): a compressed file keeps its root attributes
but ``format`` and ``format_version`` and its provenance in one deflated root attribute
(``packed_meta``), and ``/trace``'s attributes but ``form`` and ``packed`` in its pack: every
one reads back as the same file written unpacked gives it (``minitrace.open(...).meta``,
``read_provenance``, ``info``, ``expand``), older readers refuse such a file as newer, and a
damaged one is a one-line error."""
from __future__ import annotations

import json
import subprocess
import sys
import zlib

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import cli, provenance, storage
from minitrace.compress import context_rans as CR
from minitrace.compress import epochs as E
from minitrace.compress import pack as P
from minitrace.compress import store as ST
from minitrace.compress.files import content_meta, write_compressed
from minitrace.storage import read_provenance
from tests.support import synthetic
from tests.test_compress_bounded import _timed_stencil
from tests.support.versions import assert_refused_as_newer

_MODES = {"exact": ("exact", "exact"), "bounded": ("bounded:1%", "bounded:1us"),
          "model": ("model", "exact")}
#: Metadata of every kind a recording or a user gives (lists and dicts as JSON text, text
#: that looks like JSON but is not, numpy scalars, an array, which stays an attribute).
_META = {"command_line": "mpiexec -n 4 ./a.out --x 1", "hosts": ["n0", "n1"],
         "rank_to_node": [0, 0, 1, 1], "complete": True, "aborted": False,
         "in_mpi_seconds": [[0.1, 0.2]] * 4, "note": "[not json", "brace": "{x",
         "unicode": "région ✓", "empty": "", "count": np.int32(7), "ratio": np.float32(0.1),
         "flag": np.bool_(True), "big": 2 ** 62, "inf": float("inf"), "source": {"a": [1, 2]},
         "shape": np.array([3, 4], np.int64)}
_DYNAMIC = {"command_line": "minitrace compress in.h5 -o out.h5", "cwd": "/tmp/é",
            "date": "2026-11-29T00:00:00+00:00",
            "environment": {"UCX_TLS": "rc", "FI_PROVIDER": "[tcp"}}


@pytest.fixture
def fixed_provenance(monkeypatch):
    """The same provenance for every write (the date and command line would differ)."""
    monkeypatch.setattr(provenance, "_dynamic", lambda: dict(_DYNAMIC))


def _trace():
    d = synthetic.ring_trace(4, 4 * 402)
    d.meta.update(_META)
    return d


def _version(path, mode: str) -> int:
    """The format version a file of ``mode`` must say: a model's 11 where its templates are
    of the stretches between anchors, else 10 (which of the two fits a small trace keeps is
    the fit's choice, epochs.fit, not the writer's), the others' 6."""
    if mode != "model":
        return storage.PACKED_META_VERSION
    with minitrace.open(path) as t:
        units = E.TEMPLATE_UNIT_OFFSETS in t.compressed_form.side
    return storage.TEMPLATE_UNITS_VERSION if units else storage.SIZE_SITES_VERSION


def _pair(tmp_path, mode: str, data=None):
    """(packed, unpacked) files of ``data`` (default: :func:`_trace`'s) in ``mode``."""
    packed, unpacked = tmp_path / "packed.h5", tmp_path / "unpacked.h5"
    volumes, times = _MODES[mode]
    write_compressed(str(packed), data or _trace(), volumes, times=times)
    write_compressed(str(unpacked), data or _trace(), volumes, times=times, pack=False)
    return packed, unpacked


def _same_meta(a: dict, b: dict) -> None:
    """Equal metadata but what says who wrote it when (and the array, compared apart)."""
    skip = ("created", "format_version", "shape")
    assert list(a) == list(b)
    assert {k: v for k, v in a.items() if k not in skip} == \
        {k: v for k, v in b.items() if k not in skip}
    assert np.array_equal(a["shape"], b["shape"])


@pytest.mark.parametrize("mode", list(_MODES))
def test_every_attribute_and_provenance_item_reads_back_as_unpacked(tmp_path, mode,
                                                                     fixed_provenance):
    packed, unpacked = _pair(tmp_path, mode)
    with h5py.File(packed, "r") as f:
        assert sorted(f.attrs) == ["format", "format_version", storage.META_ATTR, "shape"]
        assert set(f) == {"trace"} and set(f["trace"]) == set()       # (the pack inline)
        assert sorted(f["trace"].attrs) == ["form", "packed", P.BYTES_ATTR]
    with minitrace.open(packed) as a, minitrace.open(unpacked) as b:
        _same_meta(a.meta, b.meta)
        assert a.meta["format_version"] == _version(packed, mode) >= \
            storage.PACKED_META_VERSION
        assert a.meta["note"] == "[not json" and a.meta["source"] == {"a": [1, 2]}
        assert a.meta["count"] == 7 and a.meta["ratio"] == float(np.float32(0.1))
        x, y = a.compressed_form.attrs, b.compressed_form.attrs
        assert list(x) == sorted(x) and list(y) == sorted(y)
        assert {k: v for k, v in x.items() if k != "packed"} == y
        assert a.data().actions.tobytes() == b.data().actions.tobytes()
    pa, pb = read_provenance(str(packed)), read_provenance(str(unpacked))
    assert pa == pb and list(pa) == list(pb)
    assert pa["environment"] == _DYNAMIC["environment"] and pa["cwd"] == "/tmp/é"
    assert pa.get("lstopo_xml") == provenance._static().get("lstopo_xml")


def test_info_shows_the_same_metadata_and_provenance(tmp_path, fixed_provenance, capsys):
    packed, unpacked = _pair(tmp_path, "model")
    out = []
    for p in (packed, unpacked):
        assert cli.main(["info", str(p)]) == 0
        text = capsys.readouterr().out.replace(str(p), "FILE")
        out.append([ln for ln in text.splitlines() if "created" not in ln])
    assert out[0][0] == out[1][0] == f"FILE: minitrace format {_version(packed, 'model')}"
    assert out[0][1:] == out[1][1:]
    assert any(_DYNAMIC["command_line"] in ln for ln in out[0])


def test_expand_gives_a_plain_file_of_the_same_metadata(tmp_path):
    packed, _ = _pair(tmp_path, "bounded")
    back = tmp_path / "back.h5"
    assert cli.main(["expand", str(packed), "-o", str(back)]) == 0
    with minitrace.open(packed) as a, minitrace.open(back) as b:
        _same_meta(content_meta(a.meta), content_meta(b.meta))
        assert b.meta["format_version"] == storage.PLAIN_VERSION
    with h5py.File(back, "r") as f:
        assert storage.META_ATTR not in f.attrs and provenance.GROUP in f
    assert read_provenance(str(back))["command_line"] != ""


def test_a_trace_read_from_a_file_is_written_with_this_files_identity(tmp_path):
    """A trace read from a plain file carries that file's ``format_version`` (1) in its
    metadata; written compressed through the API (``store.write``), the file said version 1,
    so its packed metadata (volume unit, hosts, ...) were never read back (session 19)."""
    plain, out = tmp_path / "plain.h5", tmp_path / "model.h5"
    storage.write_trace(str(plain), _trace())
    with minitrace.open(plain) as t:
        data = t.data()
    assert data.meta["format_version"] == storage.PLAIN_VERSION
    ST.write(str(out), ST.compress(data, "model"))
    with minitrace.open(out) as t:
        assert t.meta["format_version"] >= storage.PACKED_META_VERSION
        _same_meta(content_meta(t.meta), content_meta(data.meta))


def test_adding_to_a_packed_file_keeps_its_metadata(tmp_path, fixed_provenance):
    """A read-modify-write (``updating``: a benchmark suite added) unpacks the metadata into
    attributes and stores its own provenance as ``/provenance``."""
    packed, _ = _pair(tmp_path, "exact")
    with minitrace.open(packed) as t:
        before = t.meta
    storage.write_bench(str(packed), "s", {"x": np.arange(3)})
    with minitrace.open(packed) as t:
        _same_meta(t.meta, before)
        assert t.meta["created"] == before["created"] and t.suites == ["s"]
        assert t.nactions == 4 * 402
    with h5py.File(packed, "r") as f:
        assert storage.META_ATTR not in f.attrs and provenance.GROUP in f
    assert read_provenance(str(packed))["cwd"] == _DYNAMIC["cwd"]


def test_older_readers_refuse_packed_files_as_newer(tmp_path):
    packed, unpacked = _pair(tmp_path, "exact")
    assert assert_refused_as_newer(packed) == 6
    with minitrace.open(unpacked) as t:
        assert t.meta["format_version"] == storage.COMPRESSED_VERSION


@pytest.mark.parametrize("mode,packed_version,unpacked_version",
                         [("exact", 6, 2), ("bounded", 15, 15), ("model", None, None),
                          ("model", 11, 11)])
def test_packed_files_are_version_6_but_context_coded_and_model_ones(
        tmp_path, monkeypatch, mode, packed_version, unpacked_version):
    """Packed metadata is version 6 whatever else the file holds (a version 6 reader reads
    all of versions 2-5) but context-coded arrays (bounded, of any length here: arrays of the
    adaptive context coder, 15) and model files, version 9 (15) and 10 or 11 packed or not
    (session 21: a second window per context;
    session 23: model time statistics per call site with sizes apart; session 24: templates
    of the stretches between anchors, which the fit keeps here or not: version 11 where only
    those are fitted); unpacked, the version of what it holds."""
    monkeypatch.setattr(ST, "CONTEXT_MIN", 64)
    monkeypatch.setattr(CR, "MIN_VALUES", 16)
    if packed_version == 11:
        monkeypatch.setattr(E, "BOTH_UP_TO", 0)
    packed, unpacked = _pair(tmp_path, mode, _timed_stencil(200))
    if packed_version is None:  # (10 or 11 by the fit's templates, each file the same)
        packed_version = unpacked_version = _version(packed, mode)
        assert _version(unpacked, mode) == packed_version
    with h5py.File(packed, "r") as f, h5py.File(unpacked, "r") as g:
        assert f.attrs["format_version"] == packed_version
        assert g.attrs["format_version"] == unpacked_version
        assert f["trace"].attrs["packed"] == P.VERSION


def test_a_pack_too_large_for_an_attribute_is_a_dataset(tmp_path, monkeypatch):
    """Packs deflated beyond pack.ATTR_MAX_BYTES stay a dataset, /trace/packed or (a model's,
    where smaller) /trace/packed_lzma (an attribute would move /trace's to a heap): the same
    trace and attributes back."""
    small = tmp_path / "small.h5"
    write_compressed(str(small), _trace(), "model")
    monkeypatch.setattr(P, "ATTR_MAX_BYTES", 0)
    large, _ = _pair(tmp_path, "model")
    with h5py.File(large, "r") as f:
        assert len({P.DATASET, ST.LZMA_DATASET} & set(f["trace"])) == 1
        assert P.BYTES_ATTR not in f["trace"].attrs
    with minitrace.open(small) as a, minitrace.open(large) as b:
        assert a.compressed_form.attrs == b.compressed_form.attrs
        assert a.data().actions.tobytes() == b.data().actions.tobytes()
    assert large.stat().st_size > small.stat().st_size


def test_no_heap_or_hole_beside_large_arrays(tmp_path):
    """Arrays too large for the pack (requests/new, exact/t_gap, t_duration of 64 k actions)
    leave no 4 KB global heap (requests/new's encoding, a variable-length string) and no
    unused end of HDF5's 2 KB block for small raw data between two headers (~1.9 KB): no run
    of 1 KB of zeros in the file."""
    p = tmp_path / "e.h5"
    write_compressed(str(p), _timed_stencil(2000), "exact")
    with h5py.File(p, "r") as f:
        assert {"new", "exact"} <= set(f["trace/requests"]) | set(f["trace"])
        assert {"t_gap", "t_duration"} <= set(f["trace/exact"])
        assert f["trace/requests/new"].attrs["encoding"] == b"delta-per-rank"
    raw = p.read_bytes()
    assert b"GCOL" not in raw and b"\0" * 1024 not in raw
    with minitrace.open(p) as t:
        assert t.nactions == len(_timed_stencil(2000).actions)


def test_an_older_files_attribute_of_that_name_is_its_own(tmp_path):
    p = tmp_path / "p.h5"
    storage.write_trace(p, synthetic.ring_trace(2, 100), meta={storage.META_ATTR: "mine"})
    with minitrace.open(p) as t:
        assert t.meta[storage.META_ATTR] == "mine"


def _deflated(raw: bytes, zdict: bytes = provenance.PACK_DICTIONARY) -> bytes:
    z = zlib.compressobj(9, zdict=zdict)
    return z.compress(raw) + z.flush()


def _blob(f) -> dict:
    z = zlib.decompressobj(zdict=provenance.PACK_DICTIONARY)
    return json.loads(z.decompress(f.attrs[storage.META_ATTR].tobytes()))


def _set_blob(f, value, raw: bytes | None = None) -> None:
    raw = _deflated(json.dumps(value).encode()) if raw is None else raw
    f.attrs[storage.META_ATTR] = np.frombuffer(raw, np.uint8)


def test_the_dictionary_is_the_formats():
    """The preset dictionary is part of format version 6: an edit would make every file
    written with it unreadable (it needs a new format version)."""
    assert zlib.adler32(provenance.PACK_DICTIONARY) == provenance.PACK_DICTIONARY_ADLER32
    assert len(provenance.PACK_DICTIONARY) <= 32768          # (deflate's window)


def _edited(f, edit) -> None:
    b = _blob(f)
    edit(b)
    _set_blob(f, b)


def _mt(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minitrace", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("damage,why", [
    (lambda f: _set_blob(f, None, b"not deflated"), "packed_meta) is not deflated JSON"),
    (lambda f: _set_blob(f, None, _deflated(b'{"attrs": {}}', b"another dictionary")),
     "packed_meta) is not deflated JSON"),
    (lambda f: _set_blob(f, None, _deflated(b'{"attrs": {}}')[:-2]),
     "packed_meta) is not deflated JSON"),
    (lambda f: f.attrs.__setitem__(storage.META_ATTR, np.zeros(4)), "packed_meta) is not bytes"),
    (lambda f: _set_blob(f, ["attrs"]), "packed_meta) is not a JSON object"),
    (lambda f: _edited(f, lambda b: b.update(more=1)), "holds other than attrs and provenance"),
    (lambda f: _edited(f, lambda b: b["attrs"].update(hosts=["n0"])),
     "attrs is not an object of text, numbers and booleans"),
    (lambda f: _edited(f, lambda b: b["attrs"].update(format="minitrace")), "holds format"),
    (lambda f: f.attrs.__setitem__("volume_unit", "seconds"),
     "root attribute volume_unit both packed and an attribute"),
    (lambda f: _edited(f, lambda b: b["provenance"].update(cpu=None)),
     "provenance is not an object of text"),
    (lambda f: _edited(f, lambda b: b["provenance"].update(lstopo_xml=3)),
     "lstopo_xml is not text"),
    (lambda f: _edited(f, lambda b: b["provenance"].update(cpu='"x"')), "cpu is not a dict"),
    (lambda f: f.create_group(provenance.GROUP), "both /provenance and packed"),
])
def test_damaged_packed_metadata_is_a_one_line_error(tmp_path, damage, why):
    packed, _ = _pair(tmp_path, "model")
    with h5py.File(packed, "a") as f:
        damage(f)
    p = _mt("info", packed)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 1 and len(lines) == 1 and lines[0].startswith(
        "minitrace: error:"), (p.returncode, p.stderr)
    assert why in lines[0] and "corrupt" in lines[0], lines[0]
