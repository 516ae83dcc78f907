"""The context coder of bounded volume codes and time steps (``minitrace/compress/
context_rans.py``): any int64 values round-trip in any contexts (one symbol, none, huge codes
through the escape, pooled and capped contexts), damaged bytes are refused rather than decoded
wrong; bounded files code their volumes and duration steps so (one rank, many ranks) and read
back the codes compress made, bit for bit (written so by ``store.ADAPTIVE`` false: files of
sessions 13-30; since session 31 the adaptive coder's, test_compress_adaptive.py); files of the
order-0 coder (``.rans``, session 11-12) still read; a damaged coded array is a one-line error
naming the file."""
from __future__ import annotations

import dataclasses
import zlib

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import storage
from minitrace.cli import main
from minitrace.compress import context_rans as CR
from minitrace.compress import pack as P
from minitrace.compress import rans as R
from minitrace.compress import store as ST
from minitrace.compress.files import write_compressed
from minitrace.errors import MinitraceError
from tests.support.synthetic_loops import stencil
from tests.test_compress_bounded import _check_bounds, _ranges_match_whole, _timed_stencil
from tests.test_compress_store import store_pack, stored_pack

_RNG = np.random.default_rng(11)
_I64 = np.iinfo(np.int64)


def _case(name: str):
    """(values, fine keys, coarse keys) of a named case."""
    rng = np.random.default_rng(5)
    if name == "empty":
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    if name == "one value":
        return np.array([1 << 20]), np.array([3]), np.array([0])
    if name == "one symbol per context":           # (a table of one entry: no words at all)
        fine = np.repeat([4, 9, 30], 2000)
        return fine * 1000 + 7, fine, fine // 10
    if name == "codes of volumes":                 # log codes around their site's size
        site = rng.integers(0, 6, 60_000)
        prev = rng.integers(0, 6, 60_000)
        values = (1 << 20) + 400 * site + prev + rng.normal(0, 30, 60_000).astype(np.int64)
        return values, site * 7 + prev + 1, site
    if name == "huge codes":                       # the escape: any int64, mixed with small
        values = rng.integers(-40, 40, 5000)
        values[::7] = rng.integers(_I64.min, _I64.max, len(values[::7]), endpoint=True)
        values[:4] = _I64.min, _I64.max, (1 << 40) + 5, -(1 << 40) - 5
        return values, rng.integers(0, 3, 5000), np.zeros(5000, np.int64)
    if name == "small contexts pooled":            # every fine key below MIN_VALUES
        fine = rng.integers(0, 400, 20_000)
        return rng.integers(0, 1000, 20_000) + fine, fine, fine % 3
    if name == "negative keys":
        fine = -rng.integers(1, 4, 3000) * (1 << 40)
        return rng.geometric(0.1, 3000), fine, np.sign(fine)
    if name == "two modes":                        # waits nil or long, some far off both
        fine = rng.integers(0, 5, 12_000)
        values = np.where(rng.random(12_000) < 0.5, rng.integers(-2, 3, 12_000),
                          3000 * (fine + 1) + rng.integers(-255, 256, 12_000))
        values[::31] = rng.integers(_I64.min, _I64.max, len(values[::31]), endpoint=True)
        return values, fine, fine % 2
    raise ValueError(name)


_CASES = ["empty", "one value", "one symbol per context", "codes of volumes", "huge codes",
          "small contexts pooled", "negative keys", "two modes"]


@pytest.mark.parametrize("name", _CASES)
def test_round_trip(name):
    values, fine, coarse = _case(name)
    coded = CR.encode(values, fine, coarse)
    assert coded.dtype == np.uint8
    assert np.array_equal(CR.decode(coded, fine, coarse), values)


def test_more_keys_than_tables_fall_to_their_coarse_key(monkeypatch):
    monkeypatch.setattr(CR, "MAX_CONTEXTS", 3)
    monkeypatch.setattr(CR, "MIN_VALUES", 10)
    fine = _RNG.integers(0, 40, 8000)
    values = fine * 100 + _RNG.integers(0, 5, 8000)
    coded = CR.encode(values, fine, fine % 4)
    nf, nc = (int(v) for v in np.frombuffer(coded[20:28].tobytes(), "<u4"))
    assert (nf, nc) == (3, 3)                    # (the coarse keys capped too: 4 -> 3)
    assert np.array_equal(CR.decode(coded, fine, fine % 4), values)


def _frequent_keys(keys, minimum, limit):
    """The keys of at least ``minimum`` values, the ``limit`` most frequent (ties: the lower
    key), ascending: what _choose keeps, written plainly."""
    uniq, count = np.unique(keys, return_counts=True)
    uniq, count = uniq[count >= minimum], count[count >= minimum]
    return np.sort(uniq[np.argsort(-count, kind="stable")[:limit]])


