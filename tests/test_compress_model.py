"""Model-mode volumes (issue 38 item 3): what docs/COMPRESS.md says a model file keeps, on a
generated trace whose right answers are known: each rank's total exact, each rank's total
between two of its collectives within twice the precision (so the per-iteration maximum over
ranks and its drift), every call's structure exact; and ``info`` saying what was lost."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import minitrace
from minitrace import cli, kinds as K
from minitrace.compress import epochs as E
from minitrace.compress.files import write_compressed
from minitrace.compress.store import compress
from minitrace.model import TraceColumns, assign_vec_offsets, empty_actions

CALLS = 40          # compute + ring send + recv per iteration, then compute + allreduce


def imbalanced_trace(P: int = 4, iterations: int = 60, seed: int = 3) -> TraceColumns:
    """Each iteration: CALLS x (compute, send right, recv left), compute, allreduce.  Rank r
    computes (1 + r / 2) times as much, drifting up 50% over the run, with lognormal noise
    and, on one rank per tenth iteration, a call 20 times as long (the tail)."""
    rng = np.random.default_rng(seed)
    body = ["compute", "send", "recv"] * CALLS + ["compute", "allreduce"]
    per = len(body) * iterations + 2
    kinds = np.array([K.CODE["init"]] + [K.CODE[k] for k in body] * iterations +
                     [K.CODE["finalize"]], np.uint8)
    a = empty_actions(per * P)
    for r in range(P):
        s = slice(r * per, (r + 1) * per)
        a["kind"][s] = kinds
        send, recv = kinds == K.CODE["send"], kinds == K.CODE["recv"]
        a["peer"][s] = np.where(send, (r + 1) % P, np.where(recv, (r - 1) % P, -1))
        a["tag"][s] = np.where(send | recv, 1, -1)
        a["bytes_sent"][s] = np.where(send, 800, np.where(kinds == K.CODE["allreduce"], 8, 0))
        a["bytes_recv"][s] = np.where(recv, 800, np.where(kinds == K.CODE["allreduce"], 8, 0))
        comp = kinds == K.CODE["compute"]
        it = (np.cumsum(kinds == K.CODE["allreduce"]) - (kinds == K.CODE["allreduce"]))
        vol = (1 + r / 2) * (1 + 0.5 * it / iterations) * 1e-4 * \
            rng.lognormal(0, 0.3, per)
        spike = comp & (it % 10 == r) & (rng.uniform(size=per) < 0.05)
        vol[spike] *= 20
        a["volume"][s] = np.where(comp, np.rint(vol * 1e9) / 1e9, 0)
        a["comm"][s] = np.where(kinds == K.CODE["allreduce"], 0, -1)
    a["t_start"] = a["t_end"] = np.nan
    assign_vec_offsets(a)
    return TraceColumns(a, np.arange(P + 1, dtype=np.int64) * per, np.zeros(0, np.int64),
                        meta={"volume_unit": "seconds"})


def per_iteration(data: TraceColumns, r: int) -> np.ndarray:
    """Rank r's compute total between consecutive allreduces (an allreduce closes its own)."""
    x = data.actions[data.rank_slice(r)]
    ar = x["kind"] == K.CODE["allreduce"]
    return np.bincount(np.cumsum(ar) - ar, weights=x["volume"])


@pytest.mark.parametrize("precision", [0.01, 0.05, 1e-6])
def test_model_keeps_rank_means_and_the_per_iteration_maximum(tmp_path, precision):
    d = imbalanced_trace()
    out = tmp_path / "m.h5"
    write_compressed(str(out), d, "model", precision)
    with minitrace.open(out) as t:
        back = t.data()
        attrs = t._reader.c.attrs
    assert attrs["epoch_anchor"] == "collectives" and attrs["epoch_merge"] == 1
    np.testing.assert_array_equal(back.actions["kind"], d.actions["kind"])
    bound = 2 * precision + precision ** 2
    rec = np.stack([per_iteration(d, r) for r in range(d.nranks)])[:, :-1]
    got = np.stack([per_iteration(back, r) for r in range(d.nranks)])[:, :-1]   # (finalize)
    for r in range(d.nranks):
        x, y = d.actions[d.rank_slice(r)], back.actions[back.rank_slice(r)]
        comp = x["kind"] == K.CODE["compute"]
        assert y["volume"][comp].mean() == pytest.approx(x["volume"][comp].mean(), rel=1e-9)
        assert (y["volume"][~comp] == 0).all()
    assert np.abs(got / rec - 1).max() <= bound
    assert np.abs(got.max(axis=0) / rec.max(axis=0) - 1).max() <= bound
    # the known imbalance and drift are there: rank 3 computes 2.5x rank 0, the last
    # iterations ~1.5x the first
    assert got[3].sum() / got[0].sum() == pytest.approx(2.5, rel=0.1)
    assert got[:, -10:].sum() / got[:, :10].sum() == pytest.approx(1.45, rel=0.1)


