"""The adaptive context coder of bounded files (``minitrace/compress/adaptive.py``, compiled
``native/adaptive.c``): any int64 values round-trip in any contexts (none, one, huge and
extreme values, a context per value, keys of any sign), from 0 or from their coarse context's
first value; damaged, cut or extended bytes are refused or decode to the same values, never
crash; bounded files code their volumes and duration steps so (``.actx``, format version 15,
which a version 14 reader refuses as newer), read back the codes compress made within their
bounds, and read like the static coder's files (``.ctx``, format versions 9-14); a damaged
coded array in a file is a one-line error naming it."""
from __future__ import annotations

import threading

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import storage
from minitrace.compress import adaptive as A
from minitrace.compress import rans as R
from minitrace.compress import store as ST
from minitrace.compress.files import write_compressed
from tests.support.versions import assert_refused_as_newer
from tests.test_compress_bounded import _check_bounds, _ranges_match_whole, _timed_stencil
from tests.test_compress_context import _CASES, _arrays, _case, _refused, _rewrite

_I64 = np.iinfo(np.int64)


def _adversarial(name: str):
    """(values, fine keys, coarse keys) of cases the file cases never make."""
    rng = np.random.default_rng(7)
    if name == "extremes":                         # int64's ends, alternating: 64-bit residuals
        values = np.tile([_I64.min, _I64.max, 0, -1, 1, _I64.min + 1], 500)
        return values, np.zeros(len(values), np.int64), np.zeros(len(values), np.int64)
    if name == "a context per value":              # every key new: order 0 and the escapes
        n = 20_000
        return rng.integers(-1 << 40, 1 << 40, n), rng.permutation(n) * 7919, \
            rng.permutation(n) - n // 2
    if name == "many contexts":                    # more coarse keys than its first table holds
        coarse = rng.integers(0, 5000, 30_000)
        return (1 << 20) + coarse * 3 + rng.integers(-50, 50, 30_000), coarse * 11 + \
            rng.integers(0, 11, 30_000), coarse
    if name == "random bits":                      # incompressible, any length of bits
        values = rng.integers(_I64.min, _I64.max, 4000, endpoint=True) >> \
            rng.integers(0, 64, 4000)
        return values, rng.integers(0, 3, 4000), rng.integers(0, 2, 4000)
    raise ValueError(name)


_ADVERSARIAL = ["extremes", "a context per value", "many contexts", "random bits"]


def _values(name):
    return _case(name) if name in _CASES else _adversarial(name)


@pytest.mark.parametrize("flags", [0, A.FROM_ZERO])
@pytest.mark.parametrize("name", _CASES + _ADVERSARIAL)
def test_round_trip(name, flags):
    values, fine, coarse = _values(name)
    coded = A.encode(values, fine, coarse, flags)
    assert coded.dtype == np.uint8
    assert np.array_equal(A.decode(coded, fine, coarse), values)


def test_contexts_learn():
    """Values that their fine key tells apart code in fewer bytes with that key than without
    (each value its site's mode plus a few bits), and far fewer than 8 bytes each."""
    rng = np.random.default_rng(3)
    fine = rng.integers(0, 40, 30_000)
    values = (1 << 20) + 37 * fine + rng.integers(0, 4, 30_000)
    zero = np.zeros_like(fine)
    keyed = len(A.encode(values, fine, zero))
    assert keyed < len(A.encode(values, zero, zero)) and keyed < 0.5 * len(values)


def test_threads_code_alike():
    """Each thread keeps its own tables: codings in parallel are those of one thread."""
    cases = [_values(n) for n in ("codes of volumes", "two modes", "many contexts")] * 2
    want = [A.encode(*c) for c in cases]
    got = [None] * len(cases)

    def run(i):
        for _ in range(3):
            got[i] = A.encode(*cases[i])
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(a, b) for a, b in zip(got, want))


@pytest.mark.parametrize("name", ["codes of volumes", "two modes", "huge codes"])
def test_damaged_bytes_are_refused_or_decode_alike(name):
    """Every kind of damage: refused (CodeError), or the very values (a flip in the range
    coder's last bits may not change them); never another result, never a crash."""
    values, fine, coarse = _values(name)
    coded = A.encode(values, fine, coarse)
    rng = np.random.default_rng(1)
    cases = [coded[:-1], coded[:16], coded[:20], np.append(coded, np.uint8(0)),
             np.append(coded, coded[16:40])]
    for at in rng.integers(0, len(coded), 300):
        bad = coded.copy()
        bad[at] ^= np.uint8(1 << int(rng.integers(0, 8)))
        cases.append(bad)
    for _ in range(50):                            # random bodies under a right header
        cases.append(np.concatenate([coded[:16], rng.integers(0, 256, int(rng.integers(
            0, 2 * len(coded))), dtype=np.uint8)]))
    refused = 0
    for bad in cases:
        try:
            got = A.decode(bad, fine, coarse)
        except R.CodeError:
            refused += 1
            continue
        assert np.array_equal(got, values)
    assert refused > 0


@pytest.mark.parametrize("field,value,words", [(0, 3, "version 3 unknown"),
                                               (1, 5, "holds 5 values"),
                                               (2, 6, "flags 6 unknown")])
def test_damaged_header_is_refused(field, value, words):
    values, fine, coarse = _case("codes of volumes")
    coded = A.encode(values, fine, coarse).copy()
    coded[4 * field:4 * field + 4] = np.frombuffer(np.uint32(value).tobytes(), np.uint8)
    with pytest.raises(R.CodeError, match=words):
        A.decode(coded, fine, coarse)


