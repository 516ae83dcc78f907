"""Context coding version 6 (format version 14): bounded volume codes in contexts of their call
site's previous value, coded lane by lane so that the decoder knows that value first.  Any
values round-trip in it (the cases of version 5), damaged bytes are refused, a trace whose
compute times drift is written in it (smaller than version 5, within its bounds) and a
version 13 reader refuses the file as newer; arrays that are not levels keep version 5."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import storage
from minitrace.compress import context_rans as CR
from minitrace.compress import pack as P
from minitrace.compress.files import write_compressed
from tests.support.synthetic_loops import stencil
from tests.support.versions import assert_refused_as_newer
from tests.test_compress_bounded import _check_bounds
from tests.test_compress_context import _case
from tests.test_compress_store import stored_pack

_CASES = ("empty", "one value", "one symbol per context", "codes of volumes", "huge codes",
          "small contexts pooled", "negative keys", "two modes")


def _six(monkeypatch):
    """Every array coded by version 6 (whatever its values and size)."""
    monkeypatch.setattr(CR, "_levels", lambda values: len(values) > 0)
    monkeypatch.setattr(CR, "_size", lambda t: -t["version"])


@pytest.mark.parametrize("name", _CASES)
def test_any_values_round_trip_in_version_6(monkeypatch, name):
    _six(monkeypatch)
    values, fine, coarse = _case(name)
    blob = CR.encode(values, fine, coarse)
    assert CR.version_of(blob) == (6 if len(values) else 5)
    assert np.array_equal(CR.decode(blob, fine, coarse), values)


def test_escaped_rests_in_the_order_of_the_rows(monkeypatch):
    """Escaped values in several lanes at different rows: their rests read row by row, as the
    decoder needs them for the next values' contexts (in value order they would decode to
    other values)."""
    _six(monkeypatch)
    rng = np.random.default_rng(8)
    n = 30_000
    coarse = rng.integers(0, 4, n)
    values = (1 << 20) + 50 * coarse + rng.integers(-20, 20, n)
    big = rng.random(n) < 0.05
    values[big] += rng.integers(1 << 12, 1 << 40, int(big.sum()))
    blob = CR.encode(values, coarse * 5 + 1, coarse)
    assert CR.version_of(blob) == 6 and np.frombuffer(blob[16:20].tobytes(), "<u4")[0] > 0
    assert np.array_equal(CR.decode(blob, coarse * 5 + 1, coarse), values)


def _drifting(n: int, sites: int, seed: int):
    """Log codes of compute times that drift (a random walk per site) with 1% noise."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, sites, n)
    walk = np.cumsum(rng.normal(0, 3, (n, sites)), axis=0)[np.arange(n), coarse]
    values = (1 << 20) + 200 * coarse + walk.astype(np.int64) + rng.integers(-2, 3, n)
    return values, coarse * (sites + 1) + 1, coarse


def test_drifting_levels_take_version_6_where_smaller(monkeypatch):
    """Values that drift: version 6 written, smaller than version 5's coding of them (which
    the coder writes without version 6), and decoded back; the same coder on values that do
    not drift (white noise about each site's level) keeps version 5."""
    values, fine, coarse = _drifting(40_000, 3, 2)
    six = CR.encode(values, fine, coarse)
    assert CR.version_of(six) == 6
    assert np.array_equal(CR.decode(six, fine, coarse), values)
    rng = np.random.default_rng(3)
    flat = (1 << 20) + 200 * coarse + rng.integers(-40, 40, len(coarse))
    assert CR.version_of(CR.encode(flat, fine, coarse)) == 5
    monkeypatch.setattr(CR, "VERSION", 5)
    five = CR.encode(values, fine, coarse)
    assert CR.version_of(five) == 5 and len(six) < 0.8 * len(five)


def test_damaged_version_6_refused(monkeypatch):
    """Any byte of a version 6 array changed: refused (CodeError), never other values (a
    shift of keys that have no table, as the coarse ones here, may decode the same)."""
    _six(monkeypatch)
    values, fine, coarse = _drifting(5_000, 4, 5)
    blob = CR.encode(values, fine, coarse)
    rng = np.random.default_rng(1)
    refused = 0
    places = np.unique(np.concatenate([np.arange(44), rng.integers(0, len(blob), 300)]))
    for at in places:
        bad = blob.copy()
        bad[at] ^= np.uint8(1 << int(rng.integers(0, 8)))
        try:
            back = CR.decode(bad, fine, coarse)
        except CR.R.CodeError:
            refused += 1
            continue
        assert np.array_equal(back, values), at
    assert refused >= len(places) - 2


def _drifting_stencil(iterations: int = 1500, nranks: int = 4):
    """A timed stencil whose computes' times drift (each rank's and site's a random walk of
    ~3% a step about its size) with 1% noise, as recorded."""
    data, _ = stencil(nranks, iterations, seed=3)
    rng = np.random.default_rng(4)
    a = data.actions
    for r in range(data.nranks):
        sl = data.rank_slice(r)
        v = a["volume"][sl]
        for site in np.unique(v[v > 0]).tolist():        # (the two computes' sizes)
            rows = np.flatnonzero(v == site)
            v[rows] = site * np.exp(np.cumsum(rng.normal(0, 0.03, len(rows)))) * \
                (1 + rng.normal(0, 0.01, len(rows)))
        a["volume"][sl] = v
        dur = v + rng.exponential(3e-6, len(v))
        end = 10.0 + np.cumsum(dur + rng.exponential(1e-7, len(dur)))
        a["t_start"][sl], a["t_end"][sl] = end - dur, end
    return data


def _stored_volume_codes(path):
    with h5py.File(path, "r") as f:
        raw = stored_pack(f["trace"])
        packed = P.unpack(raw) if raw is not None else {}
        blob = packed.get("exact/volume.ctx")
        return blob if blob is not None else f["trace/exact/volume.ctx"][()]


def test_bounded_file_of_drifting_computes_in_version_14(tmp_path, monkeypatch):
    """A bounded file of computes whose times drift holds its volume codes in context coding
    version 6: format version 14, every value within its bound, smaller than the file of
    version 5's coding; a version 13 reader refuses it as newer."""
    data = _drifting_stencil()
    plain, new, old = (tmp_path / f"{x}.h5" for x in ("plain", "new", "old"))
    storage.write_trace(str(plain), data)
    write_compressed(str(new), data, "bounded:1%", times="bounded:1us")
    assert CR.version_of(_stored_volume_codes(new)) == 6
    _check_bounds(plain, new, 0.01, 1e-6)
    assert assert_refused_as_newer(new) == storage.PREV_VALUE_VERSION == 14
    monkeypatch.setattr(CR, "VERSION", 5)
    write_compressed(str(old), data, "bounded:1%", times="bounded:1us")
    monkeypatch.undo()
    assert CR.version_of(_stored_volume_codes(old)) == 5
    with h5py.File(old, "r") as f:
        assert f.attrs["format_version"] < 14
    assert new.stat().st_size < old.stat().st_size
    with minitrace.open(str(new)) as t, minitrace.open(str(old)) as u:
        a, b = t.data().actions, u.data().actions
    assert all(np.array_equal(a[f], b[f]) for f in a.dtype.names)