def test_model_draws_the_spread_within_an_iteration(tmp_path):
    """Calls of one iteration are not all equal: their spread is drawn around the call site's
    mean (the sum of the per-iteration maxima of single calls would otherwise drop)."""
    d = imbalanced_trace()
    out = tmp_path / "m.h5"
    write_compressed(str(out), d, "model")
    with minitrace.open(out) as t:
        back = t.data()
    x = back.actions[back.rank_slice(0)]
    comp = x["volume"][x["kind"] == K.CODE["compute"]][:CALLS]
    assert np.std(np.log(comp)) > 0.05


def test_model_keeps_the_largest_calls_where_they_were(tmp_path):
    """The tail: the calls 20 times as long as their neighbours come back with their own
    value, at their own place (within the precision), and no other call is that long."""
    d = imbalanced_trace()
    out = tmp_path / "m.h5"
    write_compressed(str(out), d, "model")
    with minitrace.open(out) as t:
        back = t.data()
    for r in range(d.nranks):
        x, y = d.actions[d.rank_slice(r)], back.actions[back.rank_slice(r)]
        comp = x["kind"] == K.CODE["compute"]
        spike = comp & (x["volume"] > 10 * np.median(x["volume"][comp]))
        assert spike.any()
        np.testing.assert_allclose(y["volume"][spike], x["volume"][spike], rtol=0.011)
        assert (y["volume"][comp & ~spike] < 10 * np.median(x["volume"][comp])).all()


def test_info_says_what_a_model_file_lost(tmp_path, capsys):
    d = imbalanced_trace(P=2, iterations=20)
    exact, model = tmp_path / "e.h5", tmp_path / "m.h5"
    write_compressed(str(exact), d, "exact")
    write_compressed(str(model), d, "model")
    assert cli.main(["info", str(model)]) == 0
    said = capsys.readouterr().out
    assert "volumes modelled" in said and "lost: each other call's own value" in said
    assert "largest calls' own values" in said
    assert "allreduce" in said or "collectives" in said
    assert cli.main(["info", str(exact)]) == 0
    assert "lost" not in capsys.readouterr().out


def test_templates_whose_hashes_differ_by_more_than_int64_holds_are_consistent():
    """Template hashes are sorted int64s; two of opposite signs far apart (miniFE's, recorded)
    differ by more than an int64 holds, which the consistency check once took as unsorted."""
    d = imbalanced_trace(P=2, iterations=8)
    c = compress(d, "model")
    side = dict(c.side)
    side["templates"] = pd.DataFrame({"hash": np.array([-8172655532409387182,
                                                        7347561018181167229], np.int64),
                                      "length": [1, 1], "start": [0, 1]})
    side["template_means"] = np.full(2 * d.nranks, side["site_means"][0])
    assert E.check(side, c.attrs, len(c.table), d.nranks) is None
    side["templates"] = side["templates"].iloc[::-1].assign(start=[0, 1])
    assert E.check(side, c.attrs, len(c.table), d.nranks) == "model/templates inconsistent"


def test_class_quantiles_are_numpys_bit_for_bit():
    """The spread's quantiles of every size class in one pass: numpy's (linear method) of each
    class alone, bit for bit, with ties, one-value classes and classes of every size."""
    rng = np.random.default_rng(7)
    for trial in range(300):
        sizes = rng.integers(1, 80, rng.integers(1, 7))
        values = rng.normal(size=int(sizes.sum()))
        if trial % 2:
            values = np.round(values, 1) + 0.0         # ties (+0.0: no negative zeros)
        ends = np.cumsum(sizes)
        bounds = list(zip((ends - sizes).tolist(), ends.tolist()))
        want = np.stack([np.quantile(values[a:b], E.SPREAD_GRID) for a, b in bounds])
        got = E.class_quantiles(values, bounds, E.SPREAD_GRID)
        assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
    assert E.class_quantiles(np.zeros(0), [], E.SPREAD_GRID).shape == (0, E.NOISE_QUANTILES)