@pytest.mark.parametrize("width,counted", [(2, True), (10, True), (40, False)])
def test_keys_counted_or_sorted_choose_the_same_tables(monkeypatch, width, counted):
    """Keys 2, 10 and 40 times as wide as they are many: counted without a sort (the first
    two) or hashed, the fine keys of at least MIN_VALUES values (one key exactly that many,
    one a value short), the most frequent past the limit; the coarse keys of the rest."""
    monkeypatch.setattr(CR, "MIN_VALUES", 20)
    monkeypatch.setattr(CR, "MAX_CONTEXTS", 30)
    n = 20000
    pool = _RNG.choice(width * n, 62, replace=False)
    fine = pool[np.minimum(_RNG.geometric(0.05, n - 39), 59)]
    fine = np.concatenate([fine, np.repeat(pool[60:], [20, 19])])   # (20 and 19 values)
    coarse = fine % 7
    if counted:                                  # (the counted path sorts nothing)
        monkeypatch.setattr(np, "unique", lambda *a, **k: pytest.fail("sorted"))
    fine_keys, coarse_keys, ctx = CR._choose(fine, coarse)
    monkeypatch.undo()
    monkeypatch.setattr(CR, "MIN_VALUES", 20)
    assert np.array_equal(fine_keys, _frequent_keys(fine, 20, 30))
    left = ~np.isin(fine, fine_keys)
    assert np.array_equal(coarse_keys, _frequent_keys(coarse[left], 20, 30))
    assert np.array_equal(ctx, CR._contexts(fine, coarse, fine_keys, coarse_keys))
    monkeypatch.setattr(CR, "MAX_CONTEXTS", 100)
    everyone = CR._choose(fine, coarse)[0]
    assert pool[60] in everyone and pool[61] not in everyone


def test_hashed_keys_tied_at_the_limit_keep_the_lower(monkeypatch):
    """Keys too wide to count (negative ones among them) hashed in their order of appearance:
    of keys as frequent as each other across the limit, the lower ones kept, as a sort of
    them kept them."""
    monkeypatch.setattr(CR, "MIN_VALUES", 5)
    monkeypatch.setattr(CR, "MAX_CONTEXTS", 4)
    pool = np.array([7 << 40, -3, 5 << 30, -(9 << 35), 11, 2 << 50])
    fine = _RNG.permutation(np.repeat(pool, [9, 6, 6, 6, 6, 4]))
    fine_keys = CR._choose(fine, np.zeros(len(fine), np.int64))[0]
    assert np.array_equal(fine_keys, [-(9 << 35), -3, 11, 7 << 40])
    assert np.array_equal(fine_keys, _frequent_keys(fine, 5, 4))


def test_a_second_window_takes_the_far_mode(monkeypatch):
    """Version 5: a context's values far from its median, in a second window about their own
    median, take a symbol each (escaped in version 4: a power of two and its 11-12 bits);
    the windows' edges (the 512 values about each base) and values beyond both round-trip."""
    values, fine, coarse = _case("two modes")
    v5 = CR.encode(values, fine, coarse)
    rests5 = int(np.frombuffer(v5[16:20].tobytes(), "<u4")[0])
    monkeypatch.setattr(CR, "VERSION", 4)
    v4 = CR.encode(values, fine, coarse)
    monkeypatch.undo()
    rests4 = int(np.frombuffer(v4[16:20].tobytes(), "<u4")[0])
    assert rests5 < 0.4 * rests4 and len(v5) < 0.9 * len(v4)
    for v in (v4, v5):
        assert np.array_equal(CR.decode(v, fine, coarse), values)
    # the windows' edges: 256 below and 255 above each base, and one more each side (the
    # bases given: 10 and -5000)
    edges = np.array([-256, 255, -257, 256])
    bulk = np.concatenate([np.full(600, 10), np.full(500, -5000)])
    values = np.concatenate([bulk, 10 + edges, -5000 + edges])
    ctx = np.zeros(len(values), np.int64)
    base = np.array([10])
    monkeypatch.setattr(CR, "_second_bases", lambda far, ctx, nctx: np.array([-5000]))
    sym, k, rest, second = CR._symbols(values, ctx, base, True)
    monkeypatch.undo()
    tail = sym[len(bulk):]
    assert np.array_equal(tail < CR._DIRECT, [1, 1, 0, 0, 0, 0, 0, 0])
    assert np.array_equal((tail >= CR._DIRECT) & (tail < 2 * CR._DIRECT),
                          [0, 0, 0, 0, 1, 1, 0, 0])
    extra = R.rest_bytes(k, rest, bits=True)
    assert np.array_equal(CR._values(sym, extra, ctx, base, second, 5), values)
    assert np.array_equal(CR.decode(CR.encode(values, ctx, ctx), ctx, ctx), values)