def test_counts_from_wide_take_two_words(monkeypatch):
    """From :data:`~A.WIDE` values (2**32) the header is version 2, the count's high half a
    fifth word (a uint32 count ended in a traceback); below it version 1, as every file of
    session 31; both decode, a cut wide header and a wide one below 2**32 are refused."""
    values, fine, coarse = _case("codes of volumes")
    narrow = A.encode(values, fine, coarse)
    assert narrow[:4].view("<u4")[0] == A.VERSION
    monkeypatch.setattr(A, "WIDE", 16)
    wide = A.encode(values, fine, coarse)
    words = wide[:20].view("<u4")
    assert words[0] == A.WIDE_VERSION and words[1] == len(values) and words[4] == 0
    assert np.array_equal(wide[20:], narrow[16:])
    assert np.array_equal(A.decode(wide, fine, coarse), values)
    high = wide.copy()
    high[16] = 1                                   # (2**32 more: not the trace's count)
    with pytest.raises(R.CodeError, match=f"holds {(1 << 32) + len(values)} values"):
        A.decode(high, fine, coarse)
    with pytest.raises(R.CodeError, match="shorter than its header"):
        A.decode(wide[:18], fine, coarse)
    monkeypatch.setattr(A, "WIDE", 1 << 32)        # (a version-2 header of a narrow count:
    with pytest.raises(R.CodeError, match="version 2 for"):     # no writer makes one)
        A.decode(wide, fine, coarse)


def test_other_keys_or_flags_are_refused():
    """The same bytes under other keys (a damaged grammar) or the other reference: refused."""
    values, fine, coarse = _case("codes of volumes")
    coded = A.encode(values, fine, coarse)
    with pytest.raises(R.CodeError):
        A.decode(coded, np.roll(fine, 1), coarse)
    other = coded.copy()
    other[8] ^= np.uint8(A.FROM_ZERO)
    with pytest.raises(R.CodeError):
        A.decode(other, fine, coarse)


@pytest.fixture
def small_minimum(monkeypatch):
    """Context coding from a few values (CONTEXT_MIN): small traces take the path of large
    ones."""
    monkeypatch.setattr(ST, "CONTEXT_MIN", 64)


def _bounded(tmp_path, iterations=200, nranks=4):
    data = _timed_stencil(iterations, nranks)
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(str(plain), data)
    write_compressed(str(packed), data, "bounded:1%", times="bounded:1us")
    return data, plain, packed


@pytest.mark.parametrize("nranks,iterations", [(1, 300), (4, 200), (16, 60)])
def test_bounded_file_codes_adaptively(tmp_path, small_minimum, nranks, iterations):
    """Volume codes and duration steps stored as ``.actx`` (format version 15, refused as
    newer by a version 14 reader), read back bit for bit, every value within its bound, a
    rank read in ranges as read whole."""
    data, plain, packed = _bounded(tmp_path, iterations, nranks)
    names = set(_arrays(packed))
    for base in ("exact/volume", "exact/t_duration"):
        assert base + ST.ADAPTIVE_SUFFIX in names
        assert not {base, base + ST.CONTEXT_SUFFIX, base + ST.RANS_SUFFIX} & names
    assert assert_refused_as_newer(packed) == storage.ADAPTIVE_VERSION == 15
    made = ST.compress(data, "bounded:1%", times="bounded:1us")
    with h5py.File(packed, "r") as f:
        back = ST.read(f["trace"], str(packed))
    for name in ("volume", "t_duration", "t_gap"):
        assert np.array_equal(back.side[name], made.side[name]), name
    _check_bounds(plain, packed, 0.01, 1e-6)
    _ranges_match_whole(packed)


def test_static_coders_files_read_alike(tmp_path, small_minimum, monkeypatch):
    """A file of the static tables (``.ctx``, sessions 13-30) and one of the adaptive coder
    expand to the same actions."""
    data, _, new = _bounded(tmp_path)
    old = tmp_path / "old.h5"
    monkeypatch.setattr(ST, "ADAPTIVE", False)
    write_compressed(str(old), data, "bounded:1%", times="bounded:1us")
    monkeypatch.undo()
    assert "exact/volume.ctx" in _arrays(old)
    with h5py.File(old, "r") as f:
        assert f.attrs["format_version"] < storage.ADAPTIVE_VERSION
    with minitrace.open(str(new)) as t, minitrace.open(str(old)) as u:
        a, b = t.data().actions, u.data().actions
    assert all(np.array_equal(a[f], b[f]) for f in a.dtype.names)


@pytest.mark.parametrize("name", ["exact/volume.actx", "exact/t_duration.actx"])
def test_damaged_coded_array_in_a_file_is_refused(tmp_path, small_minimum, capsys, name):
    _, _, packed = _bounded(tmp_path)

    def damage(a):
        a[name] = a[name].copy()
        a[name][len(a[name]) // 2] ^= 0x5A
    _rewrite(packed, damage)
    _refused(capsys, packed, name)


def test_an_array_in_both_codings_is_refused(tmp_path, small_minimum, capsys):
    _, _, packed = _bounded(tmp_path)

    def twice(a):
        a["exact/volume.ctx"] = a["exact/volume.actx"]
    _rewrite(packed, twice)
    _refused(capsys, packed, "exact/volume stored twice")