@pytest.mark.parametrize("distinct_keys", [E.DISTINCT_KEYS, 0])
def test_class_rho_is_each_class_alone_bit_for_bit(monkeypatch, distinct_keys):
    """The spread's shared part, every size class in one pass: each class's own, bit for bit:
    its values' normal scores by rank (ties by place), grouped by key within the class, rho =
    (E[group mean ** 2] - E[1 / k]) / (1 - E[1 / k]) over the calls of groups of k > 1, in
    [0, 1]; 0 for a class with none.  Ties, negative zeros, keys shared across classes.  Both
    orderings: (class, value, place) as one int64 key, and the stable sort where it is not."""
    monkeypatch.setattr(E, "DISTINCT_KEYS", distinct_keys)
    rng = np.random.default_rng(38)
    for trial in range(300):
        sizes = rng.integers(0, 60, rng.integers(1, 7))
        values = rng.normal(size=int(sizes.sum()))
        if trial % 2:
            values = np.round(values, 1)               # ties, and -0.0 beside 0.0
        keys = rng.integers(0, 1 + int(rng.integers(1, 40)), len(values)) << 40
        if trial % 3 == 0:                             # keys of every bit, negative ones
            keys = (keys << 20) - (1 << 62)
        ends = np.cumsum(sizes)
        bounds = list(zip((ends - sizes).tolist(), ends.tolist()))
        want = []
        for a, b in bounds:
            r, key = values[a:b], keys[a:b].tolist()
            g = np.empty(len(r))
            g[np.argsort(r, kind="stable")] = \
                np.log((u := (np.arange(len(r)) + 0.5) / len(r)) / (1 - u)) / 1.702
            members: dict = {}
            for i, k in enumerate(key):
                members.setdefault(k, []).append(i)
            sums = {}
            for k, rows in members.items():
                total = 0.0
                for i in rows:
                    total += g[i]
                sums[k] = total / len(rows)
            multi = [i for i, k in enumerate(key) if len(members[k]) > 1]
            if not multi:
                want.append(0.0)
                continue
            m2 = (np.array([sums[key[i]] for i in multi]) ** 2).mean()
            ik = np.array([1 / len(members[key[i]]) for i in multi]).mean()
            want.append(min(max(float((m2 - ik) / (1 - ik)), 0.0), 1.0))
        got = E.class_rho(values, keys, bounds)
        assert np.array_equal(got.view(np.uint64), np.array(want).view(np.uint64)), trial
    assert len(E.class_rho(np.zeros(0), np.zeros(0, np.int64), [])) == 0


def test_time_statistics_stored_as_codes_read_back_as_compressed(tmp_path):
    """A model's mean and deviation of durations and gaps within the precision (log codes in
    the file): read back as compress() made them, bit for bit; each within the precision of
    the statistics at a fine precision."""
    import h5py
    from minitrace.compress.store import read
    from tests.support import synthetic
    data = synthetic.stencil_trace(4, 30, timed=True, seed=1)
    c = compress(data, "model", precision=0.02)
    fine = compress(data, "model", precision=1e-4).side["stats"]
    p = tmp_path / "m.h5"
    write_compressed(str(p), data, "model", precision=0.02)
    with h5py.File(p, "r") as f:
        back = read(f["trace"], str(p)).side["stats"]
    st = c.side["stats"]
    for col in ("mean", "std"):
        assert np.array_equal(back[col].to_numpy(), st[col].to_numpy()), col
        q, x = st[col].to_numpy(), fine[col].to_numpy()
        assert len(q) == len(x) and np.any(q != x)
        assert np.all(np.abs(q - x) <= 0.0203 * np.abs(x)), col


def test_a_damaged_statistics_code_is_refused(tmp_path):
    """A time statistic's code beyond any time (it decodes to inf) is a one-line error, as a
    NaN mean was when the statistics were floats (tests/test_damage.py)."""
    import h5py
    from tests.support import synthetic
    from minitrace import MinitraceError
    p = tmp_path / "m.h5"
    write_compressed(str(p), synthetic.stencil_trace(4, 30, timed=True, seed=1), "model",
                     pack=False)
    with h5py.File(p, "r+") as f:
        codes = f["trace/model/stats/mean_code"][()].astype(np.int64)
        codes[0] = (1 << 40) - 1
        del f["trace/model/stats/mean_code"]
        f["trace/model/stats/mean_code"] = codes
    with pytest.raises(MinitraceError, match="corrupt trace: .*stats/mean holds inf"):
        with minitrace.open(p) as t:
            t.data()


@pytest.mark.parametrize("precision", [1e-9, 1e-6, 1e-5, 0.01])
def test_log_codes_of_every_float_read_back_within_the_precision(precision):
    """Below a precision of ~1e-5 the codes of small values (index + 2**20 not positive) read
    back as negative or zero volumes; now every finite float from the smallest normal one to
    half the largest reads back within the precision with its sign, and codes whose index was in the
    old range are the old codes (files written before read the same)."""
    from minitrace.compress import volumes as V
    mag = np.geomspace(np.finfo(float).tiny, np.finfo(float).max / 2, 2001)
    values = np.concatenate([mag, -mag, [0.0, 1e-9, 3.5e-7, 1.0, 4e3]])
    codes = V.log_codes(values, precision)
    back = V.from_codes(codes, precision)
    assert back[values == 0].tolist() == [0.0]
    nz = values != 0
    assert np.array_equal(np.sign(back[nz]), np.sign(values[nz]))
    assert np.all(np.abs(back[nz] / values[nz] - 1) <= precision * (1 + 1e-6))
    index = np.rint(np.log(np.abs(values[nz])) / np.log1p(2 * precision)).astype(np.int64)
    old = index + (1 << 20) > 0
    assert np.array_equal(codes[nz][old], (np.sign(values[nz]) * (index + (1 << 20)))[old])