def test_many_tables_are_searched(monkeypatch):
    """Above _SLOT_TABLE slots the decoder searches each slot's entry instead of a table."""
    values, fine, coarse = _case("codes of volumes")
    coded = CR.encode(values, fine, coarse)
    monkeypatch.setattr(CR, "_SLOT_TABLE", 0)
    assert np.array_equal(CR.decode(coded, fine, coarse), values)


def test_a_single_symbol_context_costs_no_words():
    values, fine, coarse = _case("one symbol per context")
    coded = CR.encode(values, fine, coarse)
    assert int(np.frombuffer(coded[12:16].tobytes(), "<u4")[0]) == 0     # words
    assert len(coded) < len(values) / 8


def test_counts_beyond_the_header_are_one_line(monkeypatch):
    """An array whose counts pass the header's uint32 (:data:`~CR.COUNT_LIMIT`: 2**32 values)
    is a one-line error, not numpy's overflow."""
    values, fine, coarse = _case("codes of volumes")
    monkeypatch.setattr(CR, "COUNT_LIMIT", len(values))
    with pytest.raises(MinitraceError, match=f"array of {len(values)} values"):
        CR.encode(values, fine, coarse)


def test_contexts_take_less_than_one_table():
    values, fine, coarse = _case("codes of volumes")
    assert len(CR.encode(values, fine, coarse)) < 0.8 * len(R.encode(values - (1 << 20)))


@pytest.mark.parametrize("damage", ["truncate", "extend", "version", "values", "flip_word",
                                    "frequency", "keys", "fewer keys"])
def test_damaged_bytes_are_refused(damage):
    values, fine, coarse = _case("codes of volumes")
    b = CR.encode(values, fine, coarse).copy()
    head = np.frombuffer(b[:32].tobytes(), "<u4")
    nf, nc, ne = (int(v) for v in head[5:8])
    tables = 32 + 8 * (nf + nc) + 10 * (nf + nc + 1)      # keys, medians, entry counts
    if damage == "truncate":
        b = b[:-3]
    elif damage == "extend":
        b = np.append(b, np.uint8(1))
    elif damage == "version":
        b[0] = 9
    elif damage == "values":
        b[4] ^= 0x01
    elif damage == "flip_word":
        b[-10] ^= 0x5A
    elif damage == "frequency":
        b[tables + 2 * ne] ^= 0x01
    elif damage == "keys":                       # the second fine key's difference: 0
        b[32 + 8:32 + 16] = 0
    else:
        fine, coarse = fine[1:], coarse[1:]
    with pytest.raises(R.CodeError):
        CR.decode(b, fine, coarse)


# -- in files ----------------------------------------------------------------------------------

def _arrays(path) -> dict:
    """name -> array of a compressed file's ``/trace`` arrays, packed or datasets."""
    with h5py.File(path, "r") as f:
        g = f["trace"]
        raw = stored_pack(g)
        out = dict(P.unpack(raw)) if raw is not None else {}
        for mode in ("exact", "model"):
            if mode in g:
                out.update({f"{mode}/{k}": v[()] for k, v in g[mode].items()
                            if isinstance(v, h5py.Dataset)})
        return out


def _rewrite(path, edit) -> None:
    """Apply ``edit`` (arrays dict -> None, changed in place) to the file's arrays under
    ``/trace/exact``, wherever they are stored."""
    before = _arrays(path)
    after = dict(before)
    edit(after)
    with h5py.File(path, "a") as f:
        g = f["trace"]
        raw = stored_pack(g)
        packed = dict(P.unpack(raw)) if raw is not None else {}
        for name in before:
            if name not in after or after[name] is not before[name]:
                if name in packed:
                    del packed[name]
                elif name in g:
                    del g[name]
        for name, v in after.items():
            if name not in before or v is not before[name]:
                if P.packs(v):
                    packed[name] = v
                else:
                    g[name] = v
        store_pack(g, P.pack(packed))


@pytest.mark.parametrize("nranks", [1, 5])
def test_keys_of_the_writer_are_the_readers(nranks):
    """write takes the keys from compress's signature ids, a reader from the grammar."""
    data = _timed_stencil(30, nranks)
    c = ST.compress(data, "bounded:1%", times="bounded:1us")
    made = CR.keys(c.ids, np.asarray(data.rank_offsets[:-1]), len(c.table))
    for a, b in zip(made, CR.call_keys(c.grammar, len(c.table))):
        assert np.array_equal(a, b)


@pytest.fixture
def small_minimum(monkeypatch):
    """Context coding from a few values (CONTEXT_MIN), so that small traces take the path
    of large ones, by this coder (files of sessions 13-30: ``ST.ADAPTIVE`` false)."""
    monkeypatch.setattr(ST, "ADAPTIVE", False)
    monkeypatch.setattr(ST, "CONTEXT_MIN", 64)
    monkeypatch.setattr(CR, "MIN_VALUES", 16)