@pytest.mark.parametrize("argv,words", [(["--precision", "1e-10"], "--precision 1e-10"),
                                        (["--volumes", "bounded:1e-8%"], "bounded:P%")])
def test_a_precision_finer_than_the_codes_is_refused(tmp_path, argv, words, capsys):
    """Finer than 1e-9 a float's log code could leave its range: one line naming the option."""
    from minitrace.storage import write_trace
    src = tmp_path / "t.h5"
    write_trace(str(src), imbalanced_trace(P=2, iterations=2))
    assert cli.main(["compress", str(src), "-o", str(tmp_path / "c.h5"), *argv]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
    assert not (tmp_path / "c.h5").exists()


@pytest.mark.parametrize("precision", [1e-9, 1e-6, 0.01, 0.2])
def test_spread_codes_read_back_within_the_precision(precision):
    """The spread's quantiles as codes (session 14): each within half a log-code step of the
    fitted value (within ``precision`` of its factor), still ascending within a class."""
    rng = np.random.default_rng(5)
    q = np.sort(rng.normal(0, rng.uniform(0.01, 3, (6, 1)), (6, E.NOISE_QUANTILES)), axis=1)
    q[2] = 0.0                                    # a class without spread
    codes = E.spread_codes(q, precision)
    assert codes.dtype == np.int64 and codes.shape == (q.size,)
    back = E.spread_quantiles({"spread_code": codes}, precision)
    assert back.shape == q.shape
    assert np.all(np.abs(back - q) <= np.log1p(2 * precision) / 2 * (1 + 1e-9))
    assert np.all(np.diff(back, axis=1) >= 0) and np.all(back[2] == 0)


def test_model_file_stores_the_spread_as_codes_and_reads_older_floats(tmp_path):
    """A model file holds model/spread_code (integers), not float quantiles; a file written
    before (model/spread, float32) expands with those quantiles, the same volumes within
    float32's rounding; a file holding both is refused."""
    import h5py
    from minitrace import MinitraceError
    from minitrace.compress import store
    d = imbalanced_trace()
    new, old, both = (str(tmp_path / f"{x}.h5") for x in ("new", "old", "both"))
    write_compressed(new, d, "model", pack=False)
    with h5py.File(new, "r") as f:
        g = f["trace/model"]
        assert "spread" not in g and g["spread_code"].dtype.kind == "i"
        codes = g["spread_code"][()]
        assert len(codes) == len(g["spread_classes"]) * E.NOISE_QUANTILES > 0
    c = compress(d, "model")
    c.side["spread"] = E.spread_quantiles(c.side, c.attrs["precision"]).ravel() \
        .astype(np.float32)
    spread_code = c.side.pop("spread_code")
    store.write(old, c)
    c.side["spread_code"] = spread_code
    store.write(both, c)
    with minitrace.open(new) as t, minitrace.open(old) as u:
        a, b = t.data().actions["volume"], u.data().actions["volume"]
    assert np.std(a[a > 0]) > 0 and np.allclose(a, b, rtol=1e-5)
    with pytest.raises(MinitraceError, match="stored twice"):
        with minitrace.open(both) as t:
            t.data()


def test_the_spread_is_drawn_by_blocks_of_large_epochs():
    """The spread's fit draws whole epochs (every rank's k-th), and in an epoch of more than
    SPREAD_BLOCK calls each block (every rank's j-th): a trace whose calls are nearly all in
    one epoch is sampled at about the asked rate, not all or nothing."""
    B = E.SPREAD_BLOCK
    small = np.repeat(np.arange(5), 7)
    assert np.array_equal(E.spread_draw_keys(small, small), small)    # (as before: epochs)
    per_rank = np.concatenate([np.zeros(5, np.int64), np.ones(200 * B, np.int64)])
    epoch = np.concatenate([per_rank, per_rank])          # two ranks, their own gepochs
    gepoch = np.concatenate([per_rank, per_rank + 2])
    keys = E.spread_draw_keys(epoch, gepoch)
    k0, k1 = keys[:len(per_rank)], keys[len(per_rank):]
    assert np.array_equal(k0, k1)                          # every rank's j-th block alike
    assert len(np.unique(k0[:5])) == 1 and len(np.unique(k0[5:])) == 200
    assert np.all(np.diff(k0[5:]) >= 0) and len(np.unique(k0[5:5 + B])) == 1
    drawn = E._uniform(keys) < 0.5
    assert 0.3 < drawn[5:len(per_rank)].mean() < 0.7