@pytest.mark.parametrize("nranks,iterations", [(1, 300), (4, 200), (16, 60)])
def test_bounded_file_codes_in_contexts(tmp_path, small_minimum, nranks, iterations):
    data = _timed_stencil(iterations, nranks)
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(str(plain), data)
    write_compressed(str(packed), data, "bounded:1%", times="bounded:1us")
    names = set(_arrays(packed))
    for base in ("exact/volume", "exact/t_duration"):
        assert base + ST.CONTEXT_SUFFIX in names
        assert base not in names and base + ST.RANS_SUFFIX not in names
    made = ST.compress(data, "bounded:1%", times="bounded:1us")
    with h5py.File(packed, "r") as f:
        back = ST.read(f["trace"], str(packed))
    for name in ("volume", "t_duration", "t_gap"):            # the codes, bit for bit
        assert np.array_equal(back.side[name], made.side[name]), name
    _check_bounds(plain, packed, 0.01, 1e-6)
    _ranges_match_whole(packed)


def test_waits_in_modes_within_bounds(tmp_path, small_minimum):
    """A bounded file whose message waits are nil, ~4 or ~8 ms (a rank descheduled for a
    time slice or two, as miniMD's and miniGhost's recorded on 2 cores) and whose compute
    volumes take two sizes: every volume within 1% and every time within 1 us of the
    recorded one, the codes read back bit for bit."""
    data, _ = stencil(4, 200, seed=5)
    rng = np.random.default_rng(5)
    a = data.actions
    for r in range(data.nranks):
        sl = data.rank_slice(r)
        vol = a["volume"][sl]
        vol[vol > 0] *= np.where(rng.random(int((vol > 0).sum())) < 0.3, 7.0, 1.0)
        wait = rng.choice([0.0, 4e-3, 8e-3], sl.stop - sl.start, p=[0.5, 0.2, 0.3])
        dur = vol + (vol == 0) * (wait + rng.exponential(3e-6, len(vol)))
        end = 10.0 + np.cumsum(dur + rng.exponential(1e-7, len(dur)))
        a["t_start"][sl], a["t_end"][sl] = end - dur, end
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(str(plain), data)
    write_compressed(str(packed), data, "bounded:1%", times="bounded:1us")
    assert {"exact/volume.ctx", "exact/t_duration.ctx"} <= set(_arrays(packed))
    made = ST.compress(data, "bounded:1%", times="bounded:1us")
    with h5py.File(packed, "r") as f:
        back = ST.read(f["trace"], str(packed))
    for name in ("volume", "t_duration", "t_gap"):
        assert np.array_equal(back.side[name], made.side[name]), name
    _check_bounds(plain, packed, 0.01, 1e-6)


@pytest.mark.parametrize("adaptive", [False, True])
@pytest.mark.parametrize("iterations,coded", [(20, set()), (300, {"exact/t_duration.ctx"})])
def test_small_arrays_coded_where_smaller(tmp_path, monkeypatch, iterations, coded, adaptive):
    """Below CONTEXT_MIN values an array is coded in contexts where that deflates smaller
    (tiny traces: the tables cost more than they save), and the file is no larger than with
    every array coded or none; by the static tables (which arrays, ``coded``) or the adaptive
    coder (compress/adaptive.py)."""
    monkeypatch.setattr(ST, "ADAPTIVE", adaptive)
    data = _timed_stencil(iterations)
    size = {}
    for way in ("rule", "every", "none"):
        out = tmp_path / f"{way}.h5"
        if way == "every":
            monkeypatch.setattr(ST, "CONTEXT_MIN", 0)
        if way == "none":
            monkeypatch.setattr(ST, "_context_coded", lambda *args: None)
        write_compressed(str(out), data, "bounded:1%", times="bounded:1us")
        size[way] = out.stat().st_size
        if way == "rule" and not adaptive:
            assert {k for k in _arrays(out) if k.endswith(ST.CONTEXT_SUFFIX)} == coded
    assert size["rule"] <= 1.01 * min(size["every"], size["none"]), size


def _bounded(tmp_path):
    data = _timed_stencil(200)
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(str(plain), data)
    write_compressed(str(packed), data, "bounded:1%", times="bounded:1us")
    return plain, packed


def test_order_0_coded_steps_still_read(tmp_path, small_minimum):
    """A file of session 11-12 (duration steps ``.rans``, volumes plain) reads the same."""
    _, packed = _bounded(tmp_path)
    with minitrace.open(str(packed)) as c:
        want = c.data().actions

    with h5py.File(packed, "r") as f:
        side = ST.read(f["trace"], str(packed)).side

    def old(a):
        del a["exact/volume.ctx"], a["exact/t_duration.ctx"]
        a["exact/volume"] = storage.smallest_int(side["volume"])
        a["exact/t_duration.rans"] = R.encode(side["t_duration"])
    _rewrite(packed, old)
    with minitrace.open(str(packed)) as c:
        got = c.data().actions
    assert all(np.array_equal(got[f], want[f]) for f in want.dtype.names)


def _refused(capsys, path, *words):
    """``minitrace validate PATH`` exits 1 with one error line naming the file and ``words``."""
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("minitrace: error: ") and err.count("\n") == 1, err
    for w in (str(path), "corrupt trace", *words):
        assert w in err, err


@pytest.mark.parametrize("name", ["exact/volume.ctx", "exact/t_duration.ctx"])
def test_damaged_coded_array_is_refused(tmp_path, small_minimum, capsys, name):
    _, packed = _bounded(tmp_path)

    def damage(a):
        a[name] = a[name].copy()
        a[name][-7] ^= 0x33
    _rewrite(packed, damage)
    _refused(capsys, packed, name)


def test_unknown_version_is_refused(tmp_path, small_minimum, capsys):
    _, packed = _bounded(tmp_path)

    def newer(a):
        a["exact/volume.ctx"] = a["exact/volume.ctx"].copy()
        a["exact/volume.ctx"][0] = 9
    _rewrite(packed, newer)
    _refused(capsys, packed, "exact/volume.ctx", "version 9 unknown")


def test_damaged_order_0_steps_are_refused(tmp_path, small_minimum, capsys):
    _, packed = _bounded(tmp_path)

    def old(a):
        steps = a.pop("exact/t_duration.ctx")
        with h5py.File(packed, "r") as f:
            coded = R.encode(ST.read(f["trace"], str(packed)).side["t_duration"]).copy()
        coded[-7] ^= 0x33
        a["exact/t_duration.rans"] = coded
        assert len(steps)
    _rewrite(packed, old)
    _refused(capsys, packed, "exact/t_duration.rans")


def test_an_array_stored_twice_is_refused(tmp_path, small_minimum, capsys):
    _, packed = _bounded(tmp_path)

    def twice(a):
        with h5py.File(packed, "r") as f:
            a["exact/volume"] = storage.smallest_int(
                ST.read(f["trace"], str(packed)).side["volume"])
    _rewrite(packed, twice)
    _refused(capsys, packed, "exact/volume stored twice")


def test_keys_of_more_actions_than_memory_are_refused(tmp_path, small_minimum):
    """A grammar of a few bytes can stand for 2**45 actions: its keys are not expanded."""
    _, packed = _bounded(tmp_path)
    with h5py.File(packed, "r") as f:
        g = ST.read(f["trace"], str(packed)).grammar
    huge = dataclasses.replace(g, rule_counts=g.rule_counts * (1 << 30))
    with pytest.raises(R.CodeError, match="memory"):
        CR.call_keys(huge, g.nterm)


def test_a_damaged_second_base_is_refused_not_decoded_wrong():
    """Version 5: a flipped bit in a context's second base (differences: every later one
    moves) shifts the values of its second window, which the CRC-32 refuses; any bit of the
    second bases: refused, or the same values."""
    values, fine, coarse = _case("two modes")
    coded = CR.encode(values, fine, coarse)
    head = np.frombuffer(coded[:4 * CR._NHEAD].tobytes(), "<u4")
    nctx = int(head[5]) + int(head[6]) + 1
    second = 4 * CR._NHEAD + 8 * (int(head[5]) + int(head[6])) + 8 * nctx
    assert np.cumsum(np.frombuffer(coded[second:second + 8 * nctx].tobytes(), "<i8")).any()
    for at in range(second, second + 8 * nctx):
        for bit in (0, 3, 7):
            bad = coded.copy()
            bad[at] ^= np.uint8(1 << bit)
            try:
                got = CR.decode(bad, fine, coarse)
            except R.CodeError:
                continue
            assert (got == values).all(), (at, bit)
    bad = coded.copy()
    bad[second] ^= 1                                    # the first second base: refused
    with pytest.raises(R.CodeError):
        CR.decode(bad, fine, coarse)


def test_a_damaged_median_or_symbol_is_refused_not_decoded_wrong():
    """A flipped bit in a context's median (stored as differences: every later median moves)
    or in a table's symbols can decode to the start states with every value shifted: the
    values' CRC-32 in the header refuses it (version 1 decoded them, all 60,000 wrong)."""
    from minitrace.compress import context_rans as CR
    from minitrace.compress.rans import CodeError
    rng = np.random.default_rng(5)
    site, prev = rng.integers(0, 6, 60_000), rng.integers(0, 6, 60_000)
    values = (1 << 20) + 400 * site + prev + rng.normal(0, 30, 60_000).astype(np.int64)
    fine, coarse = site * 7 + prev + 1, site
    coded = CR.encode(values, fine, coarse)
    assert (CR.decode(coded, fine, coarse) == values).all()
    head = np.frombuffer(coded[:4 * CR._NHEAD].tobytes(), "<u4")
    nf, nc = int(head[5]), int(head[6])
    medians = 4 * CR._NHEAD + 8 * (nf + nc)
    bad = coded.copy()
    bad[medians] ^= 1                                   # the first median: all shifted
    with pytest.raises(CodeError):
        CR.decode(bad, fine, coarse)
    for at in rng.integers(0, len(coded), 300):         # any bit: refused, or the same values
        bad = coded.copy()
        bad[at] ^= np.uint8(1 << int(rng.integers(0, 8)))
        try:
            got = CR.decode(bad, fine, coarse)
        except CodeError:
            continue
        assert (got == values).all(), at


def test_a_file_with_context_coded_arrays_is_format_version_9(tmp_path, small_minimum,
                                                             monkeypatch):
    """Version 2 readers took a .ctx array for a missing one, version 8 readers a version-5
    coding (a second window per context) for a damaged one; a file holding one is version 9,
    packed or not, which a version 8 reader refuses as newer; exact files written unpacked
    stay 2 (a file of packed metadata is version 6 whatever it holds, test_compress_store)."""
    for pack in (False, True):
        bounded = tmp_path / f"bounded{pack}.h5"
        write_compressed(str(bounded), _timed_stencil(200), "bounded:1%", pack=pack)
        with h5py.File(bounded, "r") as f:      # (bounded times: 13, test_bounded_step_...)
            assert f.attrs["format_version"] == storage.SECOND_WINDOW_VERSION == 9
            assert pack or "volume.ctx" in f["trace/exact"]
    monkeypatch.setattr(storage, "FORMAT_VERSION", 8)
    with pytest.raises(minitrace.MinitraceError, match="newer minitrace .format version 9"):
        minitrace.open(str(bounded))
    monkeypatch.undo()
    exact = tmp_path / "exact.h5"
    write_compressed(str(exact), _timed_stencil(200), "exact", pack=False)
    with h5py.File(exact, "r") as f:
        assert f.attrs["format_version"] == storage.COMPRESSED_VERSION == 2


def _lanes(coded) -> int:
    return int(np.frombuffer(coded[:12].tobytes(), "<u4")[2])


def test_arrays_coded_together_take_as_many_steps_in_fewer_lanes():
    """``encode_many`` (a bounded file's volume codes and time steps: their rANS steps taken
    together) codes the shorter arrays in as many steps as the longest takes alone, in fewer
    lanes (4 bytes of state each), and each decodes to its values; the longest is coded as
    ``encode`` alone codes it."""
    cases = [_case(name) for name in _CASES]
    alone = [CR.encode(*case) for case in cases]
    steps = max(-(-len(v) // _lanes(a)) for (v, _, _), a in zip(cases, alone))
    longest = int(np.argmax([len(v) for v, _, _ in cases]))
    fewer = 0
    for i, ((values, fine, coarse), coded) in enumerate(zip(cases, CR.encode_many(cases))):
        assert np.array_equal(CR.decode(coded, fine, coarse), values)
        assert _lanes(coded) <= _lanes(alone[i]) and -(-len(values) // _lanes(coded)) <= steps
        fewer += _lanes(coded) < _lanes(alone[i])
        if i == longest:
            assert np.array_equal(coded, alone[i])
    assert fewer > 0


def _densest(values, ctx, nctx, step):
    """Per context: the most values of every ``step``-th that a window of _DIRECT values
    holds (a window from each value, by brute force), and its first value (None where the
    sample has none)."""
    out = []
    for j in range(nctx):
        sample, mine = values[::step][ctx[::step] == j], values[ctx == j]
        with np.errstate(over="ignore"):          # (the difference of sample >= x: unsigned)
            held = [int(((sample >= x) & ((sample - x).view(np.uint64) < CR._DIRECT)).sum())
                    for x in sample]
        out.append((max(held), sample[0]) if len(sample) else (0, mine[0] if len(mine)
                                                                else None))
    return out


@pytest.mark.parametrize("case", ["narrow", "wide", "extremes", "outside the window",
                                  "sampled", "more bins than values", "modes",
                                  "across the edge"])
def test_bases_take_a_densest_window(monkeypatch, case):
    """Each context's base takes (among the symbols of its first window) as many values of
    the sample as any window of as many values does: values narrower than the bins, spread
    far beyond them, at both ends of int64 (a base may wrap), every k-th value of a long
    array, contexts whose mode lies outside the bins (by a sort of their values), contexts
    whose bins would outnumber the values (all by a sort), several modes none of them about
    the median, a context whose densest window crosses the bins' edge (fewer values beyond it
    than in its densest window inside); a context whose values the sample misses takes its
    first value, one without values 0."""
    rng = np.random.default_rng(9)
    n, nctx = 6000, 9 if case != "more bins than values" else 2000
    ctx = rng.integers(0, nctx - 2, n)              # (two contexts without values)
    if case == "narrow":
        values = (1 << 20) + 7 * ctx + rng.integers(-30, 30, n)
    elif case == "wide":
        values = rng.integers(-(1 << 40), 1 << 40, n)
    elif case == "extremes":
        values = np.where(rng.random(n) < 0.5, _I64.min + rng.integers(0, 3, n),
                          _I64.max - rng.integers(0, 3, n))
    elif case == "outside the window":               # most near 0, some contexts far away
        values = rng.integers(-3, 4, n) + np.where(ctx % 3 == 0, 1 << 30, 0)
    elif case == "more bins than values":
        assert nctx * (CR._BASE_BINS + 2) > CR._BASE_BINS_PER_VALUE * n
        values = rng.integers(-(1 << 12), 1 << 12, n) + 5 * ctx
    elif case == "modes":                            # nil, ~4 ms and ~8 ms waits, the
        mode = rng.choice(3, n, p=[0.4, 0.15, 0.45])      # median in the fewest
        values = np.array([0, 2000, 4000])[mode] + rng.integers(-40, 40, n) * (mode > 0)
        values[ctx == 3] += 1 << 11                  # (a context outside the bins)
    elif case == "across the edge":                  # bins about 0 up to 511: 300 and 600
        values = rng.integers(-3, 4, n)              # hold more than -500, which beats 600
        values[ctx == 1] = rng.choice([-500, 300, 600], int((ctx == 1).sum()),
                                      p=[0.43, 0.18, 0.39])
    else:
        monkeypatch.setattr(CR, "_BASE_SAMPLE", 1000)
        values = rng.integers(-50, 50, n) * (1 + ctx)
        ctx[[1, 2]] = nctx - 2                       # (values, none of them sampled)
    step = max(1, n // CR._BASE_SAMPLE)
    base = CR._bases(values, ctx, nctx)
    sample, sctx = values[::step], ctx[::step]
    with np.errstate(over="ignore"):
        d = sample - base[sctx]                      # (wrapping, as the coder's residuals)
    took = np.bincount(sctx[(d >= -(CR._DIRECT // 2)) & (d < CR._DIRECT // 2)],
                       minlength=nctx)
    for j, (most, first) in enumerate(_densest(values, ctx, nctx, step)):
        if most:
            assert took[j] >= most, (case, j)
        else:
            assert base[j] == (0 if first is None else first)
    if case == "modes":                              # (the median's window: 15% of each)
        assert (took[:nctx - 2] > 0.4 * np.bincount(ctx, minlength=nctx)[:nctx - 2]).all()


def test_waits_in_three_modes_take_the_two_largest_windows():
    """Waits nil, ~4 ms or ~8 ms (a rank descheduled for a time slice or two: miniMD 4r's
    and miniGhost 4r's bounded time steps), the median in the fewest: the two larger modes
    take the windows, only the fewest escape (about the median, one of the large modes
    escaped too); the values round-trip."""
    rng = np.random.default_rng(4)
    n = 20_000
    mode = rng.choice(3, n, p=[0.45, 0.1, 0.45])
    values = np.array([3, 2000, 4000])[mode] + rng.integers(-30, 30, n)
    keys = np.zeros(n, np.int64)
    t = CR._tables(values, keys, keys)
    escaped = len(t["k"])
    assert escaped <= 1.1 * int((mode == 1).sum())
    assert np.array_equal(CR.decode(CR.encode(values, keys, keys), keys, keys), values)


def test_version_3_arrays_still_decode():
    """An array coded by version 3 (frequencies as uint16, symbols not shuffled: files of
    sessions 14-19; tests/data/context_v3.npz, written by the coder of 7ed6005) decodes to
    its values; this coder writes version 5, smaller on the same values."""
    saved = np.load("tests/data/context_v3.npz")
    blob = saved["blob"]
    assert int(np.frombuffer(blob[:4].tobytes(), "<u4")[0]) == 3
    assert np.array_equal(CR.decode(blob, saved["fine"], saved["coarse"]), saved["values"])
    mine = CR.encode(saved["values"], saved["fine"], saved["coarse"])
    assert int(np.frombuffer(mine[:4].tobytes(), "<u4")[0]) == CR.VERSION == 5
    assert np.array_equal(CR.decode(mine, saved["fine"], saved["coarse"]), saved["values"])
    assert len(mine) < len(blob)


def test_version_4_arrays_still_decode(monkeypatch):
    """An array coded by version 4 (one window per context: files of session 20;
    tests/data/context_v4.npz, written by the coder of 3251f63, of contexts whose values are
    either near 0 or near 2,000-3,500, and some escaped) decodes to its values; version 5,
    in the same contexts (that coder's MIN_VALUES), codes the far mode in a second window:
    6,257 -> 4,852 bytes."""
    monkeypatch.setattr(CR, "MIN_VALUES", 256)
    saved = np.load("tests/data/context_v4.npz")
    blob, values, fine, coarse = (saved[k] for k in ("blob", "values", "fine", "coarse"))
    assert int(np.frombuffer(blob[:4].tobytes(), "<u4")[0]) == 4
    assert np.array_equal(CR.decode(blob, fine, coarse), values)
    mine = CR.encode(values, fine, coarse)
    assert np.array_equal(CR.decode(mine, fine, coarse), values)
    assert len(mine) < 0.85 * len(blob)


def test_frequencies_from_count_codes_fill_each_table():
    """Each context's frequencies from its entries' count codes: every entry at least 1,
    their sum 2**SCALE exactly, ordered as the weights, the rounding's rest on the first
    heaviest entry; any codes 0-64 (the coder's counts below 2**32)."""
    rng = np.random.default_rng(4)
    per = np.array([1, 0, 3, 600, 2, 0, 40])
    codes = rng.integers(0, CR._MAX_CODE + 1, int(per.sum()))
    codes[1:4] = [64, 0, 64]                     # a tie for the heaviest
    f = CR._frequencies(codes, per)
    ctx = np.repeat(np.arange(len(per)), per)
    assert (f >= 1).all()
    sums = np.bincount(ctx, weights=f, minlength=len(per))
    assert np.array_equal(sums[per > 0], np.full((per > 0).sum(), 1 << CR.SCALE))
    assert f[1] > f[3] and f[2] == 1
    for c in np.flatnonzero(per > 1):
        w, g = codes[ctx == c], f[ctx == c]
        top = int(np.argmax(w))
        rest = np.delete(np.arange(len(w)), top)
        order = np.argsort(w[rest], kind="stable")
        assert (np.diff(g[rest][order]) >= 0).all()
    assert np.array_equal(CR._count_codes(np.array([1, 2, 11, 12, 255, 256, 362, 1 << 20,
                                                    (1 << 32) - 1])),
                          [3, 3, 3, 8, 16, 16, 17, 40, 64])


def test_rare_counts_share_a_code():
    """Small contexts of many rare values (a table's entries a third of the values): the
    rare counts' one code and the octaves' even ones code them smaller than every count's
    half octave, tables and values together, deflated (as a file stores them); the values
    round-trip."""
    rng = np.random.default_rng(8)
    fine = rng.integers(0, 40, 20_000)
    values = (rng.standard_t(3, 20_000) * 40).astype(np.int64) + 50 * fine
    coded = CR.encode(values, fine, fine % 4)
    assert np.array_equal(CR.decode(coded, fine, fine % 4), values)
    t = CR._tables(values, fine, fine % 4)
    assert len(t["entries"]) > len(values) / 4
    with pytest.MonkeyPatch.context() as m:
        m.setattr(CR, "_count_codes", lambda count: np.clip(np.rint(2 * np.log2(count)), 0,
                                                            CR._MAX_CODE).astype(np.int64))
        every = CR.encode(values, fine, fine % 4)
    assert np.array_equal(CR.decode(every, fine, fine % 4), values)
    deflated = [len(zlib.compress(c.tobytes(), 9)) for c in (coded, every)]
    assert deflated[0] < deflated[1]


def test_a_frequency_code_beyond_the_range_is_refused():
    """A count code above 64 (a weight beyond the coder's counts) is a damaged table."""
    values, fine, coarse = _case("codes of volumes")
    b = CR.encode(values, fine, coarse).copy()
    head = np.frombuffer(b[:36].tobytes(), "<u4")
    nf, nc, ne = (int(v) for v in head[5:8])
    codes_at = 36 + 8 * (nf + nc) + 18 * (nf + nc + 1) + 2 * ne
    b[codes_at] = CR._MAX_CODE + 1
    with pytest.raises(R.CodeError, match="frequency codes"):
        CR.decode(b, fine, coarse)


def test_keys_whose_differences_wrap_are_refused(monkeypatch):
    """Stored key differences whose running sum wraps past int64 (damage) are refused as a
    coded array's keys, not found by a table of negative size (a ValueError the reader did
    not take for a damaged file)."""
    monkeypatch.setattr(CR, "MIN_VALUES", 16)
    fine = np.repeat([3, 9], 100).astype(np.int64)
    coarse = np.zeros(200, np.int64)
    b = CR.encode(np.arange(200, dtype=np.int64), fine, coarse).copy()
    assert tuple(np.frombuffer(b[20:28].tobytes(), "<u4")) == (2, 0)
    b[36:52] = np.frombuffer(np.array([5, 2 ** 63 - 1], "<i8").tobytes(), np.uint8)
    with pytest.raises(R.CodeError, match="context keys"):
        CR.decode(b, fine, coarse)
